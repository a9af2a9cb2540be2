// Checks of a collective's operand, shared by all collectives: dim arguments, blocks that must be equal along the
// collective's axes (checked for every group, so every process throws the same error), chunks that must split
// evenly. Messages name the offending devices and shapes and the operand's shape and sharding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "darray/array/detail/checks.hpp"
#include "darray/collectives/detail/axis_groups.hpp"
#include "darray/core/error.hpp"
#include "darray/core/index.hpp"
#include "darray/sharding/detail/names.hpp"
#include "darray/sharding/named_sharding.hpp"

namespace darray {
namespace detail {

// "operand of shape (10,) sharded PartitionSpec('x') on Mesh('x': 4)": the context every collective error names.
inline std::string describe_operand(const Shape& shape, const NamedSharding& sharding) {
  return "operand of shape " + numpy_shape_string(shape) + " sharded " + sharding.spec().to_string() + " on " +
         sharding.mesh().to_string();
}

inline std::vector<std::string> axis_names_of(const Mesh& mesh, const std::vector<int>& axes) {
  std::vector<std::string> names;
  for (int a : axes) names.push_back(mesh.axis_names()[static_cast<std::size_t>(a)]);
  return names;
}

// "mesh axis \"x\"" or "mesh axes (\"x\", \"y\")".
inline std::string axes_phrase(const Mesh& mesh, const std::vector<int>& axes) {
  const auto names = axis_names_of(mesh, axes);
  return names.size() == 1 ? "mesh axis \"" + names[0] + "\"" : "mesh axes " + quoted_list(names);
}

// A dim argument, Python style: -rank .. rank - 1 (negative counts from the end). Returns it in 0 .. rank - 1.
inline int normalize_dim(const char* api, const char* what, int dim, int rank) {
  DARRAY_THROW_IF(rank == 0, InvalidArgument, api,
                  what << " = " << dim << " but the blocks have rank 0; expected an operand with at least one dim");
  DARRAY_THROW_IF(dim < -rank || dim >= rank, InvalidArgument, api,
                  what << " = " << dim << " is out of range for rank-" << rank << " blocks; expected " << -rank
                       << " .. " << rank - 1);
  return dim < 0 ? dim + rank : dim;
}

[[noreturn]] inline void throw_unequal_blocks(const char* api, const Mesh& mesh, const std::vector<int>& axes,
                                              const Device& a, const Shape& sa, const Device& b, const Shape& sb,
                                              const std::string& why, const Shape& shape,
                                              const NamedSharding& sharding) {
  DARRAY_THROW(InvalidArgument, api,
               "blocks along " << axes_phrase(mesh, axes) << " have unequal shapes: " << a << " holds "
                               << numpy_shape_string(sa) << " but " << b << " holds " << numpy_shape_string(sb) << " ("
                               << describe_operand(shape, sharding) << "); " << why
                               << ", so make each sharded dim a multiple of its number of parts");
}

// Per group: the block shape of its first device; the others must match it on every dim but `free_dim` (-1: all).
struct GroupShapes {
  std::vector<Shape> shape;
  std::vector<int64_t> first;   // mesh position of the group's first device
  std::vector<int64_t> extent;  // sum of the blocks' extents along free_dim
};

inline GroupShapes group_shapes(const char* api, const AxisGroups& groups, const NamedSharding& s, const Shape& shape,
                                int free_dim, const std::string& why) {
  GroupShapes gs;
  const auto count = static_cast<std::size_t>(groups.group_count());
  gs.shape.resize(count);
  gs.first.assign(count, -1);
  gs.extent.assign(count, 0);
  for (int64_t pos = 0; pos < groups.mesh().size(); ++pos) {
    const Shape b = box_shape(s.index(shape, groups.device(pos)));
    const auto g = static_cast<std::size_t>(groups.group(pos));
    if (free_dim >= 0) gs.extent[g] += b[static_cast<std::size_t>(free_dim)];
    if (gs.first[g] < 0) {
      gs.first[g] = pos;
      gs.shape[g] = b;
      continue;
    }
    bool equal = true;
    for (std::size_t d = 0; d < b.size(); ++d)
      equal = equal && (static_cast<int>(d) == free_dim || b[d] == gs.shape[g][d]);
    if (!equal)
      throw_unequal_blocks(api, groups.mesh(), groups.axes(), groups.device(gs.first[g]), gs.shape[g],
                           groups.device(pos), b, why, shape, s);
  }
  return gs;
}

inline void check_chunks(const char* api, const AxisGroups& groups, const GroupShapes& gs, int dim, const char* what,
                         const Shape& shape, const NamedSharding& s) {
  const int64_t n = groups.group_size();
  for (std::size_t g = 0; g < gs.shape.size(); ++g)
    DARRAY_THROW_IF(gs.shape[g][static_cast<std::size_t>(dim)] % n != 0, InvalidArgument, api,
                    what << " = " << dim << ": the block of " << groups.device(gs.first[g]) << " has size "
                         << gs.shape[g][static_cast<std::size_t>(dim)] << " along it, which does not split into " << n
                         << " equal chunks along " << axes_phrase(groups.mesh(), groups.axes()) << " ("
                         << describe_operand(shape, s) << "); expected a multiple of " << n);
}

}  // namespace detail
}  // namespace darray
