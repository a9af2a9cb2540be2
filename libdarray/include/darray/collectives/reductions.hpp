// psum, pmax, pmin: element-wise reductions of the blocks along one or several mesh axes (jax.lax.psum/pmax/pmin
// inside shard_map). Every device's block becomes the reduction of the blocks of its axis group; the result is
// equal along the reduced axes, so they leave its PartitionSpec (see collectives.hpp for the convention).
#pragma once

#include <string>
#include <vector>

#include "darray/array/distributed_array.hpp"
#include "darray/array/dtype.hpp"
#include "darray/collectives/axis.hpp"
#include "darray/collectives/detail/call.hpp"
#include "darray/collectives/detail/element_ops.hpp"
#include "darray/collectives/detail/execute.hpp"
#include "darray/collectives/detail/plan.hpp"
#include "darray/collectives/detail/reduce_plan.hpp"

namespace darray {
namespace detail {

template <class T, int N, class M>
std::shared_ptr<const CollectivePlan> reduction_plan(CollectiveCode code, ReduceOp op,
                                                     const DistributedArray<T, N, M>& a, const AxisNames& axes) {
  const char* api = to_string(op);
  check_collective_call(api, a, [&] { return quoted_list(axes.names()); });
  PlanKey& key = plan_lookup_key(code, a.sharding(), a.shape());
  resolve_axes(api, a.sharding().mesh(), axes, key.params);
  return cached_plan(key, [&] {
    const std::vector<int> positions(key.params.begin(), key.params.end());
    return build_reduce_plan(api, a.sharding(), a.shape(), positions, -1);
  });
}

template <class T, int N, class M>
DistributedArray<T, N, M> run_reduction(CollectiveCode code, ReduceOp op, const DistributedArray<T, N, M>& a,
                                        const AxisNames& axes) {
  const auto plan = reduction_plan(code, op, a, axes);
  return execute_plan<N>(to_string(op), *plan, a, /*reduction=*/true, op);
}

template <class T, int N, class M>
void run_reduction(CollectiveCode code, ReduceOp op, const DistributedArray<T, N, M>& a, const AxisNames& axes,
                   DistributedArray<T, N, M>& out) {
  const auto plan = reduction_plan(code, op, a, axes);
  execute_plan<N>(to_string(op), *plan, a, /*reduction=*/true, op, out);
}

}  // namespace detail

// Sum of the blocks of each group of devices that differ only along `axes`. Blocks of a group must have equal
// shapes (InvalidArgument otherwise). Result: same block shape, spec without `axes`; e.g. shape (8,) sharded
// P("i") over 8 devices gives shape (1,) replicated, holding the sum of the 8 blocks. Collective over all processes.
template <class T, int N, class M>
DistributedArray<T, N, M> psum(const DistributedArray<T, N, M>& a, const AxisNames& axes) {
  return detail::run_reduction(detail::CollectiveCode::psum, detail::ReduceOp::sum, a, axes);
}

// The same into `out`, an array shaped and sharded as the result (e.g. a previous call's): no allocation.
template <class T, int N, class M>
void psum(const DistributedArray<T, N, M>& a, const AxisNames& axes, DistributedArray<T, N, M>& out) {
  detail::run_reduction(detail::CollectiveCode::psum, detail::ReduceOp::sum, a, axes, out);
}

// Element-wise maximum over the groups, as psum. Real element types only (complex numbers have no order).
template <class T, int N, class M>
DistributedArray<T, N, M> pmax(const DistributedArray<T, N, M>& a, const AxisNames& axes) {
  static_assert(!detail::is_kokkos_complex<T>::value, "pmax: complex numbers have no order; use a real element type");
  return detail::run_reduction(detail::CollectiveCode::pmax, detail::ReduceOp::max, a, axes);
}

// The same into `out`, an array shaped and sharded as the result (e.g. a previous call's): no allocation.
template <class T, int N, class M>
void pmax(const DistributedArray<T, N, M>& a, const AxisNames& axes, DistributedArray<T, N, M>& out) {
  static_assert(!detail::is_kokkos_complex<T>::value, "pmax: complex numbers have no order; use a real element type");
  detail::run_reduction(detail::CollectiveCode::pmax, detail::ReduceOp::max, a, axes, out);
}

// Element-wise minimum over the groups, as psum. Real element types only.
template <class T, int N, class M>
DistributedArray<T, N, M> pmin(const DistributedArray<T, N, M>& a, const AxisNames& axes) {
  static_assert(!detail::is_kokkos_complex<T>::value, "pmin: complex numbers have no order; use a real element type");
  return detail::run_reduction(detail::CollectiveCode::pmin, detail::ReduceOp::min, a, axes);
}

// The same into `out`, an array shaped and sharded as the result (e.g. a previous call's): no allocation.
template <class T, int N, class M>
void pmin(const DistributedArray<T, N, M>& a, const AxisNames& axes, DistributedArray<T, N, M>& out) {
  static_assert(!detail::is_kokkos_complex<T>::value, "pmin: complex numbers have no order; use a real element type");
  detail::run_reduction(detail::CollectiveCode::pmin, detail::ReduceOp::min, a, axes, out);
}

}  // namespace darray
