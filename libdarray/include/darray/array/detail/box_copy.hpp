// Copies between row-major buffers that each hold one box of a global array (the pack and unpack steps of scatter,
// gather, process-local data, halo padding, collectives), as forms of the one strided copy of strided_copy.hpp.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <type_traits>
#include <vector>

#include "darray/array/detail/stream_copy.hpp"
#include "darray/array/detail/strided_copy.hpp"
#include "darray/core/index.hpp"
#include "darray/runtime/detail/kokkos_compat.hpp"

namespace darray {
namespace detail {

// Copies `region` (global coordinates, inside both boxes) from the buffer holding src_box to the buffer holding
// dst_box, both row-major and host-reachable: the host form of the one strided copy (strided_copy.hpp).
// `streaming` writes with non-temporal stores; the caller then issues stream_fence() once its copies are done.
template <class T>
void copy_box(const T* src, const Index& src_box, T* dst, const Index& dst_box, const Index& region,
              bool streaming = false) {
  if (volume(region) == 0) return;
  strided_copy_host(src, dst, simplify(box_copy_geometry(src_box, dst_box, region)), streaming);
}

// The same in any memory space: at once on the host, by a kernel on `space` elsewhere (not fenced).
template <class T, class MemorySpace, class ExecSpace = Kokkos::DefaultExecutionSpace>
void copy_box_any(const T* src, const Index& src_box, T* dst, const Index& dst_box, const Index& region,
                  const ExecSpace& space = default_instance<ExecSpace>()) {
  if (volume(region) == 0) return;
  strided_copy<T, MemorySpace>(space, src, dst, box_copy_geometry(src_box, dst_box, region));
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
