// Host-local data <-> global arrays, as multihost_utils.host_local_array_to_global_array and its reverse: each
// process's data is the box its devices' blocks tile (process_local_index), so no data crosses processes.
// The box must be one contiguous hyper-rectangle on every process; that is checked for all processes from the
// sharding alone, so every process throws the same error.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <vector>

#include "darray/array/detail/block_io.hpp"
#include "darray/array/detail/blocks.hpp"
#include "darray/array/detail/checks.hpp"
#include "darray/array/distributed_array.hpp"
#include "darray/runtime/detail/agree.hpp"
#include "darray/runtime/detail/kokkos_compat.hpp"
#include "darray/runtime/detail/state.hpp"

namespace darray {

// The box of the global array that `process`'s host-local data covers: the bounding box of its devices' blocks.
// Throws InvalidArgument when some process's blocks do not tile their bounding box (e.g. a process holding the
// blocks (0, 0) and (1, 1) of a 2x2 grid). A process that holds no element gets a box of empty slices.
inline Index process_local_index(const NamedSharding& sharding, const Shape& global_shape, int process) {
  sharding.check_shape(global_shape);
  return detail::checked_process_box("process_local_index", sharding, global_shape, process_count(), process);
}
inline Index process_local_index(const NamedSharding& sharding, const Shape& global_shape) {
  return process_local_index(sharding, global_shape, process_index());
}

// Builds the global array from each process's host data. local_data holds this process's box
// (process_local_index) in row-major order: a contiguous container of volume(box) elements, or a host Kokkos view
// whose extents are the box's shape. Collective (to agree on errors); copies only within each process.
template <class T, int N, class MemorySpace = DefaultMemorySpace, class LocalData>
DistributedArray<T, N, MemorySpace> make_array_from_process_local_data(const NamedSharding& sharding,
                                                                       const LocalData& local_data,
                                                                       const Shape& global_shape) {
  constexpr const char* api = "make_array_from_process_local_data";
  detail::check_array_args<N>(api, global_shape, sharding);
  detail::check_element_type<T, detail::container_element_t<LocalData>>(api, "local_data");
  detail::check_collective<T, N>(api, global_shape, sharding);
  const Index box = detail::checked_process_box(api, sharding, global_shape, process_count(), process_index());
  const Shape local_shape = box_shape(box);

  const auto devs = detail::process_device_blocks(sharding, global_shape, process_index());
  auto shards = detail::allocate_shards_agreed<T, N, MemorySpace>(devs, /*initialize=*/false);
  const auto blocks = detail::distinct_blocks(devs);
  detail::run_agreed(detail::world_comm(), [&] {
    const auto [ptr, count] = detail::host_span<T>(api, "local_data", local_data);
    if constexpr (Kokkos::is_view<LocalData>::value) {
      constexpr int rank = static_cast<int>(LocalData::traits::rank);
      Shape given(rank);
      for (int d = 0; d < rank; ++d) given[static_cast<std::size_t>(d)] = static_cast<int64_t>(local_data.extent(d));
      DARRAY_THROW_IF(given != local_shape, InvalidArgument, api,
                      "local_data has shape " << numpy_shape_string(given)
                                              << " but this process's devices hold the box " << box << " of shape "
                                              << numpy_shape_string(local_shape) << " of the global shape "
                                              << numpy_shape_string(global_shape));
    }
    DARRAY_THROW_IF(count != volume(box), InvalidArgument, api,
                    "local_data has " << count << " elements but this process's devices hold the box " << box
                                      << " of shape " << numpy_shape_string(local_shape) << " (" << volume(box)
                                      << " elements) of the global shape " << numpy_shape_string(global_shape));
    detail::StagingBuffer<T> staging;
    for (const detail::Block& b : blocks) {
      detail::copy_box_to_view<N>(ptr, box, b.index, shards[b.holders[0]].data, staging, api);
      detail::fill_replicas(shards, b);
    }
  });
  return detail::adopt_shards<T, N, MemorySpace>(global_shape, sharding, std::move(shards));
}

// This process's box (process_local_index) of the array as row-major host data: the reverse of
// make_array_from_process_local_data. Not collective: every element of the box is on a local device.
template <class T, int N, class MemorySpace>
std::vector<T> global_array_to_host_local(const DistributedArray<T, N, MemorySpace>& a) {
  constexpr const char* api = "global_array_to_host_local";
  const Index box = detail::checked_process_box(api, a.sharding(), a.shape(), process_count(), process_index());
  detail::fence_writers_of<MemorySpace>();  // kernels that wrote the shards may still run
  std::vector<T> out(static_cast<std::size_t>(volume(box)));
  const auto devs = detail::process_device_blocks(a.sharding(), a.shape(), process_index());
  detail::StagingBuffer<T> staging;
  for (const detail::Block& b : detail::distinct_blocks(devs))
    detail::copy_view_to_box<N>(a.addressable_shards()[b.holders[0]].data, b.index, out.data(), box, staging, api);
  return out;
}

}  // namespace darray
