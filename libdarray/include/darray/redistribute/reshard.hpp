// reshard(a, new_sharding): moves a DistributedArray to any other sharding of the same global shape, through a
// ReshardPlan that is built once and cached. On host memory every remote piece travels straight between shards (as
// bytes when contiguous, else as an MPI subarray datatype: nothing is staged by us), and same-process pieces are
// copied while the messages fly. Device memory takes the staged path: pack kernels, the Transport (NCCL), unpack.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstddef>
#include <memory>
#include <unordered_map>
#include <vector>

#include "darray/array/detail/box_copy.hpp"
#include "darray/array/detail/stream_copy.hpp"
#include "darray/array/detail/view.hpp"
#include "darray/array/distributed_array.hpp"
#include "darray/comm/check.hpp"
#include "darray/comm/group.hpp"
#include "darray/comm/limits.hpp"
#include "darray/comm/world_transport.hpp"
#include "darray/redistribute/detail/box_kernels.hpp"
#include "darray/redistribute/detail/messages.hpp"
#include "darray/redistribute/plan.hpp"
#include "darray/runtime/environment.hpp"

namespace darray {

struct ReshardOptions {
  // Pack every remote piece into one buffer per peer and run the exchange through the Transport (NCCL in GPU
  // builds). Device memory always takes this path; on the host the direct per-piece path is faster, and this
  // flag lets tests exercise the staged path on the host too.
  bool staged = false;
};

namespace detail {

inline constexpr int reshard_tag = 0x5244;

// Colors of the plan's mesh-axis groups extended to every process of the job (processes outside the mesh get a
// group of their own), or empty when the exchange runs on the whole job.
inline std::vector<int> job_colors(const ReshardPlan& plan, int process_count) {
  std::vector<int> colors = plan.group_colors();
  if (colors.empty()) return colors;
  int next = 0;
  for (int c : colors) next = std::max(next, c + 1);
  colors.resize(static_cast<std::size_t>(process_count), -1);
  for (int& c : colors)
    if (c < 0) c = next++;
  return colors;
}

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

template <class T, int N, class M>
std::vector<Shard<T, N, M>> allocate_shards(const NamedSharding& sharding, const Shape& shape) {
  std::vector<Shard<T, N, M>> shards;
  for (const Device& d : local_devices()) {
    if (!sharding.mesh().contains(d)) continue;
    Index box = sharding.index(shape, d);
    auto view = allocate_view<T, N, M>("darray::reshard", box_shape(box), false);
    shards.push_back(Shard<T, N, M>{d, std::move(box), sharding.replica_id(d), std::move(view)});
  }
  return shards;
}

template <class S>
std::unordered_map<int, const S*> shards_by_device(const std::vector<S>& shards) {
  std::unordered_map<int, const S*> m;
  for (const S& s : shards) m.emplace(s.device.id, &s);
  return m;
}

// Bytes of staging buffers the last execute() on this process allocated (pack and unpack buffers, not the
// output): the benchmark reports it against the local shard bytes.
inline std::size_t& last_staging_bytes() {
  static std::size_t bytes = 0;
  return bytes;
}

// The direct path: host-reachable memory, MPI point-to-point straight between shards. Every remote piece is cut by
// split_for_messages (the same rule on both sides, so messages match); a part contiguous in its shard travels as
// bytes, any other as an MPI subarray datatype, so Open MPI packs it straight into its transport buffers and
// nothing is staged by us. Same-process pieces are copied while the messages are in flight.
template <class T, int N, class M>
void execute_direct(const ReshardPlan& plan, const DistributedArray<T, N, M>& in, std::vector<Shard<T, N, M>>& out) {
  const auto src_of = shards_by_device(in.addressable_shards());
  const auto dst_of = shards_by_device(out);
  const std::vector<int> colors = job_colors(plan, process_count());
  MPI_Comm comm = world_comm();
  const ProcessGroup* group = nullptr;
  if (!colors.empty()) {
    group = &process_group(colors);
    comm = group->comm();
  }
  auto peer_rank = [&](int process) { return group != nullptr ? group->group_rank_of(process) : process; };
  const std::size_t max_bytes = std::max(max_message_bytes(), sizeof(T));
  last_staging_bytes() = 0;

  MpiTypes types;
  const MPI_Datatype element = types.element(sizeof(T));
  std::vector<MPI_Request> requests;
  // Posts one message per part; `buffer` is the shard's data, `shard_box` its box.
  auto post = [&](bool receive, T* buffer, const Index& shard_box, const Index& part, int peer) {
    MPI_Request r = MPI_REQUEST_NULL;
    const auto off = contiguous_offset(part, shard_box);
    void* where = off ? static_cast<void*>(buffer + *off) : static_cast<void*>(buffer);
    int count = 0;
    MPI_Datatype type = element;
    if (off) {
      count = to_mpi_count(static_cast<std::size_t>(volume(part)), "reshard");
    } else {
      count = 1;
      type = types.subarray(shard_box, part, element);
    }
    if (receive)
      DARRAY_MPI_CHECK(MPI_Irecv(where, count, type, peer, reshard_tag, comm, &r));
    else
      DARRAY_MPI_CHECK(MPI_Isend(where, count, type, peer, reshard_tag, comm, &r));
    requests.push_back(r);
  };
  // Receives first, so messages land in place rather than in MPI's unexpected queue.
  for (const PeerPieces& peer : plan.recvs())
    for (const PlanPiece& piece : peer.pieces) {
      const auto* dst = dst_of.at(piece.dst.id);
      split_for_messages(piece.box, sizeof(T), max_bytes, [&](const Index& part) {
        post(true, const_cast<T*>(dst->data.data()), dst->index, part, peer_rank(peer.process));
      });
    }
  for (const PeerPieces& peer : plan.sends())
    for (const PlanPiece& piece : peer.pieces) {
      const auto* src = src_of.at(piece.src.id);
      split_for_messages(piece.box, sizeof(T), max_bytes, [&](const Index& part) {
        post(false, const_cast<T*>(src->data.data()), src->index, part, peer_rank(peer.process));
      });
    }
  // Large local phases stream their stores: the output is not read again before the reshard returns, and skipping
  // the read-for-ownership of each destination line is worth about a third of the copy time.
  std::size_t local_bytes = 0;
  for (const PlanPiece& piece : plan.local_pieces()) local_bytes += static_cast<std::size_t>(piece.elements()) * sizeof(T);
  const bool streaming = local_bytes >= streaming_min_total_bytes;
  for (const PlanPiece& piece : plan.local_pieces()) {
    const auto* src = src_of.at(piece.src.id);
    const auto* dst = dst_of.at(piece.dst.id);
    copy_box(src->data.data(), src->index, const_cast<T*>(dst->data.data()), dst->index, piece.box, streaming);
  }
  if (streaming) stream_fence();
  wait_all_checked(requests, "reshard");
}

// The staged path: one packed buffer per peer in the array's memory space, exchanged through the Transport
// (NCCL on device memory; MPI through host mirrors otherwise), unpacked by kernels.
template <class T, int N, class M>
void execute_staged(const ReshardPlan& plan, const DistributedArray<T, N, M>& in, std::vector<Shard<T, N, M>>& out) {
  using Exec = typename Kokkos::DefaultExecutionSpace;
  const auto src_of = shards_by_device(in.addressable_shards());
  const auto dst_of = shards_by_device(out);
  Exec space;
  // NCCL moves device memory only; host-reachable arrays (tests of this path, CPU builds) go through MPI.
  Transport* transport_ptr = &transport(host_accessible_v<M> ? Backend::mpi : parse_backend("darray::backend()", backend()));
  const std::vector<int> colors = job_colors(plan, process_count());
  std::vector<int> group_ranks;
  if (!colors.empty()) {
    transport_ptr = &transport_ptr->group(colors);
    group_ranks.assign(colors.size(), -1);
    for (std::size_t p = 0; p < colors.size(); ++p) group_ranks[p] = group_rank(colors, static_cast<int>(p));
  }
  auto peer_rank = [&](int process) { return colors.empty() ? process : group_ranks[static_cast<std::size_t>(process)]; };
  constexpr std::size_t eb = sizeof(T);
  ExchangePlan xplan;
  std::size_t send_elems = 0, recv_elems = 0;
  for (const PeerPieces& p : plan.sends()) {
    xplan.sends.push_back(PeerBytes{peer_rank(p.process), send_elems * eb, static_cast<std::size_t>(p.elements) * eb});
    send_elems += static_cast<std::size_t>(p.elements);
  }
  for (const PeerPieces& p : plan.recvs()) {
    xplan.recvs.push_back(PeerBytes{peer_rank(p.process), recv_elems * eb, static_cast<std::size_t>(p.elements) * eb});
    recv_elems += static_cast<std::size_t>(p.elements);
  }
  Kokkos::View<T*, M> send_buf(Kokkos::view_alloc("darray::reshard send", Kokkos::WithoutInitializing), send_elems);
  Kokkos::View<T*, M> recv_buf(Kokkos::view_alloc("darray::reshard recv", Kokkos::WithoutInitializing), recv_elems);
  last_staging_bytes() = (send_elems + recv_elems) * eb;
  std::size_t at = 0;
  for (const PeerPieces& p : plan.sends())
    for (const PlanPiece& piece : p.pieces) {
      const auto* src = src_of.at(piece.src.id);
      copy_box_kernel(space, src->data.data(), src->index, send_buf.data() + at, piece.box, piece.box);
      at += static_cast<std::size_t>(piece.elements());
    }
  for (const PlanPiece& piece : plan.local_pieces()) {
    const auto* src = src_of.at(piece.src.id);
    const auto* dst = dst_of.at(piece.dst.id);
    copy_box_kernel(space, src->data.data(), src->index, const_cast<T*>(dst->data.data()), dst->index, piece.box);
  }
  space.fence();  // the transport reads what the kernels wrote
  Transport& t = *transport_ptr;
  if (t.backend() == Backend::nccl || host_accessible_v<M>) {
    t.exchange(xplan, reinterpret_cast<const std::byte*>(send_buf.data()), reinterpret_cast<std::byte*>(recv_buf.data()));
  } else {
    auto send_host = Kokkos::create_mirror_view(send_buf);
    auto recv_host = Kokkos::create_mirror_view(recv_buf);
    Kokkos::deep_copy(send_host, send_buf);
    t.exchange(xplan, reinterpret_cast<const std::byte*>(send_host.data()), reinterpret_cast<std::byte*>(recv_host.data()));
    Kokkos::deep_copy(recv_buf, recv_host);
  }
  at = 0;
  for (const PeerPieces& p : plan.recvs())
    for (const PlanPiece& piece : p.pieces) {
      const auto* dst = dst_of.at(piece.dst.id);
      copy_box_kernel(space, recv_buf.data() + at, piece.box, const_cast<T*>(dst->data.data()), dst->index, piece.box);
      at += static_cast<std::size_t>(piece.elements());
    }
  space.fence();
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
struct ReshardPlanCache {
  std::unordered_map<ReshardPlanKey, std::shared_ptr<const ReshardPlan>, ReshardPlanKeyHash> plans;
  bool cleanup_registered = false;
  std::size_t hits = 0, misses = 0;
};
inline ReshardPlanCache& reshard_plan_cache() {
  static ReshardPlanCache c;
  return c;
}
inline constexpr std::size_t reshard_plan_cache_capacity = 256;

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
void execute_into(const ReshardPlan& plan, const DistributedArray<T, N, M>& in, std::vector<Shard<T, N, M>>& out,
                  const ReshardOptions& options) {
  check_plan_input(plan, in);
  if (options.staged || !host_accessible_v<M>)
    execute_staged(plan, in, out);
  else
    execute_direct(plan, in, out);
}
}  // namespace detail

// Executes a plan on an array sharded as plan.src(); returns the array sharded as plan.dst(). Collective over the
// processes of the job (processes without devices in the mesh take part with nothing to move).
template <class T, int N, class M>
DistributedArray<T, N, M> execute(const ReshardPlan& plan, const DistributedArray<T, N, M>& in,
                                  const ReshardOptions& options = {}) {
  detail::check_reshard_consistent<T>(in.sharding(), plan.dst(), in.shape());
  auto out = detail::allocate_shards<T, N, M>(plan.dst(), plan.shape());
  detail::execute_into(plan, in, out, options);
  return DistributedArray<T, N, M>(detail::AdoptShards{}, plan.shape(), plan.dst(), std::move(out));
}

// Executes a plan into `out`, an array already sharded as plan.dst() (e.g. from a previous execution): no
// allocation, so a time loop or an FFT that reshards every step reuses its buffers. `out` must not share shards
// with `in`.
template <class T, int N, class M>
void execute(const ReshardPlan& plan, const DistributedArray<T, N, M>& in, DistributedArray<T, N, M>& out,
             const ReshardOptions& options = {}) {
  DARRAY_THROW_IF(out.shape() != plan.shape() || out.sharding() != plan.dst(), InvalidArgument, "ReshardPlan::execute",
                  "output array of shape " << shape_to_string(out.shape()) << " sharded as " << out.sharding()
                                           << "; expected shape " << shape_to_string(plan.shape()) << " sharded as "
                                           << plan.dst());
  detail::check_reshard_consistent<T>(in.sharding(), plan.dst(), in.shape());
  auto shards = out.addressable_shards();  // views share their data: writing them writes `out`
  detail::execute_into(plan, in, shards, options);
}

// The cached plan for moving arrays of `shape` and element type T from src to dst on this process.
template <class T>
std::shared_ptr<const ReshardPlan> reshard_plan(const NamedSharding& src, const NamedSharding& dst, const Shape& shape) {
  auto& cache = detail::reshard_plan_cache();
  detail::ReshardPlanKey key{src, dst, shape, sizeof(T)};
  auto it = cache.plans.find(key);
  if (it != cache.plans.end()) {
    ++cache.hits;
    return it->second;
  }
  ++cache.misses;
  auto plan = std::make_shared<const ReshardPlan>(src, dst, shape, sizeof(T), process_index());
  if (cache.plans.size() >= detail::reshard_plan_cache_capacity) cache.plans.clear();
  if (!cache.cleanup_registered) {
    detail::at_finalize([] { detail::reshard_plan_cache() = detail::ReshardPlanCache{}; });
    cache.cleanup_registered = true;
  }
  cache.plans.emplace(std::move(key), plan);
  return plan;
}

// Any sharding to any sharding of the same global shape over the same devices. Collective.
template <class T, int N, class M>
DistributedArray<T, N, M> reshard(const DistributedArray<T, N, M>& a, const NamedSharding& new_sharding,
                                  const ReshardOptions& options = {}) {
  detail::check_reshard_consistent<T>(a.sharding(), new_sharding, a.shape());
  const auto plan = reshard_plan<T>(a.sharding(), new_sharding, a.shape());
  auto out = detail::allocate_shards<T, N, M>(plan->dst(), plan->shape());
  detail::execute_into(*plan, a, out, options);
  return DistributedArray<T, N, M>(detail::AdoptShards{}, plan->shape(), plan->dst(), std::move(out));
}

}  // namespace darray
