// Host copies between row-major buffers that each hold one box of a global array: the pack and unpack steps of
// scatter, gather, process-local data and same-process reshard pieces. Trailing dims that both boxes cover entirely
// merge into one memcpy run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <type_traits>
#include <vector>

#include "darray/array/detail/stream_copy.hpp"
#include "darray/core/index.hpp"

namespace darray {
namespace detail {

// Copies `region` (global coordinates, inside both boxes) from the buffer holding src_box to the buffer holding
// dst_box. Both buffers are row-major over their box. `streaming` writes with non-temporal stores (stream_copy.hpp);
// the caller then issues stream_fence() once its copies are done.
template <class T>
void copy_box(const T* src, const Index& src_box, T* dst, const Index& dst_box, const Index& region,
              bool streaming = false) {
  static_assert(std::is_trivially_copyable<T>::value, "array elements are copied as bytes");
  if (volume(region) == 0) return;
  const std::size_t n = region.size();
  if (n == 0) {
    *dst = *src;
    return;
  }
  const Shape src_strides = row_major_strides(box_shape(src_box));
  const Shape dst_strides = row_major_strides(box_shape(dst_box));
  // Dims [inner, n) form one contiguous run in both buffers.
  std::size_t inner = n - 1;
  int64_t run = region[inner].size();
  while (inner > 0 && region[inner] == src_box[inner] && region[inner] == dst_box[inner]) {
    --inner;
    run *= region[inner].size();
  }
  int64_t src_base = 0, dst_base = 0;
  for (std::size_t d = 0; d < n; ++d) {
    src_base += (region[d].start - src_box[d].start) * src_strides[d];
    dst_base += (region[d].start - dst_box[d].start) * dst_strides[d];
  }
  const std::size_t run_bytes = static_cast<std::size_t>(run) * sizeof(T);
  // Odometer over the outer dims [0, inner).
  std::vector<int64_t> counter(inner, 0);
  while (true) {
    int64_t s = src_base, t = dst_base;
    for (std::size_t d = 0; d < inner; ++d) {
      s += counter[d] * src_strides[d];
      t += counter[d] * dst_strides[d];
    }
    if (streaming)
      stream_copy(dst + t, src + s, run_bytes);
    else
      std::memcpy(dst + t, src + s, run_bytes);
    std::size_t d = inner;
    while (d > 0) {
      --d;
      if (++counter[d] < region[d].size()) break;
      counter[d] = 0;
      if (d == 0) return;
    }
    if (inner == 0) return;
  }
}

// Offset (in elements) of `region` inside the row-major buffer of `box` when the region occupies one contiguous
// range there (all dims but the leading non-trivial one span the box), else nullopt. Lets a block be received or
// sent in place, without a staging buffer.
inline std::optional<int64_t> contiguous_offset(const Index& region, const Index& box) {
  const std::size_t n = region.size();
  std::size_t d = n;
  // Trailing dims must span the box ...
  while (d > 0 && region[d - 1] == box[d - 1]) --d;
  // ... then one dim may be partial, and every dim before it must have extent 1.
  if (d > 0) --d;
  for (std::size_t k = 0; k < d; ++k)
    if (region[k].size() != 1) return std::nullopt;
  const Shape strides = row_major_strides(box_shape(box));
  int64_t offset = 0;
  for (std::size_t k = 0; k < n; ++k) offset += (region[k].start - box[k].start) * strides[k];
  return offset;
}

}  // namespace detail
}  // namespace darray
