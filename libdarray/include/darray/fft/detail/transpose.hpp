// The transposes of a distributed FFT: a ReshardPlan's pieces executed between buffers the FFT plan owns, whose
// local axis order may differ from row-major (the dim-0 stage is stored as (n1, n0, n2), as FFTW-MPI does, so its
// FFTs stride by one pencil instead of a whole plane). On the mesh-axis group's communicator when there is one.
// Host memory: every remote piece travels straight between the blocks as an MPI datatype built once per plan (a
// strided walk of the piece in global row-major order on both sides, whatever each side's axis order), so MPI
// packs and unpacks it in its own transport copies and nothing is staged by us. Device memory: one packed message
// per peer through host staging buffers allocated once.
#pragma once

#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

#include "darray/array/detail/view.hpp"
#include "darray/comm/detail/requests.hpp"
#include "darray/comm/group.hpp"
#include "darray/comm/limits.hpp"
#include "darray/core/index.hpp"
#include "darray/redistribute/detail/messages.hpp"
#include "darray/redistribute/plan.hpp"
#include "darray/redistribute/reshard.hpp"
#include "darray/runtime/environment.hpp"

namespace darray {
namespace fft {
namespace detail {

using AxisOrder = std::array<int, 3>;  // global dims from outermost to innermost in memory
inline constexpr AxisOrder row_major_order{0, 1, 2};

// Element strides of each global dim for a block of extents `box` stored in `order`.
inline std::array<int64_t, 3> layout_strides(const Index& box, const AxisOrder& order) {
  std::array<int64_t, 3> strides{};
  int64_t s = 1;
  for (int k = 2; k >= 0; --k) {
    const auto d = static_cast<std::size_t>(order[static_cast<std::size_t>(k)]);
    strides[d] = s;
    s *= box[d].size();
  }
  return strides;
}

// The box's extents in memory order.
inline Shape memory_extents(const Index& box, const AxisOrder& order) {
  return {box[static_cast<std::size_t>(order[0])].size(), box[static_cast<std::size_t>(order[1])].size(),
          box[static_cast<std::size_t>(order[2])].size()};
}

// One strided 3-D copy: `extent` elements per global dim, from src (strides per global dim) to dst.
struct CopyGeometry {
  int64_t extent[3];
  int64_t src_stride[3];
  int64_t dst_stride[3];
  int loop[3];  // global dims from outermost to innermost loop: the destination's memory order
};

// dst[region] = src[region]; both buffers hold a box of the global array in their own axis order; a contiguous
// message holds exactly `region` in row-major order (box == region, order row-major).
inline CopyGeometry copy_geometry(const Index& src_box, const AxisOrder& src_order, const Index& dst_box,
                                  const AxisOrder& dst_order, const Index& region, int64_t& src_offset,
                                  int64_t& dst_offset) {
  CopyGeometry g{};
  const auto ss = layout_strides(src_box, src_order), ds = layout_strides(dst_box, dst_order);
  src_offset = dst_offset = 0;
  for (std::size_t d = 0; d < 3; ++d) {
    g.extent[d] = region[d].size();
    g.src_stride[d] = ss[d];
    g.dst_stride[d] = ds[d];
    src_offset += (region[d].start - src_box[d].start) * ss[d];
    dst_offset += (region[d].start - dst_box[d].start) * ds[d];
    g.loop[d] = dst_order[d];
  }
  return g;
}

// Host: loops in the destination's memory order, memcpy runs where both sides are contiguous along the inner dim.
// Elsewhere: one kernel work item per element (coalesced writes on GPUs). Not fenced.
template <class T, class M>
void strided_copy(const T* src, T* dst, const CopyGeometry& g) {
  const int64_t n = g.extent[0] * g.extent[1] * g.extent[2];
  if (n == 0) return;
  if constexpr (darray::detail::host_accessible_v<M>) {
    const int a = g.loop[0], b = g.loop[1], c = g.loop[2];
    const bool runs = g.src_stride[c] == 1 && g.dst_stride[c] == 1;
    for (int64_t i = 0; i < g.extent[a]; ++i)
      for (int64_t j = 0; j < g.extent[b]; ++j) {
        const T* s = src + i * g.src_stride[a] + j * g.src_stride[b];
        T* t = dst + i * g.dst_stride[a] + j * g.dst_stride[b];
        if (runs) {
          std::memcpy(static_cast<void*>(t), static_cast<const void*>(s),
                      static_cast<std::size_t>(g.extent[c]) * sizeof(T));
        } else {
          for (int64_t k = 0; k < g.extent[c]; ++k) t[k * g.dst_stride[c]] = s[k * g.src_stride[c]];
        }
      }
  } else {
    using Exec = typename M::execution_space;
    Kokkos::parallel_for(
        "darray::fft::transpose_copy", Kokkos::RangePolicy<Exec, Kokkos::IndexType<int64_t>>(0, n),
        KOKKOS_LAMBDA(const int64_t e) {
          const int64_t k = e % g.extent[g.loop[2]], rest = e / g.extent[g.loop[2]];
          const int64_t j = rest % g.extent[g.loop[1]], i = rest / g.extent[g.loop[1]];
          dst[i * g.dst_stride[g.loop[0]] + j * g.dst_stride[g.loop[1]] + k * g.dst_stride[g.loop[2]]] =
              src[i * g.src_stride[g.loop[0]] + j * g.src_stride[g.loop[1]] + k * g.src_stride[g.loop[2]]];
        });
  }
}

// A set of per-device blocks: what a transpose reads or writes. ptrs follow the local devices of the mesh in
// local-device order (the order of a DistributedArray's addressable shards).
template <class T>
struct Blocks {
  std::vector<T*> ptrs;
  AxisOrder order = row_major_order;
};

// Send and receive buffers, shared by all transposes of one FFT plan (they run one at a time); grown on demand.
template <class T, class M>
struct Staging {
  Kokkos::View<T*, M> send, recv;
  typename Kokkos::View<T*, M>::HostMirror send_host, recv_host;  // the same views when the host reaches M

