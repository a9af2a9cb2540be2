// ReshardPlan: which box of the global array every device of this process sends to and receives from which
// device, to go from one sharding to another. Built by each process from replicated metadata alone, without
// communication, at a cost that grows with its real peers, never with the total device count.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "darray/core/error.hpp"
#include "darray/core/index.hpp"
#include "darray/core/partition.hpp"
#include "darray/redistribute/detail/groups.hpp"
#include "darray/redistribute/detail/replica_chooser.hpp"
#include "darray/sharding/named_sharding.hpp"

namespace darray {

class ReshardPlan;
namespace detail {
struct ReshardEngine;
// The plan's exchange engine, built on its first execution (redistribute/detail/reshard_moves.hpp).
inline const ReshardEngine& reshard_engine(const ReshardPlan& plan);
}  // namespace detail

// One box that moves from a source device's shard to a destination device's shard (global coordinates).
struct PlanPiece {
  Device src;
  Device dst;
  Index box;
  int64_t elements() const { return volume(box); }
};

// All pieces between this process and one peer process, in the canonical order both sides agree on.
struct PeerPieces {
  int process = -1;
  std::vector<PlanPiece> pieces;
  int64_t elements = 0;
};

struct ReshardStats {
  int64_t bytes_kept = 0;  // moved between devices of this process (or kept in place)
  int64_t bytes_sent = 0;
  int64_t bytes_received = 0;
  int send_peers = 0;  // distinct remote processes
  int recv_peers = 0;
  bool sub_communicator = false;         // exchange runs on a mesh-axis-group communicator
  std::vector<std::string> moving_axes;  // mesh axes whose role changes (when the meshes are equal)
};

class ReshardPlan {
 public:
  // Plans the reshard of an array of `shape` and element size `element_bytes` from `src` to `dst`, as seen by
  // process `process` (defaults to this process in redistribute/reshard.hpp; any process index works offline).
  ReshardPlan(NamedSharding src, NamedSharding dst, Shape shape, std::size_t element_bytes, int process)
      : m_src(std::move(src)),
        m_dst(std::move(dst)),
        m_shape(std::move(shape)),
        m_element_bytes(element_bytes),
        m_process(process) {
    build(validate());
  }

  const NamedSharding& src() const { return m_src; }
  const NamedSharding& dst() const { return m_dst; }
  const Shape& shape() const { return m_shape; }
  std::size_t element_bytes() const { return m_element_bytes; }
  int process() const { return m_process; }

  // Pieces whose source and destination devices both belong to this process.
  const std::vector<PlanPiece>& local_pieces() const { return m_local; }
  // Per remote peer process, sorted by process index.
  const std::vector<PeerPieces>& sends() const { return m_sends; }
  const std::vector<PeerPieces>& recvs() const { return m_recvs; }
  const ReshardStats& stats() const { return m_stats; }
  // One color per process of the job when the exchange runs on mesh-axis-group sub-communicators, else empty.
  // Computed on first use (O(processes), once per plan); building the plan visits only this process's peers.
  const std::vector<int>& group_colors() const {
    static const std::vector<int> no_colors;
    if (!m_groups) return no_colors;
    std::call_once(m_groups->once,
                   [this] { m_groups->colors = detail::group_colors(m_src.mesh(), m_groups->stable_axes); });
    return m_groups->colors;
  }

 private:
  friend const detail::ReshardEngine& detail::reshard_engine(const ReshardPlan& plan);

  // Returns whether the two meshes are equal (O(1) for copies of one Mesh), which the grouping needs too.
  bool validate() const {
    m_src.check_shape(m_shape);
    m_dst.check_shape(m_shape);
    const auto& a = m_src.mesh();
    const auto& b = m_dst.mesh();
    // Copies of one Mesh, or equal meshes, need no look-up per device.
    const bool equal = a == b;
    bool same_set = a.size() == b.size();
    if (same_set && !equal)
      for (std::size_t i = 0; same_set && i < b.devices().size(); ++i) same_set = a.contains(b.devices()[i]);
    DARRAY_THROW_IF(!same_set, InvalidArgument, "reshard",
                    "source mesh " << a << " and destination mesh " << b
                                   << " are over different device sets; a reshard keeps the devices and moves data "
                                      "between them, so both meshes must hold the same devices");
    DARRAY_THROW_IF(m_element_bytes == 0, InvalidArgument, "reshard", "element size 0; expected a positive size");
    return equal;
  }

