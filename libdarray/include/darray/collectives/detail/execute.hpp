// Runs a CollectiveSchedule on an operand into the result blocks (allocated, or kept by the caller): reductions combine
// the slots locally and run one allreduce per process component; movements (all_gather, all_to_all, ppermute) are
// a MoveList run by the exchange engine, straight from the operand blocks into the result blocks.
#pragma once

#include "darray/config.hpp"

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "darray/array/detail/block_cache.hpp"
#include "darray/array/detail/box_copy.hpp"
#include "darray/array/detail/shard_lists.hpp"
#include "darray/array/detail/view.hpp"
#include "darray/array/distributed_array.hpp"
#include "darray/array/dtype.hpp"
#include "darray/collectives/detail/element_ops.hpp"
#include "darray/collectives/detail/nccl_reduce.hpp"
#include "darray/collectives/detail/plan.hpp"
#include "darray/collectives/detail/transport_choice.hpp"
#include "darray/comm/chunked_collectives.hpp"
#include "darray/comm/detail/same_reduction.hpp"
#include "darray/comm/limits.hpp"
#include "darray/comm/mpi_transport.hpp"
#include "darray/core/index.hpp"
#include "darray/redistribute/detail/engine.hpp"
#include "darray/runtime/detail/kokkos_compat.hpp"

