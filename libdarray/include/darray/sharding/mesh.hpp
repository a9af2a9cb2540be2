// Mesh: an N-d array of devices with one name per axis, as jax.sharding.Mesh. Immutable and shared, so copies are
// O(1); a device's position is found through a map by id, so coords() is O(1) even on 65,536-device meshes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
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
  std::vector<Device> devices;  // row-major mesh order
  Shape shape;
  std::vector<std::string> axis_names;
  Shape strides;                                 // row-major, in devices
  std::unordered_map<int, int64_t> position_of;  // device id -> position in `devices`
  std::vector<int> process_indices;              // sorted, distinct
  std::size_t hash = 0;
};

}  // namespace detail

class Mesh {
 public:
  // devices in row-major mesh order: devices[0] sits at (0, ..., 0), devices[1] at (0, ..., 1), ...
  Mesh(std::vector<Device> devices, std::vector<int64_t> shape, std::vector<std::string> axis_names) {
    auto data = std::make_shared<detail::MeshData>();
    validate(devices, shape, axis_names);
    data->strides = row_major_strides(shape);
    data->position_of.reserve(devices.size());
    for (std::size_t i = 0; i < devices.size(); ++i) {
      const auto [it, fresh] = data->position_of.emplace(devices[i].id, static_cast<int64_t>(i));
      DARRAY_THROW_IF(!fresh, InvalidArgument, "Mesh",
                      "device " << devices[i] << " is given twice (positions " << it->second << " and " << i
                                << "); each device may appear in a mesh once");
      data->process_indices.push_back(devices[i].process_index);
    }
    std::sort(data->process_indices.begin(), data->process_indices.end());
    data->process_indices.erase(std::unique(data->process_indices.begin(), data->process_indices.end()),
                                data->process_indices.end());
    std::size_t h = shape.size();
    for (int64_t n : shape) detail::hash_combine(h, std::hash<int64_t>{}(n));
    for (const auto& name : axis_names) detail::hash_combine(h, std::hash<std::string>{}(name));
    for (const auto& d : devices) detail::hash_combine(h, std::hash<Device>{}(d));
    data->hash = h;
    data->devices = std::move(devices);
    data->shape = std::move(shape);
    data->axis_names = std::move(axis_names);
    m_data = std::move(data);
  }

  const std::vector<int64_t>& shape() const { return m_data->shape; }
  const std::vector<std::string>& axis_names() const { return m_data->axis_names; }
  int ndim() const { return static_cast<int>(m_data->shape.size()); }
  int64_t size() const { return static_cast<int64_t>(m_data->devices.size()); }
  const std::vector<Device>& devices() const { return m_data->devices; }

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
    return m_data->devices[static_cast<std::size_t>(pos)];
  }
  // Row-major strides of the mesh, in devices: position = sum(coords[a] * strides()[a]).
  const std::vector<int64_t>& strides() const { return m_data->strides; }

  // Sorted distinct processes that own mesh devices.
  const std::vector<int>& process_indices() const { return m_data->process_indices; }

  // "Mesh('x': 4, 'y': 2)" as JAX prints meshes; device ids are added when they are not 0..size-1 in order, so
  // meshes that compare unequal never print alike (long lists are cut short).
  std::string to_string() const {
    std::string out = "Mesh(";
    for (std::size_t a = 0; a < m_data->shape.size(); ++a)
      out += (a ? ", " : "") + detail::python_repr(m_data->axis_names[a]) + ": " + std::to_string(m_data->shape[a]);
    bool default_order = true;
    for (std::size_t i = 0; default_order && i < m_data->devices.size(); ++i)
      default_order = m_data->devices[i].id == static_cast<int>(i);
    if (!default_order) {
      constexpr std::size_t shown = 16;
      out += ", device_ids=[";
      for (std::size_t i = 0; i < m_data->devices.size() && i < shown; ++i)
        out += (i ? ", " : "") + std::to_string(m_data->devices[i].id);
      if (m_data->devices.size() > shown) out += ", ... (" + std::to_string(m_data->devices.size()) + " devices)";
      out += "]";
    }
    return out + ")";
  }

  std::size_t hash() const { return m_data->hash; }

  friend bool operator==(const Mesh& a, const Mesh& b) {
    if (a.m_data == b.m_data) return true;
    return a.m_data->hash == b.m_data->hash && a.m_data->shape == b.m_data->shape &&
           a.m_data->axis_names == b.m_data->axis_names && a.m_data->devices == b.m_data->devices;
  }
  friend bool operator!=(const Mesh& a, const Mesh& b) { return !(a == b); }

 private:
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
    const auto it = m_data->position_of.find(d.id);
    if (it == m_data->position_of.end()) return -1;
    // Same id, other process or kind: a device of some other device table, not this mesh's.
    return m_data->devices[static_cast<std::size_t>(it->second)] == d ? it->second : -1;
  }

  std::shared_ptr<const detail::MeshData> m_data;
};

inline std::ostream& operator<<(std::ostream& os, const Mesh& mesh) { return os << mesh.to_string(); }

}  // namespace darray

template <>
struct std::hash<darray::Mesh> {
  std::size_t operator()(const darray::Mesh& mesh) const noexcept { return mesh.hash(); }
};
