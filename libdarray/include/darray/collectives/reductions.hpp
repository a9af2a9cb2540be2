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
#include "darray/collectives/plan.hpp"

namespace darray {
namespace detail {

template <class T, int N, class M>
CollectiveCall<T, N, M, N> reduction_call(CollectiveCode code, ReduceOp op, const DistributedArray<T, N, M>& a,
                                          const AxisNames& axes) {
  const char* api = to_string(op);
  auto args = checked_call_args(api, a, [&] { return quoted_list(axes.names()); });
  static thread_local std::vector<int64_t> positions;  // keeps its capacity: no allocation per call
  positions.clear();
  resolve_axes(api, a.sharding().mesh(), axes, positions);
  const auto& plan = cached_plan(PlanProbe{code, a.sharding(), a.shape(), positions.data(), positions.size()}, [&] {
    return build_reduce_plan(api, a.sharding(), a.shape(), std::vector<int>(positions.begin(), positions.end()), -1);
  });
  return {api, plan, /*reduction=*/true, op, std::move(args)};
}

}  // namespace detail

// The plans of psum, pmax and pmin(a, axes), for execute (collectives/plan.hpp).
template <class T, int N, class M>
CollectivePlan<T, N, M> psum_plan(const DistributedArray<T, N, M>& a, const AxisNames& axes) {
  return detail::CollectivePlanAccess::hold(
      detail::reduction_call(detail::CollectiveCode::psum, detail::ReduceOp::sum, a, axes));
}
template <class T, int N, class M>
CollectivePlan<T, N, M> pmax_plan(const DistributedArray<T, N, M>& a, const AxisNames& axes) {
  static_assert(!detail::is_kokkos_complex<T>::value, "pmax: complex numbers have no order; use a real element type");
  return detail::CollectivePlanAccess::hold(
      detail::reduction_call(detail::CollectiveCode::pmax, detail::ReduceOp::max, a, axes));
}
template <class T, int N, class M>
CollectivePlan<T, N, M> pmin_plan(const DistributedArray<T, N, M>& a, const AxisNames& axes) {
  static_assert(!detail::is_kokkos_complex<T>::value, "pmin: complex numbers have no order; use a real element type");
  return detail::CollectivePlanAccess::hold(
      detail::reduction_call(detail::CollectiveCode::pmin, detail::ReduceOp::min, a, axes));
}

// Sum of the blocks of each group of devices that differ only along `axes`. Blocks of a group must have equal
// shapes (InvalidArgument otherwise). Result: same block shape, spec without `axes`; e.g. shape (8,) sharded
// P("i") over 8 devices gives shape (1,) replicated, holding the sum of the 8 blocks. Collective over all processes.
template <class T, int N, class M>
DistributedArray<T, N, M> psum(const DistributedArray<T, N, M>& a, const AxisNames& axes) {
  return detail::CollectivePlanAccess::run(
      detail::reduction_call(detail::CollectiveCode::psum, detail::ReduceOp::sum, a, axes), a);
}

// The same into `out`, an array shaped and sharded as the result (e.g. a previous call's): no allocation.
template <class T, int N, class M>
void psum(const DistributedArray<T, N, M>& a, const AxisNames& axes, DistributedArray<T, N, M>& out) {
  detail::CollectivePlanAccess::run(
      detail::reduction_call(detail::CollectiveCode::psum, detail::ReduceOp::sum, a, axes), a, out);
}

// Element-wise maximum over the groups, as psum. Real element types only (complex numbers have no order).
template <class T, int N, class M>
DistributedArray<T, N, M> pmax(const DistributedArray<T, N, M>& a, const AxisNames& axes) {
  static_assert(!detail::is_kokkos_complex<T>::value, "pmax: complex numbers have no order; use a real element type");
  return detail::CollectivePlanAccess::run(
      detail::reduction_call(detail::CollectiveCode::pmax, detail::ReduceOp::max, a, axes), a);
}

// The same into `out`, an array shaped and sharded as the result (e.g. a previous call's): no allocation.
template <class T, int N, class M>
void pmax(const DistributedArray<T, N, M>& a, const AxisNames& axes, DistributedArray<T, N, M>& out) {
  static_assert(!detail::is_kokkos_complex<T>::value, "pmax: complex numbers have no order; use a real element type");
  detail::CollectivePlanAccess::run(
      detail::reduction_call(detail::CollectiveCode::pmax, detail::ReduceOp::max, a, axes), a, out);
}

// Element-wise minimum over the groups, as psum. Real element types only.
template <class T, int N, class M>
DistributedArray<T, N, M> pmin(const DistributedArray<T, N, M>& a, const AxisNames& axes) {
  static_assert(!detail::is_kokkos_complex<T>::value, "pmin: complex numbers have no order; use a real element type");
  return detail::CollectivePlanAccess::run(
      detail::reduction_call(detail::CollectiveCode::pmin, detail::ReduceOp::min, a, axes), a);
}

// The same into `out`, an array shaped and sharded as the result (e.g. a previous call's): no allocation.
template <class T, int N, class M>
void pmin(const DistributedArray<T, N, M>& a, const AxisNames& axes, DistributedArray<T, N, M>& out) {
  static_assert(!detail::is_kokkos_complex<T>::value, "pmin: complex numbers have no order; use a real element type");
  detail::CollectivePlanAccess::run(
      detail::reduction_call(detail::CollectiveCode::pmin, detail::ReduceOp::min, a, axes), a, out);
}

}  // namespace darray
