// Which axis groups of a reduction are reduced together, so that the replicas of its result agree bit for bit.
// Groups that differ only in their coordinates along mesh axes the operand is replicated on (neither reduced nor in
// its spec) hold the same blocks: a replica class. Each group is reduced in two steps (its blocks on one process
// combined there in member order, then the processes' partials by an allreduce over the group's process component),
// so two groups of a class whose devices split differently over their processes (mesh z=2, y=3 on 3 processes of 2
// devices, psum over "y": z=0 combines (p0 + p0) + p1, z=1 p1 + (p2 + p2)) would associate a floating-point sum
// differently and give replicas that differ in their last bits. Such groups form one unit instead: the unit's first
// group's blocks are combined (the others' processes contribute the identity) and every group of the unit receives
// that one result from the same allreduce. Groups of a class already in one component always form one unit (a smaller
// allreduce); groups in separate components stay apart when their computations are alike (the same component size,
// the same members on the same component ranks, and where the allreduce may depend on where an element sits, the
// same slot offset in a buffer of the same length), which keeps the common layouts (a model axis reduced per data
// replica, one process per device or whole groups per process) exactly as fast as before.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "darray/collectives/detail/axis_groups.hpp"
#include "darray/sharding/named_sharding.hpp"

namespace darray {
namespace detail {

struct ReductionUnits {
  std::vector<int64_t> unit;  // per group id: the group whose blocks its result sums (itself, or its unit's first)
  ProcessComponents components;
};

// volume: per group id, the elements of its block (its slot in the allreduce's buffer). Every process derives the
// same units from the mesh alone.
inline ReductionUnits reduction_units(const AxisGroups& groups, const NamedSharding& s,
                                      const std::vector<int64_t>& volume, int process_count, int me) {
  const Mesh& mesh = s.mesh();
  const int64_t group_count = groups.group_count(), n = groups.group_size();
  ReductionUnits out;
  out.unit.resize(static_cast<std::size_t>(group_count));
  for (int64_t g = 0; g < group_count; ++g) out.unit[static_cast<std::size_t>(g)] = g;

  // A group's class: its coordinates along the spec's mesh axes (the ones that are not reduced).
  std::vector<bool> in_spec(static_cast<std::size_t>(mesh.ndim()), false), reduced = in_spec;
  for (const int a : groups.axes()) reduced[static_cast<std::size_t>(a)] = true;
  for (const auto& entry : s.spec().entries())
    for (const auto& name : entry) in_spec[static_cast<std::size_t>(mesh.axis_position(name))] = true;
  bool replicas = false;
  for (int a = 0; a < mesh.ndim(); ++a)
    replicas = replicas || (!reduced[static_cast<std::size_t>(a)] && !in_spec[static_cast<std::size_t>(a)] &&
                            mesh.shape()[static_cast<std::size_t>(a)] > 1);
  if (!replicas) {
    out.components = process_components(groups, process_count, me);
    return out;
  }
  std::vector<int64_t> class_of(static_cast<std::size_t>(group_count));
  std::vector<int> process_of(static_cast<std::size_t>(group_count * n));  // [group * n + member]
  for (int64_t pos = 0; pos < mesh.size(); ++pos) {
    int64_t c = 0;
    for (int a = 0; a < mesh.ndim(); ++a)
      if (in_spec[static_cast<std::size_t>(a)] && !reduced[static_cast<std::size_t>(a)])
        c = c * mesh.shape()[static_cast<std::size_t>(a)] + mesh.coord(pos, a);
    const int64_t g = groups.group(pos);
    class_of[static_cast<std::size_t>(g)] = c;
    process_of[static_cast<std::size_t>(g * n + groups.member(pos))] = groups.process(pos);
  }
  std::map<int64_t, std::vector<int64_t>> classes;  // class -> its groups, ascending
  for (int64_t g = 0; g < group_count; ++g) classes[class_of[static_cast<std::size_t>(g)]].push_back(g);

  // Merges the units of `from` (unit ids) of a class into the smallest of them.
  auto merge = [&](const std::vector<int64_t>& members, const std::vector<int64_t>& from) {
    const int64_t into = *std::min_element(from.begin(), from.end());
    for (const int64_t g : members) {
      int64_t& u = out.unit[static_cast<std::size_t>(g)];
      if (std::find(from.begin(), from.end(), u) != from.end()) u = into;
    }
  };
  for (;;) {
    out.components = process_components(groups, process_count, me, out.unit);
    const ProcessComponents& comps = out.components;
    // Component sizes, each process's rank in its component, and each unit's slot offset in its component's buffer
    // (slots in unit order, as build_reduce_plan lays them out).
    std::map<int, int> size_of;
    std::vector<int> rank(static_cast<std::size_t>(process_count), 0);
    for (int p = 0; p < process_count; ++p)
      if (!comps.colors.empty())
        rank[static_cast<std::size_t>(p)] = size_of[comps.colors[static_cast<std::size_t>(p)]]++;
    std::map<int, int64_t> total;
    std::vector<int64_t> offset(static_cast<std::size_t>(group_count), 0);
    for (int64_t g = 0; g < group_count; ++g)
      if (out.unit[static_cast<std::size_t>(g)] == g) {
        int64_t& t = total[comps.group_component[static_cast<std::size_t>(g)]];
        offset[static_cast<std::size_t>(g)] = t;
        t += volume[static_cast<std::size_t>(g)];
      }
    // What decides the bits of a unit's result: the component's size; where it spans processes, the component rank
    // of each member's process (two ranks: which members share one); from three ranks on (an MPI_Allreduce may cut
    // the buffer into pieces reduced in different orders), the slot's offset and the buffer's length too.
    auto signature = [&](int64_t u) {
      const int color = comps.group_component[static_cast<std::size_t>(u)];
      const int c = comps.colors.empty() ? 1 : size_of[color];
      std::vector<int64_t> sig{c};
      if (c == 1) return sig;
      const int flip = c == 2 ? rank[static_cast<std::size_t>(process_of[static_cast<std::size_t>(u * n)])] : 0;
      for (int64_t m = 0; m < n; ++m)
        sig.push_back(rank[static_cast<std::size_t>(process_of[static_cast<std::size_t>(u * n + m)])] ^ flip);
      if (c >= 3) {
        sig.push_back(offset[static_cast<std::size_t>(u)]);
        sig.push_back(total[color]);
      }
      return sig;
    };
    bool changed = false;
    for (const auto& [c, members] : classes) {
      (void)c;
      std::map<int, std::vector<int64_t>> units_in;  // component -> the class's units in it
      for (const int64_t g : members) {
        const int64_t u = out.unit[static_cast<std::size_t>(g)];
        if (u == g) units_in[comps.group_component[static_cast<std::size_t>(g)]].push_back(u);
      }
      std::vector<int64_t> all;
      for (const auto& [color, units] : units_in) {
        (void)color;
        if (units.size() > 1) {
          merge(members, units);  // one component: one unit costs less and agrees
          changed = true;
        }
        all.push_back(units.front());
      }
      if (changed || all.size() < 2) continue;
      const std::vector<int64_t> first = signature(all.front());
      for (std::size_t k = 1; k < all.size() && !changed; ++k)
        if (signature(all[k]) != first) {
          merge(members, all);
          changed = true;
        }
    }
    if (!changed) return out;
  }
}

}  // namespace detail
}  // namespace darray
