// The one box-copy kernel of the library: copies an N-d region (N <= 8) between two buffers in which it lies at any
// element strides (row-major blocks of different boxes, permuted axis orders, packed message buffers). Every pack,
// unpack and same-process copy of the exchange engine, the collectives, the halo and the FFT runs through it. The
// geometry is simplified first (unit dims dropped, dims ordered by the destination's strides, dims contiguous on
// both sides merged), so the host copies long memcpy runs and a device kernel walks few dims. The same copy may add
// into the destination instead of overwriting it (CopyOp::add: the halo accumulation, the adjoint of the fill).
#pragma once

#include <Kokkos_Core.hpp>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "darray/array/detail/stream_copy.hpp"
#include "darray/array/detail/view.hpp"
#include "darray/core/error.hpp"
#include "darray/core/index.hpp"
#include "darray/runtime/detail/kokkos_compat.hpp"

namespace darray {
namespace detail {

inline constexpr int max_copy_rank = 8;

// What a copy does with each destination element: overwrite it, or add the source element into it.
enum class CopyOp { assign, add };

// Whether CopyOp::add can be instantiated for T (t += s).
template <class T, class = void>
struct addable : std::false_type {};
template <class T>
struct addable<T, std::void_t<decltype(std::declval<T&>() += std::declval<const T&>())>> : std::true_type {};
template <class T>
inline constexpr bool addable_v = addable<T>::value;

// A region of `extent` elements per dim, at src_offset + sum(i[d] * src_stride[d]) in the source and likewise in
// the destination (all in elements). Flat arrays, so a device kernel captures it by value.
struct CopyGeometry {
  int rank = 0;
  int64_t extent[max_copy_rank] = {};
  int64_t src_stride[max_copy_rank] = {};
  int64_t dst_stride[max_copy_rank] = {};
  int64_t src_offset = 0;
  int64_t dst_offset = 0;

