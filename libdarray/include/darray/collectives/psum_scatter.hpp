// psum_scatter: the sum of the blocks along a mesh axis, scattered along a block dim (jax.lax.psum_scatter with
// tiled=True inside shard_map): the device with axis index i keeps chunk i of its group's sum. The axis moves in
// the PartitionSpec to the scattered dim, so the result is the group sums laid side by side along that dim.
#pragma once

#include <string>
#include <vector>

#include "darray/array/distributed_array.hpp"
#include "darray/collectives/axis.hpp"
#include "darray/collectives/detail/call.hpp"
#include "darray/collectives/detail/execute.hpp"
#include "darray/collectives/detail/plan.hpp"
#include "darray/collectives/detail/reduce_plan.hpp"
#include "darray/collectives/plan.hpp"

namespace darray {

// Blocks along `axis` must have equal shapes and their size along `dim` (negative counts from the end) must be a
// multiple of the axis size n; each block's `dim` shrinks n times. `axis` is removed from the operand's spec and
// appended (as the minor axis) to the entry of `dim`: e.g. shape (16,) sharded P("x") over 4 devices gives shape
// (4,) sharded P("x"), the sum of the four blocks, one element per device. Only the tiled form exists: JAX's
// tiled=False drops `dim`, and with it the only dim along which the differing chunks could be laid out.
// Collective over all processes. psum_scatter_plan: the plan of the call, for execute (collectives/plan.hpp).
namespace detail {
template <class T, int N, class M>
CollectiveCall<T, N, M, N> psum_scatter_call(const DistributedArray<T, N, M>& a, const AxisNames& axis, int dim) {
  constexpr const char* api = "psum_scatter";
  auto args = checked_call_args(api, a, [&] { return axis_text(axis) + ", dim=" + std::to_string(dim); });
  const int x = resolve_one_axis(api, a.sharding().mesh(), axis);
  const int d = normalize_dim(api, "dim", dim, N);
  const int64_t params[] = {x, d};
  const auto& plan = cached_plan(PlanProbe{CollectiveCode::psum_scatter, a.sharding(), a.shape(), params, 2},
                                 [&] { return build_reduce_plan(api, a.sharding(), a.shape(), {x}, d); });
  return {api, plan, /*reduction=*/true, ReduceOp::sum, std::move(args)};
}
}  // namespace detail

template <class T, int N, class M>
CollectivePlan<T, N, M> psum_scatter_plan(const DistributedArray<T, N, M>& a, const AxisNames& axis, int dim,
                                          tiled_t = tiled) {
  return detail::CollectivePlanAccess::hold(detail::psum_scatter_call(a, axis, dim));
}

template <class T, int N, class M>
DistributedArray<T, N, M> psum_scatter(const DistributedArray<T, N, M>& a, const AxisNames& axis, int dim,
                                       tiled_t = tiled) {
  return detail::CollectivePlanAccess::run(detail::psum_scatter_call(a, axis, dim), a);
}

// The same into `out`, an array shaped and sharded as the result (e.g. a previous call's): no allocation.
template <class T, int N, class M>
void psum_scatter(const DistributedArray<T, N, M>& a, const AxisNames& axis, int dim, DistributedArray<T, N, M>& out) {
  detail::CollectivePlanAccess::run(detail::psum_scatter_call(a, axis, dim), a, out);
}

}  // namespace darray
