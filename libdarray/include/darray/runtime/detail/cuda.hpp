// Checked CUDA runtime calls: DARRAY_CUDA_CHECK turns an error code into a darray::CudaError naming the call and
// the error. Included only by code compiled where CUDA is (the NCCL transport, the cuFFT backend).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "darray/core/error.hpp"

namespace darray {
namespace detail {

inline std::string cuda_error_text(cudaError_t rc) {
  return std::string(cudaGetErrorName(rc)) + ": " + cudaGetErrorString(rc);
}

}  // namespace detail
}  // namespace darray

// DARRAY_CUDA_CHECK(cudaSetDevice(0)): CUDA runtime errors become darray::CudaError naming the call and the error.
#define DARRAY_CUDA_CHECK(call)                                                            \
  do {                                                                                     \
    const cudaError_t darray_cuda_rc_ = (call);                                            \
    if (darray_cuda_rc_ != cudaSuccess)                                                    \
      throw ::darray::CudaError(#call, ::darray::detail::cuda_error_text(darray_cuda_rc_), \
                                static_cast<int>(darray_cuda_rc_), __FILE__, __LINE__);    \
  } while (false)
