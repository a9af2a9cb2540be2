// Index boxes: one half-open Slice per array dimension, the unit in which shards, plan pieces and file views are
// described. Value types: cheap to copy, comparable, hashable, printable like numpy slices.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "darray/core/error.hpp"

namespace darray {

struct Slice {
  int64_t start = 0;
  int64_t stop = 0;
  int64_t size() const { return stop > start ? stop - start : 0; }
  bool empty() const { return stop <= start; }
  friend bool operator==(const Slice& a, const Slice& b) { return a.start == b.start && a.stop == b.stop; }
  friend bool operator!=(const Slice& a, const Slice& b) { return !(a == b); }
};

using Index = std::vector<Slice>;
using Shape = std::vector<int64_t>;

// dst = src, with no write and no library call where dst holds src's boxes already (a shard list reused for the
// next result of the same sharding).
inline void assign_index(Index& dst, const Index& src) {
  if (dst.size() == src.size()) {
    bool same = true;
    for (std::size_t d = 0; d < src.size(); ++d) same = same && dst[d] == src[d];
    if (same) return;
  }
  dst = src;
}

inline std::ostream& operator<<(std::ostream& os, const Slice& s) { return os << s.start << ":" << s.stop; }

inline std::ostream& operator<<(std::ostream& os, const Index& index) {
  os << "(";
  for (std::size_t d = 0; d < index.size(); ++d) os << (d ? ", " : "") << index[d];
  return os << ")";
}

// "128x64" / "()" for a rank-0 shape.
inline std::string shape_to_string(const Shape& shape, const char* sep = "x") {
  if (shape.empty()) return "()";
  std::ostringstream os;
  for (std::size_t d = 0; d < shape.size(); ++d) os << (d ? sep : "") << shape[d];
  return os.str();
}

// NumPy's spelling of a shape, as in .npy headers and error messages: "(1024, 128)", "(5,)", "()".
inline std::string numpy_shape_string(const Shape& shape) {
  std::ostringstream os;
  os << "(";
  for (std::size_t d = 0; d < shape.size(); ++d) os << (d ? ", " : "") << shape[d];
  if (shape.size() == 1) os << ",";
  os << ")";
  return os.str();
}

inline std::string to_string(const Index& index) {
  std::ostringstream os;
  os << index;
  return os.str();
}

// Element counts, strides and offsets are int64_t everywhere, so a shape is only valid when the product of its
// nonzero extents fits in int64_t (a zero extent makes the count 0, but the strides still multiply the others).
// check_volume is the one place that checks it; NamedSharding and every array factory call it before using a shape.
namespace detail {
// Whether a box has an empty dim.
inline bool has_zero_extent(const Index& index) {
  for (const Slice& s : index)
    if (s.size() <= 0) return true;
  return false;
}

// check_volume's error, out of line: the check itself is one loop that small calls run many times.
[[noreturn]] __attribute__((noinline, cold)) inline void throw_bad_volume(const char* api, const Shape& shape) {
  for (std::size_t d = 0; d < shape.size(); ++d)
    DARRAY_THROW_IF(shape[d] < 0, InvalidArgument, api,
                    "shape " << numpy_shape_string(shape) << " has negative extent " << shape[d] << " in dim " << d
                             << "; expected sizes >= 0");
  DARRAY_THROW(InvalidArgument, api,
               "shape " << numpy_shape_string(shape)
                        << " is too large: the product of its extents exceeds 9223372036854775807 (2^63 - 1), the "
                           "largest element count an int64 index can address");
}
}  // namespace detail

// Throws InvalidArgument (raised by api) unless shape has no negative extent and the product of its nonzero extents
// is at most INT64_MAX. Returns the element count.
inline int64_t check_volume(const char* api, const Shape& shape) {
  int64_t product = 1;  // of the nonzero extents
  bool zero = false, bad = false;
  for (const int64_t e : shape) {
    zero |= e == 0;
    bad |= e < 0 || (e > 0 && __builtin_mul_overflow(product, e, &product));
  }
  if (bad) detail::throw_bad_volume(api, shape);
  return zero ? 0 : product;
}

// Number of elements of a box (0 when any dim is empty; 1 for rank 0). Boxes are parts of checked shapes, so the
// product cannot overflow; it is checked anyway, since a wrapped count would move the wrong bytes.
inline int64_t volume(const Index& index) {
  if (detail::has_zero_extent(index)) return 0;
  int64_t v = 1;
  for (const Slice& s : index)
    DARRAY_THROW_IF(__builtin_mul_overflow(v, s.size(), &v), InvalidArgument, "volume",
                    "box " << index << " has more than 9223372036854775807 (2^63 - 1) elements");
  return v;
}

inline int64_t volume(const Shape& shape) { return check_volume("volume", shape); }

// A box's extents (an empty slice counts 0), into the storage `shape` already has, or as a new Shape.
inline void box_shape_into(const Index& index, Shape& shape) {
  shape.resize(index.size());
  for (std::size_t d = 0; d < index.size(); ++d) shape[d] = index[d].size();
}
inline Shape box_shape(const Index& index) {
  Shape shape;
  box_shape_into(index, shape);
  return shape;
}

// The whole array as a box.
inline Index full_index(const Shape& shape) {
  Index index(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) index[d] = Slice{0, shape[d]};
  return index;
}

inline Slice intersect(const Slice& a, const Slice& b) {
  return Slice{std::max(a.start, b.start), std::min(a.stop, b.stop)};
}

// Per-dim intersection; the result may be empty (check volume()).
inline Index intersect(const Index& a, const Index& b) {
  Index out(a.size());
  for (std::size_t d = 0; d < a.size() && d < b.size(); ++d) out[d] = intersect(a[d], b[d]);
  return out;
}

inline bool contains(const Index& outer, const Index& inner) {
  if (outer.size() != inner.size()) return false;
  for (std::size_t d = 0; d < outer.size(); ++d) {
    if (inner[d].empty()) continue;
    if (inner[d].start < outer[d].start || inner[d].stop > outer[d].stop) return false;
  }
  return true;
}

// Row-major strides of a shape, in elements.
inline Shape row_major_strides(const Shape& shape) {
  Shape strides(shape.size(), 1);
  for (std::size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

namespace detail {
inline void hash_combine(std::size_t& seed, std::size_t value) {
  seed ^= value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
}
}  // namespace detail

}  // namespace darray

template <>
struct std::hash<darray::Slice> {
  std::size_t operator()(const darray::Slice& s) const noexcept {
    std::size_t h = std::hash<int64_t>{}(s.start);
    darray::detail::hash_combine(h, std::hash<int64_t>{}(s.stop));
    return h;
  }
};
