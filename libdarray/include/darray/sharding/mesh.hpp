// Mesh: an N-d array of devices with one name per axis, as jax.sharding.Mesh. Immutable and shared, so copies are
// O(1); a device's position and a process's devices are found through indexes built once, so the per-device and
// per-process queries cost O(1) or O(that process's devices) even on 1,048,576-device meshes.
#pragma once

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "darray/core/error.hpp"
#include "darray/core/index.hpp"
#include "darray/runtime/device.hpp"
#include "darray/sharding/detail/names.hpp"

namespace darray {
namespace detail {

struct MeshData {
  // Row-major mesh order. Shared: make_mesh's meshes all hold the job's device table itself (a million devices:
  // 20 MiB, which a copy per mesh would write again).
  std::shared_ptr<const std::vector<Device>> table;
  const std::vector<Device>& devices() const { return *table; }
  Shape shape;
  std::vector<std::string> axis_names;
  Shape strides;  // row-major, in devices
  // device id -> position in `devices`: none needed when devices[i].id == i (default_order, meshes in id order
  // over a device table); else a table indexed by id when the ids are dense enough, -1 marking ids not in the
  // mesh; else a hash map.
  std::vector<int32_t> position_by_id;
  std::unordered_map<int, int64_t> position_of;
  // Sorted, distinct; built on first use for process-major meshes (a 1,048,576-process mesh need not pay for it).
  mutable std::once_flag process_indices_once;
  mutable std::vector<int> process_indices;
  int64_t process_runs = 0;  // runs of equal process indices in mesh order
  // Devices of each process. When process indices never decrease in mesh order (meshes over a process-major
  // device table) a process's devices are one run of positions, found by binary search in `devices`; otherwise
  // process_positions holds every position grouped by process (in mesh order within a group), the group of
  // process_indices[k] at [process_begin[k], process_begin[k + 1]).
  bool process_major = true;
  std::vector<int64_t> process_begin;
  std::vector<int64_t> process_positions;
  std::vector<char> axis_constant_per_process;  // per axis: every process's devices share one coordinate
  bool default_order = true;                    // devices[i].id == i for every i
  std::size_t hash = 0;
};

struct MeshAccess;

}  // namespace detail

class Mesh {
 public:
  // devices in row-major mesh order: devices[0] sits at (0, ..., 0), devices[1] at (0, ..., 1), ...
  Mesh(std::vector<Device> devices, std::vector<int64_t> shape, std::vector<std::string> axis_names)
      : Mesh(std::make_shared<const std::vector<Device>>(std::move(devices)), std::move(shape), std::move(axis_names)) {
  }

  const std::vector<int64_t>& shape() const { return m_data->shape; }
  const std::vector<std::string>& axis_names() const { return m_data->axis_names; }
  int ndim() const { return static_cast<int>(m_data->shape.size()); }
  int64_t size() const { return static_cast<int64_t>(m_data->devices().size()); }
  const std::vector<Device>& devices() const { return m_data->devices(); }

  // Position of a named axis among the mesh axes; throws when the mesh has no such axis.
  int axis_position(const std::string& name) const {
    const int pos = find_axis(name);
    DARRAY_THROW_IF(pos < 0, InvalidArgument, "Mesh",
                    "mesh axis \"" << detail::printable(name) << "\" not found; mesh axes are "
                                   << detail::quoted_list(axis_names()));
    return pos;
  }
  int64_t axis_size(const std::string& name) const {
    return m_data->shape[static_cast<std::size_t>(axis_position(name))];
  }
  // -1 when the mesh has no such axis.
  int find_axis(const std::string& name) const {
    for (std::size_t a = 0; a < m_data->axis_names.size(); ++a)
      if (m_data->axis_names[a] == name) return static_cast<int>(a);
    return -1;
  }

