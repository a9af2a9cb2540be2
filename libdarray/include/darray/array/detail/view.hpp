// Kokkos plumbing of the array layer: the rank-N LayoutRight view type of a shard, allocation from a Shape, and
// copies of whole contiguous blocks between host memory and a view in any memory space (one memcpy or
// cudaMemcpy each, since both sides are LayoutRight and contiguous).
#pragma once

#include <Kokkos_Core.hpp>
#include <cstddef>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "darray/array/detail/block_cache.hpp"
#include "darray/core/error.hpp"
#include "darray/core/index.hpp"

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
View allocate_view_impl(const std::string& label, const Shape& shape, bool initialize, std::index_sequence<I...>) {
  (void)shape;  // unused for rank 0
  View view;
  if (!try_cached_view(view, label, static_cast<std::size_t>(shape[I])...)) {
    if (initialize) return View(label, static_cast<std::size_t>(shape[I])...);
    return View(Kokkos::view_alloc(label, Kokkos::WithoutInitializing), static_cast<std::size_t>(shape[I])...);
  }
  if (initialize) Kokkos::deep_copy(view, typename View::non_const_value_type());
  return view;
}

// A view of exactly `shape`, its memory from the shard memory cache (block_cache.hpp); every shard the library
// creates comes through here. `initialize` = false skips the zero fill for views a factory overwrites anyway.
// Throws a darray::Error naming the bytes when the block is too large or the allocation fails.
template <class T, int N, class MemorySpace>
ShardView<T, N, MemorySpace> allocate_view(const std::string& label, const Shape& shape, bool initialize) {
  const std::size_t bytes = block_bytes(label, shape, sizeof(T));
  return allocate_or_throw(label, bytes, MemorySpace::name(), [&] {
    return allocate_view_impl<ShardView<T, N, MemorySpace>>(label, shape, initialize, std::make_index_sequence<N>{});
  });
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

// The row-major block at dst <- src (contiguous, LayoutRight).
template <int N, class View>
void copy_view_to_host(const View& src, typename View::non_const_value_type* dst) {
  if (src.size() == 0) return;
  using T = typename View::non_const_value_type;
  Kokkos::deep_copy(host_view_like<T, N>(dst, src), src);
}

}  // namespace detail
}  // namespace darray
