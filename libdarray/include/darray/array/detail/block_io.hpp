// Moving one block between a host row-major buffer and a shard's view, with as few copies as the memory space
// allows: in place when the block is contiguous in the host buffer, straight into view.data() when the host can
// address the view, through a counted staging buffer otherwise (GPU memory). Plus shard allocation and
// replica fill for the factories.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "darray/array/detail/blocks.hpp"
#include "darray/array/detail/box_copy.hpp"
#include "darray/array/detail/shard_lists.hpp"
#include "darray/array/detail/transport.hpp"
#include "darray/array/detail/view.hpp"
#include "darray/array/shard.hpp"
#include "darray/core/index.hpp"
#include "darray/runtime/detail/agree.hpp"
#include "darray/runtime/detail/state.hpp"

namespace darray {
namespace detail {

// One shard per block of `blocks` (in their order; anything with a device, an index and a replica id: DeviceBlocks,
// another array's shards), each view sized to its box and made in place (allocate_views_each: one cached block for
// all of them), the list from the shard list pool.
template <class T, int N, class MemorySpace, class Blocks>
std::vector<Shard<T, N, MemorySpace>> allocate_shards(const Blocks& blocks, bool initialize,
                                                      const std::string& label = "darray::shard") {
  static thread_local std::vector<Shape> shapes;  // the boxes' shapes, in storage kept from call to call
  shapes.resize(blocks.size());
  for (std::size_t k = 0; k < blocks.size(); ++k) box_shape_into(blocks[k].index, shapes[k]);
  std::vector<Shard<T, N, MemorySpace>> shards =
      ShardListPool<Shard<T, N, MemorySpace>>::template take_with_views<T, N>(
          label, blocks.size(), [&](std::size_t k) -> const Shape& { return shapes[k]; }, initialize)
          .shards;
  for (std::size_t k = 0; k < blocks.size(); ++k) {
    shards[k].device = blocks[k].device;
    assign_index(shards[k].index, blocks[k].index);
    shards[k].replica_id = blocks[k].replica_id;
  }
  return shards;
}

// allocate_shards agreed over all processes. An allocation failure is local (one process may run out of memory
// where the others do not), so every process throws the first failing process's error instead of some waiting in
// the next collective for it. Collective: one MPI_Allreduce of an int.
template <class T, int N, class MemorySpace>
std::vector<Shard<T, N, MemorySpace>> allocate_shards_agreed(const std::vector<DeviceBlock>& devs, bool initialize) {
  std::vector<Shard<T, N, MemorySpace>> shards;
  run_agreed(world_comm(), [&] { shards = allocate_shards<T, N, MemorySpace>(devs, initialize); });
  return shards;
}

// The view holding `block` <- that block of the host buffer (src, src_box).
template <int N, class View>
void copy_box_to_view(const typename View::non_const_value_type* src, const Index& src_box, const Index& block,
                      const View& dst, StagingBuffer<typename View::non_const_value_type>& staging, const char* api) {
  if (volume(block) == 0) return;
  if (const auto off = contiguous_offset(block, src_box)) {
    copy_host_to_view<N>(src + *off, dst);
  } else if (direct_host_access<typename View::memory_space>()) {
    copy_box(src, src_box, dst.data(), block, block);
  } else {
    staging.reserve(volume(block), api);
    copy_box(src, src_box, staging.data(), block, block);
    copy_host_to_view<N>(staging.data(), dst);
  }
}

// That block of the host buffer (dst, dst_box) <- the view holding `block`. Callers fence kernels first.
template <int N, class View>
void copy_view_to_box(const View& src, const Index& block, typename View::non_const_value_type* dst,
                      const Index& dst_box, StagingBuffer<typename View::non_const_value_type>& staging,
                      const char* api) {
  if (volume(block) == 0) return;
  if (const auto off = contiguous_offset(block, dst_box)) {
    copy_view_to_host<N>(src, dst + *off);
  } else if (direct_host_access<typename View::memory_space>()) {
    copy_box(src.data(), block, dst, dst_box, block);
  } else {
    staging.reserve(volume(block), api);
    copy_view_to_host<N>(src, staging.data());
    copy_box(staging.data(), block, dst, dst_box, block);
  }
}

// Copies a block's first holder into its other holders on this process (device to device, no host round trip).
template <class Shards>
void fill_replicas(const Shards& shards, const Block& block) {
  for (std::size_t k = 1; k < block.holders.size(); ++k)
    Kokkos::deep_copy(shards[block.holders[k]].data, shards[block.holders[0]].data);
}

// Fills every shard from a packed message: the blocks back to back in Block order.
template <int N, class Shards, class T>
void unpack_blocks(const T* packed, const std::vector<Block>& blocks, const Shards& shards) {
  for (const Block& b : blocks) {
    copy_host_to_view<N>(packed + b.offset, shards[b.holders[0]].data);
    fill_replicas(shards, b);
  }
}

// Writes the blocks back to back in Block order, each from its first holder.
template <int N, class Shards, class T>
void pack_blocks(const Shards& shards, const std::vector<Block>& blocks, T* packed) {
  for (const Block& b : blocks) copy_view_to_host<N>(shards[b.holders[0]].data, packed + b.offset);
}

}  // namespace detail
}  // namespace darray
