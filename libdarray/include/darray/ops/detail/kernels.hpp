// Kokkos plumbing of the ops layer: the global index of an element as device code sees it, the geometry a kernel
// needs to compute it, result shards shaped like an operand's, and the checks shared by the operations.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "darray/array/detail/block_io.hpp"
#include "darray/array/distributed_array.hpp"
#include "darray/array/dtype.hpp"
#include "darray/core/error.hpp"
#include "darray/core/index.hpp"
#include "darray/runtime/detail/kokkos_compat.hpp"

namespace darray {

// The global position of one element, (i0, ..., iN-1), as map_indexed and for_each_indexed pass it: index[d] is
// the element's coordinate along dim d of the global array. Plain data, usable in device code.
template <int N>
struct GlobalIndex {
  int64_t coord[N > 0 ? N : 1];
  KOKKOS_INLINE_FUNCTION int64_t operator[](int d) const { return coord[d]; }
  static constexpr int rank = N;
};

namespace detail {

template <class T>
struct type_identity {
  using type = T;
};
// A parameter of this type does not take part in template argument deduction: `a * 2` with a double array
// converts 2 to double instead of failing to deduce T.
template <class T>
using type_identity_t = typename type_identity<T>::type;

// static_cast for numbers; complex to real keeps the real part (as NumPy's astype, which warns).
template <class U>
struct ConvertTo {
  template <class T>
  KOKKOS_INLINE_FUNCTION U operator()(const T& x) const {
    if constexpr (is_kokkos_complex<U>::value) {
      if constexpr (is_kokkos_complex<T>::value)
        return U(x.real(), x.imag());
      else
        return U(static_cast<typename U::value_type>(x));
    } else if constexpr (is_kokkos_complex<T>::value) {
      return static_cast<U>(x.real());
    } else {
      return static_cast<U>(x);
    }
  }
};

// A block's place in the global array, captured by value in kernels: element i of the block (flat, row-major) is
// at global coordinate start[d] + (i unravelled over extent)[d].
template <int N>
struct BlockGeometry {
  int64_t extent[N > 0 ? N : 1];
  int64_t start[N > 0 ? N : 1];

  KOKKOS_INLINE_FUNCTION GlobalIndex<N> global_index(int64_t i) const {
    GlobalIndex<N> g{};
    for (int d = N - 1; d >= 0; --d) {
      g.coord[d] = start[d] + i % extent[d];
      i /= extent[d];
    }
    return g;
  }
};

template <int N>
BlockGeometry<N> block_geometry(const Index& index) {
  BlockGeometry<N> g{};
  for (int d = 0; d < N; ++d) {
    g.extent[d] = index[static_cast<std::size_t>(d)].size();
    g.start[d] = index[static_cast<std::size_t>(d)].start;
  }
  return g;
}

// The policy of the ops' kernels over [0, n) on Exec's default instance: range_policy's, which allocates nothing
// (kokkos_compat.hpp), so that in-place calls in a time loop make no allocation per step.
template <class Exec>
Kokkos::RangePolicy<Exec, Kokkos::IndexType<int64_t>> flat_policy(int64_t n) {
  return range_policy(default_instance<Exec>(), int64_t{0}, n);
}

// The element-wise kernels' bodies, as functors: under nvcc a KOKKOS_LAMBDA is a type-erased wrapper that allocates
// when made (kokkos_compat.hpp), and for_each in a time loop should not. f is the user's function.
template <class F, class T, class U>
struct MapItem {  // out[i] = f(in[i])
  F f;
  const T* in;
  U* out;
  KOKKOS_INLINE_FUNCTION void operator()(const int64_t i) const { out[i] = f(in[i]); }
};

template <class F, class T, class S, class U>
struct Map2Item {  // out[i] = f(x[i], y[i])
  F f;
  const T* x;
  const S* y;
  U* out;
  KOKKOS_INLINE_FUNCTION void operator()(const int64_t i) const { out[i] = f(x[i], y[i]); }
};

template <int N, class F, class T, class U>
struct MapIndexedItem {  // out[i] = f(index of i, in[i])
  F f;
  BlockGeometry<N> g;
  const T* in;
  U* out;
  KOKKOS_INLINE_FUNCTION void operator()(const int64_t i) const { out[i] = f(g.global_index(i), in[i]); }
};

template <class F, class T>
struct UpdateItem {  // f(data[i]), in place
  F f;
  T* data;
  KOKKOS_INLINE_FUNCTION void operator()(const int64_t i) const { f(data[i]); }
};

template <int N, class F, class T>
struct UpdateIndexedItem {  // f(index of i, data[i]), in place
  F f;
  BlockGeometry<N> g;
  T* data;
  KOKKOS_INLINE_FUNCTION void operator()(const int64_t i) const { f(g.global_index(i), data[i]); }
};

// One uninitialised shard per shard of `a`, same device, box and replica id, element type U.
template <class U, class T, int N, class M>
std::vector<Shard<U, N, M>> shards_like(const DistributedArray<T, N, M>& a, const char* label, bool initialize) {
  return allocate_shards<U, N, M>(a.addressable_shards(), initialize, label);
}

template <class U, class T, int N, class M>
DistributedArray<U, N, M> adopt_like(const DistributedArray<T, N, M>& a, std::vector<Shard<U, N, M>> shards) {
  return adopt_shards<U, N, M>(a.shape(), a.sharding(), std::move(shards));
}

// "shape (4, 6) sharded PartitionSpec('x',) on Mesh('x': 2)".
inline std::string describe_layout(const Shape& shape, const NamedSharding& s) {
  return "shape " + numpy_shape_string(shape) + " sharded " + s.spec().to_string() + " on " + s.mesh().to_string();
}

// Element-wise operations on two arrays need the same blocks on the same devices.
template <class A, class B>
void check_same_layout(const char* api, const A& a, const B& b) {
  DARRAY_THROW_IF(a.shape() != b.shape() || a.sharding() != b.sharding(), InvalidArgument, api,
                  "the operands differ: the first has " << describe_layout(a.shape(), a.sharding())
                                                        << " but the second has "
                                                        << describe_layout(b.shape(), b.sharding())
                                                        << "; expected the same shape and sharding (reshard one of "
                                                           "them to the other's sharding first)");
}

}  // namespace detail
}  // namespace darray
