// The whole array on the host, as multihost_utils.process_allgather: on every process (process_allgather) or on
// one (gather_to_root). Each block travels once, from the process holding its replica 0, packed with that
// process's other replica-0 blocks into one message; sizes follow from the sharding, so nothing else is exchanged.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <vector>

#include "darray/array/detail/block_io.hpp"
#include "darray/array/detail/blocks.hpp"
#include "darray/array/detail/checks.hpp"
#include "darray/array/detail/transport.hpp"
#include "darray/array/distributed_array.hpp"
#include "darray/runtime/detail/kokkos_compat.hpp"

namespace darray {

// Every process gets the whole array, row-major. Collective: each process with replica-0 blocks broadcasts them.
template <class T, int N, class MemorySpace>
std::vector<T> process_allgather(const DistributedArray<T, N, MemorySpace>& a) {
  constexpr const char* api = "process_allgather";
  detail::check_collective<T, N>(api, a.shape(), a.sharding());
  const int me = process_index();
  const Index whole = full_index(a.shape());
  const auto all = detail::device_blocks_by_process(a.sharding(), a.shape(), process_count());
  detail::fence_writers_of<MemorySpace>();  // kernels that wrote the shards may still run
  std::vector<T> out(static_cast<std::size_t>(a.size()));
  detail::StagingBuffer<T> staging;
  for (int p = 0; p < process_count(); ++p) {
    const auto blocks = detail::replica0_blocks(all[static_cast<std::size_t>(p)]);
    const int64_t n = detail::packed_volume(blocks);
    if (n == 0) continue;
    const auto off = detail::packed_offset_in(blocks, whole);
    if (p == me) {
      for (const detail::Block& b : blocks)
        detail::copy_view_to_box<N>(a.addressable_shards()[b.holders[0]].data, b.index, out.data(), whole, staging,
                                    api);
      if (off) {
        detail::bcast_elements(out.data() + *off, n, p, api);
      } else {
        staging.reserve(n, api);
        detail::pack_blocks<N>(a.addressable_shards(), blocks, staging.data());
        detail::bcast_elements(staging.data(), n, p, api);
      }
    } else if (off) {
      detail::bcast_elements(out.data() + *off, n, p, api);
    } else {
      staging.reserve(n, api);
      detail::bcast_elements(staging.data(), n, p, api);
      for (const detail::Block& b : blocks)
        detail::copy_box(staging.data() + b.offset, b.index, out.data(), whole, b.index);
    }
  }
  return out;
}

// The root gets the whole array, row-major; every other process gets an empty vector. Collective.
template <class T, int N, class MemorySpace>
std::vector<T> gather_to_root(const DistributedArray<T, N, MemorySpace>& a, int root) {
  constexpr const char* api = "gather_to_root";
  detail::check_root(api, root);
  detail::check_collective<T, N>(api, a.shape(), a.sharding(), root);
  const int me = process_index();
  detail::fence_writers_of<MemorySpace>();  // kernels that wrote the shards may still run
  detail::StagingBuffer<T> staging;
  if (me != root) {
    const auto blocks = detail::replica0_blocks(detail::process_device_blocks(a.sharding(), a.shape(), me));
    const int64_t n = detail::packed_volume(blocks);
    if (n == 0) return {};
    if (blocks.size() == 1 && detail::direct_host_access<MemorySpace>()) {
      detail::send_elements(a.addressable_shards()[blocks[0].holders[0]].data.data(), n, root, detail::gather_tag, api);
    } else {
      staging.reserve(n, api);
      detail::pack_blocks<N>(a.addressable_shards(), blocks, staging.data());
      detail::send_elements(staging.data(), n, root, detail::gather_tag, api);
    }
    return {};
  }
  const Index whole = full_index(a.shape());
  const auto all = detail::device_blocks_by_process(a.sharding(), a.shape(), process_count());
  std::vector<T> out(static_cast<std::size_t>(a.size()));
  for (int p = 0; p < process_count(); ++p) {
    const auto blocks = detail::replica0_blocks(all[static_cast<std::size_t>(p)]);
    const int64_t n = detail::packed_volume(blocks);
    if (n == 0) continue;
    if (p == me) {
      for (const detail::Block& b : blocks)
        detail::copy_view_to_box<N>(a.addressable_shards()[b.holders[0]].data, b.index, out.data(), whole, staging,
                                    api);
    } else if (const auto off = detail::packed_offset_in(blocks, whole)) {
      detail::recv_elements(out.data() + *off, n, p, detail::gather_tag, api);
    } else {
      staging.reserve(n, api);
      detail::recv_elements(staging.data(), n, p, detail::gather_tag, api);
      for (const detail::Block& b : blocks)
        detail::copy_box(staging.data() + b.offset, b.index, out.data(), whole, b.index);
    }
  }
  return out;
}

}  // namespace darray
