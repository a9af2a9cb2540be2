// scatter_from_root: the pscatter JAX lacks. Only the root holds the whole array; every other process receives
// just its blocks, in one message holding each distinct block once (replicas on one process share it), and never
// allocates more than that. The root stages one destination's message at a time.
#pragma once

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdint>
#include <vector>

#include "darray/array/detail/block_io.hpp"
#include "darray/array/detail/blocks.hpp"
#include "darray/array/detail/checks.hpp"
#include "darray/array/detail/transport.hpp"
#include "darray/array/distributed_array.hpp"
#include "darray/runtime/detail/agree.hpp"
#include "darray/runtime/detail/state.hpp"

namespace darray {

// host_data_on_root: on the root, the whole array in row-major order (any contiguous host container of
// volume(shape) elements of type T); ignored on every other process, which may pass an empty container.
// Collective over all processes.
template <class T, int N, class MemorySpace = DefaultMemorySpace, class HostData>
DistributedArray<T, N, MemorySpace> scatter_from_root(int root_process, const HostData& host_data_on_root,
                                                      const Shape& shape, const NamedSharding& sharding) {
  constexpr const char* api = "scatter_from_root";
  detail::check_array_args<N>(api, shape, sharding);
  detail::check_root(api, root_process);
  detail::check_element_type<T, detail::container_element_t<HostData>>(api, "host_data_on_root");
  detail::check_collective<T, N>(api, shape, sharding, root_process);
  const int me = process_index();
  const T* source = nullptr;
  // Only the root's input can be wrong; agreeing on it keeps the other processes from waiting for a message.
  detail::run_agreed(detail::world_comm(), [&] {
    if (me != root_process) return;
    const auto [ptr, count] = detail::host_span<T>(api, "host_data_on_root", host_data_on_root);
    DARRAY_THROW_IF(count != volume(shape), InvalidArgument, api,
                    "host_data_on_root on the root (process " << root_process << ") has " << count
                                                              << " elements but the shape " << numpy_shape_string(shape)
                                                              << " has " << volume(shape));
    source = ptr;
  });

  const auto devs = detail::process_device_blocks(sharding, shape, me);
  auto shards = detail::allocate_shards_agreed<T, N, MemorySpace>(devs, /*initialize=*/false);
  const auto blocks = detail::distinct_blocks(devs);
  detail::StagingBuffer<T> staging;

  if (me == root_process) {
    const Index whole = full_index(shape);
    for (const detail::Block& b : blocks) {
      detail::copy_box_to_view<N>(source, whole, b.index, shards[b.holders[0]].data, staging, api);
      detail::fill_replicas(shards, b);
    }
    const auto all = detail::device_blocks_by_process(sharding, shape, process_count());
    for (int p = 0; p < process_count(); ++p) {
      if (p == root_process) continue;
      const auto theirs = detail::distinct_blocks(all[static_cast<std::size_t>(p)]);
      const int64_t n = detail::packed_volume(theirs);
      if (n == 0) continue;
      if (const auto off = detail::packed_offset_in(theirs, whole)) {
        detail::send_elements(source + *off, n, p, detail::scatter_tag, api);
      } else {
        staging.reserve(n, api);
        for (const detail::Block& b : theirs)
          detail::copy_box(source, whole, staging.data() + b.offset, b.index, b.index);
        detail::send_elements(staging.data(), n, p, detail::scatter_tag, api);
      }
    }
  } else {
    const int64_t n = detail::packed_volume(blocks);
    if (n > 0) {
      // A single block lands in its view directly when the host can address it.
      if (blocks.size() == 1 && detail::direct_host_access<MemorySpace>()) {
        detail::recv_elements(shards[blocks[0].holders[0]].data.data(), n, root_process, detail::scatter_tag, api);
        detail::fill_replicas(shards, blocks[0]);
      } else {
        staging.reserve(n, api);
        detail::recv_elements(staging.data(), n, root_process, detail::scatter_tag, api);
        detail::unpack_blocks<N>(staging.data(), blocks, shards);
      }
    }
  }
  return detail::adopt_shards<T, N, MemorySpace>(shape, sharding, std::move(shards));
}

}  // namespace darray
