// all_gather: every device receives the blocks of its group along a mesh axis, in axis-index order
// (jax.lax.all_gather inside shard_map), concatenated along a block dim (tiled) or stacked in a new dim (stacked,
// one rank more). The result is equal along the axis, so the axis leaves the PartitionSpec.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "darray/array/distributed_array.hpp"
#include "darray/collectives/axis.hpp"
#include "darray/collectives/detail/call.hpp"
#include "darray/collectives/detail/execute.hpp"
#include "darray/collectives/detail/move_plans.hpp"
#include "darray/collectives/detail/plan.hpp"
#include "darray/collectives/plan.hpp"

namespace darray {

namespace detail {
// The cached plan of all_gather(a, axis, dim, tiled | stacked), after the call's checks.
template <class T, int N, class M, int R>
CollectiveCall<T, N, M, R> all_gather_call(const DistributedArray<T, N, M>& a, const AxisNames& axis, int dim) {
  constexpr const char* api = "all_gather";
  constexpr bool stacked = R == N + 1;
  auto args = checked_call_args(
      api, a, [&] { return axis_text(axis) + ", dim=" + std::to_string(dim) + (stacked ? ", stacked" : ", tiled"); });
  const int x = resolve_one_axis(api, a.sharding().mesh(), axis);
  const int d = normalize_dim(api, "dim", dim, R);
  const auto code = stacked ? CollectiveCode::all_gather_stacked : CollectiveCode::all_gather;
  const int64_t params[] = {x, d};
  const auto& plan = cached_plan(PlanProbe{code, a.sharding(), a.shape(), params, 2},
                                 [&] { return build_all_gather_plan(a.sharding(), a.shape(), x, d, stacked); });
  return {api, plan, /*reduction=*/false, ReduceOp::sum, std::move(args)};
}
}  // namespace detail

// tiled: blocks concatenated along `dim` (negative counts from the end); they may differ in size along `dim`
// (uneven shardings) but must match in every other dim. Gathering the axis that alone shards `dim` gives back the
// whole dim: shape (10,) sharded P("x") over 4 devices (blocks 3, 3, 2, 2) gives shape (10,) replicated.
// Collective over all processes.
template <class T, int N, class M>
DistributedArray<T, N, M> all_gather(const DistributedArray<T, N, M>& a, const AxisNames& axis, int dim, tiled_t) {
  return detail::CollectivePlanAccess::run(detail::all_gather_call<T, N, M, N>(a, axis, dim), a);
}

// The same into `out`, an array shaped and sharded as the result (e.g. a previous call's): no allocation.
template <class T, int N, class M>
void all_gather(const DistributedArray<T, N, M>& a, const AxisNames& axis, int dim, tiled_t,
                DistributedArray<T, N, M>& out) {
  detail::CollectivePlanAccess::run(detail::all_gather_call<T, N, M, N>(a, axis, dim), a, out);
}

// The plan of all_gather(a, axis, dim, tiled), for execute (collectives/plan.hpp).
template <class T, int N, class M>
CollectivePlan<T, N, M> all_gather_plan(const DistributedArray<T, N, M>& a, const AxisNames& axis, int dim, tiled_t) {
  return detail::CollectivePlanAccess::hold(detail::all_gather_call<T, N, M, N>(a, axis, dim));
}

// stacked: a new dim of size n (the axis size) inserted at `dim`, 0 .. N (negative counts from the end of the
// result's dims), holding the group's blocks in axis order; the blocks must have equal shapes. The new dim is
// replicated in the result's spec: shape (8, 3) sharded P("x") over 4 devices, stacked at 0, gives shape (4, 2, 3)
// sharded P(none, none). Collective over all processes.
template <class T, int N, class M>
DistributedArray<T, N + 1, M> all_gather(const DistributedArray<T, N, M>& a, const AxisNames& axis, int dim,
                                         stacked_t) {
  static_assert(N < 8, "all_gather(stacked): the result would have more than 8 dims (Kokkos' limit)");
  return detail::CollectivePlanAccess::run(detail::all_gather_call<T, N, M, N + 1>(a, axis, dim), a);
}

// The same into `out`, an array shaped and sharded as the result (e.g. a previous call's): no allocation.
template <class T, int N, class M>
void all_gather(const DistributedArray<T, N, M>& a, const AxisNames& axis, int dim, stacked_t,
                DistributedArray<T, N + 1, M>& out) {
  static_assert(N < 8, "all_gather(stacked): the result would have more than 8 dims (Kokkos' limit)");
  detail::CollectivePlanAccess::run(detail::all_gather_call<T, N, M, N + 1>(a, axis, dim), a, out);
}

// The plan of all_gather(a, axis, dim, stacked), for execute (collectives/plan.hpp).
template <class T, int N, class M>
CollectivePlan<T, N, M, N + 1> all_gather_plan(const DistributedArray<T, N, M>& a, const AxisNames& axis, int dim,
                                               stacked_t) {
  static_assert(N < 8, "all_gather(stacked): the result would have more than 8 dims (Kokkos' limit)");
  return detail::CollectivePlanAccess::hold(detail::all_gather_call<T, N, M, N + 1>(a, axis, dim));
}

}  // namespace darray