namespace darray {
namespace detail {

// Copies the region (src_start, extent) of a row-major src_shape buffer to dst_start of a row-major dst_shape
// buffer, both in M: memcpy runs on the host, a kernel on `space` otherwise (not fenced).
template <class T, class M, class Exec>
void copy_region(const Exec& space, const T* src, const Shape& src_shape, const Shape& src_start, T* dst,
                 const Shape& dst_shape, const Shape& dst_start, const Shape& extent) {
  // In the destination's coordinates the source buffer sits at dst_start - src_start. Boxes reused: a call
  // allocates nothing.
  static thread_local Index src_box, dst_box, region;
  src_box.resize(extent.size());
  dst_box.resize(extent.size());
  region.resize(extent.size());
  for (std::size_t d = 0; d < extent.size(); ++d) {
    const int64_t shift = dst_start[d] - src_start[d];
    src_box[d] = Slice{shift, shift + src_shape[d]};
    dst_box[d] = Slice{0, dst_shape[d]};
    region[d] = Slice{dst_start[d], dst_start[d] + extent[d]};
  }
  copy_box_any<T, M>(src, src_box, dst, dst_box, region, space);
}

// Runs `step` on host memory: directly when the host addresses M, else on a host copy made and copied back. The
// copy to the host follows the kernels on M's default instance (it waits for them, and the host for it); the copy
// back is not fenced: the caller's kernels on that instance follow it, and the caller fences before it returns.
template <class T, class M, class Step>
void on_host(Kokkos::View<T*, M> data, bool copy_back, Step&& step) {
  if (direct_host_access<M>()) {
    step(data.data());
  } else {
    auto host = host_copy_target(data, "darray::collective host copy");
    const auto& space = default_instance<typename M::execution_space>();
    copy_contiguous(space, host, data);
    step(host.data());
    if (copy_back) copy_contiguous(space, data, host, /*then_fence=*/false);
  }
}

// The transport of this process's component, looked up once per plan and Environment (Transport::group canonicalises
// the colors). Collective the first time. The plan must have colors.
template <class T, class M>
Transport& reduce_group_transport(const CollectiveSchedule& plan) {
  Transport& base = reduce_transport<T, M>();
  const int which = base.backend() == Backend::nccl ? 1 : 0;
  return *plan.reduce_group[which].get(0, [&] { return &base.group(plan.colors); });
}

// The MPI communicator of this process's reduction group (the MPI transport's group even when reductions run on
// NCCL), cached in the plan like reduce_group_transport's. Collective over all processes the first time.
inline MPI_Comm mpi_reduce_comm(const CollectiveSchedule& plan) {
  Transport* t = plan.reduce_group[0].get(0, [&] { return &transport(Backend::mpi).group(plan.colors); });
  return dynamic_cast<MpiTransport&>(*t).comm();
}

// The operand block of each plan target (plan.targets order), in a buffer reused by every call on this thread. The
// operand's shards are in the plan's local-device order; a mismatch (never expected) is an internal error.
template <class T, int N, class M>
const std::vector<const T*>& operand_blocks(const CollectiveSchedule& plan, const DistributedArray<T, N, M>& a) {
  static thread_local std::vector<const T*> blocks;
  const auto& shards = a.addressable_shards();
  DARRAY_THROW_IF(
      shards.size() != plan.targets.size(), Error, "collective",
      "internal: operand has " << shards.size() << " blocks on this process; the plan has " << plan.targets.size());
  blocks.resize(shards.size());
  for (std::size_t k = 0; k < shards.size(); ++k) {
    DARRAY_THROW_IF(shards[k].device.id != plan.targets[k].device.id, Error, "collective",
                    "internal: operand block " << k << " is on device " << shards[k].device.id << ", the plan's on "
                                               << plan.targets[k].device.id);
    blocks[k] = shards[k].data.data();
  }
  return blocks;
}

// What the processes of a reduction must agree on (operation, element type, length) as a fingerprint, and this
// process's line of the mismatch error (comm/detail/same_reduction.hpp: an allreduce carries no tag).
template <class T>
std::uint64_t reduction_fingerprint(ReduceOp op, const CollectiveSchedule& plan) {
  return mix_fingerprint(
      mix_fingerprint(static_cast<std::uint64_t>(op) + 1, static_cast<std::uint64_t>(dtype_code<T>())),
      static_cast<std::uint64_t>(plan.slot_elements));
}

template <class T>
std::string describe_reduction(ReduceOp op, const CollectiveSchedule& plan) {
  return "process " + std::to_string(process_index()) + ": " + to_string(op) + " of " +
         std::to_string(plan.slot_elements) + " x " + dtype_name<T>();
}

template <class T>
void check_same_reduction_of(MPI_Comm comm, ReduceOp op, const CollectiveSchedule& plan) {
  check_same_reduction(comm, reduction_fingerprint<T>(op, plan), "collective reduction",
                       [&] { return describe_reduction<T>(op, plan); });
}

// The reduction across the processes of comm of the plan's slot elements at data (host memory; from send when it is
// not null, else in place), the fingerprint riding with the data (reduce_with_fingerprint: records up to 16 MiB, then
// the data's MPI_Allreduce); on a mismatch every process throws the same InvalidArgument. Collective over comm.
template <class T>
void reduce_across(MPI_Comm comm, const T* send, T* data, ReduceOp op, const CollectiveSchedule& plan) {
  using R = typename ReduceScalar<T>::type;
  const auto combine = op == ReduceOp::sum   ? &combine_record_payload<R, ReduceOp::sum>
                       : op == ReduceOp::max ? &combine_record_payload<R, ReduceOp::max>
                                             : &combine_record_payload<R, ReduceOp::min>;
  if (!reduce_with_fingerprint(comm, reduction_fingerprint<T>(op, plan), send != nullptr ? send : data, data,
                               static_cast<std::size_t>(plan.slot_elements) * ReduceScalar<T>::lanes, sizeof(R),
                               mpi_reduce_datatype<T>(), mpi_reduce_op<T>(op), plan.max_message_bytes,
                               "collective reduction", combine))
    throw_other_reduction(comm, "collective reduction", describe_reduction<T>(op, plan));
}

// dst = the combination of the slot's local blocks in member order (the identity when it has none). Not fenced.
template <class T, class Exec>
void combine_slot(const Exec& space, const Slot& slot, const std::vector<const T*>& operand, ReduceOp op, T* dst) {
  const int64_t n = slot.elements;
  if (slot.members.empty()) {
    fill_kernel(space, dst, n, reduce_identity<T>(op));
    return;
  }
  if (slot.members.size() > 1 && loop_inline<T, Exec>(n)) {  // on the host: up to three blocks a pass
    combine_blocks(op, dst, operand, slot.members, n);
    return;
  }
  copy_kernel(space, dst, operand[slot.members[0]], n);
  for (std::size_t k = 1; k < slot.members.size(); ++k) combine_kernel(space, op, dst, operand[slot.members[k]], n);
}

// A reduction whose every result block is one whole slot (psum, pmax, pmin): each slot is combined in the first
// result block that receives it, reduced across processes there (from the operand block straight into it when the
// slot has one local device), then copied to the slot's other result blocks: no slot buffer, no copies in and out of
// it. Host memory and the MPI transport; one slot when processes take part (one allreduce per call). Returns false,
// having moved nothing, when the plan is not of that form (plan.slot_block empty). The blocks of `out` are those of
// the plan's targets (a result made from them, or a kept output checked against the plan's shape and sharding),
// none of them an operand block.
template <class T, int R, class M, class Exec>
bool reduce_in_result_blocks(const Exec& space, const CollectiveSchedule& plan, const std::vector<const T*>& operand,
                             ReduceOp op, const std::vector<Shard<T, R, M>>& out) {
  if (!direct_host_access<M>() || plan.slot_block.empty()) return false;
  const bool across = !plan.colors.empty() && plan.component_size > 1;
  if (across && plan.slots.size() != 1) return false;
  static thread_local std::vector<T*> first;
  first.resize(plan.slots.size());
  for (std::size_t s = 0; s < plan.slots.size(); ++s) first[s] = out[plan.slot_block[s]].data.data();
  // Every process with colors looks its component up (collective the first time), across or not.
  Transport* t = plan.colors.empty() ? nullptr : &reduce_group_transport<T, M>(plan);
  if (across && t->backend() != Backend::mpi) return false;
  const MPI_Comm comm = across ? dynamic_cast<MpiTransport&>(*t).comm() : MPI_COMM_NULL;
  for (std::size_t s = 0; s < plan.slots.size(); ++s) {
    const Slot& slot = plan.slots[s];
    T* dst = first[s];
    if (across && slot.members.size() == 1) {  // one slot (plan.slot_elements) when processes take part
      reduce_across(comm, operand[slot.members[0]], dst, op, plan);
      continue;
    }
    combine_slot(space, slot, operand, op, dst);
    detail::fence(space);  // the host reads dst next (MPI, the copies)
    if (across) reduce_across<T>(comm, nullptr, dst, op, plan);
  }
  for (const Copy& c : plan.copies) {  // each a whole slot (plan.slot_block)
    T* dst = out[c.target].data.data();
    const T* src = first[static_cast<std::size_t>(c.source)];
    if (dst != src)
      copy_bytes(static_cast<void*>(dst), static_cast<const void*>(src),
                 static_cast<std::size_t>(plan.slots[static_cast<std::size_t>(c.source)].elements) * sizeof(T));
  }
  return true;
}

// Local combine of each slot, then one allreduce over the component. Collective over all processes when the plan
// has colors (the component communicator is created on first use), over the component afterwards.
template <class T, class M, class Exec>
Kokkos::View<T*, M> reduce_slots(const Exec& space, const CollectiveSchedule& plan,
                                 const std::vector<const T*>& operand, ReduceOp op) {
  const auto slots = cached_view<Kokkos::View<T*, M>>("darray::slots", static_cast<std::size_t>(plan.slot_elements));
  for (const Slot& slot : plan.slots) combine_slot(space, slot, operand, op, slots.data() + slot.offset);
  // Where the host reads the slots (MPI, the callers' memcpys) it waits for the kernels; on a device the copy to the
  // host, NCCL and the callers' kernels follow them on their instance.
  if (direct_host_access<M>()) detail::fence(space);
  if (plan.colors.empty()) return slots;
  Transport& t = reduce_group_transport<T, M>(plan);
#if defined(DARRAY_HAS_NCCL)
  // NCCL carries no fingerprint: the processes compare it over the same group's MPI communicator (looked up by
  // every process, as the first lookup is collective).
  const MPI_Comm fingerprint_comm = t.backend() == Backend::nccl ? mpi_reduce_comm(plan) : MPI_COMM_NULL;
#endif
  if (plan.component_size == 1) return slots;
#if defined(DARRAY_HAS_NCCL)
  if constexpr (nccl_reducible<T>()) {
    if (t.backend() == Backend::nccl) {
      check_same_reduction_of<T>(fingerprint_comm, op, plan);
      nccl_allreduce(space, dynamic_cast<NcclTransport&>(t), slots.data(), plan.slot_elements, op);
      return slots;
    }
  }
#endif
  const MPI_Comm comm = dynamic_cast<MpiTransport&>(t).comm();
  on_host(slots, true, [&](T* data) { reduce_across<T>(comm, nullptr, data, op, plan); });
  return slots;
}

// Result blocks no larger than this that repeat an earlier target's block (the same box of the result: its
// replicas, e.g. every block of an all_gather over a process's devices) are copied whole from that block once it is
// complete, instead of being assembled again from the same pieces: one copy instead of one per piece, where the
// copies' fixed cost, not their bytes, is the price. Larger blocks keep their own pieces, copied while the messages
// fly.
constexpr std::size_t replica_copy_max_bytes = std::size_t(64) << 10;

// For each target, the earlier target whose block it repeats and takes whole after the run (replica_copy_max_bytes),
// or -1. Both blocks must be filled entirely by their copies (no zero fill), so the whole block is the result.
inline std::vector<int> replica_leads(const CollectiveSchedule& plan, std::size_t bytes) {
  const std::size_t n = plan.targets.size();
  std::vector<int> lead(n, -1);
  std::vector<int64_t> covered(n, 0), copies(n, 0);
  for (const Copy& c : plan.copies) {
    covered[c.target] += volume(c.extent);
    ++copies[c.target];
  }
  auto complete = [&](std::size_t k) {
    const Target& t = plan.targets[k];
    return !t.zero_fill && covered[k] == volume(t.out_shape) &&
           static_cast<std::size_t>(volume(t.out_shape)) * bytes <= replica_copy_max_bytes;
  };
  std::unordered_map<Index, std::size_t, IndexHash> first;
  for (std::size_t k = 0; k < n; ++k) {
    if (!complete(k)) continue;
    const auto [it, fresh] = first.emplace(plan.targets[k].out_index, k);
    if (!fresh && copies[k] > 1) lead[k] = static_cast<int>(it->second);
  }
  // A received piece that only replicas would use (pieces are received per source device, and a replica's sources
  // may be other replicas of its lead's) must still land somewhere, as its sender sends it: the replicas that use
  // it keep their own copies. Giving them back only adds uses, so one pass settles it.
  std::vector<char> used(plan.recvs.size(), 0);
  for (const Copy& c : plan.copies)
    if (c.from == CopySource::received && lead[c.target] < 0) used[static_cast<std::size_t>(c.source)] = 1;
  for (const Copy& c : plan.copies)
    if (c.from == CopySource::received && !used[static_cast<std::size_t>(c.source)]) lead[c.target] = -1;
  return lead;
}

// The plan's movement as the engine's MoveList for elements of `bytes` bytes. Buffer k is the operand block and the
// result block of plan.targets[k]; a received piece lands in the first result region that needs it and is copied to
// the others; small replica blocks are copied whole from their lead (replica_leads).
inline MoveList collective_moves(const CollectiveSchedule& plan, std::size_t bytes) {
  std::unordered_map<int64_t, int> buffer;
  for (std::size_t k = 0; k < plan.targets.size(); ++k) buffer.emplace(plan.targets[k].device.id, static_cast<int>(k));
  auto region = [](int b, const Shape& shape, const Shape& start) {
    Region r;
    r.buffer = b;
    row_major_strides_into(shape, r.stride.data());
    for (std::size_t d = 0; d < start.size(); ++d) r.offset += start[d] * r.stride[d];
    return r;
  };
  auto move_of = [](const Shape& extent) {
    DARRAY_THROW_IF(extent.size() > static_cast<std::size_t>(max_copy_rank), NotSupported, "collective",
                    "rank " << extent.size() << " blocks; at most 8 dims");
    Move m;
    m.rank = static_cast<int>(extent.size());
    for (std::size_t d = 0; d < extent.size(); ++d) m.extent[d] = extent[d];
    return m;
  };
  const std::vector<int> lead = replica_leads(plan, bytes);
  MoveList list;
  list.operation = plan.operation;
  std::vector<Move> received;
  for (const Piece& p : plan.recvs) received.push_back(move_of(p.extent));
  for (const Copy& c : plan.copies) {
    if (lead[c.target] >= 0) continue;
    const Region dst = region(static_cast<int>(c.target), plan.targets[c.target].out_shape, c.dst_start);
    if (c.from == CopySource::shard) {
      Move m = move_of(c.extent);
      m.src = region(buffer.at(c.source), c.src_shape, c.src_start);
      m.dst.push_back(dst);
      list.local.push_back(std::move(m));
    } else if (c.from == CopySource::received) {
      received[static_cast<std::size_t>(c.source)].dst.push_back(dst);
    }
  }
  for (std::size_t i = 0; i < plan.recvs.size(); ++i) {
    DARRAY_THROW_IF(received[i].dst.empty(), Error, "collective", "internal: received piece " << i << " has no use");
    add_peer_move(list.recvs, plan.recvs[i].process, std::move(received[i]));
  }
  for (const Piece& p : plan.sends) {
    Move m = move_of(p.extent);
    m.src = region(buffer.at(p.key_device), p.src_shape, p.src_start);
    add_peer_move(list.sends, p.process, std::move(m));
  }
  for (std::size_t k = 0; k < plan.targets.size(); ++k) {
    if (lead[k] < 0) continue;
    const Shape& shape = plan.targets[k].out_shape;
    Move m = move_of(shape);
    const Shape origin(shape.size(), 0);
    m.src = region(lead[k], shape, origin);
    m.dst.push_back(region(static_cast<int>(k), shape, origin));
    list.after.push_back(std::move(m));
  }
  list.colors = plan.colors;
  return list;
}

// The engine of a movement plan for elements of `bytes` bytes, built once per plan and element size.
inline const MoveEngine& collective_engine(const CollectiveSchedule& plan, std::size_t bytes) {
  auto it = plan.engines.find(bytes);
  if (it == plan.engines.end())
    it = plan.engines
             .emplace(bytes, std::make_shared<const MoveEngine>(collective_moves(plan, bytes), bytes, "collective"))
             .first;
  return *it->second;
}

// Checks `out` against the plan's result (shape, sharding) for the kept-output forms.
template <class T, int R, class M>
void check_kept_output(const char* api, const CollectiveSchedule& plan, const DistributedArray<T, R, M>& out) {
  DARRAY_THROW_IF(out.shape() != plan.out_shape || out.sharding() != plan.out_sharding, InvalidArgument, api,
                  "output array of shape " << shape_to_string(out.shape()) << " sharded as " << out.sharding()
                                           << "; expected shape " << shape_to_string(plan.out_shape) << " sharded as "
                                           << plan.out_sharding);
}

// Runs the plan on operand a into the result blocks `out` (one per target, in target order). reduction: slots
// carry the data (psum, pmax, pmin, psum_scatter), else pieces do. `fresh`: the blocks were just allocated (zero
// fill done by the allocation). No block of `out` is an operand block (the kept form of execute_plan sees to it).
// engine: collective_engine(plan, sizeof(T)) for movement plans (the CollectivePlan holds it), null for reductions.
template <int R, class T, int N, class M>
void execute_plan_into(const char* api, const CollectiveSchedule& plan, const DistributedArray<T, N, M>& a,
                       bool reduction, ReduceOp op, const std::vector<Shard<T, R, M>>& out, bool fresh,
                       const MoveEngine* engine) {
  (void)api;
  using Exec = typename M::execution_space;
  const Exec& space = default_instance<Exec>();
  detail::fence_writers_of<M>();  // kernels that wrote the operand may still run
  const std::vector<const T*>& operand = operand_blocks(plan, a);
  // Blocks no piece writes are zeroed: fill_kernel, not Kokkos::deep_copy (Kokkos 4's fences there build their names
  // on the heap). A fresh block is zero already, and most plans have none (any_zero_fill saves the scan).
  if (!fresh && plan.any_zero_fill) {
    bool filled = false;
    for (std::size_t t = 0; t < plan.targets.size(); ++t)
      if (plan.targets[t].zero_fill) {
        fill_kernel(space, out[t].data.data(), static_cast<int64_t>(out[t].data.size()), T{});
        filled = true;
      }
    if (filled) detail::fence(space);  // MPI may write the blocks next
  }

  if (reduction) {
    if (reduce_in_result_blocks<T, R, M>(space, plan, operand, op, out)) return;
    const Kokkos::View<T*, M> slots = reduce_slots<T, M>(space, plan, operand, op);
    for (const Copy& c : plan.copies) {
      const T* src = slots.data() + plan.slots[static_cast<std::size_t>(c.source)].offset;
      const auto& dst = out[c.target];
      copy_region<T, M>(space, src, c.src_shape, c.src_start, dst.data.data(), plan.targets[c.target].out_shape,
                        c.dst_start, c.extent);
    }
    detail::fence(space);
    return;
  }
  static thread_local std::vector<T*> dst;
  dst.resize(out.size());
  for (std::size_t k = 0; k < out.size(); ++k) dst[k] = out[k].data.data();
  engine->run<T, M>(operand, dst);
}

// The result of the plan on operand a (rank R may differ from N: all_gather stacked), in fresh blocks.
template <int R, class T, int N, class M>
DistributedArray<T, R, M> execute_plan(const char* api, const CollectiveSchedule& plan,
                                       const DistributedArray<T, N, M>& a, bool reduction, ReduceOp op,
                                       const MoveEngine* engine) {
  using Exec = typename M::execution_space;
  // "darray::<api>", rebuilt only when the api changes (a string literal per collective): no allocation per call
  // once warm, and no string copy per call in a loop of one collective.
  static thread_local std::string label;
  static thread_local const char* labelled = nullptr;
  if (api != labelled) {
    label.assign("darray::").append(api);
    labelled = api;
  }
  using Pool = ShardListPool<Shard<T, R, M>>;
  // The blocks of the last result of this sharding and shape where the pool keeps them (a loop of one call): laid
  // out as this result already.
  ShardList<Shard<T, R, M>> list;
  const bool laid_out = Pool::take_laid_out(plan.out_sharding, plan.out_shape, list);
  if (!laid_out)
    list = Pool::template take_with_views<T, R>(
        label, plan.targets.size(), [&](std::size_t k) -> const Shape& { return plan.targets[k].out_shape; }, false);
  std::vector<Shard<T, R, M>>& out = list.shards;
  if (!laid_out) {
    list.shape = plan.out_shape;
    for (std::size_t k = 0; k < out.size(); ++k) {
      const Target& t = plan.targets[k];
      Shard<T, R, M>& s = out[k];
      s.device = t.device;
      assign_index(s.index, t.out_index);
      s.replica_id = t.replica_id;
    }
  }
  if (plan.any_zero_fill)  // the blocks no piece writes, a kept list's included
    for (std::size_t k = 0; k < out.size(); ++k)
      if (plan.targets[k].zero_fill)
        fill_kernel(default_instance<Exec>(), out[k].data.data(), static_cast<int64_t>(out[k].data.size()), T{});
  execute_plan_into<R>(api, plan, a, reduction, op, out, /*fresh=*/true, engine);
  return detail::adopt_shards<T, R, M>(std::move(list.shape), adopt_sharding(list, plan.out_sharding), std::move(out));
}

// The same into `out`, an array already sharded as the result (a previous call's result): no allocation.
template <int R, class T, int N, class M>
void execute_plan(const char* api, const CollectiveSchedule& plan, const DistributedArray<T, N, M>& a, bool reduction,
                  ReduceOp op, DistributedArray<T, R, M>& out, const MoveEngine* engine) {
  check_kept_output(api, plan, out);
  if (shares_a_block(out.addressable_shards(), a.addressable_shards())) {
    // psum(a, axis, a), ppermute(a, axis, perm, a): the result goes to fresh blocks first, so every operand block
    // is read before a block of `out` is written.
    const auto fresh = execute_plan<R>(api, plan, a, reduction, op, engine);
    copy_blocks(default_instance<typename M::execution_space>(), out.addressable_shards(), fresh.addressable_shards());
    return;
  }
  // The shards' views share their data: writing through them writes `out`.
  execute_plan_into<R>(api, plan, a, reduction, op, out.addressable_shards(), /*fresh=*/false, engine);
}

}  // namespace detail
}  // namespace darray
