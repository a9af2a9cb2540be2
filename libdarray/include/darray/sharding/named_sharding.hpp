// NamedSharding: a Mesh plus a PartitionSpec, mapping a global shape to each device's index box and replica id, as
// jax.sharding.NamedSharding. Pure index math on replicated metadata (no MPI), so offline planners can use it; the
// overloads that default to this process are defined in sharding/make_mesh.hpp, next to the runtime they need.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "darray/core/error.hpp"
#include "darray/core/index.hpp"
#include "darray/core/partition.hpp"
#include "darray/runtime/device.hpp"
#include "darray/sharding/mesh.hpp"
#include "darray/sharding/partition_spec.hpp"

namespace darray {
namespace detail {

struct ShardingData {
  ShardingData(Mesh m, PartitionSpec s) : mesh(std::move(m)), spec(std::move(s)) {}
  Mesh mesh;
  PartitionSpec spec;
  std::vector<std::vector<int>> dim_axes;  // mesh axis positions of each spec entry, major first
  std::vector<int64_t> dim_parts;          // product of those axis sizes
  std::vector<int> replica_axes;           // mesh axes no entry uses, in mesh-axis order
  int64_t num_replicas = 1;
  std::size_t hash = 0;
};

}  // namespace detail

class NamedSharding {
 public:
  NamedSharding(Mesh mesh, PartitionSpec spec) {
    auto data = std::make_shared<detail::ShardingData>(std::move(mesh), std::move(spec));
    const Mesh& m = data->mesh;
    std::vector<bool> used(static_cast<std::size_t>(m.ndim()), false);
    for (std::size_t d = 0; d < data->spec.size(); ++d) {
      std::vector<int> positions;
      int64_t parts = 1;
      for (const std::string& name : data->spec[d]) {
        const int a = m.find_axis(name);
        DARRAY_THROW_IF(a < 0, InvalidArgument, "PartitionSpec",
                        "mesh axis \"" << detail::printable(name) << "\" not found; mesh axes are "
                                       << detail::quoted_list(m.axis_names()) << " (in "
                                       << detail::printable(data->spec.to_string()) << ", dim " << d << ")");
        // PartitionSpec already rejects an axis named twice; the mesh lookup cannot add a repeat.
        used[static_cast<std::size_t>(a)] = true;
        positions.push_back(a);
        parts *= m.shape()[static_cast<std::size_t>(a)];
      }
      data->dim_axes.push_back(std::move(positions));
      data->dim_parts.push_back(parts);
    }
    for (int a = 0; a < m.ndim(); ++a) {
      if (used[static_cast<std::size_t>(a)]) continue;
      data->replica_axes.push_back(a);
      data->num_replicas *= m.shape()[static_cast<std::size_t>(a)];
    }
    data->hash = m.hash();
    detail::hash_combine(data->hash, std::hash<PartitionSpec>{}(data->spec));
    m_data = std::move(data);
  }

  const Mesh& mesh() const { return m_data->mesh; }
  const PartitionSpec& spec() const { return m_data->spec; }

  // Throws unless shape is a valid global shape for this sharding: rank >= spec length, no negative dim, an element
  // count that fits in int64 (check_volume).
  void check_shape(const std::vector<int64_t>& shape) const {
    DARRAY_THROW_IF(spec().size() > shape.size(), InvalidArgument, "NamedSharding",
                    spec() << " has " << spec().size() << " entries but the array has rank " << shape.size()
                           << " (shape " << shape_to_string(shape)
                           << "); a PartitionSpec may not be longer than the array rank");
    for (std::size_t d = 0; d < shape.size(); ++d)
      DARRAY_THROW_IF(shape[d] < 0, InvalidArgument, "NamedSharding",
                      "shape " << shape_to_string(shape) << " has negative dim " << d << " (" << shape[d]
                               << "); expected sizes >= 0");
    check_volume("NamedSharding", shape);
  }

