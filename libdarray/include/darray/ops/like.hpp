// New arrays shaped and sharded like an existing one (jax.numpy's *_like), deep copies and element type
// conversion. Each device fills its own blocks; no communication.
#pragma once

#include <Kokkos_Core.hpp>
#include <type_traits>

#include "darray/array/distributed_array.hpp"
#include "darray/ops/detail/kernels.hpp"
#include "darray/ops/elementwise.hpp"
#include "darray/runtime/detail/kokkos_compat.hpp"

namespace darray {

// Same shape and sharding as a, element type U (default: a's), contents unspecified (jnp.empty_like).
template <class U = void, class T, int N, class M>
auto empty_like(const DistributedArray<T, N, M>& a) {
  using V = std::conditional_t<std::is_void<U>::value, T, U>;
  return detail::adopt_like(a, detail::shards_like<V>(a, "darray::empty_like", false));
}

// Same shape and sharding as a, every element zero.
template <class U = void, class T, int N, class M>
auto zeros_like(const DistributedArray<T, N, M>& a) {
  using V = std::conditional_t<std::is_void<U>::value, T, U>;
  auto out = detail::adopt_like(a, detail::shards_like<V>(a, "darray::zeros_like", true));
  detail::fence_writers_of<M>();  // Kokkos' zero fill may still run
  return out;
}

// Same shape, sharding and element type as a, every element `value`.
template <class T, int N, class M>
DistributedArray<T, N, M> full_like(const DistributedArray<T, N, M>& a, detail::type_identity_t<T> value) {
  auto shards = detail::shards_like<T>(a, "darray::full_like", false);
  for (const auto& s : shards) Kokkos::deep_copy(s.data, value);
  detail::fence_writers_of<M>();
  return detail::adopt_like(a, std::move(shards));
}

// A deep copy: new blocks with a's values, so writes to one no longer show in the other (`auto b = a;` shares
// the blocks instead, as Kokkos views do).
template <class T, int N, class M>
DistributedArray<T, N, M> copy(const DistributedArray<T, N, M>& a) {
  auto shards = detail::shards_like<T>(a, "darray::copy", false);
  for (std::size_t k = 0; k < shards.size(); ++k) Kokkos::deep_copy(shards[k].data, a.addressable_shards()[k].data);
  detail::fence_writers_of<M>();
  return detail::adopt_like(a, std::move(shards));
}

// a with its elements converted to U (jax.Array.astype): float to integer truncates toward zero as in C++.
template <class U, class T, int N, class M>
DistributedArray<U, N, M> astype(const DistributedArray<T, N, M>& a) {
  return map(a, detail::ConvertTo<U>());
}

}  // namespace darray
