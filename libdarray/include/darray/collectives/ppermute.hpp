// ppermute: blocks move along a mesh axis by a permutation of axis indices (jax.lax.ppermute inside shard_map):
// for each (source, dest) pair the device with axis index dest receives the block of the device with axis index
// source in its group. Cycles, shifts and partial maps all work; a device that no pair names as dest gets zeros.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "darray/array/distributed_array.hpp"
#include "darray/collectives/axis.hpp"
#include "darray/collectives/detail/call.hpp"
#include "darray/collectives/detail/execute.hpp"
#include "darray/collectives/detail/move_plans.hpp"
#include "darray/collectives/detail/plan.hpp"
#include "darray/collectives/plan.hpp"

namespace darray {

// perm: (source, dest) pairs of axis indices in 0 .. axis_size - 1, each index at most once as a source and at most
// once as a dest. Source and dest blocks must have equal shapes. The result keeps the operand's shape and sharding.
// A partial perm over an axis the operand is replicated along is an error: the zeros would make the replicas
// differ. Collective over all processes. ppermute_plan: the plan of this call, for execute (collectives/plan.hpp).
namespace detail {
template <class T, int N, class M>
CollectiveCall<T, N, M, N> ppermute_call(const DistributedArray<T, N, M>& a, const AxisNames& axis,
                                         const std::vector<std::pair<int, int>>& perm) {
  constexpr const char* api = "ppermute";
  auto args = checked_call_args(api, a, [&] { return axis_text(axis) + ", perm=" + perm_text(perm); });
  const int x = resolve_one_axis(api, a.sharding().mesh(), axis);
  const int64_t params[] = {x};
  const PlanProbe probe{CollectiveCode::ppermute, a.sharding(), a.shape(), params, 1, &perm};
  const auto& plan = cached_plan(probe, [&] {
    std::vector<std::pair<int64_t, int64_t>> pairs;
    for (const auto& [from, to] : perm) pairs.emplace_back(from, to);
    return build_ppermute_plan(a.sharding(), a.shape(), x, pairs);
  });
  return {api, plan, /*reduction=*/false, ReduceOp::sum, std::move(args)};
}
}  // namespace detail

template <class T, int N, class M>
CollectivePlan<T, N, M> ppermute_plan(const DistributedArray<T, N, M>& a, const AxisNames& axis,
                                      const std::vector<std::pair<int, int>>& perm) {
  return detail::CollectivePlanAccess::hold(detail::ppermute_call(a, axis, perm));
}

template <class T, int N, class M>
DistributedArray<T, N, M> ppermute(const DistributedArray<T, N, M>& a, const AxisNames& axis,
                                   const std::vector<std::pair<int, int>>& perm) {
  return detail::CollectivePlanAccess::run(detail::ppermute_call(a, axis, perm), a);
}

// The same into `out`, an array shaped and sharded like `a`: no allocation. `out` may be `a` itself or share blocks
// with it (then the result goes through fresh blocks: an allocation and a copy more).
template <class T, int N, class M>
void ppermute(const DistributedArray<T, N, M>& a, const AxisNames& axis, const std::vector<std::pair<int, int>>& perm,
              DistributedArray<T, N, M>& out) {
  detail::CollectivePlanAccess::run(detail::ppermute_call(a, axis, perm), a, out);
}

}  // namespace darray
