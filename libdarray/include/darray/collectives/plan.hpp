// CollectivePlan: a collective planned once for an operand's shape, sharding and element type, run many times.
// psum_plan, pmax_plan, pmin_plan, all_gather_plan, psum_scatter_plan, all_to_all_plan and ppermute_plan take the
// collective's own arguments (less the output) and return its plan, the one the call itself finds in the plan
// cache; execute(plan, a) and execute(plan, a, out) then do what the call does, without finding it again:
//
//   const auto shift = ppermute_plan(x, "i", perm);   // checks the arguments, plans (once per shape and sharding)
//   for (int step = 0; step < steps; ++step) execute(shift, x, y);   // y = ppermute(x, "i", perm), kept output
//
// A plan runs on any operand of the shape, sharding and element type it was made for (InvalidArgument otherwise,
// naming both). Like the calls, executing a plan is collective over all processes: every process executes its
// plan of the same collective. With DARRAY_CHECK=1 every execution compares the call across processes first.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "darray/array/distributed_array.hpp"
#include "darray/collectives/detail/call.hpp"
#include "darray/collectives/detail/element_ops.hpp"
#include "darray/collectives/detail/execute.hpp"
#include "darray/collectives/detail/plan.hpp"
#include "darray/core/error.hpp"

namespace darray {

template <class T, int N, class M = DefaultMemorySpace, int R = N>
class CollectivePlan;

namespace detail {
struct CollectivePlanAccess;
}  // namespace detail

// T, N, M: the operand's element type, rank and memory space; R: the result's rank (N + 1 for a stacked
// all_gather, N otherwise).
template <class T, int N, class M, int R>
class CollectivePlan {
 public:
  // The collective: "psum", "pmax", "pmin", "all_gather", "psum_scatter", "all_to_all" or "ppermute".
  const char* name() const { return m_api; }
  // The operand it runs on, and its result.
  const Shape& shape() const { return m_plan->in_shape; }
  const NamedSharding& sharding() const { return m_plan->in_sharding; }
  const Shape& out_shape() const { return m_plan->out_shape; }
  const NamedSharding& out_sharding() const { return m_plan->out_sharding; }

 private:
  friend struct detail::CollectivePlanAccess;
  CollectivePlan(const char* api, std::shared_ptr<const detail::CollectiveSchedule> plan, bool reduction,
                 detail::ReduceOp op, std::shared_ptr<const std::string> args)
      : m_plan(std::move(plan)), m_api(api), m_reduction(reduction), m_op(op), m_args(std::move(args)) {
    if (!m_reduction) m_engine = &detail::collective_engine(*m_plan, sizeof(T));
  }

  std::shared_ptr<const detail::CollectiveSchedule> m_plan;
  const detail::MoveEngine* m_engine = nullptr;  // movement plans: the exchange engine for T
  const char* m_api;
  bool m_reduction;
  detail::ReduceOp m_op;
  // The call's arguments as text, made under DARRAY_CHECK only (a pointer: an empty std::string still costs a copy
  // of its inline buffer per call).
  std::shared_ptr<const std::string> m_args;
};

namespace detail {

// A collective's cached plan as its own call uses it, after the call's checks: the cache's pointer (valid until the
// next plan lookup), so a call whose plan is cached counts no reference; CollectivePlanAccess::hold makes the
// public plan of it. args: the call's arguments as text (null unless DARRAY_CHECK is on).
template <class T, int N, class M, int R>
struct CollectiveCall {
  const char* api;
  const std::shared_ptr<const CollectiveSchedule>& plan;
  bool reduction;
  ReduceOp op;
  std::shared_ptr<const std::string> args;
};

// Makes plans and runs them; the collectives' calls run their plan here without the DARRAY_CHECK comparison,
// which their plan function has made already.
struct CollectivePlanAccess {
  template <class T, int N, class M, int R>
  static void check_operand(const CollectivePlan<T, N, M, R>& plan, const DistributedArray<T, N, M>& a) {
    DARRAY_THROW_IF(a.shape() != plan.shape() || a.sharding() != plan.sharding(), InvalidArgument, plan.m_api,
                    "plan made for an operand of shape " << shape_to_string(plan.shape()) << " sharded as "
                                                         << plan.sharding() << " executed on one of shape "
                                                         << shape_to_string(a.shape()) << " sharded as "
                                                         << a.sharding());
  }