  void reserve(int64_t send_elements, int64_t recv_elements) {
    if (static_cast<std::size_t>(send_elements) > send.extent(0)) {
      send = Kokkos::View<T*, M>();  // free before allocating the larger one
      send = Kokkos::View<T*, M>(Kokkos::view_alloc("darray::fft send", Kokkos::WithoutInitializing),
                                 static_cast<std::size_t>(send_elements));
      send_host = Kokkos::create_mirror_view(send);
    }
    if (static_cast<std::size_t>(recv_elements) > recv.extent(0)) {
      recv = Kokkos::View<T*, M>();
      recv = Kokkos::View<T*, M>(Kokkos::view_alloc("darray::fft recv", Kokkos::WithoutInitializing),
                                 static_cast<std::size_t>(recv_elements));
      recv_host = Kokkos::create_mirror_view(recv);
    }
  }
};

// Executes one ReshardPlan between Blocks of the plan's source and destination shardings. Collective over the
// processes of the job (those without pieces take part in nothing but the group set-up).
template <class T, class M>
class Transpose {
 public:
  // `staged` picks the packed path on host memory too (device memory always takes it), so tests cover it.
  Transpose(std::shared_ptr<const ReshardPlan> plan, AxisOrder src_order, AxisOrder dst_order, bool staged = false)
      : m_plan(std::move(plan)),
        m_src_order(src_order),
        m_dst_order(dst_order),
        m_staged(staged || !darray::detail::host_accessible_v<M>) {
    const ReshardPlan& p = *m_plan;
    int slot = 0;
    for (const Device& d : local_devices())
      if (p.src().mesh().contains(d)) {
        m_slot.emplace(d.id, slot++);
        m_src_box.push_back(p.src().index(p.shape(), d));
        m_dst_box.push_back(p.dst().index(p.shape(), d));
      }
    for (const PeerPieces& peer : p.sends()) m_send_elements += peer.elements;
    for (const PeerPieces& peer : p.recvs()) m_recv_elements += peer.elements;
    m_colors = darray::detail::job_colors(p, process_count());
    if (!m_staged) make_messages();
  }

  const AxisOrder& src_order() const { return m_src_order; }
  const AxisOrder& dst_order() const { return m_dst_order; }
  int64_t send_elements() const { return m_send_elements; }
  int64_t recv_elements() const { return m_recv_elements; }

  void run(const std::vector<T*>& src, const std::vector<T*>& dst, Staging<T, M>& staging) const {
    if (m_staged)
      run_staged(src, dst, staging);
    else
      run_direct(src, dst);
  }

 private:
  static constexpr int tag = 0x4646;  // "FF"

  // One MPI message of the host path: `count` of `type` at element `offset` of local block `slot`.
  struct Message {
    int process;
    int slot;
    int64_t offset;
    int count;
    MPI_Datatype type;
  };

  MPI_Comm comm(const ProcessGroup*& group) const {
    group = m_colors.empty() ? nullptr : &process_group(m_colors);
    return group != nullptr ? group->comm() : darray::detail::world_comm();
  }

