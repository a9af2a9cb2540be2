// all_to_all: within each group along a mesh axis, every block is cut into n chunks along split_dim and chunk i
// goes to the device with axis index i, which concatenates what it receives along concat_dim in axis order
// (jax.lax.all_to_all with tiled=True inside shard_map). The axis moves in the spec from wherever it was to split_dim.
#pragma once

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

// Blocks along `axis` must have equal shapes, their size along split_dim a multiple of the axis size n; each block
// shrinks n times along split_dim and grows n times along concat_dim (dims may be negative, counting from the end).
// `axis` is removed from the operand's spec and appended (as the minor axis) to split_dim's entry, so when `axis`
// is the minor axis of concat_dim's entry the global array is unchanged and only its layout moves: a pencil
// transpose. E.g. shape (4, 8) sharded P(none, "x") on 2 devices with split_dim 0, concat_dim 1 gives the same
// (4, 8) values sharded P("x", none). Only the tiled form exists, for the reason given at psum_scatter.
// Collective over all processes. all_to_all_plan: the plan of the call, for execute (collectives/plan.hpp).
namespace detail {
template <class T, int N, class M>
CollectiveCall<T, N, M, N> all_to_all_call(const DistributedArray<T, N, M>& a, const AxisNames& axis, int split_dim,
                                           int concat_dim) {
  constexpr const char* api = "all_to_all";
  auto args = checked_call_args(api, a, [&] {
    return axis_text(axis) + ", split_dim=" + std::to_string(split_dim) + ", concat_dim=" + std::to_string(concat_dim);
  });
  const int x = resolve_one_axis(api, a.sharding().mesh(), axis);
  const int s = normalize_dim(api, "split_dim", split_dim, N);
  const int c = normalize_dim(api, "concat_dim", concat_dim, N);
  const int64_t params[] = {x, s, c};
  const auto& plan = cached_plan(PlanProbe{CollectiveCode::all_to_all, a.sharding(), a.shape(), params, 3},
                                 [&] { return build_all_to_all_plan(a.sharding(), a.shape(), x, s, c); });
  return {api, plan, /*reduction=*/false, ReduceOp::sum, std::move(args)};
}
}  // namespace detail

template <class T, int N, class M>
CollectivePlan<T, N, M> all_to_all_plan(const DistributedArray<T, N, M>& a, const AxisNames& axis, int split_dim,
                                        int concat_dim, tiled_t = tiled) {
  return detail::CollectivePlanAccess::hold(detail::all_to_all_call(a, axis, split_dim, concat_dim));
}

template <class T, int N, class M>
DistributedArray<T, N, M> all_to_all(const DistributedArray<T, N, M>& a, const AxisNames& axis, int split_dim,
                                     int concat_dim, tiled_t = tiled) {
  return detail::CollectivePlanAccess::run(detail::all_to_all_call(a, axis, split_dim, concat_dim), a);
}

// The same into `out`, an array shaped and sharded as the result (e.g. a previous call's): no allocation.
template <class T, int N, class M>
void all_to_all(const DistributedArray<T, N, M>& a, const AxisNames& axis, int split_dim, int concat_dim,
                DistributedArray<T, N, M>& out) {
  detail::CollectivePlanAccess::run(detail::all_to_all_call(a, axis, split_dim, concat_dim), a, out);
}

}  // namespace darray
