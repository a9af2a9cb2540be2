// Element-wise computing on distributed arrays, as jax.numpy's ufuncs: every device applies the function to its
// own block with a Kokkos kernel (on the GPU in CUDA builds), and the result has the operand's shape and sharding.
// No communication. Functions must be callable in device code: write them as KOKKOS_LAMBDA or plain functors.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <string>
#include <type_traits>

#include "darray/array/distributed_array.hpp"
#include "darray/array/dtype.hpp"
#include "darray/ops/detail/kernels.hpp"

namespace darray {

namespace detail {
// The element type of map's result: what f returns. Spelled out in the signatures because CUDA forbids device
// lambdas inside a function whose return type is deduced.
template <class F, class... Args>
using map_result_t = std::decay_t<decltype(std::declval<F&>()(std::declval<Args>()...))>;
}  // namespace detail

// f(x) for every element x: map(a, KOKKOS_LAMBDA(double x) { return 2 * x + 1; }). The result's element type is
// what f returns (a DistributedArray element type).
template <class T, int N, class M, class F>
DistributedArray<detail::map_result_t<F, T>, N, M> map(const DistributedArray<T, N, M>& a, F f) {
  using U = detail::map_result_t<F, T>;
  auto shards = detail::shards_like<U>(a, "darray::map", false);
  for (std::size_t k = 0; k < shards.size(); ++k) {
    using Exec = typename Shard<U, N, M>::view_type::execution_space;
    const T* in = a.addressable_shards()[k].data.data();
    U* out = shards[k].data.data();
    const auto n = static_cast<int64_t>(shards[k].data.size());
    static const std::string kernel_name = "darray::map";  // kokkos_compat.hpp: built once
    if (n > 0) Kokkos::parallel_for(kernel_name, detail::flat_policy<Exec>(n), detail::MapItem<F, T, U>{f, in, out});
  }
  detail::fence_writers_of<M>();  // asynchronous on GPUs; MPI may read the result next
  return detail::adopt_like(a, std::move(shards));
}

namespace detail {
template <class T, class S, int N, class M, class F>
DistributedArray<map_result_t<F, T, S>, N, M> map2(const char* api, const DistributedArray<T, N, M>& a,
                                                   const DistributedArray<S, N, M>& b, F f) {
  check_same_layout(api, a, b);
  using U = map_result_t<F, T, S>;
  auto shards = shards_like<U>(a, "darray::map", false);
  for (std::size_t k = 0; k < shards.size(); ++k) {
    using Exec = typename Shard<U, N, M>::view_type::execution_space;
    const T* x = a.addressable_shards()[k].data.data();
    const S* y = b.addressable_shards()[k].data.data();
    U* out = shards[k].data.data();
    const auto n = static_cast<int64_t>(shards[k].data.size());
    static const std::string kernel_name = "darray::map2";  // kokkos_compat.hpp: built once
    if (n > 0) Kokkos::parallel_for(kernel_name, flat_policy<Exec>(n), Map2Item<F, T, S, U>{f, x, y, out});
  }
  detail::fence_writers_of<M>();
  return adopt_like(a, std::move(shards));
}
}  // namespace detail

// f(x, y) for every pair of elements at the same position. a and b must have the same shape and sharding
// (InvalidArgument naming both otherwise; reshard one of them first).
template <class T, class S, int N, class M, class F>
DistributedArray<detail::map_result_t<F, T, S>, N, M> map(const DistributedArray<T, N, M>& a,
                                                          const DistributedArray<S, N, M>& b, F f) {
  return detail::map2("map", a, b, f);
}

// f(index, x) for every element, where index[d] is the element's global coordinate along dim d (GlobalIndex<N>):
// map_indexed(a, KOKKOS_LAMBDA(darray::GlobalIndex<2> i, double x) { return i[0] == i[1] ? x : 0.0; }).
template <class T, int N, class M, class F>
DistributedArray<detail::map_result_t<F, GlobalIndex<N>, T>, N, M> map_indexed(const DistributedArray<T, N, M>& a,
                                                                               F f) {
  using U = detail::map_result_t<F, GlobalIndex<N>, T>;
  auto shards = detail::shards_like<U>(a, "darray::map_indexed", false);
  for (std::size_t k = 0; k < shards.size(); ++k) {
    using Exec = typename Shard<U, N, M>::view_type::execution_space;
    const T* in = a.addressable_shards()[k].data.data();
    U* out = shards[k].data.data();
    const auto g = detail::block_geometry<N>(shards[k].index);
    const auto n = static_cast<int64_t>(shards[k].data.size());
    static const std::string kernel_name = "darray::map_indexed";  // kokkos_compat.hpp: built once
    if (n > 0)
      Kokkos::parallel_for(kernel_name, detail::flat_policy<Exec>(n),
                           detail::MapIndexedItem<N, F, T, U>{f, g, in, out});
  }
  detail::fence_writers_of<M>();
  return detail::adopt_like(a, std::move(shards));
}

// f(x) on every element in place, x passed as T&: for_each(a, KOKKOS_LAMBDA(double& x) { x *= 2; }). Replicas are
// updated alike. Arrays that share blocks with a (copies, see DistributedArray) see the change. Allocates
// nothing (a time loop of them makes no allocation per step) where f does not: in CUDA builds a functor does not,
// a KOKKOS_LAMBDA does (nvcc wraps it in a type-erased holder).
template <class T, int N, class M, class F>
void for_each(const DistributedArray<T, N, M>& a, F f) {
  for (const auto& s : a.addressable_shards()) {
    using Exec = typename Shard<T, N, M>::view_type::execution_space;
    T* data = s.data.data();
    const auto n = static_cast<int64_t>(s.data.size());
    static const std::string kernel_name = "darray::for_each";  // kokkos_compat.hpp: built once
    if (n > 0) Kokkos::parallel_for(kernel_name, detail::flat_policy<Exec>(n), detail::UpdateItem<F, T>{f, data});
  }
  detail::fence_writers_of<M>();
}

// f(index, x) on every element in place, with its global index as in map_indexed.
template <class T, int N, class M, class F>
void for_each_indexed(const DistributedArray<T, N, M>& a, F f) {
  for (const auto& s : a.addressable_shards()) {
    using Exec = typename Shard<T, N, M>::view_type::execution_space;
    T* data = s.data.data();
    const auto g = detail::block_geometry<N>(s.index);
    const auto n = static_cast<int64_t>(s.data.size());
    static const std::string kernel_name = "darray::for_each_indexed";  // kokkos_compat.hpp: built once
    if (n > 0)
      Kokkos::parallel_for(kernel_name, detail::flat_policy<Exec>(n), detail::UpdateIndexedItem<N, F, T>{f, g, data});
  }
  detail::fence_writers_of<M>();
}

// Arithmetic as jax.numpy's, element by element, on arrays of one element type (convert with astype first).
// Integer division truncates as in C++ (NumPy's // floors; its / gives floats), and dividing an integer by zero
// is undefined behaviour as in C++.
namespace detail {
struct Plus {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(const T& x, const T& y) const {
    return x + y;
  }
};
struct Minus {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(const T& x, const T& y) const {
    return x - y;
  }
};
struct Times {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(const T& x, const T& y) const {
    return x * y;
  }
};
struct Divide {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(const T& x, const T& y) const {
    return x / y;
  }
};
// op(x, s) or, with Left, op(s, x): the scalar operand of `a + 2` and `2 - a`.
template <class T, class Op, bool Left>
struct WithScalar {
  T s;
  KOKKOS_INLINE_FUNCTION T operator()(const T& x) const { return Left ? Op()(s, x) : Op()(x, s); }
};
struct Negate {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(const T& x) const {
    return -x;
  }
};
}  // namespace detail

#define DARRAY_OPS_BINARY_OPERATOR(op, Op)                                                                        \
  template <class T, int N, class M>                                                                              \
  DistributedArray<T, N, M> operator op(const DistributedArray<T, N, M>& a, const DistributedArray<T, N, M>& b) { \
    return detail::map2("operator" #op, a, b, detail::Op());                                                      \
  }                                                                                                               \
  template <class T, int N, class M>                                                                              \
  DistributedArray<T, N, M> operator op(const DistributedArray<T, N, M>& a, detail::type_identity_t<T> s) {       \
    return map(a, detail::WithScalar<T, detail::Op, false>{s});                                                   \
  }                                                                                                               \
  template <class T, int N, class M>                                                                              \
  DistributedArray<T, N, M> operator op(detail::type_identity_t<T> s, const DistributedArray<T, N, M>& a) {       \
    return map(a, detail::WithScalar<T, detail::Op, true>{s});                                                    \
  }

DARRAY_OPS_BINARY_OPERATOR(+, Plus)
DARRAY_OPS_BINARY_OPERATOR(-, Minus)
DARRAY_OPS_BINARY_OPERATOR(*, Times)
DARRAY_OPS_BINARY_OPERATOR(/, Divide)
#undef DARRAY_OPS_BINARY_OPERATOR

template <class T, int N, class M>
DistributedArray<T, N, M> operator-(const DistributedArray<T, N, M>& a) {
  return map(a, detail::Negate());
}

}  // namespace darray
