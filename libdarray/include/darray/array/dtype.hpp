// Element types of distributed arrays and their NumPy names ("float32", "complex128", ...), used by
// DistributedArray::dtype() and by every message that reports an element type mismatch.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <string>
#include <type_traits>

namespace darray {
namespace detail {

template <class T>
struct is_kokkos_complex : std::false_type {};
template <class R>
struct is_kokkos_complex<Kokkos::complex<R>> : std::true_type {};

template <class T>
inline constexpr bool is_element_type_v =
    (std::is_integral<T>::value && !std::is_same<T, bool>::value) || std::is_same<T, float>::value
    || std::is_same<T, double>::value || std::is_same<T, Kokkos::complex<float>>::value
    || std::is_same<T, Kokkos::complex<double>>::value;

template <class T>
std::string integral_dtype_name() {
  return std::string(std::is_signed<T>::value ? "int" : "uint") + std::to_string(8 * sizeof(T));
}

// A small number naming an element type by kind and size, equal on every process for equal types: what the exchange
// engine's messages carry so that processes moving different element types of one size get an error.
template <class T>
constexpr int dtype_code() {
  using U = std::remove_cv_t<T>;
  const int kind = std::is_same<U, bool>::value       ? 1
                   : std::is_integral<U>::value       ? (std::is_signed<U>::value ? 2 : 3)
                   : std::is_floating_point<U>::value ? 4
                   : is_kokkos_complex<U>::value      ? 5
                                                      : 6;
  return kind * 64 + static_cast<int>(sizeof(U) % 64);
}

}  // namespace detail

// NumPy's name of an element type; for types that are not array elements (std::string, a struct) the C++ spelling
// is not portable, so they print as "unsupported(<size> bytes)".
template <class T>
std::string dtype_name() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same<U, bool>::value)
    return "bool";
  else if constexpr (std::is_integral<U>::value)
    return detail::integral_dtype_name<U>();
  else if constexpr (std::is_same<U, float>::value)
    return "float32";
  else if constexpr (std::is_same<U, double>::value)
    return "float64";
  else if constexpr (std::is_same<U, Kokkos::complex<float>>::value)
    return "complex64";
  else if constexpr (std::is_same<U, Kokkos::complex<double>>::value)
    return "complex128";
  else
    return "unsupported(" + std::to_string(sizeof(U)) + " bytes)";
}

// The element a flat row-major global index becomes in iota(): static_cast for real types, (index, 0) for complex.
template <class T>
KOKKOS_INLINE_FUNCTION T iota_value(int64_t flat_index) {
  if constexpr (detail::is_kokkos_complex<T>::value) {
    using R = typename T::value_type;
    return T(static_cast<R>(flat_index), R(0));
  } else {
    return static_cast<T>(flat_index);
  }
}

}  // namespace darray