  bool contains(const Device& d) const { return position_or_minus_one(d) >= 0; }
  // Position of d in devices() (its row-major flat index); throws when d is not in the mesh.
  int64_t position(const Device& d) const {
    const int64_t pos = position_or_minus_one(d);
    DARRAY_THROW_IF(pos < 0, InvalidArgument, "Mesh", "device " << d << " is not in " << to_string());
    return pos;
  }
  // Coordinate of the device at `position` along mesh axis `axis`, without building the whole coords vector.
  int64_t coord(int64_t position, int axis) const {
    const auto a = static_cast<std::size_t>(axis);
    return (position / m_data->strides[a]) % m_data->shape[a];
  }
  std::vector<int64_t> coords(const Device& d) const {
    const int64_t pos = position(d);
    std::vector<int64_t> c(m_data->shape.size());
    for (int a = 0; a < ndim(); ++a) c[static_cast<std::size_t>(a)] = coord(pos, a);
    return c;
  }
  const Device& device_at(const std::vector<int64_t>& coords) const {
    DARRAY_THROW_IF(coords.size() != m_data->shape.size(), InvalidArgument, "Mesh",
                    "device_at got " << coords.size() << " coordinates for the " << ndim() << "-d " << to_string());
    int64_t pos = 0;
    for (std::size_t a = 0; a < coords.size(); ++a) {
      DARRAY_THROW_IF(coords[a] < 0 || coords[a] >= m_data->shape[a], InvalidArgument, "Mesh",
                      "coordinate " << coords[a] << " along axis \"" << m_data->axis_names[a] << "\" is outside [0, "
                                    << m_data->shape[a] << ") in " << to_string());
      pos += coords[a] * m_data->strides[a];
    }
    return m_data->devices()[static_cast<std::size_t>(pos)];
  }
  // Row-major strides of the mesh, in devices: position = sum(coords[a] * strides()[a]).
  const std::vector<int64_t>& strides() const { return m_data->strides; }

  // Sorted distinct processes that own mesh devices.
  const std::vector<int>& process_indices() const {
    std::call_once(m_data->process_indices_once, [this] {
      for (const Device& d : m_data->devices())
        if (m_data->process_indices.empty() || m_data->process_indices.back() != d.process_index)
          m_data->process_indices.push_back(d.process_index);
    });
    return m_data->process_indices;
  }

  // Positions in devices() of the devices of `process`, in mesh order (empty when it owns none). O(its devices +
  // log of the process count), never O(mesh size).
  std::vector<int64_t> process_positions(int process) const {
    const auto& devs = m_data->devices();
    std::vector<int64_t> out;
    if (m_data->process_major) {
      const auto lo =
          std::partition_point(devs.begin(), devs.end(), [&](const Device& d) { return d.process_index < process; });
      for (auto it = lo; it != devs.end() && it->process_index == process; ++it) out.push_back(it - devs.begin());
      return out;
    }
    const auto& procs = process_indices();
    const auto k = std::lower_bound(procs.begin(), procs.end(), process) - procs.begin();
    if (k == static_cast<std::ptrdiff_t>(procs.size()) || procs[static_cast<std::size_t>(k)] != process) return out;
    const auto first = m_data->process_positions.begin() + m_data->process_begin[static_cast<std::size_t>(k)];
    const auto last = m_data->process_positions.begin() + m_data->process_begin[static_cast<std::size_t>(k) + 1];
    return std::vector<int64_t>(first, last);
  }
  // True when the devices of every process share one coordinate along mesh axis `axis`, so that groups of devices
  // split along the other axes never split a process.
  bool coordinate_constant_per_process(int axis) const {
    return m_data->axis_constant_per_process[static_cast<std::size_t>(axis)] != 0;
  }

  // "Mesh('x': 4, 'y': 2)" as JAX prints meshes; device ids are added when they are not 0..size-1 in order, so
  // meshes that compare unequal never print alike (long lists are cut short).
  std::string to_string() const {
    std::string out = "Mesh(";
    for (std::size_t a = 0; a < m_data->shape.size(); ++a)
      out += (a ? ", " : "") + detail::python_repr(m_data->axis_names[a]) + ": " + std::to_string(m_data->shape[a]);
    if (!m_data->default_order) {
      constexpr std::size_t shown = 16;
      out += ", device_ids=[";
      for (std::size_t i = 0; i < m_data->devices().size() && i < shown; ++i)
        out += (i ? ", " : "") + std::to_string(m_data->devices()[i].id);
      if (m_data->devices().size() > shown) out += ", ... (" + std::to_string(m_data->devices().size()) + " devices)";
      out += "]";
    }
    return out + ")";
  }

  std::size_t hash() const { return m_data->hash; }

  friend bool operator==(const Mesh& a, const Mesh& b) {
    if (a.m_data == b.m_data) return true;
    return a.m_data->hash == b.m_data->hash && a.m_data->shape == b.m_data->shape &&
           a.m_data->axis_names == b.m_data->axis_names &&
           (a.m_data->table == b.m_data->table || a.m_data->devices() == b.m_data->devices());
  }
  friend bool operator!=(const Mesh& a, const Mesh& b) { return !(a == b); }

 private:
  friend struct detail::MeshAccess;