  // The messages of every remote piece, cut by split_for_messages (the same rule on both sides, so the k-th send
  // to a peer matches its k-th receive): contiguous parts as plain elements, others as a strided datatype.
  void make_messages() {
    const ReshardPlan& p = *m_plan;
    const MPI_Datatype element = m_types.element(sizeof(T));
    const std::size_t max_bytes = std::max(max_message_bytes(), sizeof(T));
    auto add = [&](std::vector<Message>& out, int process, int slot, const Index& box, const AxisOrder& order,
                   const Index& part) {
      const auto strides = layout_strides(box, order);
      int64_t offset = 0;
      std::vector<int64_t> extents, byte_strides;
      for (std::size_t d = 0; d < 3; ++d) {
        offset += (part[d].start - box[d].start) * strides[d];
        if (part[d].size() == 1) continue;  // a unit dim adds nothing to the walk
        extents.push_back(part[d].size());
        byte_strides.push_back(strides[d] * static_cast<int64_t>(sizeof(T)));
      }
      // Contiguous when each walked dim steps over exactly the dims inside it.
      bool contiguous = true;
      int64_t inner = static_cast<int64_t>(sizeof(T));
      for (std::size_t k = extents.size(); k-- > 0;) {
        contiguous = contiguous && byte_strides[k] == inner;
        inner *= extents[k];
      }
      Message m{process, slot, offset, 1, element};
      if (contiguous)
        m.count = darray::detail::to_mpi_count(static_cast<std::size_t>(volume(part)), "fft transpose");
      else
        m.type = m_types.strided(extents, byte_strides, element);
      out.push_back(m);
    };
    for (const PeerPieces& peer : p.recvs())
      for (const PlanPiece& piece : peer.pieces) {
        const int d = m_slot.at(piece.dst.id);
        darray::detail::split_for_messages(piece.box, sizeof(T), max_bytes, [&](const Index& part) {
          add(m_recv_messages, peer.process, d, m_dst_box[static_cast<std::size_t>(d)], m_dst_order, part);
        });
      }
    for (const PeerPieces& peer : p.sends())
      for (const PlanPiece& piece : peer.pieces) {
        const int s = m_slot.at(piece.src.id);
        darray::detail::split_for_messages(piece.box, sizeof(T), max_bytes, [&](const Index& part) {
          add(m_send_messages, peer.process, s, m_src_box[static_cast<std::size_t>(s)], m_src_order, part);
        });
      }
  }

  // Host memory: receives posted into the destination blocks, sends straight from the source blocks, same-process
  // pieces copied while the messages fly.
  void run_direct(const std::vector<T*>& src, const std::vector<T*>& dst) const {
    const ProcessGroup* group = nullptr;
    MPI_Comm c = comm(group);
    auto peer_rank = [&](int process) { return group != nullptr ? group->group_rank_of(process) : process; };
    std::vector<MPI_Request> requests;
    requests.reserve(m_recv_messages.size() + m_send_messages.size());
    for (const Message& m : m_recv_messages) {
      MPI_Request r = MPI_REQUEST_NULL;
      DARRAY_MPI_CHECK(MPI_Irecv(dst[static_cast<std::size_t>(m.slot)] + m.offset, m.count, m.type,
                                 peer_rank(m.process), tag, c, &r));
      requests.push_back(r);
    }
    for (const Message& m : m_send_messages) {
      MPI_Request r = MPI_REQUEST_NULL;
      DARRAY_MPI_CHECK(MPI_Isend(src[static_cast<std::size_t>(m.slot)] + m.offset, m.count, m.type,
                                 peer_rank(m.process), tag, c, &r));
      requests.push_back(r);
    }
    copy_local_pieces(src, dst);
    darray::detail::wait_all_checked(requests, "fft transpose");
  }

  void copy_local_pieces(const std::vector<T*>& src, const std::vector<T*>& dst) const {
    for (const PlanPiece& piece : m_plan->local_pieces()) {
      const int s = m_slot.at(piece.src.id), d = m_slot.at(piece.dst.id);
      int64_t so = 0, to = 0;
      const CopyGeometry g = copy_geometry(m_src_box[static_cast<std::size_t>(s)], m_src_order,
                                           m_dst_box[static_cast<std::size_t>(d)], m_dst_order, piece.box, so, to);
      strided_copy<T, M>(src[static_cast<std::size_t>(s)] + so, dst[static_cast<std::size_t>(d)] + to, g);
    }
  }

