// Element types <-> numpy dtype strings ('<f8', '|u1', '<c16', ...) and the checks load_npy makes of a parsed
// header against the requested T and N. Files hold little-endian data; so does memory on every host libdarray
// builds for, which is checked at compile time, so elements move as raw bytes.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "darray/array/dtype.hpp"
#include "darray/core/error.hpp"
#include "darray/io/detail/npy_header.hpp"
#include "darray/io/npy_header.hpp"

#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__)
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "darray/io reads and writes little-endian .npy data as raw bytes, so it needs a little-endian host");
#endif

namespace darray {
namespace detail {

// numpy's type character: 'i' signed, 'u' unsigned, 'f' float, 'c' complex.
template <class T>
constexpr char npy_kind() {
  if constexpr (is_kokkos_complex<T>::value)
    return 'c';
  else if constexpr (std::is_floating_point<T>::value)
    return 'f';
  else if constexpr (std::is_signed<T>::value)
    return 'i';
  else
    return 'u';
}

// The dtype string numpy writes for T: byte order '<', or '|' (not applicable) for one-byte types, as dtype.str.
template <class T>
std::string npy_descr() {
  static_assert(is_element_type_v<T>, "npy_descr: T must be an array element type");
  if constexpr (is_kokkos_complex<T>::value)
    static_assert(sizeof(T) == 2 * sizeof(typename T::value_type),
                  "complex elements must be two packed reals, as numpy's complex64/complex128");
  return std::string(1, sizeof(T) == 1 ? '|' : '<') + npy_kind<T>() + std::to_string(sizeof(T));
}

// A dtype string split into byte order, kind and item size, when it is of the plain form [<>|=]?[biufc]<digits>.
struct NpyDtype {
  bool plain = false;
  char byte_order = '=';  // '<', '>', '|' or '=' (none written counts as '=', native, as numpy reads it)
  char kind = 0;
  int64_t item_size = 0;
};

inline NpyDtype split_npy_dtype(const std::string& s) {
  NpyDtype d;
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '<' || s[i] == '>' || s[i] == '|' || s[i] == '=')) d.byte_order = s[i++];
  if (i >= s.size()) return d;
  d.kind = s[i++];
  if (i >= s.size() || s.size() - i > 4) return d;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return d;
    d.item_size = d.item_size * 10 + (s[i] - '0');
  }
  d.plain = d.item_size > 0;
  return d;
}

// "'<f8' (float64)" for messages.
template <class T>
std::string npy_dtype_label() {
  return "'" + npy_descr<T>() + "' (" + dtype_name<T>() + ")";
}

// Throws unless a file with header h can be read as a C-order array of T with rank N: NotSupported for Fortran
// order and big-endian data, IoError for another dtype or rank. Depends on the header only, which every process
// holds, so all processes throw alike.
template <class T, int N>
void check_npy_matches(const io::NpyHeader& h, const char* api, const std::string& path) {
  const std::string want = npy_dtype_label<T>();
  const NpyDtype d = split_npy_dtype(h.dtype);
  DARRAY_THROW_IF(d.plain && d.byte_order == '>' && d.item_size > 1, NotSupported, api,
                  npy_where(path) << " holds big-endian data (dtype '" << printable_bytes(h.dtype)
                                  << "'); libdarray reads little-endian files only; convert it with numpy: "
                                     "np.save(path, a.astype(a.dtype.newbyteorder('<')))");
  // One-byte types have no byte order; for wider ones only '<', or none (native, which is little-endian here).
  const bool order_ok = d.item_size == 1 || d.byte_order == '<' || d.byte_order == '=';
  DARRAY_THROW_IF(!d.plain || !order_ok || d.kind != npy_kind<T>() || d.item_size != static_cast<int64_t>(sizeof(T)),
                  IoError, api,
                  npy_where(path) << " has dtype '" << printable_bytes(h.dtype) << "' but " << api << "<"
                                  << dtype_name<T>() << ", " << N << "> expects " << want);
  DARRAY_THROW_IF(h.shape.size() != static_cast<std::size_t>(N), IoError, api,
                  npy_where(path) << " has shape " << numpy_shape_string(h.shape) << " (rank " << h.shape.size()
                                  << ") but " << api << "<" << dtype_name<T>() << ", " << N << "> expects rank " << N);
  DARRAY_THROW_IF(h.fortran_order, NotSupported, api,
                  npy_where(path) << " is stored in Fortran (column-major) order, which libdarray does not read; "
                                     "save it in C order with numpy: np.save(path, np.ascontiguousarray(a))");
}

// Throws IoError unless the file (file_size bytes) holds all the data the header announces.
inline void check_npy_data_size(const io::NpyHeader& h, std::uint64_t item_size, std::uint64_t file_size,
                                const char* api, const std::string& path) {
  const auto elements = static_cast<std::uint64_t>(volume(h.shape));
  const bool fits =
      elements == 0 || item_size <= (std::numeric_limits<std::uint64_t>::max() - h.data_offset) / elements;
  const std::uint64_t need = fits ? h.data_offset + elements * item_size : 0;
  DARRAY_THROW_IF(!fits, IoError, api,
                  npy_where(path) << " announces shape " << numpy_shape_string(h.shape) << " of dtype '"
                                  << printable_bytes(h.dtype) << "', more bytes than a file can hold");
  DARRAY_THROW_IF(file_size < need, IoError, api,
                  npy_where(path) << " is truncated: its header announces shape " << numpy_shape_string(h.shape)
                                  << " of dtype '" << printable_bytes(h.dtype) << "', " << elements * item_size
                                  << " data bytes from offset " << h.data_offset << " (" << need
                                  << " bytes in all), but the file has " << file_size << " bytes");
}

}  // namespace detail
}  // namespace darray