  // Number of blocks along an array dim: the product of its axis sizes; 1 beyond the spec.
  int64_t num_parts(int dim) const {
    return static_cast<std::size_t>(dim) < m_data->dim_parts.size() ? m_data->dim_parts[static_cast<std::size_t>(dim)]
                                                                    : 1;
  }
  // The block a device holds along an array dim: its mesh coordinates along the dim's axes as a mixed-radix
  // number, first axis most significant; 0 beyond the spec.
  int64_t part_index(const Device& d, int dim) const { return part_at(mesh().position(d), dim); }

  // The device's box: block_slice(shape[dim], num_parts(dim), part_index(d, dim)) per dim.
  Index index(const std::vector<int64_t>& shape, const Device& d) const {
    check_shape(shape);
    return index_at(shape, mesh().position(d));
  }
  std::vector<int64_t> shard_shape(const std::vector<int64_t>& shape, const Device& d) const {
    return box_shape(index(shape, d));
  }
  // The largest block's shape (the first part of each dim holds the remainder), as JAX's shard_shape.
  std::vector<int64_t> shard_shape(const std::vector<int64_t>& shape) const {
    check_shape(shape);
    Shape out(shape.size());
    for (std::size_t d = 0; d < shape.size(); ++d) out[d] = block_size(shape[d], num_parts(static_cast<int>(d)), 0);
    return out;
  }

  // Which copy of its block a device holds: its coordinates along the mesh axes the spec leaves unused, as a
  // mixed-radix number in mesh-axis order.
  int64_t replica_id(const Device& d) const {
    const int64_t pos = mesh().position(d);
    int64_t r = 0;
    for (int a : m_data->replica_axes) r = r * mesh().shape()[static_cast<std::size_t>(a)] + mesh().coord(pos, a);
    return r;
  }
  int64_t num_replicas() const { return m_data->num_replicas; }

  // Every device holding the block with these per-dim part indices, ordered by replica id. parts may be longer
  // than the spec (extra entries must be 0). O(num_replicas), never O(mesh size).
  std::vector<Device> replica_devices(const std::vector<int64_t>& parts) const {
    DARRAY_THROW_IF(parts.size() < spec().size(), InvalidArgument, "NamedSharding",
                    "replica_devices got " << parts.size() << " part indices for " << spec()
                                           << "; expected one per array dim (at least " << spec().size() << ")");
    const Shape& mshape = mesh().shape();
    const Shape& strides = mesh().strides();
    int64_t base = 0;  // position of replica 0 of the block
    for (std::size_t d = 0; d < parts.size(); ++d) {
      const int64_t n = num_parts(static_cast<int>(d));
      DARRAY_THROW_IF(parts[d] < 0 || parts[d] >= n, InvalidArgument, "NamedSharding",
                      "part index " << parts[d] << " for dim " << d << " is outside [0, " << n << ") for " << spec());
      if (d >= m_data->dim_axes.size()) continue;
      int64_t rest = parts[d];
      const auto& axes = m_data->dim_axes[d];
      for (std::size_t k = axes.size(); k-- > 0;) {
        const auto a = static_cast<std::size_t>(axes[k]);
        base += (rest % mshape[a]) * strides[a];
        rest /= mshape[a];
      }
    }
    std::vector<Device> out;
    out.reserve(static_cast<std::size_t>(num_replicas()));
    const auto& raxes = m_data->replica_axes;
    for (int64_t r = 0; r < num_replicas(); ++r) {
      int64_t pos = base, rest = r;
      for (std::size_t k = raxes.size(); k-- > 0;) {
        const auto a = static_cast<std::size_t>(raxes[k]);
        pos += (rest % mshape[a]) * strides[a];
        rest /= mshape[a];
      }
      out.push_back(mesh().devices()[static_cast<std::size_t>(pos)]);
    }
    return out;
  }

