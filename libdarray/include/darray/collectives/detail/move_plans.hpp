// Plans of the collectives that move blocks without arithmetic: all_gather, all_to_all and ppermute. Every result
// region comes from one source device's block: copied directly when that device, or a replica of its block, is on
// this process, else received once per (source device, region) from the source's process, whatever the number of
// local devices that need it. Senders derive the same list from the same metadata, so nothing but data travels.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "darray/array/detail/blocks.hpp"
#include "darray/collectives/detail/axis_groups.hpp"
#include "darray/collectives/detail/block_checks.hpp"
#include "darray/collectives/detail/plan.hpp"
#include "darray/collectives/detail/result_layout.hpp"
#include "darray/core/error.hpp"
#include "darray/core/index.hpp"
#include "darray/runtime/environment.hpp"
#include "darray/sharding/named_sharding.hpp"

namespace darray {
namespace detail {

// Which processes hold a copy of a block (all devices with the same part indices hold the same data), memoized:
// a piece whose receiver already holds a replica is copied there instead of sent.
class ReplicaHolders {
 public:
  ReplicaHolders(const NamedSharding& s, std::size_t rank) : m_sharding(s), m_rank(rank) {}

  // The first device of `process` that holds a replica of `of`'s block, or nullptr.
  const Device* on_process(const Device& of, const Index& box, int process) {
    auto it = m_holders.find(box);
    if (it == m_holders.end()) {
      std::vector<int64_t> parts(m_rank);
      for (std::size_t d = 0; d < m_rank; ++d) parts[d] = m_sharding.part_index(of, static_cast<int>(d));
      it = m_holders.emplace(box, m_sharding.replica_devices(parts)).first;
    }
    for (const Device& d : it->second)
      if (d.process_index == process) return &d;
    return nullptr;
  }

 private:
  const NamedSharding& m_sharding;
  std::size_t m_rank;
  std::unordered_map<Index, std::vector<Device>, IndexHash> m_holders;
};

// Collects the copies and pieces of a movement plan.
class MovePlanner {
 public:
  MovePlanner(CollectiveSchedule& plan, const NamedSharding& operand, const Shape& shape)
      : m_plan(plan), m_operand(operand), m_shape(shape), m_replicas(operand, shape.size()), m_me(process_index()) {}

  // Result region (dst_start, extent) of target t comes from `source`'s block, viewed with shape src_shape, at
  // src_start; key_chunk names the region among the pieces of that source (equal keys mean equal regions).
  void need(std::size_t t, const Device& source, const Shape& src_shape, const Shape& src_start, const Shape& dst_start,
            const Shape& extent, int64_t key_chunk) {
    if (volume(extent) == 0) return;
    Copy c{t, CopySource::shard, source.id, src_shape, src_start, dst_start, extent};
    if (source.process_index != m_me) {
      if (const Device* local = m_replicas.on_process(source, box_of(source), m_me)) {
        c.source = local->id;
      } else {
        const auto key = std::make_pair(static_cast<int64_t>(source.id), key_chunk);
        auto it = m_recv_of.find(key);
        if (it == m_recv_of.end()) {
          it = m_recv_of.emplace(key, m_plan.recvs.size()).first;
          m_plan.recvs.push_back(Piece{source.process_index, source.id, key_chunk, {}, {}, extent, 0});
        }
        c.from = CopySource::received;
        c.source = static_cast<int64_t>(it->second);
        c.src_shape = extent;
        c.src_start.assign(extent.size(), 0);
      }
    }
    m_plan.copies.push_back(std::move(c));
  }

  // This process's device `source` owes the region to a device of `process`, unless that process has it already.
  void give(const Device& source, int process, const Shape& src_shape, const Shape& src_start, const Shape& extent,
            int64_t key_chunk) {
    if (process == m_me || volume(extent) == 0) return;
    if (m_replicas.on_process(source, box_of(source), process) != nullptr) return;
    if (!m_sent.insert(std::make_tuple(process, static_cast<int64_t>(source.id), key_chunk)).second) return;
    m_plan.sends.push_back(Piece{process, source.id, key_chunk, src_shape, src_start, extent, 0});
  }

