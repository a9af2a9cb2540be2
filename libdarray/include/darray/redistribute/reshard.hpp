// reshard(a, new_sharding): moves a DistributedArray to any other sharding of the same global shape, through a
// ReshardPlan that is built once and cached, executed by the exchange engine (redistribute/detail/engine.hpp): on
// host memory every remote piece travels straight between shards as MPI datatypes and same-process pieces are
// copied while the messages fly; device memory is packed by kernels and moved by NCCL (or MPI).
#pragma once

#include <Kokkos_Core.hpp>
#include <cstddef>
#include <memory>
#include <unordered_map>
#include <vector>

#include "darray/array/detail/block_io.hpp"
#include "darray/array/detail/view.hpp"
#include "darray/array/distributed_array.hpp"
#include "darray/comm/check.hpp"
#include "darray/comm/group.hpp"
#include "darray/comm/limits.hpp"
#include "darray/comm/world_transport.hpp"
#include "darray/redistribute/detail/reshard_moves.hpp"
#include "darray/redistribute/plan.hpp"
#include "darray/runtime/detail/kokkos_compat.hpp"
#include "darray/runtime/detail/plan_cache.hpp"
#include "darray/runtime/environment.hpp"

namespace darray {

namespace detail {

template <class T, int N, class M>
void check_plan_input(const ReshardPlan& plan, const DistributedArray<T, N, M>& in) {
  DARRAY_THROW_IF(in.shape() != plan.shape(), InvalidArgument, "ReshardPlan::execute",
                  "array of shape " << shape_to_string(in.shape()) << " given to a plan for shape "
                                    << shape_to_string(plan.shape()));
  DARRAY_THROW_IF(in.sharding() != plan.src(), InvalidArgument, "ReshardPlan::execute",
                  "array sharded as " << in.sharding() << " given to a plan from " << plan.src());
  DARRAY_THROW_IF(sizeof(T) != plan.element_bytes(), InvalidArgument, "ReshardPlan::execute",
                  "element type " << dtype_name<T>() << " (" << sizeof(T) << " bytes) given to a plan for "
                                  << plan.element_bytes() << "-byte elements");
  DARRAY_THROW_IF(plan.process() != process_index(), InvalidArgument, "ReshardPlan::execute",
                  "plan made for process " << plan.process() << " executed on process " << process_index());
}

// The uninitialised shards of a plan's output on this process (a plan of this process: check_plan_input first), from
// the blocks its engine lists.
template <class T, int N, class M>
std::vector<Shard<T, N, M>> allocate_shards(const ReshardPlan& plan) {
  return allocate_shards<T, N, M>(reshard_engine(plan).dst_blocks, false, "darray::reshard");
}

// Runs the plan's engine from the shards of `in` into `out` (both in local-device order of the mesh).
template <class T, int N, class M>
void run_reshard_engine(const ReshardPlan& plan, const DistributedArray<T, N, M>& in,
                        const std::vector<Shard<T, N, M>>& out) {
  const ReshardEngine& e = reshard_engine(plan);
  const auto& shards = in.addressable_shards();
  // Reused between calls (runs do not nest): a kept-output reshard allocates nothing once its plan is cached.
  static thread_local std::vector<const T*> src;
  static thread_local std::vector<T*> dst;
  src.assign(e.device_ids.size(), nullptr);
  dst.assign(e.device_ids.size(), nullptr);
  for (std::size_t k = 0; k < e.device_ids.size(); ++k) {
    for (const auto& s : shards)
      if (s.device.id == e.device_ids[k]) src[k] = s.data.data();
    for (const auto& s : out)
      if (s.device.id == e.device_ids[k]) dst[k] = s.data.data();
    DARRAY_THROW_IF(src[k] == nullptr && in.size() > 0, InvalidArgument, "reshard",
                    "the array has no shard for device " << e.device_ids[k] << " of its mesh");
  }
  detail::fence_writers_of<M>();  // kernels that wrote the input may still run
  e.engine.run<T, M>(src, dst);
}

// Plans cached by (src, dst, shape, element size), so repeated reshards (every FFT, every time step) skip planning.
struct ReshardPlanKey {
  NamedSharding src, dst;
  Shape shape;
  std::size_t element_bytes;
  friend bool operator==(const ReshardPlanKey& a, const ReshardPlanKey& b) {
    return a.element_bytes == b.element_bytes && a.shape == b.shape && a.src == b.src && a.dst == b.dst;
  }
};
struct ReshardPlanKeyHash {
  std::size_t operator()(const ReshardPlanKey& k) const {
    std::size_t h = std::hash<NamedSharding>{}(k.src);
    hash_combine(h, std::hash<NamedSharding>{}(k.dst));
    for (int64_t n : k.shape) hash_combine(h, std::hash<int64_t>{}(n));
    hash_combine(h, k.element_bytes);
    return h;
  }
};
// A reshard's arguments as they lie, compared with a cached plan's key without making one (PlanCache::get_ref_by).
struct ReshardPlanProbe {
  const NamedSharding& src;
  const NamedSharding& dst;
  const Shape& shape;
  std::size_t element_bytes;
  bool matches(const ReshardPlanKey& k) const {
    return k.element_bytes == element_bytes && k.src == src && k.dst == dst && k.shape == shape;
  }
  ReshardPlanKey key() const { return ReshardPlanKey{src, dst, shape, element_bytes}; }
};
// Plans of every (src, dst, shape, element size) reshard this process ran recently.
inline PlanCache<ReshardPlanKey, const ReshardPlan, ReshardPlanKeyHash>& reshard_plan_cache() {
  static PlanCache<ReshardPlanKey, const ReshardPlan, ReshardPlanKeyHash> cache(256);
  return cache;
}

}  // namespace detail

namespace detail {
// DARRAY_CHECK: every process must be running the same reshard. Checked before planning, since a plan that throws
// on one process only would leave the others waiting in the check's own collective.
template <class T>
void check_reshard_consistent(const NamedSharding& src, const NamedSharding& dst, const Shape& shape) {
  if (!consistency_checks_enabled()) return;
  check_consistent(world_comm(), "reshard " + src.to_string() + " -> " + dst.to_string() + " shape " +
                                     shape_to_string(shape) + " dtype " + dtype_name<T>());
}

template <class T, int N, class M>
void execute_into(const ReshardPlan& plan, const DistributedArray<T, N, M>& in,
                  const std::vector<Shard<T, N, M>>& out) {
  check_plan_input(plan, in);
  run_reshard_engine(plan, in, out);
}
}  // namespace detail

// Executes a plan on an array sharded as plan.src(); returns the array sharded as plan.dst(). Collective over the
// processes of the job (processes without devices in the mesh take part with nothing to move).
template <class T, int N, class M>
DistributedArray<T, N, M> execute(const ReshardPlan& plan, const DistributedArray<T, N, M>& in) {
  detail::check_reshard_consistent<T>(in.sharding(), plan.dst(), in.shape());
  detail::check_plan_input(plan, in);
  auto out = detail::allocate_shards<T, N, M>(plan);
  detail::run_reshard_engine(plan, in, out);
  return detail::adopt_shards<T, N, M>(plan.shape(), plan.dst(), std::move(out));
}

// Executes a plan into `out`, an array already sharded as plan.dst() (e.g. from a previous execution): no
// allocation, so a time loop or an FFT that reshards every step reuses its buffers. `out` may share blocks with `in`
// (then the result goes through fresh blocks: an allocation and a copy more).
template <class T, int N, class M>
void execute(const ReshardPlan& plan, const DistributedArray<T, N, M>& in, DistributedArray<T, N, M>& out) {
  DARRAY_THROW_IF(out.shape() != plan.shape() || out.sharding() != plan.dst(), InvalidArgument, "ReshardPlan::execute",
                  "output array of shape " << shape_to_string(out.shape()) << " sharded as " << out.sharding()
                                           << "; expected shape " << shape_to_string(plan.shape()) << " sharded as "
                                           << plan.dst());
  detail::check_reshard_consistent<T>(in.sharding(), plan.dst(), in.shape());
  if (!detail::shares_a_block(out.addressable_shards(), in.addressable_shards())) {
    detail::execute_into(plan, in, out.addressable_shards());  // views share their data: writing them writes `out`
    return;
  }
  detail::check_plan_input(plan, in);
  const auto fresh = detail::allocate_shards<T, N, M>(plan);
  detail::run_reshard_engine(plan, in, fresh);
  detail::copy_blocks(detail::default_instance<typename M::execution_space>(), out.addressable_shards(), fresh);
}

namespace detail {
// The cached plan as the cache holds it: valid until the next lookup in the reshard plan cache.
template <class T>
const std::shared_ptr<const ReshardPlan>& cached_reshard_plan(const NamedSharding& src, const NamedSharding& dst,
                                                              const Shape& shape) {
  return reshard_plan_cache().get_ref_by(ReshardPlanProbe{src, dst, shape, sizeof(T)}, [&] {
    return std::make_shared<const ReshardPlan>(src, dst, shape, sizeof(T), process_index());
  });
}
}  // namespace detail

// The cached plan for moving arrays of `shape` and element type T from src to dst on this process.
template <class T>
std::shared_ptr<const ReshardPlan> reshard_plan(const NamedSharding& src, const NamedSharding& dst,
                                                const Shape& shape) {
  return detail::cached_reshard_plan<T>(src, dst, shape);
}

// Any sharding to any sharding of the same global shape over the same devices. Collective.
template <class T, int N, class M>
DistributedArray<T, N, M> reshard(const DistributedArray<T, N, M>& a, const NamedSharding& new_sharding) {
  detail::check_reshard_consistent<T>(a.sharding(), new_sharding, a.shape());
  // A plan of this process for a's own sharding and shape, held by the cache while it runs.
  const ReshardPlan& plan = *detail::cached_reshard_plan<T>(a.sharding(), new_sharding, a.shape());
  auto out = detail::allocate_shards<T, N, M>(plan);
  detail::run_reshard_engine(plan, a, out);
  return detail::adopt_shards<T, N, M>(plan.shape(), plan.dst(), std::move(out));
}

}  // namespace darray
