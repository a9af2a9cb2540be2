// Checked MPI calls: every return code is translated into a darray::MpiError that names the call and carries
// MPI's own error string.
#pragma once

#include <mpi.h>

#include <string>

#include "darray/core/error.hpp"

namespace darray {
namespace detail {

inline std::string mpi_error_string(int code) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, buf, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(buf, static_cast<std::size_t>(len));
}

}  // namespace detail
}  // namespace darray

// DARRAY_MPI_CHECK(MPI_Allreduce(...)): throws darray::MpiError naming the call when it does not return MPI_SUCCESS.
#define DARRAY_MPI_CHECK(call)                                                                                      \
  do {                                                                                                              \
    const int darray_mpi_rc_ = (call);                                                                              \
    if (darray_mpi_rc_ != MPI_SUCCESS)                                                                              \
      throw ::darray::MpiError(#call, ::darray::detail::mpi_error_string(darray_mpi_rc_), darray_mpi_rc_, __FILE__, \
                               __LINE__);                                                                           \
  } while (false)