  // Sorts the pieces into the order both sides agree on; received copies follow their piece's new index.
  void finish() {
    std::vector<std::size_t> order(m_plan.recvs.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return m_plan.recvs[a] < m_plan.recvs[b]; });
    std::vector<std::size_t> new_index(order.size());
    std::vector<Piece> sorted;
    for (std::size_t i = 0; i < order.size(); ++i) {
      new_index[order[i]] = i;
      sorted.push_back(std::move(m_plan.recvs[order[i]]));
    }
    m_plan.recvs = std::move(sorted);
    for (Copy& c : m_plan.copies)
      if (c.from == CopySource::received)
        c.source = static_cast<int64_t>(new_index[static_cast<std::size_t>(c.source)]);
    std::sort(m_plan.sends.begin(), m_plan.sends.end());
    m_plan.recv_elements = assign_piece_offsets(m_plan.recvs);
    m_plan.send_elements = assign_piece_offsets(m_plan.sends);
  }

  Index box_of(const Device& d) const { return m_operand.index(m_shape, d); }

 private:
  CollectiveSchedule& m_plan;
  const NamedSharding& m_operand;
  const Shape& m_shape;
  ReplicaHolders m_replicas;
  int m_me;
  std::map<std::pair<int64_t, int64_t>, std::size_t> m_recv_of;
  std::set<std::tuple<int, int64_t, int64_t>> m_sent;
};

// all_gather over one axis: tiled concatenates the group's blocks along dim (uneven sizes along dim allowed),
// stacked inserts a new dim at `dim` (0 .. rank) holding them in axis order.
inline CollectiveSchedule build_all_gather_plan(const NamedSharding& s, const Shape& shape, int axis, int dim,
                                                bool stacked) {
  constexpr const char* api = "all_gather";
  const AxisGroups groups(s.mesh(), {axis});
  const Mesh& mesh = s.mesh();
  const int64_t n = groups.group_size();
  const auto d = static_cast<std::size_t>(dim);
  const std::size_t rank = shape.size(), out_rank = rank + (stacked ? 1 : 0);
  const GroupShapes gs = group_shapes(
      api, groups, s, shape, stacked ? -1 : dim,
      stacked ? "stacking needs equal blocks"
              : "concatenating along dim " + std::to_string(dim) + " needs blocks equal in every other dim");
  const std::string name = mesh.axis_names()[static_cast<std::size_t>(axis)];
  auto entries = spec_entries(s, rank);
  remove_axes(entries, {name});
  std::size_t keep = s.spec().size();
  if (stacked) {
    entries.insert(entries.begin() + static_cast<std::ptrdiff_t>(d), PartitionSpec::Entry{});
    if (d < keep) ++keep;
  }
  NamedSharding out_sharding(mesh, trimmed_spec(std::move(entries), keep));
  auto block_of = [&](int64_t pos) {
    const auto g = static_cast<std::size_t>(groups.group(pos));
    Shape b = gs.shape[g];
    if (stacked)
      b.insert(b.begin() + static_cast<std::ptrdiff_t>(d), n);
    else
      b[d] = gs.extent[g];
    return b;
  };
  CollectiveSchedule plan(out_sharding, derive_result_shape(api, out_sharding, out_rank, block_of, shape, s));
  set_components(plan, process_components(groups, process_count(), process_index()));

  MovePlanner planner(plan, s, shape);
  const Shape origin(out_rank, 0);
  auto viewed = [&](Shape b) {  // a block at the result's rank
    if (stacked) b.insert(b.begin() + static_cast<std::ptrdiff_t>(d), 1);
    return b;
  };
  const std::vector<int64_t> positions = add_targets(plan);
  for (std::size_t t = 0; t < positions.size(); ++t) {
    int64_t offset = 0;
    for (int64_t j = 0; j < n; ++j) {
      const Device& v = groups.device(groups.member_position(positions[t], j));
      const Shape b = box_shape(planner.box_of(v));
      Shape at = origin;
      at[d] = stacked ? j : offset;
      // Stacking may insert the new dim after the last one (d == rank): b has no entry d then, and needs none.
      if (!stacked) offset += b[d];
      planner.need(t, v, viewed(b), origin, at, viewed(b), 0);
    }
  }
  for (const int64_t pos : positions) {
    const Device& v = groups.device(pos);
    const Shape b = viewed(box_shape(planner.box_of(v)));
    for (int64_t i = 0; i < n; ++i) planner.give(v, groups.process(groups.member_position(pos, i)), b, origin, b, 0);
  }
  planner.finish();
  return plan;
}

// all_to_all over one axis (tiled): the device with axis index i receives chunk i (along split_dim) of every block
// of its group, concatenated along concat_dim in axis order.
inline CollectiveSchedule build_all_to_all_plan(const NamedSharding& s, const Shape& shape, int axis, int split_dim,
                                                int concat_dim) {
  constexpr const char* api = "all_to_all";
  const AxisGroups groups(s.mesh(), {axis});
  const Mesh& mesh = s.mesh();
  const int64_t n = groups.group_size();
  const auto sd = static_cast<std::size_t>(split_dim), cd = static_cast<std::size_t>(concat_dim);
  const GroupShapes gs = group_shapes(api, groups, s, shape, -1, "all_to_all exchanges equal chunks");
  check_chunks(api, groups, gs, split_dim, "split_dim", shape, s);
  const std::string name = mesh.axis_names()[static_cast<std::size_t>(axis)];
  auto entries = spec_entries(s, shape.size());
  remove_axes(entries, {name});
  entries[sd].push_back(name);
  NamedSharding out_sharding(mesh, trimmed_spec(std::move(entries), s.spec().size()));
  auto block_of = [&](int64_t pos) {
    Shape b = gs.shape[static_cast<std::size_t>(groups.group(pos))];
    const int64_t chunk = b[sd] / n;
    if (sd != cd) {
      b[sd] = chunk;
      b[cd] *= n;
    }
    return b;
  };
  CollectiveSchedule plan(out_sharding, derive_result_shape(api, out_sharding, shape.size(), block_of, shape, s));
  set_components(plan, process_components(groups, process_count(), process_index()));

  MovePlanner planner(plan, s, shape);
  const Shape origin(shape.size(), 0);
  const std::vector<int64_t> positions = add_targets(plan);
  for (std::size_t t = 0; t < positions.size(); ++t) {
    const int64_t i = groups.member(positions[t]);
    for (int64_t j = 0; j < n; ++j) {
      const Device& v = groups.device(groups.member_position(positions[t], j));
      const Shape b = box_shape(planner.box_of(v));
      Shape extent = b, from = origin, at = origin;
      extent[sd] = b[sd] / n;
      from[sd] = i * extent[sd];
      at[cd] = j * extent[cd];
      planner.need(t, v, b, from, at, extent, i);
    }
  }
  for (const int64_t pos : positions) {
    const Device& v = groups.device(pos);
    const Shape b = box_shape(planner.box_of(v));
    for (int64_t i = 0; i < n; ++i) {
      Shape extent = b, from = origin;
      extent[sd] = b[sd] / n;
      from[sd] = i * extent[sd];
      planner.give(v, groups.process(groups.member_position(pos, i)), b, from, extent, i);
    }
  }
  planner.finish();
  return plan;
}

// ppermute over one axis: the device with axis index dest receives the block of the device with axis index source
// for every (source, dest) pair; devices no pair names as dest get zeros. The result keeps the operand's sharding.
inline CollectiveSchedule build_ppermute_plan(const NamedSharding& s, const Shape& shape, int axis,
                                              const std::vector<std::pair<int64_t, int64_t>>& perm) {
  constexpr const char* api = "ppermute";
  const AxisGroups groups(s.mesh(), {axis});
  const Mesh& mesh = s.mesh();
  const int64_t n = groups.group_size();
  const std::string name = mesh.axis_names()[static_cast<std::size_t>(axis)];
  std::vector<int64_t> src_of(static_cast<std::size_t>(n), -1), dst_of(static_cast<std::size_t>(n), -1);
  std::vector<std::size_t> pair_of_src(static_cast<std::size_t>(n)), pair_of_dst(static_cast<std::size_t>(n));
  for (std::size_t k = 0; k < perm.size(); ++k) {
    const auto [from, to] = perm[k];
    DARRAY_THROW_IF(from < 0 || from >= n || to < 0 || to >= n, InvalidArgument, api,
                    "perm pair " << k << " is (" << from << ", " << to << ") but mesh axis \"" << name << "\" has size "
                                 << n << "; expected axis indices 0 .. " << n - 1);
    const auto f = static_cast<std::size_t>(from), t = static_cast<std::size_t>(to);
    DARRAY_THROW_IF(dst_of[f] >= 0, InvalidArgument, api,
                    "source " << from << " appears in perm pairs " << pair_of_src[f] << " and " << k
                              << "; expected each axis index at most once as a source (a permutation)");
    DARRAY_THROW_IF(src_of[t] >= 0, InvalidArgument, api,
                    "destination " << to << " appears in perm pairs " << pair_of_dst[t] << " and " << k
                                   << "; expected each axis index at most once as a destination (a permutation)");
    dst_of[f] = to;
    src_of[t] = from;
    pair_of_src[f] = pair_of_dst[t] = k;
  }
  for (int64_t pos = 0; pos < mesh.size(); ++pos) {
    const int64_t to = dst_of[static_cast<std::size_t>(groups.member(pos))];
    if (to < 0) continue;
    const Device& a = groups.device(pos);
    const Device& b = groups.device(groups.member_position(pos, to));
    const Shape sa = box_shape(s.index(shape, a)), sb = box_shape(s.index(shape, b));
    if (sa != sb)
      throw_unequal_blocks(api, mesh, {axis}, a, sa, b, sb,
                           "ppermute moves a whole block into a block of the same shape", shape, s);
  }
  bool sharded = false;
  for (const auto& entry : s.spec().entries())
    sharded = sharded || std::find(entry.begin(), entry.end(), name) != entry.end();
  const auto idle = std::find(src_of.begin(), src_of.end(), int64_t{-1});
  DARRAY_THROW_IF(!sharded && n > 1 && idle != src_of.end(), InvalidArgument, api,
                  "axis index " << (idle - src_of.begin()) << " receives from no source, so its devices would hold "
                                << "zeros while the others keep their blocks, but the operand is replicated along mesh "
                                   "axis \""
                                << name << "\" (" << describe_operand(shape, s)
                                << "), so the result cannot differ along it; shard a dim over \"" << name
                                << "\" or give every axis index a source");

  CollectiveSchedule plan(s, shape);
  set_components(plan, process_components(groups, process_count(), process_index()));
  MovePlanner planner(plan, s, shape);
  const Shape origin(shape.size(), 0);
  const std::vector<int64_t> positions = add_targets(plan);
  for (std::size_t t = 0; t < positions.size(); ++t) {
    const int64_t from = src_of[static_cast<std::size_t>(groups.member(positions[t]))];
    if (from < 0) {
      plan.targets[t].zero_fill = true;
      plan.any_zero_fill = true;
      continue;
    }
    const Device& v = groups.device(groups.member_position(positions[t], from));
    const Shape b = box_shape(planner.box_of(v));
    planner.need(t, v, b, origin, origin, b, 0);
  }
  for (const int64_t pos : positions) {
    const int64_t to = dst_of[static_cast<std::size_t>(groups.member(pos))];
    if (to < 0) continue;
    const Device& v = groups.device(pos);
    const Shape b = box_shape(planner.box_of(v));
    planner.give(v, groups.process(groups.member_position(pos, to)), b, origin, b, 0);
  }
  planner.finish();
  return plan;
}

}  // namespace detail
}  // namespace darray