  // Over a device table shared with its owner (make_mesh: the job's table), validated and indexed as the public
  // constructor's copy.
  Mesh(std::shared_ptr<const std::vector<Device>> table, std::vector<int64_t> shape,
       std::vector<std::string> axis_names) {
    auto data = std::make_shared<detail::MeshData>();
    const std::vector<Device>& devices = *table;
    validate(devices, shape, axis_names);
    data->strides = row_major_strides(shape);
    const auto n = static_cast<int64_t>(devices.size());
    std::size_t h = shape.size();
    for (int64_t v : shape) detail::hash_combine(h, std::hash<int64_t>{}(v));
    for (const auto& name : axis_names) detail::hash_combine(h, std::hash<std::string>{}(name));
    for (int64_t i = 0; i < n; ++i) {
      const Device& d = devices[static_cast<std::size_t>(i)];
      const bool first = i == 0;
      const int previous = first ? 0 : devices[static_cast<std::size_t>(i - 1)].process_index;
      data->default_order = data->default_order && d.id == i;
      data->process_major = data->process_major && (first || d.process_index >= previous);
      data->process_runs += first || d.process_index != previous ? 1 : 0;
    }
    // Devices hash by id; ids 0..n-1 in order are fully described by n, so such meshes skip the per-device pass.
    if (data->default_order)
      detail::hash_combine(h, std::hash<int64_t>{}(n));
    else
      for (const Device& d : devices) detail::hash_combine(h, std::hash<Device>{}(d));
    data->hash = h;
    index_positions(*data, devices);
    index_processes(*data, devices, shape);
    data->shape = std::move(shape);
    data->axis_names = std::move(axis_names);
    data->table = std::move(table);  // `devices` stays valid: the vector itself does not move
    m_data = std::move(data);
  }

  static void validate(const std::vector<Device>& devices, const Shape& shape, const std::vector<std::string>& names) {
    DARRAY_THROW_IF(names.size() != shape.size(), InvalidArgument, "Mesh",
                    names.size() << " axis names " << detail::quoted_list(names) << " given for a " << shape.size()
                                 << "-d mesh shape " << shape_to_string(shape) << "; expected one name per axis");
    int64_t positions = 1;
    std::unordered_set<std::string_view> seen;  // linear, however many axes
    seen.reserve(names.size());
    for (std::size_t a = 0; a < shape.size(); ++a) {
      DARRAY_THROW_IF(
          names[a].empty(), InvalidArgument, "Mesh",
          "axis name " << a << " of " << detail::quoted_list(names) << " is empty; expected a non-empty name");
      const std::size_t bad = detail::first_control_char(names[a]);
      DARRAY_THROW_IF(bad != std::string::npos, InvalidArgument, "Mesh",
                      "axis name " << a << " \"" << detail::printable(names[a]) << "\" holds the control character "
                                   << detail::printable(std::string(1, names[a][bad])) << " at position " << bad
                                   << "; axis names must be printable");
      DARRAY_THROW_IF(!seen.insert(names[a]).second, InvalidArgument, "Mesh",
                      "axis name \"" << detail::printable(names[a]) << "\" appears twice in "
                                     << detail::quoted_list(names) << "; axis names must be distinct");
      DARRAY_THROW_IF(shape[a] < 1, InvalidArgument, "Mesh",
                      "axis \"" << names[a] << "\" has size " << shape[a] << " in mesh shape " << shape_to_string(shape)
                                << "; mesh axis sizes must be >= 1");
      // Saturate instead of overflowing: a huge shape is reported like any other mismatch.
      if (__builtin_mul_overflow(positions, shape[a], &positions)) positions = INT64_MAX;
    }
    DARRAY_THROW_IF(positions != static_cast<int64_t>(devices.size()), InvalidArgument, "Mesh",
                    "mesh shape " << shape_to_string(shape) << " has "
                                  << (positions == INT64_MAX ? std::string("over 2^63") : std::to_string(positions))
                                  << " positions but " << devices.size()
                                  << " devices were given; expected exactly one device per position");
  }

  int64_t position_or_minus_one(const Device& d) const {
    int64_t pos = -1;
    if (m_data->default_order) {
      if (d.id >= 0 && d.id < size()) pos = d.id;
    } else if (!m_data->position_by_id.empty()) {
      if (d.id >= 0 && static_cast<std::size_t>(d.id) < m_data->position_by_id.size())
        pos = m_data->position_by_id[static_cast<std::size_t>(d.id)];
    } else {
      const auto it = m_data->position_of.find(d.id);
      if (it != m_data->position_of.end()) pos = it->second;
    }
    // Same id, other process or kind: a device of some other device table, not this mesh's.
    return pos >= 0 && m_data->devices()[static_cast<std::size_t>(pos)] == d ? pos : -1;
  }

