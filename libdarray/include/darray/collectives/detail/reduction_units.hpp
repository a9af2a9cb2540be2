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
  int64_t class_count = 1;
  for (int a = 0; a < mesh.ndim(); ++a)
    if (in_spec[static_cast<std::size_t>(a)] && !reduced[static_cast<std::size_t>(a)])
      class_count *= mesh.shape()[static_cast<std::size_t>(a)];
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
  std::vector<std::vector<int64_t>> classes(static_cast<std::size_t>(class_count));  // each class's groups, ascending
  for (int64_t g = 0; g < group_count; ++g)
    classes[static_cast<std::size_t>(class_of[static_cast<std::size_t>(g)])].push_back(g);

  // Colors are process indices (the smallest of each component's), so per-component tables are indexed by them.
  const auto procs = static_cast<std::size_t>(process_count);
  std::vector<int> size_of(procs), rank(procs);
  std::vector<int64_t> total(procs), offset(static_cast<std::size_t>(group_count));
  std::vector<int64_t> redirect(static_cast<std::size_t>(group_count), -1);  // unit -> the unit it merges into
  std::vector<std::pair<int, int64_t>> units;                                // (component, unit) of one class
  std::vector<int64_t> firsts;
  for (;;) {
    out.components = process_components(groups, process_count, me, out.unit);
    const ProcessComponents& comps = out.components;
    // Component sizes, each process's rank in its component, and each unit's slot offset in its component's buffer
    // (slots in unit order, as build_reduce_plan lays them out).
    std::fill(size_of.begin(), size_of.end(), 0);
    std::fill(total.begin(), total.end(), 0);
    if (!comps.colors.empty())
      for (std::size_t p = 0; p < procs; ++p) rank[p] = size_of[static_cast<std::size_t>(comps.colors[p])]++;
    for (int64_t g = 0; g < group_count; ++g)
      if (out.unit[static_cast<std::size_t>(g)] == g) {
        int64_t& t = total[static_cast<std::size_t>(comps.group_component[static_cast<std::size_t>(g)])];
        offset[static_cast<std::size_t>(g)] = t;
        t += volume[static_cast<std::size_t>(g)];
      }
    // What decides the bits of a unit's result: the component's size; where it spans processes, the component rank
    // of each member's process (two ranks: which members share one); from three ranks on (an MPI_Allreduce may cut
    // the buffer into pieces reduced in different orders), the slot's offset and the buffer's length too.
    auto signature = [&](int64_t u) {
      const auto color = static_cast<std::size_t>(comps.group_component[static_cast<std::size_t>(u)]);
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
    // Every class is settled against these components; a merge joins components (or moves slots), so the loop
    // runs again until no class changes. A merge decided on components that a later merge changes is still right
    // (one unit always agrees), at worst a larger allreduce than needed.
    bool changed = false;
    for (const std::vector<int64_t>& members : classes) {
      if (members.size() < 2) continue;
      units.clear();
      for (const int64_t g : members)
        if (out.unit[static_cast<std::size_t>(g)] == g)
          units.emplace_back(comps.group_component[static_cast<std::size_t>(g)], g);
      std::sort(units.begin(), units.end());
      bool merged = false;
      firsts.clear();
      // Units of the class in one component become one unit: it costs less (one slot) and agrees.
      for (std::size_t k = 0; k < units.size(); ++k) {
        if (k > 0 && units[k].first == units[k - 1].first) {
          redirect[static_cast<std::size_t>(units[k].second)] = firsts.back();
          merged = true;
        } else {
          firsts.push_back(units[k].second);
        }
      }
      if (!merged && firsts.size() > 1) {
        const std::vector<int64_t> first = signature(firsts.front());
        for (std::size_t k = 1; k < firsts.size() && !merged; ++k) merged = signature(firsts[k]) != first;
        if (merged) {
          const int64_t into = *std::min_element(firsts.begin(), firsts.end());
          for (const int64_t u : firsts)
            if (u != into) redirect[static_cast<std::size_t>(u)] = into;
        }
      }
      if (!merged) continue;
      for (const int64_t g : members) {
        int64_t& u = out.unit[static_cast<std::size_t>(g)];
        if (redirect[static_cast<std::size_t>(u)] >= 0) u = redirect[static_cast<std::size_t>(u)];
      }
      for (const int64_t g : members) redirect[static_cast<std::size_t>(g)] = -1;
      changed = true;
    }
    if (!changed) return out;
  }
}

}  // namespace detail
}  // namespace darray
