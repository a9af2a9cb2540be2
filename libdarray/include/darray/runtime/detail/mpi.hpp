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

// Around MPI_Waitall / MPI_Waitsome / MPI_Testsome on requests of a communicator that returns errors. MPICH (4.0)
// raises their MPI_ERR_IN_STATUS (a truncated message, say) on MPI_COMM_WORLD's error handler instead of the
// requests' communicator's: fatal by default, so the process aborts where the caller would throw a named error. For
// the call's duration MPI_COMM_WORLD returns errors too. Other MPIs use the requests' communicator: nothing to do.
class WorldReturnsErrors {
 public:
#if defined(MPICH_VERSION)
  WorldReturnsErrors() {
    if (MPI_Comm_get_errhandler(MPI_COMM_WORLD, &m_saved) != MPI_SUCCESS) m_saved = MPI_ERRHANDLER_NULL;
    if (m_saved != MPI_ERRHANDLER_NULL) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  }
  ~WorldReturnsErrors() {
    if (m_saved == MPI_ERRHANDLER_NULL) return;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, m_saved);
    MPI_Errhandler_free(&m_saved);
  }
#else
  WorldReturnsErrors() {}   // user-provided, so a guard that does nothing is no "unused variable"
  ~WorldReturnsErrors() {}  // NOLINT(modernize-use-equals-default)
#endif
  WorldReturnsErrors(const WorldReturnsErrors&) = delete;
  WorldReturnsErrors& operator=(const WorldReturnsErrors&) = delete;

 private:
#if defined(MPICH_VERSION)
  MPI_Errhandler m_saved = MPI_ERRHANDLER_NULL;
#endif
};

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
