// A ReshardPlan as the exchange engine's MoveList: every piece becomes a move between the blocks of this process's
// devices, each block stored row-major or in another axis order (an FFT stage), and the engine that runs it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "darray/array/detail/blocks.hpp"
#include "darray/core/index.hpp"
#include "darray/redistribute/detail/engine.hpp"
#include "darray/redistribute/plan.hpp"
#include "darray/runtime/environment.hpp"

namespace darray {
namespace detail {

// Element strides of every global dim of a block with box `box` in its buffer.
using BlockLayout = std::function<void(const Index& box, int64_t* strides)>;

inline void row_major_layout(const Index& box, int64_t* strides) { row_major_strides_into(box_shape(box), strides); }

// The engine's buffers are this process's devices of the mesh, in local-device order (the order of a
// DistributedArray's addressable shards); source and destination buffer k belong to the same device.
struct ReshardMoves {
  MoveList list;
  std::vector<int> device_ids;
  std::vector<Index> src_boxes;
  std::vector<DeviceBlock> dst_blocks;  // device, box and replica id of each destination block
};

inline ReshardMoves reshard_moves(const ReshardPlan& plan, const BlockLayout& src_layout,
                                  const BlockLayout& dst_layout) {
  ReshardMoves out;
  std::unordered_map<int, int> slot_of;  // device id -> buffer
  auto slot = [&](const Device& d) { return slot_of.at(d.id); };
  // local_devices() is in local-device order (the order of a DistributedArray's addressable shards).
  for (const Device& d : local_devices()) {
    if (!plan.src().mesh().contains(d)) continue;
    slot_of.emplace(d.id, static_cast<int>(out.device_ids.size()));
    out.device_ids.push_back(d.id);
    out.src_boxes.push_back(plan.src().index(plan.shape(), d));
    out.dst_blocks.push_back(DeviceBlock{d, plan.dst().index(plan.shape(), d), plan.dst().replica_id(d)});
  }

  int64_t strides[max_copy_rank];
  auto src_region = [&](const PlanPiece& p) {
    const int b = slot(p.src);
    src_layout(out.src_boxes[static_cast<std::size_t>(b)], strides);
    return region_in(b, out.src_boxes[static_cast<std::size_t>(b)], p.box, strides);
  };
  auto dst_region = [&](const PlanPiece& p) {
    const int b = slot(p.dst);
    const Index& box = out.dst_blocks[static_cast<std::size_t>(b)].index;
    dst_layout(box, strides);
    return region_in(b, box, p.box, strides);
  };
  for (const PlanPiece& p : plan.local_pieces())
    out.list.local.push_back(make_move(p.box, src_region(p), dst_region(p)));
  for (const PeerPieces& peer : plan.sends())
    for (const PlanPiece& p : peer.pieces)
      add_peer_move(out.list.sends, peer.process, make_move(p.box, src_region(p), Region{}));
  for (const PeerPieces& peer : plan.recvs())
    for (const PlanPiece& p : peer.pieces)
      add_peer_move(out.list.recvs, peer.process, make_move(p.box, Region{}, dst_region(p)));
  out.list.colors = plan.group_colors();
  out.list.operation = operation_fingerprint(plan.src(), plan.dst(), plan.shape());
  return out;
}

// The engine of a plan between row-major blocks, built on the plan's first execution and kept with it.
struct ReshardEngine {
  std::vector<int> device_ids;          // buffer k is the block of device device_ids[k]
  std::vector<DeviceBlock> dst_blocks;  // and is made for the output as dst_blocks[k] says (allocate_shards)
  MoveEngine engine;
  ReshardEngine(ReshardMoves m, std::size_t element_bytes)
      : device_ids(std::move(m.device_ids)),
        dst_blocks(std::move(m.dst_blocks)),
        engine(std::move(m.list), element_bytes, "reshard") {}
};

inline const ReshardEngine& reshard_engine(const ReshardPlan& plan) {
  if (!plan.m_engine)
    plan.m_engine = std::make_shared<const ReshardEngine>(reshard_moves(plan, row_major_layout, row_major_layout),
                                                          plan.element_bytes());
  return *plan.m_engine;
}

}  // namespace detail
}  // namespace darray
