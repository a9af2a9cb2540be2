// Runs a CollectivePlan on an operand: allocates the result blocks, reduces the slots (local combine, then one
// allreduce per process component) or exchanges the pieces (one Transport exchange per component), and copies
// every region into place with kernels, so device memory never passes through the host unless MPI needs it to.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "darray/array/detail/view.hpp"
#include "darray/array/distributed_array.hpp"
#include "darray/collectives/detail/element_ops.hpp"
#include "darray/collectives/detail/nccl_reduce.hpp"
#include "darray/collectives/detail/plan.hpp"
#include "darray/collectives/detail/transport_choice.hpp"
#include "darray/comm/chunked_collectives.hpp"
#include "darray/comm/limits.hpp"
#include "darray/comm/mpi_transport.hpp"
#include "darray/redistribute/detail/box_kernels.hpp"

namespace darray {
namespace detail {
namespace coll {

template <class T>
using ShardPointers = std::unordered_map<int64_t, const T*>;

// Copies the region (src_start, extent) of a row-major src_shape buffer to dst_start of a row-major dst_shape
// buffer, both in M: memcpy runs on the host, a kernel on `space` otherwise (not fenced).
template <class T, class M, class Exec>
void copy_region(const Exec& space, const T* src, const Shape& src_shape, const Shape& src_start, T* dst,
                 const Shape& dst_shape, const Shape& dst_start, const Shape& extent) {
  // In the destination's coordinates the source buffer sits at dst_start - src_start.
  Index src_box(extent.size()), dst_box(extent.size()), region(extent.size());
  for (std::size_t d = 0; d < extent.size(); ++d) {
    const int64_t shift = dst_start[d] - src_start[d];
    src_box[d] = Slice{shift, shift + src_shape[d]};
    dst_box[d] = Slice{0, dst_shape[d]};
    region[d] = Slice{dst_start[d], dst_start[d] + extent[d]};
  }
  copy_box_any<T, M>(src, src_box, dst, dst_box, region, space);
}

// Runs `step` on host memory: directly when the host can address M, else on mirrors copied in and back.
template <class T, class M, class Step>
void on_host(Kokkos::View<T*, M> data, bool copy_back, Step&& step) {
  if constexpr (host_accessible_v<M>) {
    (void)copy_back;
    step(data.data());
  } else {
    auto host = Kokkos::create_mirror_view(data);
    Kokkos::deep_copy(host, data);
    step(host.data());
    if (copy_back) Kokkos::deep_copy(data, host);
  }
}

// Local combine of each slot, then one allreduce over the component. Collective over all processes when the plan
// has colors (the component communicator is created on first use), over the component afterwards.
template <class T, class M, class Exec>
Kokkos::View<T*, M> reduce_slots(const Exec& space, const CollectivePlan& plan, const ShardPointers<T>& shard,
                                 ReduceOp op) {
  Kokkos::View<T*, M> slots(Kokkos::view_alloc("darray::collective slots", Kokkos::WithoutInitializing),
                            static_cast<std::size_t>(plan.slot_elements));
  for (const Slot& slot : plan.slots) {
    T* dst = slots.data() + slot.offset;
    const int64_t n = volume(slot.shape);
    if (slot.members.empty()) {
      fill_kernel(space, dst, n, reduce_identity<T>(op));
      continue;
    }
    copy_kernel(space, dst, shard.at(slot.members[0]), n);
    for (std::size_t k = 1; k < slot.members.size(); ++k) combine_kernel(space, op, dst, shard.at(slot.members[k]), n);
  }
  space.fence();  // MPI and NCCL read what the kernels wrote
  if (plan.colors.empty()) return slots;
  Transport& t = reduce_transport<T, M>().group(plan.colors);
  if (plan.component_size == 1) return slots;
#if defined(DARRAY_HAS_NCCL)
  if constexpr (nccl_reducible<T>()) {
    if (t.backend() == Backend::nccl) {
      nccl_allreduce(dynamic_cast<NcclTransport&>(t), slots.data(), plan.slot_elements, op);
      return slots;
    }
  }
#endif
  const MPI_Comm comm = dynamic_cast<MpiTransport&>(t).comm();
  const std::size_t count = static_cast<std::size_t>(plan.slot_elements) * ReduceScalar<T>::lanes;
  on_host(slots, true,
          [&](T* data) { allreduce(comm, MPI_IN_PLACE, data, count, mpi_reduce_datatype<T>(), mpi_reduce_op<T>(op)); });
  return slots;
}

// Packs the plan's sends, runs one exchange on the component's transport, returns the received pieces. Collective
// like reduce_slots.
template <class T, class M, class Exec>
Kokkos::View<T*, M> exchange_pieces(const char* api, const Exec& space, const CollectivePlan& plan,
                                    const ShardPointers<T>& shard) {
  Kokkos::View<T*, M> recv(Kokkos::view_alloc("darray::collective recv", Kokkos::WithoutInitializing),
                           static_cast<std::size_t>(plan.recv_elements));
  if (plan.colors.empty()) return recv;
  Transport& t = exchange_transport<M>().group(plan.colors);
  if (plan.component_size == 1) return recv;
  Kokkos::View<T*, M> send(Kokkos::view_alloc("darray::collective send", Kokkos::WithoutInitializing),
                           static_cast<std::size_t>(plan.send_elements));
  for (const Piece& p : plan.sends)
    copy_region<T, M>(space, shard.at(p.key_device), p.src_shape, p.src_start, send.data() + p.offset, p.extent,
                      Shape(p.extent.size(), 0), p.extent);
  space.fence();  // the transport reads what the kernels wrote
  ExchangePlan xplan;
  auto add = [&](std::vector<PeerBytes>& list, const std::vector<Piece>& pieces) {
    for (std::size_t i = 0; i < pieces.size();) {
      std::size_t j = i;
      int64_t elements = 0;
      for (; j < pieces.size() && pieces[j].process == pieces[i].process; ++j) elements += pieces[j].elements();
      list.push_back(PeerBytes{plan.group_ranks[static_cast<std::size_t>(pieces[i].process)],
                               byte_count(pieces[i].offset, sizeof(T), api), byte_count(elements, sizeof(T), api)});
      i = j;
    }
  };
  add(xplan.sends, plan.sends);
  add(xplan.recvs, plan.recvs);
  if (t.backend() == Backend::nccl) {
    t.exchange(xplan, reinterpret_cast<const std::byte*>(send.data()), reinterpret_cast<std::byte*>(recv.data()));
  } else {
    on_host(send, false, [&](T* s) {
      on_host(recv, true,
              [&](T* r) { t.exchange(xplan, reinterpret_cast<const std::byte*>(s), reinterpret_cast<std::byte*>(r)); });
    });
  }
  return recv;
}

// The result of the plan on operand a (rank R may differ from N: all_gather stacked). reduction: slots carry
// the data (psum, pmax, pmin, psum_scatter), else pieces do.
template <int R, class T, int N, class M>
DistributedArray<T, R, M> execute_plan(const char* api, const CollectivePlan& plan, const DistributedArray<T, N, M>& a,
                                       bool reduction, ReduceOp op) {
  using Exec = typename M::execution_space;
  const Exec space;
  Kokkos::fence();  // kernels that wrote the operand may still run
  ShardPointers<T> shard;
  for (const auto& s : a.addressable_shards()) shard.emplace(s.device.id, s.data.data());

  std::vector<Shard<T, R, M>> out;
  out.reserve(plan.targets.size());
  for (const Target& t : plan.targets)
    out.push_back(Shard<T, R, M>{t.device, t.out_index, plan.out_sharding.replica_id(t.device),
                                 allocate_view<T, R, M>(std::string("darray::") + api, box_shape(t.out_index),
                                                        /*initialize=*/t.zero_fill)});

  Kokkos::View<T*, M> slots, received;
  if (reduction)
    slots = reduce_slots<T, M>(space, plan, shard, op);
  else
    received = exchange_pieces<T, M>(api, space, plan, shard);

  for (const Copy& c : plan.copies) {
    const T* src = c.from == CopySource::shard ? shard.at(c.source)
                   : c.from == CopySource::received
                       ? received.data() + plan.recvs[static_cast<std::size_t>(c.source)].offset
                       : slots.data() + plan.slots[static_cast<std::size_t>(c.source)].offset;
    auto& dst = out[c.target];
    copy_region<T, M>(space, src, c.src_shape, c.src_start, dst.data.data(), box_shape(dst.index), c.dst_start,
                      c.extent);
  }
  space.fence();
  return DistributedArray<T, R, M>(AdoptShards{}, plan.out_shape, plan.out_sharding, std::move(out));
}

}  // namespace coll
}  // namespace detail
}  // namespace darray
