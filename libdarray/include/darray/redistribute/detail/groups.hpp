// Mesh-axis groups of a reshard: the mesh axes whose role changes between two shardings ("moving" axes), and,
// when every process's devices sit in one group, a color per process so the exchange can run on that group's
// sub-communicator (a pencil transpose on an (r, c) mesh moves data only along one axis).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "darray/sharding/named_sharding.hpp"

namespace darray {
namespace detail {

struct MovingAxisGroups {
  std::vector<std::string> moving_axes;
  std::vector<int> stable_axes;  // mesh axes whose coordinates name the groups, in mesh-axis order
  bool grouped = false;          // several groups, each process inside one: a sub-communicator per group
};

// An axis is stable when it partitions the same dim the same way in both specs (identical entry) or is unused by
// both; data then never crosses between different coordinates along it. Everything else moves. O(mesh axes): the
// mesh knows which axes keep every process at one coordinate, so no device is visited.
// meshes_equal: src.mesh() == dst.mesh(), which the caller has already compared (O(devices) unless the meshes are
// copies of one Mesh).
inline MovingAxisGroups moving_axis_groups(const NamedSharding& src, const NamedSharding& dst, bool meshes_equal) {
  MovingAxisGroups g;
  const Mesh& mesh = src.mesh();
  if (!meshes_equal) return g;
  const auto entry_of = [](const PartitionSpec& spec, const std::string& axis, std::size_t& dim) -> bool {
    for (std::size_t d = 0; d < spec.size(); ++d)
      for (const auto& a : spec[d])
        if (a == axis) {
          dim = d;
          return true;
        }
    return false;
  };
  for (int a = 0; a < mesh.ndim(); ++a) {
    const std::string& name = mesh.axis_names()[static_cast<std::size_t>(a)];
    std::size_t ds = 0, dd = 0;
    const bool in_src = entry_of(src.spec(), name, ds), in_dst = entry_of(dst.spec(), name, dd);
    const bool same = (!in_src && !in_dst) || (in_src && in_dst && ds == dd && src.spec()[ds] == dst.spec()[dd]);
    if (same)
      g.stable_axes.push_back(a);
    else
      g.moving_axes.push_back(name);
  }
  if (g.moving_axes.empty() || g.stable_axes.empty()) return g;  // nothing moves, or everything may move: world comm
  int64_t groups = 1;
  for (int a : g.stable_axes) {
    // A process spanning several groups: no sub-communicator can hold its exchange alone.
    if (!mesh.coordinate_constant_per_process(a)) return g;
    groups *= mesh.shape()[static_cast<std::size_t>(a)];
  }
  g.grouped = groups > 1;  // every combination of stable coordinates is a group with devices
  return g;
}

// The group of the device at `position`: its coordinates along the stable axes as a mixed-radix number.
inline int64_t group_color(const Mesh& mesh, const std::vector<int>& stable_axes, int64_t position) {
  int64_t color = 0;
  for (int a : stable_axes) color = color * mesh.shape()[static_cast<std::size_t>(a)] + mesh.coord(position, a);
  return color;
}

// One color per process up to the mesh's largest process index (-1 for processes outside the mesh), as the
// sub-communicator split needs. O(mesh size): built once per plan, when its exchange first runs.
inline std::vector<int> group_colors(const Mesh& mesh, const std::vector<int>& stable_axes) {
  const auto& processes = mesh.process_indices();
  std::vector<int> colors(processes.empty() ? 0 : static_cast<std::size_t>(processes.back()) + 1, -1);
  const auto& devices = mesh.devices();
  for (std::size_t pos = 0; pos < devices.size(); ++pos)
    colors[static_cast<std::size_t>(devices[pos].process_index)] =
        static_cast<int>(group_color(mesh, stable_axes, static_cast<int64_t>(pos)));
  return colors;
}

// The colors of a grouped plan, computed on first use and shared by the plan's copies.
struct LazyGroupColors {
  explicit LazyGroupColors(std::vector<int> stable) : stable_axes(std::move(stable)) {}
  std::vector<int> stable_axes;
  std::once_flag once;
  std::vector<int> colors;
};

}  // namespace detail
}  // namespace darray
