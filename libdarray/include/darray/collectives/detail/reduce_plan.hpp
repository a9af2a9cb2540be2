// Plans of the reductions psum, pmax, pmin and psum_scatter. Each reduction unit (an axis group, or replica groups
// reduced together: collectives/detail/reduction_units.hpp) is reduced in two steps: the blocks of its first group's
// devices on one process are combined there in member order, then the per-process partials of every unit of a
// process component are reduced by one allreduce on that component's communicator (one slot per unit), and every
// device of the unit's groups takes the result. psum_scatter keeps one chunk of the sum per device.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "darray/collectives/detail/axis_groups.hpp"
#include "darray/collectives/detail/block_checks.hpp"
#include "darray/collectives/detail/plan.hpp"
#include "darray/collectives/detail/reduction_units.hpp"
#include "darray/collectives/detail/result_layout.hpp"
#include "darray/comm/limits.hpp"
#include "darray/core/error.hpp"
#include "darray/core/index.hpp"
#include "darray/runtime/environment.hpp"
#include "darray/sharding/named_sharding.hpp"

namespace darray {
namespace detail {

// plan.slot_block of a reduction plan: when every copy takes a whole slot to the origin of a result block of the
// slot's shape and every slot has a copy, the target of each slot's first copy; otherwise empty.
inline std::vector<std::size_t> whole_slot_blocks(const CollectiveSchedule& plan) {
  constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
  std::vector<std::size_t> first(plan.slots.size(), none);
  const auto zero = [](const Shape& v) { return std::all_of(v.begin(), v.end(), [](int64_t x) { return x == 0; }); };
  for (const Copy& c : plan.copies) {
    if (c.from != CopySource::slot || c.src_shape != c.extent ||
        c.extent != plan.slots[static_cast<std::size_t>(c.source)].shape ||
        c.extent != plan.targets[c.target].out_shape || !zero(c.src_start) || !zero(c.dst_start))
      return {};
    std::size_t& f = first[static_cast<std::size_t>(c.source)];
    if (f == none) f = c.target;
  }
  for (const std::size_t f : first)
    if (f == none) return {};
  return first;
}

// scatter_dim < 0: psum/pmax/pmin (every device keeps its group's whole reduced block); otherwise psum_scatter
// along that (normalized) dim over the single axis in `axes`.
inline CollectiveSchedule build_reduce_plan(const char* api, const NamedSharding& s, const Shape& shape,
                                            const std::vector<int>& axes, int scatter_dim) {
  const AxisGroups groups(s.mesh(), axes);
  const Mesh& mesh = s.mesh();
  const int64_t n = groups.group_size();
  const auto rank = shape.size();

  // Every device of a group must hold a block of the same shape: the reduction is element-wise.
  const GroupShapes gs =
      group_shapes(api, groups, s, shape, -1, std::string(api) + " combines blocks element by element");
  const std::vector<Shape>& group_shape = gs.shape;
  const auto d = static_cast<std::size_t>(scatter_dim);
  if (scatter_dim >= 0) check_chunks(api, groups, gs, scatter_dim, "dim", shape, s);

  // Reduced axes leave the spec: the result is equal along them. psum_scatter's axis comes back on the scattered
  // dim, where the chunks now differ, as its last (minor) axis.
  const auto names = axis_names_of(mesh, axes);
  auto entries = spec_entries(s, rank);
  remove_axes(entries, names);
  if (scatter_dim >= 0) entries[d].push_back(names[0]);
  NamedSharding out_sharding(mesh, trimmed_spec(std::move(entries), s.spec().size()));
  auto block_of = [&](int64_t pos) {
    Shape b = group_shape[static_cast<std::size_t>(groups.group(pos))];
    if (scatter_dim >= 0) b[d] /= n;
    return b;
  };
  CollectiveSchedule plan(out_sharding, derive_result_shape(api, out_sharding, rank, block_of, shape, s));

  const int me = process_index();
  std::vector<int64_t> volumes(group_shape.size());
  for (std::size_t g = 0; g < group_shape.size(); ++g) volumes[g] = volume(group_shape[g]);
  const ReductionUnits units = reduction_units(groups, s, volumes, process_count(), me);
  const ProcessComponents& comps = units.components;
  set_components(plan, comps);
  const int my_color = comps.colors.empty() ? me : comps.colors[static_cast<std::size_t>(me)];
  std::unordered_map<int64_t, std::size_t> slot_of;
  for (std::size_t g = 0; g < group_shape.size(); ++g) {
    if (comps.group_component[g] != my_color || units.unit[g] != static_cast<int64_t>(g)) continue;
    slot_of.emplace(static_cast<int64_t>(g), plan.slots.size());
    plan.slots.push_back(Slot{static_cast<int64_t>(g), group_shape[g], volumes[g], plan.slot_elements, {}});
    plan.slot_elements += volumes[g];
  }

  const std::vector<int64_t> positions = add_targets(plan);
  for (std::size_t t = 0; t < positions.size(); ++t) {
    const int64_t pos = positions[t];
    const int64_t g = groups.group(pos), u = units.unit[static_cast<std::size_t>(g)];
    const std::size_t k = slot_of.at(u);
    Slot& slot = plan.slots[k];
    if (g == u) slot.members.push_back(t);
    Copy c;
    c.target = t;
    c.from = CopySource::slot;
    c.source = static_cast<int64_t>(k);
    c.src_shape = slot.shape;
    c.src_start.assign(rank, 0);
    c.dst_start.assign(rank, 0);
    c.extent = slot.shape;
    if (scatter_dim >= 0) {
      c.extent[d] /= n;
      c.src_start[d] = groups.member(pos) * c.extent[d];
    }
    if (volume(c.extent) > 0) plan.copies.push_back(std::move(c));
  }
  // Member order, whatever the local devices' order: every process combines a unit's blocks in one association.
  for (Slot& slot : plan.slots)
    std::sort(slot.members.begin(), slot.members.end(),
              [&](std::size_t x, std::size_t y) { return groups.member(positions[x]) < groups.member(positions[y]); });
  plan.slot_block = whole_slot_blocks(plan);
  plan.max_message_bytes = max_message_bytes();
  return plan;
}

}  // namespace detail
}  // namespace darray
