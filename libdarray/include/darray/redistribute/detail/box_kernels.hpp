// Copying one box of the global array between two row-major buffers that each hold a (larger) box, in any
// memory space: memcpy runs on the host, a Kokkos kernel where the host cannot reach the memory (GPU builds).
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>

#include "darray/array/detail/box_copy.hpp"
#include "darray/array/detail/view.hpp"
#include "darray/core/error.hpp"
#include "darray/core/index.hpp"

namespace darray {
namespace detail {

inline constexpr int max_kernel_rank = 8;

// Region geometry flattened into fixed arrays so a device kernel can capture it by value.
struct BoxGeometry {
  int rank = 0;
  int64_t extent[max_kernel_rank] = {};
  int64_t src_stride[max_kernel_rank] = {};
  int64_t dst_stride[max_kernel_rank] = {};
  int64_t src_base = 0;
  int64_t dst_base = 0;
};

inline BoxGeometry box_geometry(const Index& src_box, const Index& dst_box, const Index& region) {
  BoxGeometry g;
  g.rank = static_cast<int>(region.size());
  DARRAY_THROW_IF(g.rank > max_kernel_rank, NotSupported, "reshard", "rank " << g.rank << " arrays; at most 8 dims");
  const Shape ss = row_major_strides(box_shape(src_box)), ds = row_major_strides(box_shape(dst_box));
  for (int d = 0; d < g.rank; ++d) {
    const auto k = static_cast<std::size_t>(d);
    g.extent[d] = region[k].size();
    g.src_stride[d] = ss[k];
    g.dst_stride[d] = ds[k];
    g.src_base += (region[k].start - src_box[k].start) * ss[k];
    g.dst_base += (region[k].start - dst_box[k].start) * ds[k];
  }
  return g;
}

// Kernel version: one work item per element, the last dim fastest (coalesced on GPUs). Not fenced.
template <class T, class ExecSpace>
void copy_box_kernel(const ExecSpace& space, const T* src, const Index& src_box, T* dst, const Index& dst_box,
                     const Index& region) {
  const int64_t n = volume(region);
  if (n == 0) return;
  const BoxGeometry g = box_geometry(src_box, dst_box, region);
  Kokkos::parallel_for(
      "darray::copy_box", Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<int64_t>>(space, 0, n),
      KOKKOS_LAMBDA(const int64_t i) {
        int64_t rest = i, s = g.src_base, t = g.dst_base;
        for (int d = g.rank - 1; d >= 0; --d) {
          const int64_t c = rest % g.extent[d];
          rest /= g.extent[d];
          s += c * g.src_stride[d];
          t += c * g.dst_stride[d];
        }
        dst[t] = src[s];
      });
}

// Copies `region` from the buffer of src_box to the buffer of dst_box, both in MemorySpace. Host-reachable memory
// is copied with memcpy runs right away; other memory by a kernel on `space` (fence before MPI reads it).
template <class T, class MemorySpace, class ExecSpace = Kokkos::DefaultExecutionSpace>
void copy_box_any(const T* src, const Index& src_box, T* dst, const Index& dst_box, const Index& region,
                  const ExecSpace& space = ExecSpace()) {
  if constexpr (host_accessible_v<MemorySpace>) {
    (void)space;
    copy_box(src, src_box, dst, dst_box, region);
  } else {
    copy_box_kernel(space, src, src_box, dst, dst_box, region);
  }
}

}  // namespace detail
}  // namespace darray