  // Per-dim parts of `sharding` overlapping `box`, as ranges; the Cartesian product enumerates the blocks.
  static std::vector<Slice> overlapping_parts(const NamedSharding& sharding, const Shape& shape, const Index& box) {
    std::vector<Slice> ranges(shape.size());
    for (std::size_t d = 0; d < shape.size(); ++d)
      ranges[d] = blocks_overlapping(shape[d], sharding.num_parts(static_cast<int>(d)), box[d]);
    return ranges;
  }

  // Calls fn(parts) for every tuple in the Cartesian product of ranges (none when any range is empty).
  template <class Fn>
  static void for_each_tuple(const std::vector<Slice>& ranges, Fn&& fn) {
    std::vector<int64_t> parts(ranges.size());
    for (std::size_t d = 0; d < ranges.size(); ++d) {
      if (ranges[d].empty()) return;
      parts[d] = ranges[d].start;
    }
    while (true) {
      fn(parts);
      std::size_t d = ranges.size();
      while (d > 0) {
        --d;
        if (++parts[d] < ranges[d].stop) break;
        parts[d] = ranges[d].start;
        if (d == 0) return;
      }
      if (ranges.empty()) return;
    }
  }

  static Index block_box(const NamedSharding& sharding, const Shape& shape, const std::vector<int64_t>& parts) {
    Index box(shape.size());
    for (std::size_t d = 0; d < shape.size(); ++d)
      box[d] = block_slice(shape[d], sharding.num_parts(static_cast<int>(d)), parts[d]);
    return box;
  }

  static std::vector<int64_t> parts_of(const NamedSharding& sharding, const Device& dev, std::size_t rank) {
    std::vector<int64_t> parts(rank);
    for (std::size_t d = 0; d < rank; ++d) parts[d] = sharding.part_index(dev, static_cast<int>(d));
    return parts;
  }

  void add(PlanPiece&& piece, std::unordered_map<int, std::size_t>& slot, std::vector<PeerPieces>& peers, int peer) {
    auto it = slot.find(peer);
    if (it == slot.end()) {
      it = slot.emplace(peer, peers.size()).first;
      peers.push_back(PeerPieces{peer, {}, 0});
    }
    PeerPieces& p = peers[it->second];
    p.elements += piece.elements();
    p.pieces.push_back(std::move(piece));
  }

