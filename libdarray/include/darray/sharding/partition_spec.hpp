// PartitionSpec: how each leading array dim is split over mesh axes, as jax.sharding.PartitionSpec. One entry per
// dim: no axes (replicated), one axis, or several axes major-first. Built in C++ as P{"x", none, axes("y", "z")}
// or parsed from JAX's spelling with PartitionSpec::parse("P('x', None, ('y', 'z'))").
#pragma once

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "darray/core/error.hpp"
#include "darray/core/index.hpp"
#include "darray/sharding/detail/names.hpp"
#include "darray/sharding/detail/spec_parser.hpp"

namespace darray {

// The spec entry of a replicated dim (Python's None).
struct none_t {};
inline constexpr none_t none{};

// One PartitionSpec entry; converts implicitly from an axis name, `none` (or nullptr: Python's None), or
// axes("y", "z"). A name that is a null pointer is an error, not None: it is rather a name that was not found.
class SpecEntry {
 public:
  SpecEntry(none_t) {}
  SpecEntry(std::nullptr_t) {}
  SpecEntry(const char* axis) : m_axes{name_of(axis)} {}
  SpecEntry(std::string axis) : m_axes{std::move(axis)} {}
  explicit SpecEntry(std::vector<std::string> axes) : m_axes(std::move(axes)) {}
  const std::vector<std::string>& axes() const { return m_axes; }

 private:
  static std::string name_of(const char* axis) {
    return detail::name_from(axis, "PartitionSpec", "a mesh axis name, or none (or nullptr) for a replicated dim");
  }
  std::vector<std::string> m_axes;
};

// Several mesh axes on one dim, the first one most significant: P(axes("y", "z")) is JAX's P(('y', 'z')).
// axes() with no names is a replicated dim, like JAX's ().
namespace detail {
inline std::string spec_axis_name(const char* name) { return name_from(name, "PartitionSpec", "a mesh axis name"); }
inline std::string spec_axis_name(std::string name) { return name; }
inline std::string spec_axis_name(std::string_view name) { return std::string(name); }
}  // namespace detail

template <class... Names>
SpecEntry axes(Names&&... names) {
  return SpecEntry(std::vector<std::string>{detail::spec_axis_name(std::forward<Names>(names))...});
}

class PartitionSpec {
 public:
  using Entry = std::vector<std::string>;  // empty = replicated

  PartitionSpec() = default;  // fully replicated
  PartitionSpec(std::initializer_list<SpecEntry> entries) {
    m_entries.reserve(entries.size());
    for (const SpecEntry& e : entries) m_entries.push_back(e.axes());
    validate();
  }
  // P("x", none, axes("y", "z")): JAX's call spelling, so tutorial lines translate one to one.
  template <class... Rest, class = std::enable_if_t<(std::is_convertible_v<Rest, SpecEntry> && ...)>>
  explicit PartitionSpec(SpecEntry first, Rest&&... rest)
      : PartitionSpec({std::move(first), SpecEntry(std::forward<Rest>(rest))...}) {}
  explicit PartitionSpec(std::vector<Entry> entries) : m_entries(std::move(entries)) { validate(); }

  // Accepts JAX's spelling with or without the P(...) / PartitionSpec(...) wrapper and with or without quotes:
  // "x, None, (y, z)", "P('x', None, ('y','z'))", "PartitionSpec('a', 'b')", "a,b", "" (fully replicated).
  static PartitionSpec parse(const std::string& text) { return PartitionSpec(detail::parse_spec_entries(text)); }

  std::size_t size() const { return m_entries.size(); }
  bool empty() const { return m_entries.empty(); }
  const Entry& operator[](std::size_t dim) const { return m_entries[dim]; }
  const std::vector<Entry>& entries() const { return m_entries; }

  // "PartitionSpec('x', None, ('y', 'z'))", as JAX prints it; parse() reads it back.
  std::string to_string() const {
    std::string out = "PartitionSpec(";
    for (std::size_t d = 0; d < m_entries.size(); ++d) {
      if (d) out += ", ";
      const Entry& e = m_entries[d];
      if (e.empty()) {
        out += "None";
      } else if (e.size() == 1) {
        out += detail::python_repr(e[0]);
      } else {
        out += "(";
        for (std::size_t k = 0; k < e.size(); ++k) out += (k ? ", " : "") + detail::python_repr(e[k]);
        out += ")";
      }
    }
    return out + ")";
  }

  // Structural, as JAX compares specs: P("x") and P("x", none) differ (the second rejects rank-1 arrays).
  friend bool operator==(const PartitionSpec& a, const PartitionSpec& b) { return a.m_entries == b.m_entries; }
  friend bool operator!=(const PartitionSpec& a, const PartitionSpec& b) { return !(a == b); }

 private:
  // Checks that need no mesh, so a bad spec fails where it is written, not where it is first used. Linear in the
  // number of names (one hash lookup each); messages show at most detail::max_quoted_chars of the spec.
  void validate() const {
    std::size_t total = 0;
    for (const Entry& e : m_entries) total += e.size();
    std::unordered_map<std::string_view, std::size_t> first_dim;  // name -> dim of its first use
    first_dim.reserve(total);
    for (std::size_t d = 0; d < m_entries.size(); ++d) {
      for (const std::string& name : m_entries[d]) {
        DARRAY_THROW_IF(name.empty(), InvalidArgument, "PartitionSpec",
                        "empty axis name in dim " << d << " of " << detail::printable(to_string())
                                                  << "; expected a mesh axis name");
        const std::size_t bad = detail::first_control_char(name);
        DARRAY_THROW_IF(bad != std::string::npos, InvalidArgument, "PartitionSpec",
                        "axis name \"" << detail::printable(name) << "\" in dim " << d
                                       << " holds the control character "
                                       << detail::printable(std::string(1, name[bad])) << " at position " << bad
                                       << "; axis names must be printable");
        const auto [it, fresh] = first_dim.emplace(name, d);
        const std::size_t e = it->second;
        DARRAY_THROW_IF(!fresh, InvalidArgument, "PartitionSpec",
                        "mesh axis \"" << detail::printable(name) << "\" is used twice in "
                                       << detail::printable(to_string()) << " ("
                                       << (e == d ? "both in dim " + std::to_string(d)
                                                  : "dims " + std::to_string(e) + " and " + std::to_string(d))
                                       << "); a mesh axis may shard at most one dim, once");
      }
    }
  }

  std::vector<Entry> m_entries;
};

using P = PartitionSpec;

inline std::ostream& operator<<(std::ostream& os, const PartitionSpec& spec) { return os << spec.to_string(); }

namespace detail {

// The spec's entries at `rank` dims, unsharded entries appended: P("x") and P("x", None) place a rank-2 array's
// blocks alike, so what identifies a placement across calls (a movement's fingerprint, an FFT stage's wisdom key)
// reads these rather than the spec as written.
inline std::vector<PartitionSpec::Entry> entries_at_rank(const PartitionSpec& spec, std::size_t rank) {
  std::vector<PartitionSpec::Entry> entries = spec.entries();
  if (entries.size() < rank) entries.resize(rank);
  return entries;
}

}  // namespace detail
}  // namespace darray

template <>
struct std::hash<darray::PartitionSpec> {
  std::size_t operator()(const darray::PartitionSpec& spec) const noexcept {
    std::size_t h = spec.size();
    for (const auto& entry : spec.entries()) {
      // The entry length keeps P(("x", "y")) apart from P("x", "y").
      darray::detail::hash_combine(h, entry.size());
      for (const auto& axis : entry) darray::detail::hash_combine(h, std::hash<std::string>{}(axis));
    }
    return h;
  }
};