  // The id -> position index; throws on a device given twice.
  static void index_positions(detail::MeshData& data, const std::vector<Device>& devices) {
    if (data.default_order) return;  // ids 0..n-1 in order: distinct, and the id is the position
    const auto n = static_cast<int64_t>(devices.size());
    int min_id = 0, max_id = -1;
    for (const Device& d : devices) {
      min_id = std::min(min_id, d.id);
      max_id = std::max(max_id, d.id);
    }
    auto twice = [&](int64_t first, int64_t second) {
      DARRAY_THROW(InvalidArgument, "Mesh",
                   "device " << devices[static_cast<std::size_t>(second)] << " is given twice (positions " << first
                             << " and " << second << "); each device may appear in a mesh once");
    };
    // A table by id costs at most a few words per device when ids are dense, as device tables make them.
    if (min_id >= 0 && static_cast<int64_t>(max_id) < 2 * n + 1024 && n <= INT32_MAX) {
      data.position_by_id.assign(static_cast<std::size_t>(max_id) + 1, -1);
      for (int64_t i = 0; i < n; ++i) {
        int32_t& slot = data.position_by_id[static_cast<std::size_t>(devices[static_cast<std::size_t>(i)].id)];
        if (slot >= 0) twice(slot, i);
        slot = static_cast<int32_t>(i);
      }
      return;
    }
    data.position_of.reserve(devices.size());
    for (int64_t i = 0; i < n; ++i) {
      const auto [it, fresh] = data.position_of.emplace(devices[static_cast<std::size_t>(i)].id, i);
      if (!fresh) twice(it->second, i);
    }
  }

  // The per-process groups (and process_indices) when the mesh is not process-major, and which axes keep every
  // process at one coordinate.
  static void index_processes(detail::MeshData& data, const std::vector<Device>& devices, const Shape& shape) {
    const auto n = static_cast<int64_t>(devices.size());
    const std::size_t ndim = shape.size();
    data.axis_constant_per_process.assign(ndim, 1);
    if (data.process_major) {
      // Each process is one run [b, e) of positions; its coordinate along an axis is constant exactly when the
      // run's ends share the quotient by the axis stride (or the axis has size 1).
      if (data.process_runs == n) return;  // one device per process
      int64_t b = 0;
      for (int64_t i = 1; i <= n; ++i) {
        if (i < n && devices[static_cast<std::size_t>(i)].process_index ==
                         devices[static_cast<std::size_t>(i - 1)].process_index)
          continue;
        for (std::size_t a = 0; a < ndim; ++a)
          if (shape[a] > 1 && b / data.strides[a] != (i - 1) / data.strides[a]) data.axis_constant_per_process[a] = 0;
        b = i;
      }
      return;
    }
    auto& procs = data.process_indices;
    std::call_once(data.process_indices_once, [&] {
      for (const Device& d : devices)
        if (procs.empty() || procs.back() != d.process_index) procs.push_back(d.process_index);
      std::sort(procs.begin(), procs.end());
      procs.erase(std::unique(procs.begin(), procs.end()), procs.end());
    });
    auto group_of = [&](int p) {
      return static_cast<std::size_t>(std::lower_bound(procs.begin(), procs.end(), p) - procs.begin());
    };
    data.process_begin.assign(procs.size() + 1, 0);
    for (const Device& d : devices) ++data.process_begin[group_of(d.process_index) + 1];
    for (std::size_t k = 0; k < procs.size(); ++k) data.process_begin[k + 1] += data.process_begin[k];
    data.process_positions.resize(devices.size());
    std::vector<int64_t> next(data.process_begin.begin(), data.process_begin.end() - 1);
    for (int64_t i = 0; i < n; ++i)
      data.process_positions[static_cast<std::size_t>(
          next[group_of(devices[static_cast<std::size_t>(i)].process_index)]++)] = i;
    for (std::size_t k = 0; k < procs.size(); ++k) {
      const int64_t first = data.process_positions[static_cast<std::size_t>(data.process_begin[k])];
      for (int64_t j = data.process_begin[k] + 1; j < data.process_begin[k + 1]; ++j) {
        const int64_t pos = data.process_positions[static_cast<std::size_t>(j)];
        for (std::size_t a = 0; a < ndim; ++a)
          if ((pos / data.strides[a]) % shape[a] != (first / data.strides[a]) % shape[a])
            data.axis_constant_per_process[a] = 0;
      }
    }
  }

  std::shared_ptr<const detail::MeshData> m_data;
};

inline std::ostream& operator<<(std::ostream& os, const Mesh& mesh) { return os << mesh.to_string(); }

namespace detail {
// A mesh over a device table shared with its owner instead of a copy of it (make_mesh).
struct MeshAccess {
  static Mesh over(std::shared_ptr<const std::vector<Device>> table, std::vector<int64_t> shape,
                   std::vector<std::string> axis_names) {
    return Mesh(std::move(table), std::move(shape), std::move(axis_names));
  }
};
}  // namespace detail

}  // namespace darray

template <>
struct std::hash<darray::Mesh> {
  std::size_t operator()(const darray::Mesh& mesh) const noexcept { return mesh.hash(); }
};
