// zeros, full and iota: arrays whose values follow from the global index alone, so every process fills its own
// shards with a Kokkos kernel and moves no data. The argument checks depend only on the arguments; the factories are
// collective only to agree on an allocation failure (one MPI_Allreduce of an int), which is local to a process.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <string>

#include "darray/array/detail/block_io.hpp"
#include "darray/array/detail/blocks.hpp"
#include "darray/array/detail/checks.hpp"
#include "darray/array/distributed_array.hpp"
#include "darray/array/dtype.hpp"
#include "darray/runtime/detail/kokkos_compat.hpp"

namespace darray {
namespace detail {

// Fixed-size copy of a block's geometry that a device lambda can capture by value.
template <int N>
struct IotaGeometry {
  int64_t extent[N > 0 ? N : 1];
  int64_t start[N > 0 ? N : 1];
  int64_t global_stride[N > 0 ? N : 1];
};

// view(i...) = iota_value<T>(flat row-major global index of (start + i)...). Runs in the view's execution space
// (the GPU in CUDA builds) over the flat local index, which LayoutRight contiguity maps to data()[i].
template <int N, class View>
void fill_iota(const View& view, const Index& index, const Shape& global_shape) {
  using T = typename View::non_const_value_type;
  using Exec = typename View::execution_space;
  const int64_t n = volume(index);
  if (n == 0) return;
  IotaGeometry<N> g{};
  const Shape strides = row_major_strides(global_shape);
  for (int d = 0; d < N; ++d) {
    const auto k = static_cast<std::size_t>(d);
    g.extent[d] = index[k].size();
    g.start[d] = index[k].start;
    g.global_stride[d] = strides[k];
  }
  T* data = view.data();
  static const std::string kernel_name = "darray::iota";  // kokkos_compat.hpp: built once
  Kokkos::parallel_for(
      kernel_name, Kokkos::RangePolicy<Exec, Kokkos::IndexType<int64_t>>(0, n), KOKKOS_LAMBDA(const int64_t i) {
        int64_t rest = i, flat = 0;
        for (int d = N - 1; d >= 0; --d) {
          flat += (g.start[d] + rest % g.extent[d]) * g.global_stride[d];
          rest /= g.extent[d];
        }
        data[i] = iota_value<T>(flat);
      });
}

}  // namespace detail

// An array of zeros.
template <class T, int N, class MemorySpace = DefaultMemorySpace>
DistributedArray<T, N, MemorySpace> zeros(const Shape& shape, const NamedSharding& sharding) {
  detail::check_array_args<N>("zeros", shape, sharding);
  const auto devs = detail::process_device_blocks(sharding, shape, process_index());
  auto shards = detail::allocate_shards_agreed<T, N, MemorySpace>(devs, /*initialize=*/true);
  detail::fence_writers_of<MemorySpace>();  // Kokkos' zero fill may still run; MPI may read the shards next
  return detail::adopt_shards<T, N, MemorySpace>(shape, sharding, std::move(shards));
}

// An array whose every element is value.
template <class T, int N, class MemorySpace = DefaultMemorySpace>
DistributedArray<T, N, MemorySpace> full(const Shape& shape, const T& value, const NamedSharding& sharding) {
  detail::check_array_args<N>("full", shape, sharding);
  const auto devs = detail::process_device_blocks(sharding, shape, process_index());
  auto shards = detail::allocate_shards_agreed<T, N, MemorySpace>(devs, /*initialize=*/false);
  for (const auto& s : shards) Kokkos::deep_copy(s.data, value);
  detail::fence_writers_of<MemorySpace>();
  return detail::adopt_shards<T, N, MemorySpace>(shape, sharding, std::move(shards));
}

// An array whose element at global position (i0, ..., iN-1) is its flat row-major index, converted to T
// (iota_value): every element names where it sits, which makes layouts checkable element by element.
template <class T, int N, class MemorySpace = DefaultMemorySpace>
DistributedArray<T, N, MemorySpace> iota(const Shape& shape, const NamedSharding& sharding) {
  detail::check_array_args<N>("iota", shape, sharding);
  const auto devs = detail::process_device_blocks(sharding, shape, process_index());
  auto shards = detail::allocate_shards_agreed<T, N, MemorySpace>(devs, /*initialize=*/false);
  for (const auto& s : shards) detail::fill_iota<N>(s.data, s.index, shape);
  detail::fence_writers_of<MemorySpace>();  // the kernels are asynchronous on GPUs; MPI may read the shards next
  return detail::adopt_shards<T, N, MemorySpace>(shape, sharding, std::move(shards));
}

}  // namespace darray