  // One (device, index box) per mesh device, in mesh order.
  std::vector<std::pair<Device, Index>> devices_indices_map(const std::vector<int64_t>& shape) const {
    check_shape(shape);
    std::vector<std::pair<Device, Index>> out;
    out.reserve(static_cast<std::size_t>(mesh().size()));
    for (int64_t pos = 0; pos < mesh().size(); ++pos)
      out.emplace_back(mesh().devices()[static_cast<std::size_t>(pos)], index_at(shape, pos));
    return out;
  }
  // The devices of `process` only, in mesh order (the offline form; the one-argument form is this process's).
  // O(its devices), never O(mesh size).
  std::vector<std::pair<Device, Index>> addressable_devices_indices_map(const std::vector<int64_t>& shape,
                                                                        int process) const {
    check_shape(shape);
    std::vector<std::pair<Device, Index>> out;
    for (int64_t pos : mesh().process_positions(process))
      out.emplace_back(mesh().devices()[static_cast<std::size_t>(pos)], index_at(shape, pos));
    return out;
  }
  // Defined in darray/sharding/make_mesh.hpp (it asks the runtime for process_index()).
  inline std::vector<std::pair<Device, Index>> addressable_devices_indices_map(const std::vector<int64_t>& shape) const;

  // Every device holds the whole array: no spec entry names an axis of size > 1.
  bool is_fully_replicated() const {
    for (int64_t n : m_data->dim_parts)
      if (n != 1) return false;
    return true;
  }
  // Every mesh device belongs to `process`.
  bool is_fully_addressable(int process) const {
    const auto& p = mesh().process_indices();
    return p.size() == 1 && p[0] == process;
  }
  // Defined in darray/sharding/make_mesh.hpp (it asks the runtime for process_index()).
  inline bool is_fully_addressable() const;

  // "NamedSharding(mesh=Mesh('x': 4), spec=PartitionSpec('x'))", as JAX prints it.
  std::string to_string() const {
    return "NamedSharding(mesh=" + mesh().to_string() + ", spec=" + spec().to_string() + ")";
  }

  std::size_t hash() const { return m_data->hash; }
  // Structural, like the Mesh and PartitionSpec it is made of, so plans cached by sharding never mix layouts.
  // The same object (a call on an array's own sharding, the common case) is found inline; the field comparison is
  // a call of its own.
  friend bool operator==(const NamedSharding& a, const NamedSharding& b) {
    return a.m_data == b.m_data || same_fields(a, b);
  }
  friend bool operator!=(const NamedSharding& a, const NamedSharding& b) { return !(a == b); }

 private:
  static bool same_fields(const NamedSharding& a, const NamedSharding& b) {
    return a.m_data->hash == b.m_data->hash && a.m_data->spec == b.m_data->spec && a.m_data->mesh == b.m_data->mesh;
  }
  int64_t part_at(int64_t position, int dim) const {
    if (static_cast<std::size_t>(dim) >= m_data->dim_axes.size()) return 0;
    int64_t p = 0;
    for (int a : m_data->dim_axes[static_cast<std::size_t>(dim)])
      p = p * mesh().shape()[static_cast<std::size_t>(a)] + mesh().coord(position, a);
    return p;
  }
  // shape must have passed check_shape.
  Index index_at(const std::vector<int64_t>& shape, int64_t position) const {
    Index box(shape.size());
    for (std::size_t d = 0; d < shape.size(); ++d) {
      const int dim = static_cast<int>(d);
      box[d] = block_slice(shape[d], num_parts(dim), part_at(position, dim));
    }
    return box;
  }

  std::shared_ptr<const detail::ShardingData> m_data;
};

inline std::ostream& operator<<(std::ostream& os, const NamedSharding& s) { return os << s.to_string(); }

}  // namespace darray

template <>
struct std::hash<darray::NamedSharding> {
  std::size_t operator()(const darray::NamedSharding& s) const noexcept { return s.hash(); }
};
