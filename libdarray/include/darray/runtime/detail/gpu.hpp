// What this build knows about GPUs: whether Kokkos runs on one, how many the CUDA runtime sees, whether NCCL was
// compiled in. Host-only builds answer without touching any CUDA API.
#pragma once

#include "darray/config.hpp"

#include <Kokkos_Core.hpp>

#if defined(DARRAY_HAS_NCCL) || defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime_api.h>
#define DARRAY_HAS_CUDA_RUNTIME 1
#endif

namespace darray {
namespace detail {

constexpr bool kokkos_uses_gpu() {
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP) || defined(KOKKOS_ENABLE_SYCL)
  return true;
#else
  return false;
#endif
}

constexpr const char* kokkos_gpu_backend_name() {
#if defined(KOKKOS_ENABLE_CUDA)
  return "CUDA";
#elif defined(KOKKOS_ENABLE_HIP)
  return "HIP";
#elif defined(KOKKOS_ENABLE_SYCL)
  return "SYCL";
#else
  return "none";
#endif
}

constexpr bool nccl_compiled() {
#if defined(DARRAY_HAS_NCCL)
  return true;
#else
  return false;
#endif
}

// Number of CUDA GPUs visible to this process; 0 without a CUDA runtime, driver or GPU.
inline int gpu_count() {
#if defined(DARRAY_HAS_CUDA_RUNTIME)
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
#else
  return 0;
#endif
}

}  // namespace detail
}  // namespace darray
