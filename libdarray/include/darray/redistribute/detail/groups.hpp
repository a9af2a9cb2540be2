// Mesh-axis groups of a reshard: the mesh axes whose role changes between two shardings ("moving" axes), and,
// when every process's devices sit in one group, a color per process so the exchange can run on that group's
// sub-communicator (a pencil transpose on an (r, c) mesh moves data only along one axis).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "darray/sharding/named_sharding.hpp"

namespace darray {
namespace detail {

struct MovingAxisGroups {
  std::vector<std::string> moving_axes;
  std::vector<int> colors;  // indexed by process; -1 for processes outside the mesh; empty: no useful grouping
};

// An axis is stable when it partitions the same dim the same way in both specs (identical entry) or is unused by
// both; data then never crosses between different coordinates along it. Everything else moves.
inline MovingAxisGroups moving_axis_groups(const NamedSharding& src, const NamedSharding& dst) {
  MovingAxisGroups g;
  const Mesh& mesh = src.mesh();
  if (!(mesh == dst.mesh())) return g;
  const auto entry_of = [](const PartitionSpec& spec, const std::string& axis, std::size_t& dim) -> bool {
    for (std::size_t d = 0; d < spec.size(); ++d)
      for (const auto& a : spec[d])
        if (a == axis) {
          dim = d;
          return true;
        }
    return false;
  };
  std::vector<int> stable;
  for (int a = 0; a < mesh.ndim(); ++a) {
    const std::string& name = mesh.axis_names()[static_cast<std::size_t>(a)];
    std::size_t ds = 0, dd = 0;
    const bool in_src = entry_of(src.spec(), name, ds), in_dst = entry_of(dst.spec(), name, dd);
    const bool same = (!in_src && !in_dst) || (in_src && in_dst && ds == dd && src.spec()[ds] == dst.spec()[dd]);
    if (same)
      stable.push_back(a);
    else
      g.moving_axes.push_back(name);
  }
  if (g.moving_axes.empty() || stable.empty()) return g;  // nothing moves, or everything may move: world comm
  int max_process = 0;
  for (int p : mesh.process_indices()) max_process = std::max(max_process, p);
  std::vector<int> colors(static_cast<std::size_t>(max_process) + 1, -1);
  int distinct = 0;
  std::vector<char> seen;
  const Shape& mshape = mesh.shape();
  const Shape& strides = mesh.strides();
  const auto& devices = mesh.devices();
  for (std::size_t pos = 0; pos < devices.size(); ++pos) {
    const Device& d = devices[pos];
    int64_t color = 0;
    for (int a : stable) {
      const auto k = static_cast<std::size_t>(a);
      color = color * mshape[k] + (static_cast<int64_t>(pos) / strides[k]) % mshape[k];
    }
    int& slot = colors[static_cast<std::size_t>(d.process_index)];
    if (slot == -1) {
      slot = static_cast<int>(color);
      if (seen.size() <= static_cast<std::size_t>(color)) seen.resize(static_cast<std::size_t>(color) + 1, 0);
      distinct += seen[static_cast<std::size_t>(color)] ? 0 : 1;
      seen[static_cast<std::size_t>(color)] = 1;
    } else if (slot != color) {
      return g;  // a process spans several groups: no sub-communicator can hold its exchange alone
    }
  }
  if (distinct > 1) g.colors = std::move(colors);
  return g;
}

}  // namespace detail
}  // namespace darray
