// Shard: one device's block of a distributed array, as jax.Shard: the device, its index box in the global array,
// its replica id, and the data as a rank-N LayoutRight Kokkos view of exactly the block (empty for remote shards).
#pragma once

#include <cstdint>
#include <ostream>

#include "darray/array/detail/view.hpp"
#include "darray/array/dtype.hpp"
#include "darray/core/index.hpp"
#include "darray/runtime/device.hpp"
#include "darray/runtime/environment.hpp"

namespace darray {

// Where arrays live unless told otherwise: the default execution space's memory (CudaSpace in CUDA builds).
using DefaultMemorySpace = Kokkos::DefaultExecutionSpace::memory_space;

template <class T, int N, class MemorySpace = DefaultMemorySpace>
struct Shard {
  using view_type = detail::ShardView<T, N, MemorySpace>;

  Device device;
  Index index;             // the block, per-dim [start, stop) in global coordinates
  int64_t replica_id = 0;  // which copy of the block this device holds (0 for the one gathers read)
  view_type data;          // extents == box_shape(index); default-constructed for devices of other processes
};

// "Shard(device=cpu(id=1), index=(128:256, 0:128), replica_id=0, data=float32[128, 128])", or data=None for a shard
// of another process, as JAX prints global_shards.
template <class T, int N, class MemorySpace>
std::ostream& operator<<(std::ostream& os, const Shard<T, N, MemorySpace>& s) {
  os << "Shard(device=" << s.device << ", index=" << s.index << ", replica_id=" << s.replica_id << ", data=";
  // Decided by owner, not by the view: an adopted unmanaged view has no reference count either.
  if (s.device.process_index != process_index()) return os << "None)";
  os << dtype_name<T>() << "[";
  for (int d = 0; d < N; ++d) os << (d ? ", " : "") << s.data.extent(static_cast<unsigned>(d));
  return os << "])";
}

}  // namespace darray
