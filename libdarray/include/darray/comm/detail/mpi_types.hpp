// The MPI datatype of a C++ arithmetic type, for the typed reduction helpers.
#pragma once

#include <mpi.h>

#include <complex>
#include <cstdint>
#include <type_traits>

namespace darray {
namespace detail {

template <class T>
MPI_Datatype mpi_datatype() {
  static_assert(std::is_arithmetic<T>::value || std::is_same<T, std::complex<float>>::value ||
                    std::is_same<T, std::complex<double>>::value,
                "mpi_datatype: no MPI datatype for this type");
  if (std::is_same<T, float>::value) return MPI_FLOAT;
  if (std::is_same<T, double>::value) return MPI_DOUBLE;
  if (std::is_same<T, long double>::value) return MPI_LONG_DOUBLE;
  if (std::is_same<T, std::complex<float>>::value) return MPI_C_FLOAT_COMPLEX;
  if (std::is_same<T, std::complex<double>>::value) return MPI_C_DOUBLE_COMPLEX;
  if (std::is_same<T, bool>::value) return MPI_CXX_BOOL;
  if (std::is_same<T, char>::value) return MPI_CHAR;
  if (std::is_integral<T>::value) {
    // By width and signedness rather than by name: int64_t is long on Linux but long long elsewhere.
    const bool s = std::is_signed<T>::value;
    switch (sizeof(T)) {
      case 1:
        return s ? MPI_INT8_T : MPI_UINT8_T;
      case 2:
        return s ? MPI_INT16_T : MPI_UINT16_T;
      case 4:
        return s ? MPI_INT32_T : MPI_UINT32_T;
      default:
        return s ? MPI_INT64_T : MPI_UINT64_T;
    }
  }
  return MPI_DATATYPE_NULL;
}

}  // namespace detail
}  // namespace darray
