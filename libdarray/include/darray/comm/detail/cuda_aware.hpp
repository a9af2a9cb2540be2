// Whether the MPI library reads and writes device (CUDA) memory itself: Open MPI and MVAPICH say so through
// MPIX_Query_cuda_support() in <mpi-ext.h>. Then the exchange engine hands MPI device pointers instead of staging
// device buffers through host mirrors. Every process of a job runs the same MPI library, so the answer agrees.
#pragma once

#include "darray/config.hpp"

#include <mpi.h>

#if defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif

namespace darray {
namespace detail {

inline bool mpi_reads_device_memory() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  static const bool aware = MPIX_Query_cuda_support() == 1;
  return aware;
#else
  return false;
#endif
}

}  // namespace detail
}  // namespace darray
