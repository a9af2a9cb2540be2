// Kokkos plumbing of the array layer: the rank-N LayoutRight view type of a shard, allocation from a Shape, and
// copies of whole contiguous blocks between host memory and a view in any memory space (one memcpy or
// cudaMemcpy each, since both sides are LayoutRight and contiguous).
#pragma once

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstddef>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "darray/array/detail/block_cache.hpp"
#include "darray/array/detail/stream_copy.hpp"
#include "darray/comm/detail/cuda_aware.hpp"
#include "darray/core/error.hpp"
#include "darray/core/index.hpp"
#include "darray/runtime/detail/kokkos_compat.hpp"

namespace darray {
namespace detail {

// T, T*, T**, ... : Kokkos' data type of a rank-N view.
template <class T, int N>
struct ViewDataType {
  using type = typename ViewDataType<T, N - 1>::type*;
};
template <class T>
struct ViewDataType<T, 0> {
  using type = T;
};

template <class T, int N, class MemorySpace>
using ShardView = Kokkos::View<typename ViewDataType<T, N>::type, Kokkos::LayoutRight, MemorySpace>;

// A view over host memory the array layer owns (staging buffers, user vectors): no allocation, no reference count.
template <class T, int N>
using HostUnmanagedView = Kokkos::View<typename ViewDataType<T, N>::type, Kokkos::LayoutRight, Kokkos::HostSpace,
                                       Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// Whether the host may read and write MemorySpace directly (HostSpace, CudaUVMSpace, CudaHostPinnedSpace): then
// blocks are copied straight into view.data() without an intermediate host buffer.
template <class MemorySpace>
inline constexpr bool host_accessible_v = Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemorySpace>::accessible;

// Test hook: when set, blocks move through host staging buffers and deep_copy as they must for GPU memory, so host
// builds run that path too.
inline bool& stage_as_if_on_device() {
  static bool stage = false;
  return stage;
}

// Scoped form of the test hook, restoring the previous setting on exit.
struct StageAsIfOnDevice {
  bool previous = stage_as_if_on_device();
  StageAsIfOnDevice() { stage_as_if_on_device() = true; }
  ~StageAsIfOnDevice() { stage_as_if_on_device() = previous; }
  StageAsIfOnDevice(const StageAsIfOnDevice&) = delete;
  StageAsIfOnDevice& operator=(const StageAsIfOnDevice&) = delete;
};

// Whether the array layer writes and reads the views of MemorySpace through their host pointers.
template <class MemorySpace>
bool direct_host_access() {
  return host_accessible_v<MemorySpace> && !stage_as_if_on_device();
}

// Whether MPI is handed host copies of MemorySpace's buffers: device memory when the MPI library cannot read it, and
// host memory under the StageAsIfOnDevice test hook (the path of a GPU whose MPI is not CUDA-aware).
template <class MemorySpace>
bool mpi_needs_host_copy() {
  if constexpr (host_accessible_v<MemorySpace>)
    return stage_as_if_on_device();
  else
    return !mpi_reads_device_memory();
}

// Whether a block of `out` is one of `in`'s (both lists of shards, compared by their .data views), e.g. a kept
// output that is the operand itself. Blocks one array allocated lie in one address range (allocate_views_each carves
// them from one cached block), so only an output block inside the range of `in`'s blocks is compared with each.
template <class OutShards, class InShards>
bool shares_a_block(const OutShards& out, const InShards& in) {
  if (in.empty()) return false;
  using Ptr = decltype(in.front().data.data());
  const std::less<Ptr> less;
  Ptr lo = in.front().data.data(), hi = lo;
  for (const auto& s : in) {
    lo = less(s.data.data(), lo) ? s.data.data() : lo;
    hi = less(hi, s.data.data()) ? s.data.data() : hi;
  }
  for (const auto& o : out) {
    const Ptr q = o.data.data();
    if (less(q, lo) || less(hi, q)) continue;
    for (const auto& s : in)
      if (q == s.data.data()) return true;
  }
  return false;
}

// A host view of v's extent to copy v through (uninitialised): v itself where the host addresses it directly (as
// Kokkos::create_mirror_view returns it), else a block of the host cache, handed out again on the next call
// instead of a fresh host allocation per call (device memory; host memory under the StageAsIfOnDevice hook).
template <class T, class M>
typename Kokkos::View<T*, M>::HostMirror host_copy_target(const Kokkos::View<T*, M>& v, std::string_view label) {
  if constexpr (host_accessible_v<M>)
    if (!stage_as_if_on_device()) return v;
  return cached_view<typename Kokkos::View<T*, M>::HostMirror>(label, v.extent(0));
}

// The reverse: a table the host made (1-d) as a view of M for kernels to read: `host` itself where M is the host
// space (as Kokkos::create_mirror_view_and_copy returns it), else a block of M's cache holding a copy, instead of a
// fresh device allocation per call (also a copy under the StageAsIfOnDevice hook). Fences.
template <class M, class T, class... Properties>
Kokkos::View<T*, M> copy_to_space(const Kokkos::View<T*, Kokkos::HostSpace, Properties...>& host,
                                  std::string_view label) {
  if constexpr (std::is_same<M, Kokkos::HostSpace>::value)
    if (!stage_as_if_on_device()) return host;
  auto out = cached_view<Kokkos::View<T*, M>>(label, host.extent(0));
  Kokkos::deep_copy(out, host);
  return out;
}

// Bytes of a block of `shape` with elements of element_size bytes; InvalidArgument naming label and shape when the
// count does not fit in 64 bits.
inline std::size_t block_bytes(const std::string& label, const Shape& shape, std::size_t element_size) {
  const auto elements = static_cast<std::size_t>(check_volume("allocate", shape));
  std::size_t bytes = 0;
  DARRAY_THROW_IF(__builtin_mul_overflow(elements, element_size, &bytes), InvalidArgument, "allocate",
                  label << ": a block of shape " << numpy_shape_string(shape) << " with " << element_size
                        << "-byte elements needs more than 2^64 bytes");
  return bytes;
}

// Runs alloc(), which allocates `bytes` in memory space `space` for `label`, and turns an allocation failure into a
// darray::Error naming the bytes asked for. Kokkos reports one as std::bad_alloc (RawMemoryAllocationFailure) or as
// std::runtime_error, depending on version and memory space. Every allocation of array memory goes through here.
// The error is local to this process: callers that are collective agree on it (run_agreed).
template <class Alloc>
auto allocate_or_throw(const std::string& label, std::size_t bytes, const char* space, Alloc&& alloc)
    -> decltype(alloc()) {
  std::string why;
  try {
    return alloc();
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc& e) {
    why = e.what();
  } catch (const std::runtime_error& e) {
    why = e.what();
  }
  const std::size_t cap = 200;  // Kokkos' messages can run to many lines; the first ones say enough
  if (why.size() > cap) why = why.substr(0, cap) + "...";
  DARRAY_THROW(Error, "allocate",
               label << ": could not allocate " << bytes << " bytes in " << space << " (" << why << ")");
}

template <class View, std::size_t... I>
void allocate_view_impl(View& slot, const std::string& label, const Shape& shape, bool initialize,
                        std::index_sequence<I...>) {
  (void)shape;  // unused for rank 0
  if (!try_cached_view(slot, label, static_cast<std::size_t>(shape[I])...)) {
    if (initialize)
      slot = View(label, static_cast<std::size_t>(shape[I])...);
    else
      slot = View(Kokkos::view_alloc(label, Kokkos::WithoutInitializing), static_cast<std::size_t>(shape[I])...);
    return;
  }
  if (initialize) Kokkos::deep_copy(slot, typename View::non_const_value_type());
}

// `slot` becomes a view of exactly `shape`, its memory from the shard memory cache (block_cache.hpp); every shard
// the library creates comes through here (made in place: see allocate_views_each). `initialize` = false skips the
// zero fill for views a factory overwrites anyway. Throws a darray::Error naming the bytes when the block is too
// large or the allocation fails.
template <class T, int N, class MemorySpace>
void allocate_view_into(ShardView<T, N, MemorySpace>& slot, const std::string& label, const Shape& shape,
                        bool initialize) {
  const std::size_t bytes = block_bytes(label, shape, sizeof(T));
  allocate_or_throw(label, bytes, MemorySpace::name(), [&] {
    allocate_view_impl(slot, label, shape, initialize, std::make_index_sequence<N>{});
    return true;
  });
}

// The same as a new view.
template <class T, int N, class MemorySpace>
ShardView<T, N, MemorySpace> allocate_view(const std::string& label, const Shape& shape, bool initialize) {
  ShardView<T, N, MemorySpace> view;
  allocate_view_into<T, N, MemorySpace>(view, label, shape, initialize);
  return view;
}

template <class View, std::size_t... I>
void place_view_of_shape(View& slot, const Kokkos::Impl::SharedAllocationTracker& track,
                         typename View::pointer_type data, const Shape& shape, std::index_sequence<I...>) {
  (void)shape;  // unused for rank 0
  place_view(slot, track, data, static_cast<std::size_t>(shape[I])...);
}

// The views of one array's local blocks, shape_of(k) the shape of block k (k < count), each made in place in
// slot_of(k), the view where it is kept (a shard's data; Kokkos 3.4 moves a view by copying its tracker, so a view
// made elsewhere and moved there would count its block twice more). With the cache on they are carved from one
// cached block (each at a 64-byte boundary) that goes back to the cache when the last view of any of them goes: one
// cache round trip per array instead of one per block, one reference count increment per view. Otherwise, and for
// a single block, one allocate_view each. `initialize` zero-fills. Throws like allocate_view.
template <class T, int N, class MemorySpace, class ShapeOf, class SlotOf>
void allocate_views_each(const std::string& label, std::size_t count, ShapeOf&& shape_of, bool initialize,
                         SlotOf&& slot_of) {
  using View = ShardView<T, N, MemorySpace>;
  // The shapes as shape_of gives them: pointers where it returns references, copies where it makes them (reused:
  // no allocation per call once warm).
  static thread_local std::vector<Shape> copies;
  static thread_local std::vector<const Shape*> shapes;
  static thread_local std::vector<std::size_t> offsets;
  constexpr bool by_reference = std::is_lvalue_reference<decltype(shape_of(std::size_t()))>::value;
  if constexpr (!by_reference) copies.resize(count);
  shapes.resize(count);
  offsets.resize(count);
  std::size_t total = 0;
  for (std::size_t k = 0; k < count; ++k) {
    if constexpr (by_reference) {
      shapes[k] = &shape_of(k);
    } else {
      copies[k] = shape_of(k);
      shapes[k] = &copies[k];
    }
    const std::size_t bytes = block_bytes(label, *shapes[k], sizeof(T));
    offsets[k] = (total + 63) / 64 * 64;
    DARRAY_THROW_IF(__builtin_add_overflow(offsets[k], bytes, &total), InvalidArgument, "allocate",
                    label << ": " << count << " blocks need more than 2^64 bytes");
  }
  CachedBlock block;
  CachedBlockRecord<MemorySpace>* record = nullptr;
  const bool carved = count > 1 && total > 0 && std::is_trivially_destructible<T>::value &&
                      allocate_or_throw(label, total, MemorySpace::name(),
                                        [&] { return try_cached_record<MemorySpace>(total, label, block, record); });
  if (!carved) {
    for (std::size_t k = 0; k < count; ++k)
      allocate_view_into<T, N, MemorySpace>(slot_of(k), label, *shapes[k], initialize);
    return;
  }
  const Kokkos::Impl::SharedAllocationTracker track = tracker_on_record(record);
  for (std::size_t k = 0; k < count; ++k) {
    View& slot = slot_of(k);
    place_view_of_shape(slot, track, reinterpret_cast<T*>(static_cast<char*>(block.data) + offsets[k]), *shapes[k],
                        std::make_index_sequence<N>{});
    if (initialize) Kokkos::deep_copy(slot, T());
  }
}

template <class T, int N, class View, std::size_t... I>
HostUnmanagedView<T, N> host_view_like_impl(T* data, const View& like, std::index_sequence<I...>) {
  (void)like;
  return HostUnmanagedView<T, N>(data, like.extent(I)...);
}

// An unmanaged host view over `data` with the extents of `like`.
template <class T, int N, class View>
HostUnmanagedView<T, N> host_view_like(T* data, const View& like) {
  return host_view_like_impl<T, N>(data, like, std::make_index_sequence<N>{});
}

template <class View, std::size_t... I>
Shape view_shape_impl(const View& v, std::index_sequence<I...>) {
  (void)v;
  return Shape{static_cast<int64_t>(v.extent(I))...};
}

// The extents of a rank-N view as a Shape.
template <int N, class View>
Shape view_shape(const View& v) {
  return view_shape_impl(v, std::make_index_sequence<N>{});
}

// dst (contiguous, LayoutRight) <- the row-major block at src. deep_copy fences, so dst is ready on return.
template <int N, class View>
void copy_host_to_view(const typename View::non_const_value_type* src, const View& dst) {
  if (dst.size() == 0) return;
  using T = typename View::non_const_value_type;
  Kokkos::deep_copy(dst, host_view_like<const T, N>(src, dst));
}

// dst <- src, contiguous views of one extent in any two memory spaces, copied on `space` and, unless `then_fence` is
// false, fenced: the per-call host copies of the device path. Kokkos::deep_copy without a space fences under names it
// builds on the heap (Kokkos 4: runtime/detail/kokkos_compat.hpp); the space form of a contiguous copy is one
// asynchronous copy. Unfenced, kernels on `space` after it see the copy, and neither view may be written before a
// later fence of `space`. Between two host-reachable views on a host space, copy_bytes: Kokkos 4's host deep_copy
// asks the static Exec::concurrency(const Exec& = Exec()), whose default OpenMP instance allocates
// (runtime/detail/kokkos_compat.hpp).
template <class Exec, class Dst, class Src>
void copy_contiguous(const Exec& space, const Dst& dst, const Src& src, bool then_fence = true) {
  if (dst.size() == 0) return;
  using Host = Kokkos::HostSpace;
  if constexpr (Kokkos::SpaceAccessibility<Exec, Host>::accessible &&
                Kokkos::SpaceAccessibility<Host, typename Dst::memory_space>::accessible &&
                Kokkos::SpaceAccessibility<Host, typename Src::memory_space>::accessible) {
    copy_bytes(static_cast<void*>(dst.data()), static_cast<const void*>(src.data()),
               dst.size() * sizeof(typename Dst::non_const_value_type));
    (void)space;
    (void)then_fence;
  } else {
    Kokkos::deep_copy(space, dst, src);
    if (then_fence) fence(space);
  }
}

// Each block of `out` <- the block of `from` on the same device (lists of shards of one sharding, both in local-device
// order), copied on `space` and fenced. A kept-output call whose output shares blocks with its input (shares_a_block)
// computes into fresh blocks and copies them over with it: the input is read whole before the output is written.
template <class Exec, class OutShards, class FromShards>
void copy_blocks(const Exec& space, const OutShards& out, const FromShards& from) {
  DARRAY_THROW_IF(out.size() != from.size(), Error, "copy_blocks",
                  "internal: " << out.size() << " output blocks, " << from.size() << " to copy");
  for (std::size_t k = 0; k < out.size(); ++k) {
    DARRAY_THROW_IF(out[k].device.id != from[k].device.id, Error, "copy_blocks",
                    "internal: output block " << k << " is on device " << out[k].device.id << ", its source on "
                                              << from[k].device.id);
    copy_contiguous(space, out[k].data, from[k].data, /*then_fence=*/false);
  }
  fence(space);
}

// The row-major block at dst <- src (contiguous, LayoutRight).
template <int N, class View>
void copy_view_to_host(const View& src, typename View::non_const_value_type* dst) {
  if (src.size() == 0) return;
  using T = typename View::non_const_value_type;
  Kokkos::deep_copy(host_view_like<T, N>(dst, src), src);
}

}  // namespace detail
}  // namespace darray
