// Naming mesh axes in collectives: AxisNames (one axis or several, major first, as JAX's axis_name tuples), the
// tiled/stacked tags of all_gather, and axis_index, a device's coordinate along mesh axes (jax.lax.axis_index).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "darray/core/error.hpp"
#include "darray/runtime/device.hpp"
#include "darray/sharding/detail/names.hpp"
#include "darray/sharding/mesh.hpp"

namespace darray {

namespace detail {
struct AxisNamesAccess;
}  // namespace detail

// One mesh axis ("x") or several ({"x", "y"}, the first most significant) for the reductions, psum(a, "x") and
// psum(a, {"x", "y"}) alike; all_gather, all_to_all, ppermute and psum_scatter take exactly one (another count, or a
// null const char*, is an InvalidArgument naming the collective). One name is held without a heap allocation (a
// small call's overhead).
class AxisNames {
 public:
  AxisNames(const char* axis) : m_one(axis != nullptr ? axis : ""), m_null(axis == nullptr) {}
  AxisNames(std::string axis) : m_one(std::move(axis)) {}
  AxisNames(std::initializer_list<std::string> axes) : m_many(axes), m_listed(true) {}
  AxisNames(std::vector<std::string> axes) : m_many(std::move(axes)), m_listed(true) {}

  std::size_t size() const { return m_listed ? m_many.size() : 1; }
  const std::string& operator[](std::size_t k) const { return m_listed ? m_many[k] : m_one; }
  std::vector<std::string> names() const { return m_listed ? m_many : std::vector<std::string>{m_one}; }

 private:
  friend struct detail::AxisNamesAccess;
  std::string m_one;
  std::vector<std::string> m_many;
  bool m_listed = false;
  bool m_null = false;  // given as a null const char*: the collective throws, naming itself (resolve_axes)
};

// all_gather(a, axis, dim, tiled): the blocks are concatenated along dim (jax.lax.all_gather(..., tiled=True)).
struct tiled_t {};
inline constexpr tiled_t tiled{};
// all_gather(a, axis, dim, stacked): the blocks are stacked along a new dim inserted at dim (tiled=False).
struct stacked_t {};
inline constexpr stacked_t stacked{};

namespace detail {

// Mesh position of a named axis. Throws when the name is unknown. The single-axis collectives call it per call:
// no list is built.
inline int resolve_axis(const char* api, const Mesh& mesh, const std::string& name) {
  const int a = mesh.find_axis(name);
  DARRAY_THROW_IF(a < 0, InvalidArgument, api,
                  "mesh axis \"" << name << "\" not found; mesh axes are " << quoted_list(mesh.axis_names()));
  return a;
}

struct AxisNamesAccess {
  static bool null(const AxisNames& names) { return names.m_null; }
  // The name when there is exactly one and it is not a null const char*, else null.
  static const std::string* single(const AxisNames& names) {
    if (names.m_listed) return names.m_many.size() == 1 ? &names.m_many[0] : nullptr;
    return names.m_null ? nullptr : &names.m_one;
  }
};

// Throws when the names are a null const char* or an empty list; `expected` says how many the caller takes ("one",
// "one or more").
inline void check_axes_given(const char* api, const Mesh& mesh, const AxisNames& names, const char* expected) {
  if (AxisNamesAccess::null(names)) name_from(nullptr, api, "one of " + quoted_list(mesh.axis_names()));
  DARRAY_THROW_IF(names.size() == 0, InvalidArgument, api,
                  "no mesh axis given; expected " << expected << " of " << quoted_list(mesh.axis_names()));
}

// Names that are not one mesh axis, where one is expected: the error.
[[noreturn]] inline void throw_not_one_axis(const char* api, const Mesh& mesh, const AxisNames& names) {
  check_axes_given(api, mesh, names, "one");
  DARRAY_THROW(InvalidArgument, api,
               "mesh axes " << quoted_list(names.names()) << " given; expected one mesh axis of "
                            << quoted_list(mesh.axis_names()));
}

// Mesh position of the one axis that all_gather, all_to_all, ppermute and psum_scatter take. Throws when the name is
// a null pointer or unknown, or when a list of another length than one is given. Builds no list.
inline int resolve_one_axis(const char* api, const Mesh& mesh, const AxisNames& names) {
  const std::string* one = AxisNamesAccess::single(names);
  if (one == nullptr) throw_not_one_axis(api, mesh, names);
  return resolve_axis(api, mesh, *one);
}

// The axis as a call's text shows it (the DARRAY_CHECK comparison): "x" for one name, as given otherwise.
inline std::string axis_text(const AxisNames& names) {
  return names.size() == 1 ? "\"" + names[0] + "\"" : quoted_list(names.names());
}

// Mesh positions of named axes, in the given order, appended to `positions`. Throws when a name is null, unknown or
// repeated, or none is given.
template <class Int>
void resolve_axes(const char* api, const Mesh& mesh, const AxisNames& names, std::vector<Int>& positions) {
  check_axes_given(api, mesh, names, "one or more");
  for (std::size_t k = 0; k < names.size(); ++k) {
    const int a = resolve_axis(api, mesh, names[k]);
    for (std::size_t j = 0; j < k; ++j)
      DARRAY_THROW_IF(names[j] == names[k], InvalidArgument, api,
                      "mesh axis \"" << names[k] << "\" is named twice in " << quoted_list(names.names())
                                     << "; expected distinct axes");
    positions.push_back(a);
  }
}

}  // namespace detail

// The device's coordinate along a mesh axis, 0 .. axis_size - 1, as jax.lax.axis_index("x") inside shard_map.
// Over several axes ({"x", "y"}): the mixed-radix number of the coordinates, the first axis most significant.
inline int64_t axis_index(const Mesh& mesh, const AxisNames& axes, const Device& device) {
  std::vector<int> positions;
  detail::resolve_axes("axis_index", mesh, axes, positions);
  DARRAY_THROW_IF(!mesh.contains(device), InvalidArgument, "axis_index",
                  "device " << device << " is not in " << mesh.to_string() << "; expected one of its devices");
  const int64_t pos = mesh.position(device);
  int64_t index = 0;
  for (int a : positions) index = index * mesh.shape()[static_cast<std::size_t>(a)] + mesh.coord(pos, a);
  return index;
}

}  // namespace darray