  // Device memory (and host memory when asked): one packed message per peer; device memory is staged through the
  // host.
  void run_staged(const std::vector<T*>& src, const std::vector<T*>& dst, Staging<T, M>& staging) const {
    const ReshardPlan& p = *m_plan;
    staging.reserve(m_send_elements, m_recv_elements);
    T* const send = staging.send.data();
    T* const recv = staging.recv.data();
    T* const send_host = staging.send_host.data();
    T* const recv_host = staging.recv_host.data();
    using Exec = typename M::execution_space;
    const ProcessGroup* group = nullptr;
    MPI_Comm c = comm(group);
    auto peer_rank = [&](int process) { return group != nullptr ? group->group_rank_of(process) : process; };
    const std::size_t max_chunk = max_message_bytes();
    constexpr const char* api = "fft transpose";
    darray::detail::RequestSet requests;
    std::size_t at = 0;
    for (const PeerPieces& peer : p.recvs()) {
      requests.post_recv(c, reinterpret_cast<std::byte*>(recv_host + at), byte_count(peer.elements, sizeof(T), api),
                         peer_rank(peer.process), tag, 0, max_chunk, api);
      at += static_cast<std::size_t>(peer.elements);
    }
    // Pack each peer's pieces back to back in the plan's order (the order the receiver unpacks them in). On the
    // host each message leaves as soon as it is packed; device memory is staged through the host in one copy.
    constexpr bool host = darray::detail::host_accessible_v<M>;
    at = 0;
    for (const PeerPieces& peer : p.sends()) {
      const std::size_t begin = at;
      for (const PlanPiece& piece : peer.pieces) {
        const int s = m_slot.at(piece.src.id);
        int64_t so = 0, to = 0;
        const CopyGeometry g = copy_geometry(m_src_box[s], m_src_order, piece.box, row_major_order, piece.box, so, to);
        strided_copy<T, M>(src[static_cast<std::size_t>(s)] + so, send + at, g);
        at += static_cast<std::size_t>(piece.elements());
      }
      if (host) {
        requests.post_send(c, reinterpret_cast<const std::byte*>(send_host + begin),
                           byte_count(peer.elements, sizeof(T), api), peer_rank(peer.process), tag, 0, max_chunk, api);
      }
    }
    if (!host && at > 0) {
      Exec().fence();
      const auto used = std::make_pair(std::size_t(0), at);
      Kokkos::deep_copy(Kokkos::subview(staging.send_host, used), Kokkos::subview(staging.send, used));
      at = 0;
      for (const PeerPieces& peer : p.sends()) {
        requests.post_send(c, reinterpret_cast<const std::byte*>(send_host + at),
                           byte_count(peer.elements, sizeof(T), api), peer_rank(peer.process), tag, 0, max_chunk, api);
        at += static_cast<std::size_t>(peer.elements);
      }
    }
    copy_local_pieces(src, dst);
    requests.wait_all(api);
    if (m_recv_elements > 0 && !darray::detail::host_accessible_v<M>) {
      const auto used = std::make_pair(std::size_t(0), static_cast<std::size_t>(m_recv_elements));
      Kokkos::deep_copy(Kokkos::subview(staging.recv, used), Kokkos::subview(staging.recv_host, used));
    }
    at = 0;
    for (const PeerPieces& peer : p.recvs())
      for (const PlanPiece& piece : peer.pieces) {
        const int d = m_slot.at(piece.dst.id);
        int64_t so = 0, to = 0;
        const CopyGeometry g = copy_geometry(piece.box, row_major_order, m_dst_box[d], m_dst_order, piece.box, so, to);
        strided_copy<T, M>(recv + at, dst[static_cast<std::size_t>(d)] + to, g);
        at += static_cast<std::size_t>(piece.elements());
      }
    Exec().fence();
  }

  std::shared_ptr<const ReshardPlan> m_plan;
  AxisOrder m_src_order, m_dst_order;
  bool m_staged;
  std::unordered_map<int, int> m_slot;  // device id -> position among this process's mesh devices
  std::vector<Index> m_src_box, m_dst_box;
  std::vector<int> m_colors;
  int64_t m_send_elements = 0, m_recv_elements = 0;
  darray::detail::MpiTypes m_types;                       // direct path: the messages' datatypes, freed with the plan
  std::vector<Message> m_recv_messages, m_send_messages;  // direct path, in posting order
};

// A local copy between two layouts of the same sharding (no communication): each device's block, reordered.
template <class T, class M>
void reorder(const std::vector<Index>& boxes, const Blocks<T>& src, const Blocks<T>& dst) {
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    int64_t so = 0, to = 0;
    const CopyGeometry g = copy_geometry(boxes[i], src.order, boxes[i], dst.order, boxes[i], so, to);
    strided_copy<T, M>(src.ptrs[i] + so, dst.ptrs[i] + to, g);
  }
  typename M::execution_space().fence();
}

}  // namespace detail
}  // namespace fft
}  // namespace darray