  int64_t elements() const {
    int64_t n = 1;
    for (int d = 0; d < rank; ++d) n *= extent[d];
    return n;
  }
};

// Row-major element strides of a buffer of `shape`.
inline void row_major_strides_into(const Shape& shape, int64_t* strides) {
  int64_t s = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    strides[d] = s;
    s *= shape[d];
  }
}

// The same for the buffer of a box (its dims' sizes): no Shape is built.
inline void row_major_strides_into(const Index& box, int64_t* strides) {
  int64_t s = 1;
  for (std::size_t d = box.size(); d-- > 0;) {
    strides[d] = s;
    s *= box[d].size();
  }
}

// `region` (global coordinates) copied from the row-major buffer of src_box to the row-major buffer of dst_box.
inline CopyGeometry box_copy_geometry(const Index& src_box, const Index& dst_box, const Index& region) {
  CopyGeometry g;
  g.rank = static_cast<int>(region.size());
  DARRAY_THROW_IF(g.rank > max_copy_rank, NotSupported, "copy", "rank " << g.rank << " arrays; at most 8 dims");
  int64_t ss[max_copy_rank], ds[max_copy_rank];
  row_major_strides_into(src_box, ss);
  row_major_strides_into(dst_box, ds);
  for (int d = 0; d < g.rank; ++d) {
    const auto k = static_cast<std::size_t>(d);
    g.extent[d] = region[k].size();
    g.src_stride[d] = ss[d];
    g.dst_stride[d] = ds[d];
    g.src_offset += (region[k].start - src_box[k].start) * ss[d];
    g.dst_offset += (region[k].start - dst_box[k].start) * ds[d];
  }
  return g;
}

// The same copy with unit dims dropped, dims sorted outermost-first by destination stride (so writes stream), and
// neighbours that are contiguous on both sides merged. An empty region keeps one dim of extent 0.
inline CopyGeometry simplify(const CopyGeometry& in) {
  CopyGeometry g;
  g.src_offset = in.src_offset;
  g.dst_offset = in.dst_offset;
  int order[max_copy_rank];
  int n = 0;
  for (int d = 0; d < in.rank; ++d) {
    if (in.extent[d] == 0) {
      g.rank = 1;
      g.extent[0] = 0;
      g.src_stride[0] = g.dst_stride[0] = 1;
      return g;
    }
    if (in.extent[d] != 1) order[n++] = d;
  }
  const auto outer = [&](int a, int b) {
    return in.dst_stride[a] != in.dst_stride[b] ? in.dst_stride[a] > in.dst_stride[b]
                                                : in.src_stride[a] > in.src_stride[b];
  };
  // A stable insertion sort of at most 8 dims: std::stable_sort asks the heap for a buffer on every call.
  for (int i = 1; i < n; ++i) {
    const int d = order[i];
    int j = i;
    for (; j > 0 && outer(d, order[j - 1]); --j) order[j] = order[j - 1];
    order[j] = d;
  }
  for (int k = 0; k < n; ++k) {
    const int d = order[k];
    if (g.rank > 0) {
      const int last = g.rank - 1;
      // `last` is outer to d: merge when one step of it is exactly d's whole extent on both sides.
      if (g.src_stride[last] == in.src_stride[d] * in.extent[d] &&
          g.dst_stride[last] == in.dst_stride[d] * in.extent[d]) {
        g.extent[last] *= in.extent[d];
        g.src_stride[last] = in.src_stride[d];
        g.dst_stride[last] = in.dst_stride[d];
        continue;
      }
    }
    g.extent[g.rank] = in.extent[d];
    g.src_stride[g.rank] = in.src_stride[d];
    g.dst_stride[g.rank] = in.dst_stride[d];
    ++g.rank;
  }
  if (g.rank == 0) {  // a single element
    g.rank = 1;
    g.extent[0] = 1;
    g.src_stride[0] = g.dst_stride[0] = 1;
  }
  return g;
}

// Calls row(src_offset, dst_offset) with the element offsets of each row (the innermost dim, g.extent[g.rank - 1]
// elements at strides g.src_stride / g.dst_stride there) of a simplified geometry, in row-major order of the outer
// dims; nothing for an empty one.
template <class F>
void for_each_row(const CopyGeometry& g, F&& row) {
  const int inner = g.rank - 1;
  if (g.extent[inner] == 0) return;  // simplify leaves an empty region as one dim of extent 0
  int64_t counter[max_copy_rank] = {};
  int64_t s = g.src_offset, t = g.dst_offset;
  while (true) {
    row(s, t);
    int d = inner;
    while (true) {
      if (d == 0) return;
      --d;
      s += g.src_stride[d];
      t += g.dst_stride[d];
      if (++counter[d] < g.extent[d]) break;
      s -= g.src_stride[d] * g.extent[d];
      t -= g.dst_stride[d] * g.extent[d];
      counter[d] = 0;
    }
  }
}

// Elements a simplified copy geometry moves contiguously on both sides at once: its innermost dim where both strides
// there are 1, else single elements.
inline int64_t contiguous_run(const CopyGeometry& g) {
  return g.rank > 0 && g.src_stride[g.rank - 1] == 1 && g.dst_stride[g.rank - 1] == 1 ? g.extent[g.rank - 1] : 1;
}

// Whether a simplified copy geometry is one contiguous run on both sides (a halo slab, a block's rows, a small
// collective's shard): then it is one copy of extent[0] elements from src_offset to dst_offset.
inline bool single_run(const CopyGeometry& g) { return g.rank == 1 && g.src_stride[0] == 1 && g.dst_stride[0] == 1; }

// Calls f(src_offset, dst_offset, run) for each contiguous_run of a simplified copy geometry in turn, at those
// element offsets.
template <class F>
void for_each_run(const CopyGeometry& g, F&& f) {
  const int inner = g.rank - 1;
  const int64_t n = g.extent[inner], a = g.src_stride[inner], b = g.dst_stride[inner];
  if (contiguous_run(g) > 1 || n == 1)
    for_each_row(g, [&](int64_t s, int64_t t) { f(s, t, n); });
  else
    for_each_row(g, [&](int64_t s, int64_t t) {
      for (int64_t k = 0; k < n; ++k) f(s + k * a, t + k * b, int64_t(1));
    });
}

// Host copy of a simplified geometry, row by row: copy_bytes (or streaming stores) of each row where both sides are
// contiguous along it, an element loop otherwise (always an element loop for CopyOp::add).
template <class T, CopyOp Op>
void strided_copy_host_rows(const T* src, T* dst, const CopyGeometry& g, bool streaming) {
  const int inner = g.rank - 1;
  const int64_t run = g.extent[inner];
  const int64_t a = g.src_stride[inner], b = g.dst_stride[inner];
  const std::size_t run_bytes = static_cast<std::size_t>(run) * sizeof(T);
  if (Op == CopyOp::assign && a == 1 && b == 1) {
    if (streaming)
      for_each_row(g, [&](int64_t s, int64_t t) { stream_copy(dst + t, src + s, run_bytes); });
    else
      for_each_row(g, [&](int64_t s, int64_t t) {
        copy_bytes(static_cast<void*>(dst + t), static_cast<const void*>(src + s), run_bytes);
      });
    return;
  }
  for_each_row(g, [&](int64_t so, int64_t to) {
    const T* s = src + so;
    T* t = dst + to;
    if constexpr (Op == CopyOp::add)
      for (int64_t k = 0; k < run; ++k) t[k * b] += s[k * a];
    else
      for (int64_t k = 0; k < run; ++k) t[k * b] = s[k * a];
  });
}

// Host copy of a simplified geometry. A single_run is one copy_bytes here, inline: such copies come many to a call
// and cost little more than the call.
template <class T, CopyOp Op = CopyOp::assign>
inline void strided_copy_host(const T* src, T* dst, const CopyGeometry& g, bool streaming) {
  static_assert(std::is_trivially_copyable<T>::value, "array elements are copied as bytes");
  if (Op == CopyOp::assign && single_run(g) && !streaming) {
    copy_bytes(static_cast<void*>(dst + g.dst_offset), static_cast<const void*>(src + g.src_offset),
               static_cast<std::size_t>(g.extent[0]) * sizeof(T));
    return;
  }
  strided_copy_host_rows<T, Op>(src, dst, g, streaming);
}

// One copy of a family that reads one source with one geometry and differs only in offsets and destination buffer
// (the pieces a block sends to several devices of its process): `dst` indexes the caller's destination buffers.
struct RowMember {
  int dst;
  int64_t src_offset, dst_offset;
};

// The copies [first, last) of the simplified geometry `shape` (its offsets 0; contiguous along its innermost
// dim on both sides), all from `src`, taken row by row across the members: row r of each member in turn, then row
// r + 1. With the members in order of their source offsets, the source is read in address order where copying
// member after member reads each member's rows at the source's longer stride; with streaming stores (the caller then
// issues stream_fence()), a blocked transpose of 2 KiB rows from 8 MiB blocks to 8 devices took 0.74-0.90x the time
// of a memcpy of its bytes on this project's VM (AMD EPYC), against 1.8-2.1x member after member.
template <class T, class Dst>
void copy_rows_interleaved(const T* src, const CopyGeometry& shape, const RowMember* first, const RowMember* last,
                           const Dst& dst, bool streaming) {
  const std::size_t run_bytes = static_cast<std::size_t>(shape.extent[shape.rank - 1]) * sizeof(T);
  for_each_row(shape, [&](int64_t s, int64_t t) {
    for (const RowMember* m = first; m != last; ++m) {
      T* const to = dst[static_cast<std::size_t>(m->dst)] + m->dst_offset + t;
      const T* const from = src + m->src_offset + s;
      if (streaming)
        stream_copy(static_cast<void*>(to), static_cast<const void*>(from), run_bytes);
      else
        copy_bytes(static_cast<void*>(to), static_cast<const void*>(from), run_bytes);
    }
  });
}

// One work item of a device copy: element i of the region, the destination's innermost dim fastest (coalesced
// writes). A functor, not a KOKKOS_LAMBDA: under nvcc an extended __host__ __device__ lambda is a type-erased wrapper
// that allocates on the host heap when made and when Kokkos copies it (runtime/detail/kokkos_compat.hpp).
template <class I, CopyOp Op, class T>
struct StridedCopyItem {
  const T* src;  // src + g.src_offset
  T* dst;        // dst + g.dst_offset
  CopyGeometry g;
  KOKKOS_INLINE_FUNCTION void operator()(const I i) const {
    I rest = i;
    int64_t s = 0, t = 0;
    for (int d = g.rank - 1; d > 0; --d) {
      const I e = static_cast<I>(g.extent[d]);
      const I c = rest % e;
      rest /= e;
      s += static_cast<int64_t>(c) * g.src_stride[d];
      t += static_cast<int64_t>(c) * g.dst_stride[d];
    }
    s += static_cast<int64_t>(rest) * g.src_stride[0];
    t += static_cast<int64_t>(rest) * g.dst_stride[0];
    if constexpr (Op == CopyOp::add)
      dst[t] += src[s];
    else
      dst[t] = src[s];
  }
};

// Device copy of a simplified geometry, one work item per element; 32-bit index arithmetic when the region allows
// it (the caller picks I). Not fenced.
template <class I, CopyOp Op, class T, class ExecSpace>
void strided_copy_kernel_impl(const ExecSpace& space, const T* src, T* dst, const CopyGeometry& g, int64_t n) {
  static const std::string kernel_name = "darray::strided_copy";  // kokkos_compat.hpp: built once
  Kokkos::parallel_for(kernel_name, range_policy(space, I{0}, static_cast<I>(n)),
                       StridedCopyItem<I, Op, T>{src + g.src_offset, dst + g.dst_offset, g});
}

// The unit a device copy moves per work item when its elements are narrower: 16 bytes, one vector load and store.
struct alignas(16) CopyUnit {
  std::uint64_t lo, hi;
};

// g, a copy of elements of `bytes` bytes, as a copy of CopyUnits: possible when the innermost dim is contiguous on
// both sides and every offset, stride and that dim's run are whole units (the caller checks the buffers' alignment).
inline bool widen_geometry(const CopyGeometry& g, std::size_t bytes, CopyGeometry& out) {
  const int inner = g.rank - 1;
  if (g.rank < 1 || bytes >= sizeof(CopyUnit) || sizeof(CopyUnit) % bytes != 0) return false;
  if (g.src_stride[inner] != 1 || g.dst_stride[inner] != 1) return false;
  const auto k = static_cast<int64_t>(sizeof(CopyUnit) / bytes);
  if (g.extent[inner] % k != 0 || g.src_offset % k != 0 || g.dst_offset % k != 0) return false;
  for (int d = 0; d < inner; ++d)
    if (g.src_stride[d] % k != 0 || g.dst_stride[d] % k != 0) return false;
  out = g;
  out.extent[inner] /= k;
  out.src_offset /= k;
  out.dst_offset /= k;
  for (int d = 0; d < inner; ++d) {
    out.src_stride[d] /= k;
    out.dst_stride[d] /= k;
  }
  return true;
}

// Device copy of a simplified geometry (not fenced). Elements narrower than 16 bytes go 16 bytes per work item
// where the geometry and the buffers' alignment allow (whole rows of 16-byte multiples): a pack of 8-element
// double columns (64-byte runs) reaches more of the copy bandwidth with half the work items and index arithmetic.
template <CopyOp Op = CopyOp::assign, class T, class ExecSpace>
void strided_copy_kernel(const ExecSpace& space, const T* src, T* dst, const CopyGeometry& g) {
  const int64_t n = g.elements();
  if (n == 0) return;
  if constexpr (Op == CopyOp::assign && sizeof(T) < sizeof(CopyUnit) && sizeof(CopyUnit) % sizeof(T) == 0) {
    CopyGeometry w;
    if (reinterpret_cast<std::uintptr_t>(src) % alignof(CopyUnit) == 0 &&
        reinterpret_cast<std::uintptr_t>(dst) % alignof(CopyUnit) == 0 && widen_geometry(g, sizeof(T), w))
      return strided_copy_kernel<Op>(space, reinterpret_cast<const CopyUnit*>(src), reinterpret_cast<CopyUnit*>(dst),
                                     w);
  }
  if (n <= INT32_MAX)
    strided_copy_kernel_impl<int32_t, Op>(space, src, dst, g, n);
  else
    strided_copy_kernel_impl<int64_t, Op>(space, src, dst, g, n);
}

// Copies the region `g` describes between buffers of MemorySpace: on the host right away (memcpy runs), elsewhere
// by a kernel on `space` (fence before MPI or NCCL reads the destination). `streaming` (host only) writes with
// non-temporal stores; the caller then issues stream_fence() once its copies are done. CopyOp::add adds into the
// destination (kernels on one execution space run in order, so pieces adding into the same cells need no atomics).
template <class T, class MemorySpace, CopyOp Op = CopyOp::assign, class ExecSpace>
void strided_copy(const ExecSpace& space, const T* src, T* dst, const CopyGeometry& g, bool streaming = false) {
  const CopyGeometry s = simplify(g);
  if constexpr (host_accessible_v<MemorySpace>) {
    (void)space;
    strided_copy_host<T, Op>(src, dst, s, streaming && Op == CopyOp::assign);
  } else {
    (void)streaming;
    strided_copy_kernel<Op>(space, src, dst, s);
  }
}

}  // namespace detail
}  // namespace darray