  // What execute() checks before it runs a held plan: the call across processes (DARRAY_CHECK; its text names the
  // operand, so processes whose operands differ fail alike there), then the operand against the plan.
  template <class T, int N, class M, int R>
  static void check_call(const CollectivePlan<T, N, M, R>& plan, const DistributedArray<T, N, M>& a) {
    if (plan.m_args) check_collective_call(plan.m_api, a, *plan.m_args);
    check_operand(plan, a);
  }

  // Runs the plan on a, whose shape and sharding the caller has checked (or made the plan from).
  template <class T, int N, class M, int R>
  static DistributedArray<T, R, M> run(const CollectivePlan<T, N, M, R>& plan, const DistributedArray<T, N, M>& a) {
    return execute_plan<R>(plan.m_api, *plan.m_plan, a, plan.m_reduction, plan.m_op, plan.m_engine);
  }

  template <class T, int N, class M, int R>
  static void run(const CollectivePlan<T, N, M, R>& plan, const DistributedArray<T, N, M>& a,
                  DistributedArray<T, R, M>& out) {
    execute_plan<R>(plan.m_api, *plan.m_plan, a, plan.m_reduction, plan.m_op, out, plan.m_engine);
  }

  // A call's cached plan run as the call: into fresh blocks, or into `out`.
  template <class T, int N, class M, int R>
  static DistributedArray<T, R, M> run(const CollectiveCall<T, N, M, R>& call, const DistributedArray<T, N, M>& a) {
    return execute_plan<R>(call.api, *call.plan, a, call.reduction, call.op, engine_of<T>(call));
  }

  template <class T, int N, class M, int R>
  static void run(const CollectiveCall<T, N, M, R>& call, const DistributedArray<T, N, M>& a,
                  DistributedArray<T, R, M>& out) {
    execute_plan<R>(call.api, *call.plan, a, call.reduction, call.op, out, engine_of<T>(call));
  }

  // The public plan of a call: it shares the cached plan.
  template <class T, int N, class M, int R>
  static CollectivePlan<T, N, M, R> hold(CollectiveCall<T, N, M, R>&& call) {
    return CollectivePlan<T, N, M, R>(call.api, call.plan, call.reduction, call.op, std::move(call.args));
  }

 private:
  template <class T, int N, class M, int R>
  static const MoveEngine* engine_of(const CollectiveCall<T, N, M, R>& call) {
    return call.reduction ? nullptr : &collective_engine(*call.plan, sizeof(T));
  }
};

// What each collective's plan function does first: the DARRAY_CHECK comparison of the call across processes, with
// the arguments' text made only when that check is on. Returns that text (null when off) for the plan to keep.
template <class T, int N, class M, class Describe>
std::shared_ptr<const std::string> checked_call_args(const char* api, const DistributedArray<T, N, M>& a,
                                                     Describe&& describe_args) {
  if (!consistency_checks_enabled()) return nullptr;
  auto args = std::make_shared<const std::string>(describe_args());
  check_collective_call(api, a, *args);
  return args;
}

}  // namespace detail

// The plan's collective on operand a, into fresh blocks: what the collective's allocating call returns.
template <class T, int N, class M, int R>
DistributedArray<T, R, M> execute(const CollectivePlan<T, N, M, R>& plan, const DistributedArray<T, N, M>& a) {
  detail::CollectivePlanAccess::check_call(plan, a);
  return detail::CollectivePlanAccess::run(plan, a);
}

// The same into `out`, an array shaped and sharded as the result (out_shape(), out_sharding(); e.g. a previous
// execution's result): no allocation. As with the calls' kept-output forms, `out` may share the operand's blocks
// (psum in place, ppermute(a, axis, perm, a)): the result then goes through fresh blocks, an allocation and a copy
// more.
template <class T, int N, class M, int R>
void execute(const CollectivePlan<T, N, M, R>& plan, const DistributedArray<T, N, M>& a,
             DistributedArray<T, R, M>& out) {
  detail::CollectivePlanAccess::check_call(plan, a);
  detail::CollectivePlanAccess::run(plan, a, out);
}

}  // namespace darray
