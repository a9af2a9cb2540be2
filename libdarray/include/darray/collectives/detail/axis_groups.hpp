// Axis groups of a collective: the devices that share every mesh coordinate except those along the collective's
// axes. A device's member index is its mixed-radix coordinate along those axes (first axis major, as JAX numbers
// axis_index over several axes), its group id the mixed-radix number of its other coordinates in mesh-axis order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "darray/runtime/device.hpp"
#include "darray/sharding/mesh.hpp"

namespace darray {
namespace detail {

class AxisGroups {
 public:
  // axes: mesh axis positions, distinct, major first (already validated).
  AxisGroups(Mesh mesh, std::vector<int> axes) : m_mesh(std::move(mesh)), m_axes(std::move(axes)) {
    m_in_axes.assign(static_cast<std::size_t>(m_mesh.ndim()), false);
    for (int a : m_axes) {
      m_in_axes[static_cast<std::size_t>(a)] = true;
      m_group_size *= m_mesh.shape()[static_cast<std::size_t>(a)];
    }
  }

  const Mesh& mesh() const { return m_mesh; }
  const std::vector<int>& axes() const { return m_axes; }
  // Devices per group: the product of the axis sizes.
  int64_t group_size() const { return m_group_size; }
  int64_t group_count() const { return m_mesh.size() / m_group_size; }
  const Device& device(int64_t pos) const { return m_mesh.devices()[static_cast<std::size_t>(pos)]; }
  int process(int64_t pos) const { return device(pos).process_index; }

  int64_t member(int64_t pos) const {
    int64_t m = 0;
    for (int a : m_axes) m = m * m_mesh.shape()[static_cast<std::size_t>(a)] + m_mesh.coord(pos, a);
    return m;
  }
  int64_t group(int64_t pos) const {
    int64_t g = 0;
    for (int a = 0; a < m_mesh.ndim(); ++a)
      if (!m_in_axes[static_cast<std::size_t>(a)])
        g = g * m_mesh.shape()[static_cast<std::size_t>(a)] + m_mesh.coord(pos, a);
    return g;
  }
  // Mesh position of member m of the group that holds position pos. O(number of axes).
  int64_t member_position(int64_t pos, int64_t m) const {
    const auto& strides = m_mesh.strides();
    for (int a : m_axes) pos -= m_mesh.coord(pos, a) * strides[static_cast<std::size_t>(a)];
    for (std::size_t k = m_axes.size(); k-- > 0;) {
      const auto a = static_cast<std::size_t>(m_axes[k]);
      pos += (m % m_mesh.shape()[a]) * strides[a];
      m /= m_mesh.shape()[a];
    }
    return pos;
  }

 private:
  Mesh m_mesh;
  std::vector<int> m_axes;
  std::vector<bool> m_in_axes;
  int64_t m_group_size = 1;
};

// Which processes must talk: two processes share a component when some axis group (or reduction unit, see
// collectives/detail/reduction_units.hpp: groups reduced together) has devices on both. Every process derives the
// same components from the mesh alone; the collective's MPI (or NCCL) step runs on one sub-communicator per
// component, so a process whose devices sit in several groups still needs one communicator.
struct ProcessComponents {
  std::vector<int> colors;           // per process of the job; empty when no group spans two processes
  std::vector<int> group_component;  // per group id: the color of its component
  int component_size = 1;            // processes in this process's component
};

// unit: per group id, the unit it is reduced in (a group id); empty: each group is its own.
inline ProcessComponents process_components(const AxisGroups& groups, int process_count, int me,
                                            const std::vector<int64_t>& unit = {}) {
  std::vector<int> parent(static_cast<std::size_t>(process_count));
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](int p) {
    while (parent[static_cast<std::size_t>(p)] != p) {
      parent[static_cast<std::size_t>(p)] = parent[static_cast<std::size_t>(parent[static_cast<std::size_t>(p)])];
      p = parent[static_cast<std::size_t>(p)];
    }
    return p;
  };
  std::vector<int> first(static_cast<std::size_t>(groups.group_count()), -1);
  bool crosses = false;
  for (int64_t pos = 0; pos < groups.mesh().size(); ++pos) {
    const int64_t g = groups.group(pos);
    int& f = first[static_cast<std::size_t>(unit.empty() ? g : unit[static_cast<std::size_t>(g)])];
    const int p = groups.process(pos);
    if (f < 0) {
      f = p;
      continue;
    }
    const int a = find(f), b = find(p);
    if (a != b) {
      parent[static_cast<std::size_t>(std::max(a, b))] = std::min(a, b);
      crosses = true;
    }
  }
  ProcessComponents out;
  out.group_component.resize(first.size());
  for (std::size_t g = 0; g < first.size(); ++g)
    out.group_component[g] = find(first[unit.empty() ? g : static_cast<std::size_t>(unit[g])]);
  if (!crosses) {
    // Every group lives inside one process: its component is that process alone.
    out.component_size = 1;
    return out;
  }
  out.colors.resize(static_cast<std::size_t>(process_count));
  out.component_size = 0;
  for (int p = 0; p < process_count; ++p) out.colors[static_cast<std::size_t>(p)] = find(p);
  const int mine = out.colors[static_cast<std::size_t>(me)];
  for (int c : out.colors) out.component_size += c == mine ? 1 : 0;
  return out;
}

}  // namespace detail
}  // namespace darray
