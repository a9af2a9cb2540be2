// io::NpyHeader: what the header of a NumPy .npy file says (dtype string, shape, memory order, where the data
// starts), as returned by io::read_npy_header. Plain value type with no MPI or Kokkos dependency, so the header
// parser that fills it can be fuzzed on its own.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "darray/core/index.hpp"

namespace darray {
namespace io {

struct NpyHeader {
  std::string dtype;              // the 'descr' string as written: "<f8", "|u1", ">i4", "<U10", ...
  Shape shape;                    // () for a 0-d array
  bool fortran_order = false;     // column-major data (load_npy reads C order only)
  std::uint64_t data_offset = 0;  // bytes from the start of the file to the first element
  int version_major = 1;          // format version: 1.0, 2.0 or 3.0
  int version_minor = 0;

  friend bool operator==(const NpyHeader& a, const NpyHeader& b) {
    return a.dtype == b.dtype && a.shape == b.shape && a.fortran_order == b.fortran_order &&
           a.data_offset == b.data_offset && a.version_major == b.version_major && a.version_minor == b.version_minor;
  }
  friend bool operator!=(const NpyHeader& a, const NpyHeader& b) { return !(a == b); }
};

// "NpyHeader(dtype='<f8', shape=(3, 4), fortran_order=False, data_offset=128, version=1.0)"
inline std::ostream& operator<<(std::ostream& os, const NpyHeader& h) {
  os << "NpyHeader(dtype='" << h.dtype << "', shape=(";
  for (std::size_t d = 0; d < h.shape.size(); ++d) os << (d ? ", " : "") << h.shape[d];
  if (h.shape.size() == 1) os << ",";
  return os << "), fortran_order=" << (h.fortran_order ? "True" : "False") << ", data_offset=" << h.data_offset
            << ", version=" << h.version_major << "." << h.version_minor << ")";
}

}  // namespace io
}  // namespace darray