  void build(bool meshes_equal) {
    const std::size_t rank = m_shape.size();
    auto mine = [&](const Mesh& mesh) {
      std::vector<Device> out;
      for (int64_t pos : mesh.process_positions(m_process))
        out.push_back(mesh.devices()[static_cast<std::size_t>(pos)]);
      return out;
    };
    const std::vector<Device> mine_src = mine(m_src.mesh()), mine_dst = mine(m_dst.mesh());
    std::unordered_map<int, std::size_t> send_slot, recv_slot;

    // Receives (and local pieces): every block of every local destination device, from its chosen source.
    for (const Device& d : mine_dst) {
      const Index dbox = m_dst.index(m_shape, d);
      if (volume(dbox) == 0) continue;
      for_each_tuple(overlapping_parts(m_src, m_shape, dbox), [&](const std::vector<int64_t>& sparts) {
        const Device s = detail::ReplicaChooser(m_src, sparts).choose(d);
        Index box = intersect(block_box(m_src, m_shape, sparts), dbox);
        if (volume(box) == 0) return;
        if (s.process_index == m_process)
          m_local.push_back(PlanPiece{s, d, std::move(box)});
        else
          add(PlanPiece{s, d, std::move(box)}, recv_slot, m_recvs, s.process_index);
      });
    }
    // Sends: for every local source device, every destination device that chose it for an overlapping block.
    for (const Device& s : mine_src) {
      const std::vector<int64_t> sparts = parts_of(m_src, s, rank);
      const Index sbox = block_box(m_src, m_shape, sparts);
      if (volume(sbox) == 0) continue;
      const detail::ReplicaChooser chooser(m_src, sparts);
      for_each_tuple(overlapping_parts(m_dst, m_shape, sbox), [&](const std::vector<int64_t>& dparts) {
        const Index dbox = block_box(m_dst, m_shape, dparts);
        Index box = intersect(sbox, dbox);
        if (volume(box) == 0) return;
        for (const Device& d : m_dst.replica_devices(dparts)) {
          if (d.process_index == m_process) continue;  // local pieces were planned above
          if (chooser.choose(d).id != s.id) continue;
          add(PlanPiece{s, d, box}, send_slot, m_sends, d.process_index);
        }
      });
    }
    // Canonical order, identical on both sides of every pair: by (dst id, src id).
    auto by_devices = [](const PlanPiece& a, const PlanPiece& b) {
      return a.dst.id != b.dst.id ? a.dst.id < b.dst.id : a.src.id < b.src.id;
    };
    auto by_process = [](const PeerPieces& a, const PeerPieces& b) { return a.process < b.process; };
    for (auto* list : {&m_sends, &m_recvs}) {
      std::sort(list->begin(), list->end(), by_process);
      for (PeerPieces& p : *list) std::sort(p.pieces.begin(), p.pieces.end(), by_devices);
    }
    std::sort(m_local.begin(), m_local.end(), by_devices);

    const auto eb = static_cast<int64_t>(m_element_bytes);
    for (const PlanPiece& p : m_local) m_stats.bytes_kept += p.elements() * eb;
    for (const PeerPieces& p : m_sends) m_stats.bytes_sent += p.elements * eb;
    for (const PeerPieces& p : m_recvs) m_stats.bytes_received += p.elements * eb;
    m_stats.send_peers = static_cast<int>(m_sends.size());
    m_stats.recv_peers = static_cast<int>(m_recvs.size());

    const detail::MovingAxisGroups groups = detail::moving_axis_groups(m_src, m_dst, meshes_equal);
    m_stats.moving_axes = groups.moving_axes;
    if (groups.grouped) {
      // The grouping is a property of the shardings; check that this process's pieces respect it (they do by
      // construction of ReplicaChooser; a violation is a bug, reported loudly rather than deadlocking).
      const Mesh& mesh = m_src.mesh();
      auto color = [&](const Device& d) { return detail::group_color(mesh, groups.stable_axes, mesh.position(d)); };
      for (const auto* list : {&m_sends, &m_recvs})
        for (const PeerPieces& p : *list)
          for (const PlanPiece& piece : p.pieces)
            DARRAY_THROW_IF(color(piece.src) != color(piece.dst), Error, "ReshardPlan",
                            "internal: piece between processes " << m_process << " and " << p.process
                                                                 << " crosses mesh-axis groups");
      m_groups = std::make_shared<detail::LazyGroupColors>(groups.stable_axes);
      m_stats.sub_communicator = true;
    }
  }

  NamedSharding m_src;
  NamedSharding m_dst;
  Shape m_shape;
  std::size_t m_element_bytes;
  int m_process;
  std::vector<PlanPiece> m_local;
  std::vector<PeerPieces> m_sends;
  std::vector<PeerPieces> m_recvs;
  ReshardStats m_stats;
  std::shared_ptr<detail::LazyGroupColors> m_groups;  // null when the exchange runs on the world communicator
  mutable std::shared_ptr<const detail::ReshardEngine> m_engine;  // built on first execution, shared by copies
};

}  // namespace darray
