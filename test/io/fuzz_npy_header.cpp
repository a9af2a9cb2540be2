// libFuzzer target for the .npy header parser (built with clang -fsanitize=fuzzer,address where available): any
// input must parse to a sane header or throw darray::IoError. Anything else escaping, a crash, or a read outside
// the input (AddressSanitizer) is a finding. libFuzzer hands over a buffer sized exactly to the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "darray/io/detail/npy_header.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const darray::io::NpyHeader h = darray::detail::parse_npy_header(data, size, "fuzz", "input");
    bool sane = h.data_offset <= size && !h.dtype.empty() && h.shape.size() <= darray::detail::npy_max_dims;
    for (int64_t n : h.shape) sane = sane && n >= 0;
    if (!sane) std::abort();
  } catch (const darray::IoError&) {
  }
  return 0;
}
