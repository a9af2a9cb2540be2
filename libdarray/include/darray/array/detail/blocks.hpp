// Which blocks each process holds, derived from replicated metadata only, so sender and receiver agree on message
// layouts without exchanging them: a process's devices in local-device order (the order of its shards), its
// distinct non-empty blocks (replicas on one process share one copy in messages), its replica-0 blocks (what it
// contributes to a gather) and the box its blocks tile (host-local data).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "darray/array/detail/box_copy.hpp"
#include "darray/core/error.hpp"
#include "darray/core/index.hpp"
#include "darray/runtime/device.hpp"
#include "darray/sharding/named_sharding.hpp"

namespace darray {
namespace detail {

struct DeviceBlock {
  Device device;
  Index index;
  int64_t replica_id = 0;
};

// A distinct non-empty block as laid out in a packed message: `offset` elements from the start, `holders` the
// positions (in the process's DeviceBlock list) of every device that holds it, first holder first.
struct Block {
  Index index;
  int64_t volume = 0;
  int64_t offset = 0;
  std::vector<std::size_t> holders;
};

struct IndexHash {
  std::size_t operator()(const Index& index) const noexcept {
    std::size_t h = index.size();
    for (const Slice& s : index) hash_combine(h, std::hash<Slice>{}(s));
    return h;
  }
};

inline void sort_local_order(std::vector<DeviceBlock>& devs) {
  std::sort(devs.begin(), devs.end(),
            [](const DeviceBlock& a, const DeviceBlock& b) { return a.device.local_index < b.device.local_index; });
}

// `process`'s mesh devices with their boxes, in local-device order. O(its devices).
inline std::vector<DeviceBlock> process_device_blocks(const NamedSharding& sharding, const Shape& shape, int process) {
  std::vector<DeviceBlock> devs;
  for (auto& [device, index] : sharding.addressable_devices_indices_map(shape, process))
    devs.push_back(DeviceBlock{device, std::move(index), sharding.replica_id(device)});
  sort_local_order(devs);
  return devs;
}

// Every process's device list from one pass over the mesh (roots of scatter and gather need all of them).
inline std::vector<std::vector<DeviceBlock>> device_blocks_by_process(const NamedSharding& sharding, const Shape& shape,
                                                                      int process_count) {
  std::vector<std::vector<DeviceBlock>> out(static_cast<std::size_t>(process_count));
  for (auto& [device, index] : sharding.devices_indices_map(shape)) {
    DARRAY_THROW_IF(device.process_index < 0 || device.process_index >= process_count, InvalidArgument, "sharding",
                    "mesh device " << device << " belongs to process " << device.process_index << " but the job has "
                                   << process_count << " processes");
    out[static_cast<std::size_t>(device.process_index)].push_back(
        DeviceBlock{device, std::move(index), sharding.replica_id(device)});
  }
  for (auto& devs : out) sort_local_order(devs);
  return out;
}

inline void assign_offsets(std::vector<Block>& blocks) {
  int64_t offset = 0;
  for (Block& b : blocks) {
    b.offset = offset;
    offset += b.volume;
  }
}

// Distinct non-empty blocks in first-holder order. Distinct parts of a NamedSharding are disjoint, so equal boxes
// are exactly the replicas of one block.
inline std::vector<Block> distinct_blocks(const std::vector<DeviceBlock>& devs) {
  std::vector<Block> blocks;
  std::unordered_map<Index, std::size_t, IndexHash> seen;
  for (std::size_t i = 0; i < devs.size(); ++i) {
    const int64_t v = volume(devs[i].index);
    if (v == 0) continue;
    const auto [it, fresh] = seen.emplace(devs[i].index, blocks.size());
    if (fresh) blocks.push_back(Block{devs[i].index, v, 0, {}});
    blocks[it->second].holders.push_back(i);
  }
  assign_offsets(blocks);
  return blocks;
}

// The non-empty blocks whose replica 0 this device list holds: each block of the array appears in exactly one
// process's list, so a gather moves every block once.
inline std::vector<Block> replica0_blocks(const std::vector<DeviceBlock>& devs) {
  std::vector<Block> blocks;
  for (std::size_t i = 0; i < devs.size(); ++i) {
    const int64_t v = volume(devs[i].index);
    if (v > 0 && devs[i].replica_id == 0) blocks.push_back(Block{devs[i].index, v, 0, {i}});
  }
  assign_offsets(blocks);
  return blocks;
}

inline int64_t packed_volume(const std::vector<Block>& blocks) {
  return blocks.empty() ? 0 : blocks.back().offset + blocks.back().volume;
}

// Offset of the whole packed message inside the row-major buffer of `box` when the blocks lie there back to back
// in message order (row blocks of consecutive devices, the common case), so it can be sent or received in place.
inline std::optional<int64_t> packed_offset_in(const std::vector<Block>& blocks, const Index& box) {
  std::optional<int64_t> first;
  for (const Block& b : blocks) {
    const auto off = contiguous_offset(b.index, box);
    if (!off) return std::nullopt;
    if (!first) first = *off - b.offset;
    if (*off != *first + b.offset) return std::nullopt;
  }
  return first;
}

// The bounding box of blocks (rank `rank`); all-empty slices when there are none.
inline Index bounding_box(const std::vector<Block>& blocks, std::size_t rank) {
  Index box(rank, Slice{0, 0});
  for (std::size_t k = 0; k < blocks.size(); ++k)
    for (std::size_t d = 0; d < rank; ++d) {
      const Slice& s = blocks[k].index[d];
      box[d] = k == 0 ? s : Slice{std::min(box[d].start, s.start), std::max(box[d].stop, s.stop)};
    }
  return box;
}

inline std::string block_list(const std::vector<Block>& blocks) {
  std::ostringstream os;
  const std::size_t shown = std::min<std::size_t>(blocks.size(), 4);
  for (std::size_t k = 0; k < shown; ++k) os << (k ? ", " : "") << blocks[k].index;
  if (blocks.size() > shown) os << ", ... (" << blocks.size() << " blocks)";
  return os.str();
}

// The box a process's blocks tile; throws unless they tile it exactly (the blocks are disjoint, so that is: their
// volumes add up to the box's).
inline Index tiled_box(const char* api, const std::vector<Block>& blocks, std::size_t rank, int process) {
  const Index box = bounding_box(blocks, rank);
  DARRAY_THROW_IF(packed_volume(blocks) != volume(box), InvalidArgument, api,
                  "process " << process << "'s devices hold the blocks " << block_list(blocks)
                             << ", which do not tile one box: their bounding box " << box << " has " << volume(box)
                             << " elements but they hold " << packed_volume(blocks)
                             << "; host-local data needs each process's blocks to form one contiguous hyper-rectangle "
                                "(choose a mesh whose process-local devices are adjacent along the sharded axes)");
  return box;
}

// Every process's box, checked for all of them so that every process throws the same error; returns `process`'s.
inline Index checked_process_box(const char* api, const NamedSharding& sharding, const Shape& shape, int process_count,
                                 int process) {
  Index mine;
  const auto all = device_blocks_by_process(sharding, shape, process_count);
  for (int p = 0; p < process_count; ++p) {
    Index box = tiled_box(api, distinct_blocks(all[static_cast<std::size_t>(p)]), shape.size(), p);
    if (p == process) mine = std::move(box);
  }
  return mine;
}

}  // namespace detail
}  // namespace darray
