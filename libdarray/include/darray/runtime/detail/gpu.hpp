// What this build knows about GPUs: whether Kokkos runs on one, how many the CUDA runtime sees and which physical
// GPU an ordinal is, whether NCCL was compiled in. Host-only builds answer without touching any CUDA API.
#pragma once

#include "darray/config.hpp"

#include <Kokkos_Core.hpp>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

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

// The physical GPU at `ordinal` as a number, the same in every process of a node whatever its CUDA_VISIBLE_DEVICES
// (its PCI domain, bus and device); 0 where unknown (no CUDA runtime, or the query failed).
inline std::uint64_t gpu_identity(int ordinal) {
#if defined(DARRAY_HAS_CUDA_RUNTIME)
  int domain = 0, bus = 0, device = 0;
  if (ordinal < 0 || cudaDeviceGetAttribute(&domain, cudaDevAttrPciDomainId, ordinal) != cudaSuccess ||
      cudaDeviceGetAttribute(&bus, cudaDevAttrPciBusId, ordinal) != cudaSuccess ||
      cudaDeviceGetAttribute(&device, cudaDevAttrPciDeviceId, ordinal) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return (std::uint64_t{1} << 63) | (static_cast<std::uint64_t>(domain) << 24) |
         (static_cast<std::uint64_t>(bus) << 8) | static_cast<std::uint64_t>(device);
#else
  (void)ordinal;
  return 0;
#endif
}

// What to do when processes share a GPU, after the sentence that says which (NotSupported messages).
inline constexpr const char* nccl_one_gpu_advice =
    "; NCCL needs one GPU per process: launch one process per GPU (or give each its own with "
    "DARRAY_LOCAL_DEVICE_IDS or CUDA_VISIBLE_DEVICES), or use the MPI backend (Backend::mpi, DARRAY_BACKEND=mpi)";

// The first two processes (by rank, then by the second's rank) of one node that drive the same GPU: ranks[i] is the
// rank of the node's i-th process, ids[i] its gpu_identity (0, unknown, never matches). {-1, -1} when none do.
inline std::pair<int, int> first_shared_gpu(const std::vector<int>& ranks, const std::vector<std::uint64_t>& ids) {
  std::pair<int, int> best{-1, -1};
  for (std::size_t i = 0; i < ids.size(); ++i)
    for (std::size_t j = 0; j < ids.size(); ++j) {
      if (i == j || ids[i] == 0 || ids[i] != ids[j] || ranks[i] >= ranks[j]) continue;
      const std::pair<int, int> p{ranks[i], ranks[j]};
      if (best.first < 0 || p < best) best = p;
    }
  return best;
}

}  // namespace detail
}  // namespace darray
