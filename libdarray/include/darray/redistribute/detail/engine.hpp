// The exchange engine: every movement of array data between devices (reshard, FFT transposes, halo phases, the
// collectives that move blocks) is a MoveList of pieces (a region of a source buffer -> a region of a destination
// buffer, with the peer process) that a feature builds once from replicated metadata, and one MoveEngine executes:
// - host memory: MPI straight between the buffers, each remote piece as bytes or a strided datatype built once
//   with the plan (Open MPI packs into its own transport buffers); several small pieces to one peer packed into one
//   message instead; same-process pieces copied while the messages fly, with geometries simplified once per engine
//   (in a large phase, the pieces a block sends to several devices of its process row by row across them).
//   Messages carry a fingerprint of the operation and element type as their tag, checked on arrival, so processes
//   that called different operations get an error rather than each other's bytes. Large pieces from a peer on the
//   same node are read by the receiver straight from the sender's blocks where the system allows it (single copies:
//   runtime/detail/single_copy.hpp), instead of passing through MPI's shared-memory fragments (two copies);
// - device memory: pack kernels into one contiguous send buffer (a segment per peer), grouped ncclSend/ncclRecv
//   (NCCL backend) or MPI point-to-point (CUDA-aware MPI on device pointers where the MPI library says it is, else
//   through host mirrors), unpack kernels; same-process pieces as device copies.
// No call makes a collective decision: the method follows from the memory space and the agreed backend, so the
// only MPI traffic is the data itself.
// An engine built with CopyOp::add adds every piece into its destination instead of overwriting it (the halo
// accumulation): received pieces then always land in staging and are added from there, on both paths.
#pragma once

#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "darray/array/detail/block_cache.hpp"
#include "darray/array/detail/strided_copy.hpp"
#include "darray/array/detail/view.hpp"
#include "darray/array/dtype.hpp"
#include "darray/comm/detail/cuda_aware.hpp"
#include "darray/comm/detail/requests.hpp"
#include "darray/comm/group.hpp"
#include "darray/comm/limits.hpp"
#include "darray/comm/world_transport.hpp"
#include "darray/core/error.hpp"
#include "darray/core/index.hpp"
#include "darray/redistribute/detail/messages.hpp"
#include "darray/runtime/detail/deadline.hpp"
#include "darray/runtime/detail/kokkos_compat.hpp"
#include "darray/runtime/detail/single_copy.hpp"
#include "darray/runtime/detail/state.hpp"
#include "darray/runtime/environment.hpp"
#include "darray/sharding/named_sharding.hpp"

namespace darray {
namespace detail {

// Where a piece lies in one of the caller's buffers: buffer index, element offset of the piece's first element and
// the element stride of each of the piece's dims.
struct Region {
  int buffer = 0;
  int64_t offset = 0;
  std::array<int64_t, max_copy_rank> stride{};
};

// A piece: `extent` elements per dim, walked in row-major order of its dims on both sides of a message.
struct Move {
  int rank = 0;
  std::array<int64_t, max_copy_rank> extent{};
  Region src;               // sends and local copies
  std::vector<Region> dst;  // receives and local copies: the first receives the bytes, the others get copies

  int64_t elements() const {
    int64_t n = 1;
    for (int d = 0; d < rank; ++d) n *= extent[static_cast<std::size_t>(d)];
    return n;
  }
};

struct PeerMoves {
  int process = -1;  // process index in the job
  std::vector<Move> moves;
  int64_t elements = 0;
};

// What a feature hands the engine. sends/recvs: one entry per remote peer process; the k-th move to a peer matches
// the peer's k-th move from this process (both sides derive the lists from the same metadata, in the same order).
struct MoveList {
  std::vector<Move> local;
  std::vector<PeerMoves> sends, recvs;
  // Copies between destination buffers made once every piece has landed (src.buffer names a destination buffer):
  // a block that repeats another block of the run, taken from it whole. They overwrite, whatever the engine's op.
  std::vector<Move> after;
  // One color per process of the job when every peer shares this process's mesh-axis group (the exchange then
  // runs on that group's communicator), else empty.
  std::vector<int> colors;
  // What every process's call states alike: a hash of the operation's global arguments (operation_fingerprint).
  // Mixed into every message's tag, so processes that called it with different arguments (another shape or
  // sharding) get an error even where the pieces they exchange have the same extents. 0: none.
  std::uint64_t operation = 0;
};

// MoveList::operation of a movement from `from` to `to` over an array of `shape`, and `extra` arguments (a halo
// phase's widths and boundaries). Content hashes, equal on every process that passes equal arguments; specs are read
// at the array's rank (detail::entries_at_rank: P("x") and P("x", None) place blocks alike).
inline std::uint64_t operation_fingerprint(const NamedSharding& from, const NamedSharding& to, const Shape& shape,
                                           const std::vector<int64_t>& extra = {}) {
  std::size_t h = 0;
  for (const NamedSharding* s : {&from, &to}) {
    hash_combine(h, s->mesh().hash());
    const auto entries = entries_at_rank(s->spec(), shape.size());
    for (const auto& entry : entries) {
      hash_combine(h, entry.size());  // keeps P(("x", "y")) apart from P("x", "y")
      for (const std::string& axis : entry) hash_combine(h, std::hash<std::string>{}(axis));
    }
    hash_combine(h, entries.size());
  }
  hash_combine(h, shape.size());
  for (const int64_t n : shape) hash_combine(h, std::hash<int64_t>{}(n));
  for (const int64_t v : extra) hash_combine(h, std::hash<int64_t>{}(v));
  return static_cast<std::uint64_t>(h);
}

// Region of `piece` (global coordinates) inside a buffer holding `box` with the given element strides per global
// dim (row-major: row_major_region below).
inline Region region_in(int buffer, const Index& box, const Index& piece, const int64_t* strides) {
  Region r;
  r.buffer = buffer;
  for (std::size_t d = 0; d < piece.size(); ++d) {
    r.offset += (piece[d].start - box[d].start) * strides[d];
    r.stride[d] = strides[d];
  }
  return r;
}

inline Region row_major_region(int buffer, const Index& box, const Index& piece) {
  int64_t strides[max_copy_rank];
  row_major_strides_into(box_shape(box), strides);
  return region_in(buffer, box, piece, strides);
}

inline Move make_move(const Index& piece, Region src, Region dst) {
  DARRAY_THROW_IF(piece.size() > static_cast<std::size_t>(max_copy_rank), NotSupported, "exchange",
                  "rank " << piece.size() << " arrays; at most 8 dims");
  Move m;
  m.rank = static_cast<int>(piece.size());
  for (std::size_t d = 0; d < piece.size(); ++d) m.extent[d] = piece[d].size();
  m.src = src;
  m.dst.push_back(dst);
  return m;
}

// A move appended to the entry of `process` (entries kept in the order processes first appear; sort_peers()
// orders them by process).
inline void add_peer_move(std::vector<PeerMoves>& peers, int process, Move move) {
  PeerMoves* p = nullptr;
  for (auto it = peers.rbegin(); it != peers.rend(); ++it)
    if (it->process == process) {
      p = &*it;
      break;
    }
  if (p == nullptr) {
    peers.push_back(PeerMoves{process, {}, 0});
    p = &peers.back();
  }
  p->elements += move.elements();
  p->moves.push_back(std::move(move));
}

// Colors of a set of mesh-axis groups extended to every process of the job (processes outside the mesh get a group
// of their own), or empty when the exchange runs on the whole job.
inline std::vector<int> job_colors(std::vector<int> colors, int process_count) {
  if (colors.empty()) return colors;
  int next = 0;
  for (int c : colors) next = std::max(next, c + 1);
  colors.resize(static_cast<std::size_t>(process_count), -1);
  for (int& c : colors)
    if (c < 0) c = next++;
  return colors;
}

// The copy of a move from a region of one buffer to a region of another.
inline CopyGeometry move_geometry(const Move& m, const Region& from, const Region& to) {
  CopyGeometry g;
  g.rank = m.rank;
  for (int d = 0; d < m.rank; ++d) {
    const auto k = static_cast<std::size_t>(d);
    g.extent[d] = m.extent[k];
    g.src_stride[d] = from.stride[k];
    g.dst_stride[d] = to.stride[k];
  }
  g.src_offset = from.offset;
  g.dst_offset = to.offset;
  return g;
}

// A packed (row-major, contiguous) region at element `at` of a staging buffer.
inline Region packed_region(const Move& m, int64_t at) {
  Region r;
  r.offset = at;
  int64_t s = 1;
  for (int d = m.rank; d-- > 0;) {
    r.stride[static_cast<std::size_t>(d)] = s;
    s *= m.extent[static_cast<std::size_t>(d)];
  }
  return r;
}

// Send and receive staging of the device path; kept by callers that run one engine repeatedly (an FFT plan), grown
// on demand. The host mirrors serve MPI on device memory when MPI cannot read device pointers.
template <class T, class M>
struct EngineBuffers {
  Kokkos::View<T*, M> send, recv;
  typename Kokkos::View<T*, M>::HostMirror send_host, recv_host;

  void reserve(int64_t send_elements, int64_t recv_elements, bool mirrors) {
    grow(send, send_host, send_elements, "darray::exchange send", mirrors);
    grow(recv, recv_host, recv_elements, "darray::exchange recv", mirrors);
  }

 private:
  static void grow(Kokkos::View<T*, M>& v, typename Kokkos::View<T*, M>::HostMirror& host, int64_t n, const char* label,
                   bool mirrors) {
    if (static_cast<std::size_t>(n) > v.extent(0)) {
      v = Kokkos::View<T*, M>();  // back to the cache before taking the larger one
      v = cached_view<Kokkos::View<T*, M>>(label, static_cast<std::size_t>(n));
      host = typename Kokkos::View<T*, M>::HostMirror();
    }
    if (mirrors && host.extent(0) < v.extent(0)) host = host_copy_target(v, "darray::exchange host copy");
  }
};

class MoveEngine {
 public:
  // `api` names the operation in errors ("reshard", "fft transpose", ...); `element_bytes` the element size the
  // datatypes of the host path are built for; `op` whether pieces overwrite their destination or add into it.
  MoveEngine(MoveList list, std::size_t element_bytes, const char* api, CopyOp op = CopyOp::assign)
      : m_list(std::move(list)), m_element_bytes(element_bytes), m_api(api), m_op(op) {
    DARRAY_THROW_IF(element_bytes == 0, InvalidArgument, api, "element size 0; expected a positive size");
    m_colors = job_colors(m_list.colors, process_count());
    // One group holding every process is the job itself: its communicator, with nothing to create (a creation is
    // collective and has no deadline, so a process absent from a first run would hold the others there).
    if (std::all_of(m_colors.begin(), m_colors.end(), [&](int c) { return c == m_colors.front(); })) m_colors.clear();
    for (const PeerMoves& p : m_list.sends) m_send_elements += p.elements;
    for (const PeerMoves& p : m_list.recvs) m_recv_elements += p.elements;
    m_max_message_bytes = std::max(max_message_bytes(), element_bytes);
    int64_t local_bytes = 0;
    for (const Move& m : m_list.local) {
      local_bytes += m.elements() * static_cast<int64_t>(element_bytes);
      for (const Region& d : m.dst)
        m_local_copies.push_back(BufferCopy{m.src.buffer, d.buffer, simplify(move_geometry(m, m.src, d))});
    }
    // Large local phases stream their stores: the destination is not read again before the call returns, and
    // skipping the read-for-ownership of each destination line is worth about a third of the copy time.
    m_streaming = op == CopyOp::assign && static_cast<std::size_t>(local_bytes) >= streaming_min_total_bytes;
    // Host path: the pieces to or from a peer travel as one packed message when they are several and small (the
    // rule depends only on what both sides know alike: the pieces' count and size), one message per piece otherwise.
    int64_t at = 0;
    for (const PeerMoves& p : m_list.sends) {
      if (!coalesced(p)) continue;
      for (const Move& m : p.moves) {
        m_pack_copies.push_back(
            BufferCopy{m.src.buffer, staging, simplify(move_geometry(m, m.src, packed_region(m, at)))});
        at += m.elements();
      }
    }
    m_pack_elements = at;
    at = 0;
    for (const PeerMoves& p : m_list.recvs) {
      const bool packed = staged(p);
      for (const Move& m : p.moves) {
        if (packed) {
          for (const Region& d : m.dst)
            m_unpack_copies.push_back(
                BufferCopy{staging, d.buffer, simplify(move_geometry(m, packed_region(m, at), d))});
          at += m.elements();
          continue;
        }
        for (std::size_t k = 1; k < m.dst.size(); ++k)
          m_fan_out_copies.push_back(
              BufferCopy{m.dst.front().buffer, m.dst[k].buffer, simplify(move_geometry(m, m.dst.front(), m.dst[k]))});
      }
    }
    m_unpack_elements = at;
    for (const Move& m : m_list.after)
      for (const Region& d : m.dst)
        m_after_copies.push_back(BufferCopy{m.src.buffer, d.buffer, simplify(move_geometry(m, m.src, d))});
    m_local_host = host_copies(m_local_copies, group_rows());
    m_fan_out_host = host_copies(m_fan_out_copies);
    m_after_host = host_copies(m_after_copies);
    if (op == CopyOp::assign) {
      for (std::size_t k = 0; k < m_list.sends.size(); ++k) add_single_copy(m_copy_out, k, m_list.sends[k], true);
      for (std::size_t k = 0; k < m_list.recvs.size(); ++k) add_single_copy(m_copy_in, k, m_list.recvs[k], false);
    }
  }
  MoveEngine(const MoveEngine&) = delete;
  MoveEngine& operator=(const MoveEngine&) = delete;

  const MoveList& moves() const { return m_list; }
  CopyOp op() const { return m_op; }
  int64_t send_elements() const { return m_send_elements; }
  int64_t recv_elements() const { return m_recv_elements; }
  std::size_t element_bytes() const { return m_element_bytes; }

  // Moves every piece from the buffers src[] to the buffers dst[] (indexed by Region::buffer; src and dst may be the
  // same buffers, e.g. a halo phase). Collective over the engine's processes: the job, or the mesh-axis group.
  template <class T, class M>
  void run(const std::vector<const T*>& src, const std::vector<T*>& dst, EngineBuffers<T, M>& buffers) const {
    DARRAY_THROW_IF(sizeof(T) != m_element_bytes, InvalidArgument, m_api,
                    "element type of " << sizeof(T) << " bytes given to an exchange planned for " << m_element_bytes
                                       << "-byte elements");
    if (m_op == CopyOp::add) {
      if constexpr (addable_v<T>) {
        run_op<T, M, CopyOp::add>(src, dst, buffers);
        return;
      } else {
        DARRAY_THROW(NotSupported, m_api, "elements of type " << dtype_name<T>() << " cannot be added");
      }
    }
    run_op<T, M, CopyOp::assign>(src, dst, buffers);
  }

  template <class T, class M>
  void run(const std::vector<const T*>& src, const std::vector<T*>& dst) const {
    EngineBuffers<T, M> buffers;
    run(src, dst, buffers);
  }

  // Bytes of staging the last run on this process used (0 on the direct host path).
  static std::size_t& last_staging_bytes() {
    static std::size_t bytes = 0;
    return bytes;
  }

  // Test hook: the groups of local copies a streaming local phase runs row by row (group_rows).
  std::size_t row_groups() const { return m_row_groups.size(); }

  // Test hook: pieces this process has read from same-node peers by single copy (read_pieces), all engines.
  static std::size_t& single_copy_pieces() {
    static std::size_t pieces = 0;
    return pieces;
  }

 private:
  static constexpr int tag = 0x4d56;  // "MV"

  template <class T, class M, CopyOp Op>
  void run_op(const std::vector<const T*>& src, const std::vector<T*>& dst, EngineBuffers<T, M>& buffers) const {
    if (direct_host_access<M>())
      run_direct<T, Op>(src, dst);
    else
      run_staged<T, M, Op>(src, dst, buffers);
  }

  // A copy between two of the run's buffers (local pieces, and received pieces fanned out to further destinations),
  // its geometry simplified once when the engine is built.
  struct BufferCopy {
    int src, dst;  // buffer indices; `staging` for the host path's packed messages
    CopyGeometry geometry;
  };
  static constexpr int staging = -1;

  // The same copies as the host loops read them: a contiguous run (most of them: halo slabs, small collectives'
  // blocks, replica blocks) in 40 bytes, where a BufferCopy spreads the fields a copy reads over four cache lines;
  // other geometries by their index. A small call's copies are as many as its devices, each a few bytes, so the
  // lines the loop reads cost about what the copies do (a halo exchange's loop read them back from L2 after its
  // copies had evicted them: 8% of a 1 KiB exchange at 8 devices).
  struct HostCopy {
    int src, dst;                    // buffer indices
    int64_t src_offset, dst_offset;  // elements
    int64_t run;                     // a contiguous run's elements; -1: the geometry of copies[general]
    std::size_t general;
  };
  // (Those of `copies` that `grouped` does not mark.)
  static std::vector<HostCopy> host_copies(const std::vector<BufferCopy>& copies,
                                           const std::vector<bool>& grouped = {}) {
    std::vector<HostCopy> out;
    out.reserve(copies.size());
    for (std::size_t k = 0; k < copies.size(); ++k) {
      if (k < grouped.size() && grouped[k]) continue;
      const CopyGeometry& g = copies[k].geometry;
      out.push_back(
          HostCopy{copies[k].src, copies[k].dst, g.src_offset, g.dst_offset, single_run(g) ? g.extent[0] : -1, k});
    }
    return out;
  }
  // Runs `list` (made from `copies`) from the buffers src[] to dst[], in order, not streaming.
  template <class T, CopyOp Op, class Src>
  static void copy_host(const std::vector<HostCopy>& list, const std::vector<BufferCopy>& copies, const Src& src,
                        const std::vector<T*>& dst) {
    for (const HostCopy& c : list) {
      const T* const from = src[static_cast<std::size_t>(c.src)];
      T* const to = dst[static_cast<std::size_t>(c.dst)];
      if (Op == CopyOp::assign && c.run >= 0)
        copy_bytes(static_cast<void*>(to + c.dst_offset), static_cast<const void*>(from + c.src_offset),
                   static_cast<std::size_t>(c.run) * sizeof(T));
      else
        strided_copy_host<T, Op>(from, to, copies[c.general].geometry, false);
    }
  }

  // A streaming local phase copies the pieces that read one source buffer with one geometry but for their offsets
  // (the pieces a block sends to several devices of this process, as in a reshard from rows to columns) as a group,
  // row by row across its members in order of their source offsets (copy_rows_interleaved), so the source is read in
  // address order. Measured on an AMD EPYC VM (blocked transposes, rows of 256 B-4 KiB, 4-32 devices, 2-256 MiB):
  // piece after piece with streaming stores 1.3-2.8x the time of a memcpy of the bytes, with plain stores 1.1-2.0x;
  // grouped with streaming stores 0.7-1.2x. Phases below streaming_min_total_bytes copy piece after piece: grouped
  // with plain stores, blocked transposes took 1.0-1.7x against 1.1-2.0x, better or worse case by case.
  struct RowGroup {
    int src;                  // source buffer
    CopyGeometry shape;       // the members' simplified geometry, offsets 0
    std::size_t first, last;  // its members in m_row_members
  };
  // What pieces that read one source buffer with one geometry but for their offsets share (group_rows,
  // sender_stretches): the buffer, then the simplified geometry's rank, extents and strides.
  using GeometryKey = std::array<int64_t, 2 + 3 * max_copy_rank>;
  static GeometryKey geometry_key(int buffer, const CopyGeometry& g) {
    GeometryKey key{};
    key[0] = buffer;
    key[1] = g.rank;
    for (int d = 0; d < g.rank; ++d) {
      key[static_cast<std::size_t>(2 + 3 * d)] = g.extent[d];
      key[static_cast<std::size_t>(3 + 3 * d)] = g.src_stride[d];
      key[static_cast<std::size_t>(4 + 3 * d)] = g.dst_stride[d];
    }
    return key;
  }
  // Groups the local copies (streaming assign phases only; groups of two and more, contiguous innermost rows on both
  // sides that are not back to back in the source, at least two dims) and returns which of m_local_copies are
  // grouped. (Grouping a pencil transpose's pieces, whose rows are back to back, cost it 5-20 % at 1x8.)
  std::vector<bool> group_rows() {
    std::vector<bool> grouped(m_local_copies.size(), false);
    if (!m_streaming) return grouped;
    std::vector<std::size_t> order;
    for (std::size_t k = 0; k < m_local_copies.size(); ++k) {
      const CopyGeometry& g = m_local_copies[k].geometry;
      // Rows back to back in the source (a pencil transpose's pieces: whole planes) are read in order already.
      if (g.rank >= 2 && g.src_stride[g.rank - 1] == 1 && g.dst_stride[g.rank - 1] == 1 &&
          g.src_stride[g.rank - 2] > g.extent[g.rank - 1])
        order.push_back(k);
    }
    // Same source and geometry next to each other, by source offset within.
    std::vector<GeometryKey> keys(m_local_copies.size());
    for (const std::size_t k : order) keys[k] = geometry_key(m_local_copies[k].src, m_local_copies[k].geometry);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return keys[a] != keys[b] ? keys[a] < keys[b]
                                : m_local_copies[a].geometry.src_offset < m_local_copies[b].geometry.src_offset;
    });
    for (std::size_t i = 0; i < order.size();) {
      std::size_t j = i + 1;
      while (j < order.size() && keys[order[j]] == keys[order[i]]) ++j;
      if (j - i >= 2) {
        RowGroup group{m_local_copies[order[i]].src, m_local_copies[order[i]].geometry, m_row_members.size(), 0};
        group.shape.src_offset = group.shape.dst_offset = 0;
        for (std::size_t n = i; n < j; ++n) {
          const BufferCopy& c = m_local_copies[order[n]];
          m_row_members.push_back(RowMember{c.dst, c.geometry.src_offset, c.geometry.dst_offset});
          grouped[order[n]] = true;
        }
        group.last = m_row_members.size();
        m_row_groups.push_back(group);
      }
      i = j;
    }
    return grouped;
  }

  // Several pieces to one peer travel packed when they are small (64 KiB in all, or 32 KiB each on average, up to
  // 4 MiB): a memcpy into and out of staging costs less than a message per piece.
  bool coalesced(const PeerMoves& p) const {
    const std::size_t bytes = static_cast<std::size_t>(p.elements) * m_element_bytes;
    const std::size_t pieces = p.moves.size();
    return pieces > 1 && bytes <= std::min(std::size_t(4) << 20, m_max_message_bytes) &&
           (bytes <= std::size_t(64) << 10 || bytes <= pieces * (std::size_t(32) << 10));
  }

  // Whether the pieces from a peer arrive in staging (packed, or added into their destinations from there).
  bool staged(const PeerMoves& p) const { return m_op == CopyOp::add || coalesced(p); }

  struct Message {
    int process;
    int buffer;
    int64_t offset;
    int count;
    MPI_Datatype type;
    std::uint32_t fingerprint = 0;  // of the pieces exchanged with `process` (peer_fingerprint)
    bool single_copy = false;       // its pieces go by single copy: not posted
  };

  // Single copies (runtime/detail/single_copy.hpp) of the pieces of a direction with a same-node peer that carries
  // at least the node's single_copy_min_bytes (measured at start-up: runtime/detail/single_copy_crossover.hpp; the
  // same on both sides) and is not packed (both sides know it alike), where both sides' contiguous runs average
  // single_copy_min_run_bytes (the receiver's: its pieces' runs; the sender's: the stretches of its memory the read
  // takes, sender_stretches, pieces side by side joined): then one kernel copy moves the data
  // where MPI's shared-memory transport makes two; a transpose whose runs are short on one side needs a second copy
  // to reorder anyway, and keeps its messages. Each side knows only its own runs, so the first direct run sends the
  // pieces as messages and, after them, each side's verdict ("setup"); from the second run on, a direction both
  // found long goes by single copy: the sender sends the address of its live word and the word's value for this run,
  // then per piece the address of its first element and its strides ("ready"); the receiver reads the pieces into
  // its blocks and answers with an errno ("done"), and the sender returns only after that answer, so its blocks stay
  // as they are while they are read. A sender that leaves the run early (its wait timed out, or it failed) clears
  // its live word first; the receiver reads the word after the pieces (one more read, about 2 us) and, when it no
  // longer holds the value announced, throws instead of keeping what it read (the sender may have written its blocks
  // anew) and sends no answer. Every process runs an engine's runs alike, so both sides of a direction settle after
  // the same run. Per peer, messages go and are received in the order data, setup (directions to the receiver
  // first), ready, done.
  static constexpr std::size_t single_copy_min_run_bytes = std::size_t(4) << 10;
  struct SingleCopy {
    std::size_t peer = 0;  // index into m_list.sends (sending) or m_list.recvs (receiving)
    int process = -1;
    int pid = -1;  // receiving: the sender's process id
    std::uint32_t fingerprint = 0;
    std::int64_t mine = 0, theirs = 0;  // each side's runs long enough (theirs: from its setup message)
    bool on = false;                    // both were, once settled
    std::vector<std::int64_t> ready;    // the live word's address and value, then per piece: its first element's
                                        // address and its strides (rank of them)
    std::int64_t done = 0;              // the reader's errno
    std::uint64_t live = 0;             // sending: this run's value while the pieces may be read, else 0
  };

  void add_single_copy(std::vector<SingleCopy>& out, std::size_t k, const PeerMoves& p, bool sending) {
    const int pid = single_copy_pid(p.process);
    if (pid < 0 || p.process == process_index() || coalesced(p) ||
        static_cast<std::size_t>(p.elements) * m_element_bytes < state().single_copy_min_bytes)
      return;
    SingleCopy c;
    c.peer = k;
    c.process = p.process;
    c.pid = pid;
    c.fingerprint = peer_fingerprint(p);
    // The receiver's side: its pieces' contiguous runs; the sender's: the stretches read_pieces reads.
    int64_t runs = sending ? sender_stretches(p) : 0;
    std::size_t words = 0;
    for (const Move& m : p.moves) {
      if (!sending) {  // its region copied to a packed one
        const CopyGeometry g = simplify(move_geometry(m, m.dst.front(), packed_region(m, 0)));
        runs += m.elements() / std::max<int64_t>(1, contiguous_run(g));
      }
      words += 1 + static_cast<std::size_t>(m.rank);
    }
    c.mine = static_cast<std::size_t>(p.elements) * m_element_bytes >=
             static_cast<std::size_t>(std::max<int64_t>(runs, 1)) * single_copy_min_run_bytes;
    c.ready.assign(2 + words, 0);
    out.push_back(std::move(c));
  }

  // The stretches of the sender's memory that the receiver's read of a direction takes (read_pieces joins runs that
  // follow each other in the sender's address order): each piece's contiguous runs, where pieces that read one source
  // buffer with one geometry but for their offsets, each starting where the one before it ends its first run (the
  // pieces a row block sends to the devices of one process in a rows-to-columns reshard), count once together: their
  // rows are side by side. Pieces that only happen to meet (other geometries, other buffers) count apart.
  static int64_t sender_stretches(const PeerMoves& p) {
    struct SentPiece {
      GeometryKey key;  // of the source region copied to a packed one
      int64_t offset, run, elements;
    };
    std::vector<SentPiece> pieces;
    pieces.reserve(p.moves.size());
    for (const Move& m : p.moves) {
      const CopyGeometry g = simplify(move_geometry(m, m.src, packed_region(m, 0)));
      pieces.push_back(SentPiece{geometry_key(m.src.buffer, g), g.src_offset, std::max<int64_t>(1, contiguous_run(g)),
                                 g.elements()});
    }
    std::sort(pieces.begin(), pieces.end(), [](const SentPiece& a, const SentPiece& b) {
      return a.key != b.key ? a.key < b.key : a.offset < b.offset;
    });
    int64_t stretches = 0;
    for (std::size_t k = 0; k < pieces.size(); ++k) {
      const SentPiece& x = pieces[k];
      const bool side_by_side =
          k > 0 && x.key == pieces[k - 1].key && x.offset == pieces[k - 1].offset + pieces[k - 1].run;
      if (!side_by_side) stretches += x.elements / x.run;
    }
    return stretches;
  }

  // A control message's tag: the direction's fingerprint, the element type and the kind (1 setup, 2 ready, 3 done).
  static int control_tag(std::uint32_t fingerprint, int dtype, std::uint32_t kind) {
    return message_tag(fingerprint ^ (kind * 0x85EBCA6Bu), dtype);
  }

  // After the first direct run: the directions both sides found long go by single copy from now on, and their
  // messages are no longer posted.
  void settle_single_copies() const {
    auto settle = [](std::vector<SingleCopy>& copies, std::vector<Message>& messages) {
      for (SingleCopy& c : copies) {
        c.on = c.mine != 0 && c.theirs != 0;
        if (c.on)
          for (Message& m : messages)
            if (m.process == c.process) m.single_copy = true;
      }
    };
    settle(m_copy_out, m_send_messages);
    settle(m_copy_in, m_recv_messages);
    m_single_copy_settled = true;
  }

  // A live word's value for one run: never 0, never repeated in this process (whatever the element type).
  static std::uint64_t next_live_value() {
    static std::atomic<std::uint64_t> runs{0};
    return runs.fetch_add(1, std::memory_order_relaxed) + 1;
  }

  // The sender's ready message of a direction: its live word (set to a value no earlier run used), where each piece
  // starts and its strides.
  template <class T>
  void announce_pieces(SingleCopy& c, const std::vector<const T*>& src) const {
    __atomic_store_n(&c.live, next_live_value(), __ATOMIC_SEQ_CST);
    c.ready[0] = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(&c.live));
    c.ready[1] = static_cast<std::int64_t>(c.live);
    std::size_t w = 2;
    for (const Move& m : m_list.sends[c.peer].moves) {
      c.ready[w++] = static_cast<std::int64_t>(
          reinterpret_cast<std::uintptr_t>(src[static_cast<std::size_t>(m.src.buffer)] + m.src.offset));
      for (int d = 0; d < m.rank; ++d) c.ready[w++] = m.src.stride[static_cast<std::size_t>(d)];
    }
  }

  // What reading a direction's pieces came to, `result` (0 or the read's errno) unless the sender is known to have
  // left the run whose pieces it announced: its live word no longer holds the value announced, or its process is
  // gone. Then sender_left, and the sender waits for no answer. Any other failure to read the word is an errno,
  // answered as before, so a sender that still waits is never left waiting.
  static constexpr int sender_left = -1;
  static int unless_sender_left(const SingleCopy& c, int result) {
    std::uint64_t word = 0;
    static thread_local std::vector<PeerRange> range(1);  // reused: a call allocates nothing once its plan exists
    range[0] = PeerRange{&word, static_cast<std::uint64_t>(c.ready[0]), sizeof word};
    const int err = read_from_process(c.pid, range);
    if (err == ESRCH || (err == 0 && word != static_cast<std::uint64_t>(c.ready[1]))) return sender_left;
    return err != 0 ? err : result;
  }

  // Reads the pieces of a direction from the sender (c.ready: where they lie) into dst; returns 0, an errno, or
  // sender_left when the sender left the run before or while they were read (what was read is then not the data).
  // The pieces' runs go in the sender's address order (by_remote_address), so rows of pieces that lie side by side in
  // a sender's block (a rows-to-columns reshard's pieces to this process's devices) are one stretch each for the
  // kernel (copy_with_process).
  template <class T>
  int read_pieces(const SingleCopy& c, const std::vector<T*>& dst) const {
    static thread_local std::vector<PeerRange> ranges;
    static thread_local std::vector<std::size_t> starts;  // where each piece's runs begin in `ranges`
    ranges.clear();
    starts.clear();
    std::size_t w = 2;
    for (const Move& m : m_list.recvs[c.peer].moves) {
      const Region& d = m.dst.front();
      const auto remote = static_cast<std::uint64_t>(c.ready[w]);
      Region from;  // the sender's piece, from its first element
      for (int k = 0; k < m.rank; ++k)
        from.stride[static_cast<std::size_t>(k)] = c.ready[w + 1 + static_cast<std::size_t>(k)];
      w += 1 + static_cast<std::size_t>(m.rank);
      T* const base = dst[static_cast<std::size_t>(d.buffer)];
      starts.push_back(ranges.size());
      for_each_run(simplify(move_geometry(m, from, d)), [&](int64_t so, int64_t dof, int64_t run) {
        ranges.push_back(PeerRange{base + dof, remote + static_cast<std::uint64_t>(so) * sizeof(T),
                                   static_cast<std::size_t>(run) * sizeof(T)});
      });
    }
    by_remote_address(ranges, starts);
    if (const int err = read_from_process(c.pid, ranges)) return unless_sender_left(c, err);
    single_copy_pieces() += m_list.recvs[c.peer].moves.size();
    return unless_sender_left(c, 0);
  }

  // Orders `ranges` by their remote address, stably. starts: where each of its segments begins (a piece's runs, each
  // segment in address order already where the sender's strides are positive, as a row-major block's are): merged
  // pairwise, pass after pass, through a buffer kept for the next call (no allocation once warm); a segment out of
  // order (never expected) sorts the whole.
  static void by_remote_address(std::vector<PeerRange>& ranges, std::vector<std::size_t>& starts) {
    auto before = [](const PeerRange& a, const PeerRange& b) { return a.remote < b.remote; };
    if (std::is_sorted(ranges.begin(), ranges.end(), before)) return;
    static thread_local std::vector<PeerRange> merged;
    starts.push_back(ranges.size());
    for (std::size_t k = 0; k + 1 < starts.size(); ++k)
      if (!std::is_sorted(ranges.begin() + static_cast<std::ptrdiff_t>(starts[k]),
                          ranges.begin() + static_cast<std::ptrdiff_t>(starts[k + 1]), before)) {
        std::stable_sort(ranges.begin(), ranges.end(), before);
        return;
      }
    while (starts.size() > 2) {  // segments [starts[k], starts[k + 1])
      merged.resize(ranges.size());
      std::size_t kept = 0;
      for (std::size_t k = 0; k + 1 < starts.size(); k += 2) {
        const auto first = ranges.begin() + static_cast<std::ptrdiff_t>(starts[k]);
        const auto middle = ranges.begin() + static_cast<std::ptrdiff_t>(starts[k + 1]);
        const auto last =
            ranges.begin() + static_cast<std::ptrdiff_t>(k + 2 < starts.size() ? starts[k + 2] : starts[k + 1]);
        std::merge(first, middle, middle, last, merged.begin() + static_cast<std::ptrdiff_t>(starts[k]), before);
        starts[kept++] = starts[k];
      }
      starts[kept++] = ranges.size();
      starts.resize(kept);
      ranges.swap(merged);
    }
  }

  // What both sides of a peer's pieces know alike: the operation and its global arguments (MoveList::operation), the
  // element size, the pieces' count and extents. Messages carry it, mixed with the element type, as their tag;
  // receives take any tag and compare, so processes that called different operations (or the same one on different
  // shapes, shardings or element types) get an error instead of each other's bytes, with or without DARRAY_CHECK.
  std::uint32_t peer_fingerprint(const PeerMoves& p) const {
    std::uint64_t h = 1469598103934665603ull;
    auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    for (const char* c = m_api; *c != '\0'; ++c) mix(static_cast<unsigned char>(*c));
    mix(m_list.operation);
    mix(m_element_bytes);
    mix(p.moves.size());
    for (const Move& m : p.moves)
      for (int d = 0; d < m.rank; ++d) mix(static_cast<std::uint64_t>(m.extent[static_cast<std::size_t>(d)]));
    return static_cast<std::uint32_t>(h ^ (h >> 32));
  }

  // The tag of a message: its fingerprint and the element type, in 1..32766 (MPI guarantees tags up to 32767).
  static int message_tag(std::uint32_t fingerprint, int dtype) {
    std::uint32_t h = fingerprint ^ (static_cast<std::uint32_t>(dtype) * 0x9E3779B1u);
    h ^= h >> 15;
    return 1 + static_cast<int>(h % 32766u);
  }

  // The staged path's transport: the backend's, or its mesh-axis group's, looked up on the first run of each
  // Environment and kept (a lookup canonicalises the colors: O(processes), and allocates). Every process takes part
  // in a run, peers or not, so the first lookup, which is collective, is made by all.
  Transport* staged_transport(Backend backend) const {
    return m_transport.get(backend, [&] {
      Transport* t = &transport(backend);
      return m_colors.empty() ? t : &t->group(m_colors);
    });
  }

  // The staged path's messages, one per peer, packed in peer order (ranks in the mesh-axis group where there is
  // one), each tagged with the fingerprint of its pieces and the element type as on the host path. Built on the
  // first run with an element type (the engine knows only its size) and kept.
  const ExchangePlan& staged_plan(int dtype) const {
    return m_staged.get(dtype, [&] {
      const ProcessGroup* group = nullptr;
      (void)comm_and_ranks(group);
      auto rank_of = [&](int process) { return group != nullptr ? group->group_rank_of(process) : process; };
      ExchangePlan plan;
      for (int side = 0; side < 2; ++side) {
        std::size_t off = 0;
        for (const PeerMoves& p : side == 0 ? m_list.sends : m_list.recvs) {
          const std::size_t bytes = byte_count(p.elements, m_element_bytes, m_api);
          (side == 0 ? plan.sends : plan.recvs)
              .push_back(PeerBytes{rank_of(p.process), off, bytes, message_tag(peer_fingerprint(p), dtype)});
          off += bytes;
        }
      }
      return plan;
    });
  }

  // The exchange's communicator: the world, or this process's mesh-axis group, looked up once per Environment (the
  // lookup canonicalises the colors, O(processes)). The first lookup is collective.
  MPI_Comm comm_and_ranks(const ProcessGroup*& group) const {
    group = nullptr;
    if (m_colors.empty()) return world_comm();
    group = m_group.get(0, [&] { return &process_group(m_colors); });
    return group->comm();
  }

  // One message per part of each remote piece, cut by split_for_messages on the piece's own extent (the same rule
  // on both sides, so the k-th send to a peer matches its k-th receive): contiguous parts as plain elements, others
  // as a strided datatype walking the part in row-major order of the piece's dims.
  void make_messages() const {
    if (m_messages_ready) return;
    const MPI_Datatype element = m_types.element(m_element_bytes);
    std::uint32_t fingerprint = 0;  // of the peer whose messages are being added
    auto add = [&](std::vector<Message>& out, int process, const Move& m, const Region& r) {
      Index whole(static_cast<std::size_t>(m.rank));
      for (int d = 0; d < m.rank; ++d)
        whole[static_cast<std::size_t>(d)] = Slice{0, m.extent[static_cast<std::size_t>(d)]};
      split_for_messages(whole, m_element_bytes, m_max_message_bytes, [&](const Index& part) {
        int64_t offset = r.offset;
        std::vector<int64_t> extents, byte_strides;
        for (std::size_t d = 0; d < part.size(); ++d) {
          offset += part[d].start * r.stride[d];
          if (part[d].size() == 1) continue;
          extents.push_back(part[d].size());
          byte_strides.push_back(r.stride[d] * static_cast<int64_t>(m_element_bytes));
        }
        bool contiguous = true;
        int64_t inner = static_cast<int64_t>(m_element_bytes);
        for (std::size_t k = extents.size(); k-- > 0;) {
          contiguous = contiguous && byte_strides[k] == inner;
          inner *= extents[k];
        }
        Message msg{process, r.buffer, offset, 1, element, fingerprint};
        if (contiguous)
          msg.count = to_mpi_count(static_cast<std::size_t>(volume(part)), m_api);
        else
          msg.type = m_types.strided(extents, byte_strides, element);
        out.push_back(msg);
      });
    };
    auto add_packed = [&](std::vector<Message>& out, const PeerMoves& p, int64_t& at) {
      out.push_back(Message{p.process, staging, at, to_mpi_count(static_cast<std::size_t>(p.elements), m_api), element,
                            fingerprint});
      at += p.elements;
    };
    int64_t at = 0;
    for (const PeerMoves& p : m_list.recvs) {
      fingerprint = peer_fingerprint(p);
      if (coalesced(p)) {
        add_packed(m_recv_messages, p, at);
        continue;
      }
      for (const Move& m : p.moves) {
        if (!staged(p)) {
          add(m_recv_messages, p.process, m, m.dst.front());
          continue;
        }
        Region r = packed_region(m, at);  // each piece's messages into its packed place in staging
        r.buffer = staging;
        add(m_recv_messages, p.process, m, r);
        at += m.elements();
      }
    }
    at = 0;
    for (const PeerMoves& p : m_list.sends) {
      fingerprint = peer_fingerprint(p);
      if (coalesced(p)) {
        add_packed(m_send_messages, p, at);
        continue;
      }
      for (const Move& m : p.moves) add(m_send_messages, p.process, m, m.src);
    }
    m_messages_ready = true;
  }

  // The local pieces, copied while the messages fly.
  template <class T, CopyOp Op>
  void copy_local_host(const std::vector<const T*>& src, const std::vector<T*>& dst) const {
    if (!m_streaming) {
      copy_host<T, Op>(m_local_host, m_local_copies, src, dst);
      return;
    }
    for (const RowGroup& g : m_row_groups)
      copy_rows_interleaved(src[static_cast<std::size_t>(g.src)], g.shape, m_row_members.data() + g.first,
                            m_row_members.data() + g.last, dst, true);
    for (const HostCopy& c : m_local_host)
      strided_copy_host<T, Op>(src[static_cast<std::size_t>(c.src)], dst[static_cast<std::size_t>(c.dst)],
                               m_local_copies[c.general].geometry, true);
    stream_fence();
  }

  // Receives beyond the first destination of a piece: copied from the first once it has arrived; then the copies
  // between destination buffers (MoveList::after).
  template <class T>
  void fan_out_host(const std::vector<T*>& dst) const {
    copy_host<T, CopyOp::assign>(m_fan_out_host, m_fan_out_copies, dst, dst);
    copy_host<T, CopyOp::assign>(m_after_host, m_after_copies, dst, dst);
  }

  // Each receive (the first requests of the last run) carried this operation's tag and exactly the bytes planned (a
  // truncated receive carried more).
  template <class T>
  void check_received(int dtype) const {
    std::size_t posted = 0;
    for (std::size_t k = 0; k < m_recv_messages.size(); ++k) {
      const Message& m = m_recv_messages[k];
      if (m.single_copy) continue;
      MPI_Status& st = m_statuses[posted++];
      int got = 0;
      DARRAY_MPI_CHECK(MPI_Get_count(&st, m.type, &got));
      const bool truncated = st.MPI_ERROR == MPI_ERR_TRUNCATE;
      DARRAY_THROW_IF(truncated || st.MPI_TAG != message_tag(m.fingerprint, dtype) || got != m.count, InvalidArgument,
                      m_api,
                      "process " << m.process << " sent data of another operation or of other arrays (element type "
                                 << dtype_name<T>()
                                 << " here): the processes called different operations, or the "
                                    "same one with different shapes, shardings or element types");
    }
  }

  template <class T, CopyOp Op>
  void run_direct(const std::vector<const T*>& src, const std::vector<T*>& dst) const {
    constexpr int dtype = dtype_code<T>();
    last_staging_bytes() = 0;
    // Every process looks the group up, peers or not: its first use is collective. The world needs no lookup.
    const ProcessGroup* group = nullptr;
    const bool no_peer = m_list.sends.empty() && m_list.recvs.empty();
    const MPI_Comm c = no_peer && m_colors.empty() ? MPI_COMM_NULL : comm_and_ranks(group);
    if (no_peer) {  // the same-process copies are the whole run
      copy_local_host<T, Op>(src, dst);
      fan_out_host(dst);
      return;
    }
    std::vector<MPI_Request>& requests = m_requests;  // kept between runs: a run allocates nothing
    std::vector<int>& peers = m_request_peers;        // rank each request waits on, for the DARRAY_TIMEOUT_S message
    std::vector<MPI_Request>& ready = m_ready_requests;
    requests.clear();
    peers.clear();
    ready.clear();
    m_ready_peers.clear();
    m_controls.clear();
    const bool setting_up = !m_single_copy_settled && (!m_copy_out.empty() || !m_copy_in.empty());
    make_messages();
    auto rank_of = [&](int process) { return group != nullptr ? group->group_rank_of(process) : process; };
    requests.reserve(m_recv_messages.size() + m_send_messages.size() + 2 * (m_copy_out.size() + m_copy_in.size()));
    auto control = [&](std::vector<MPI_Request>& out, std::vector<int>& out_peers, std::int64_t* data,
                       std::size_t count, int process, std::uint32_t fingerprint, std::uint32_t kind, bool send) {
      MPI_Request r = MPI_REQUEST_NULL;
      const int ctag = control_tag(fingerprint, dtype, kind);
      if (send) {
        DARRAY_MPI_CHECK(MPI_Isend(data, static_cast<int>(count), MPI_INT64_T, rank_of(process), ctag, c, &r));
      } else {
        DARRAY_MPI_CHECK(MPI_Irecv(data, static_cast<int>(count), MPI_INT64_T, rank_of(process), MPI_ANY_TAG, c, &r));
        if (&out == &requests) m_controls.push_back(Control{requests.size(), ctag, static_cast<int>(count), process});
      }
      out.push_back(r);
      out_peers.push_back(rank_of(process));
    };
    // Receives first, so messages land in place rather than in MPI's unexpected queue.
    T* const stage_recv = reinterpret_cast<T*>(staging_words(1, words(m_unpack_elements)));
    T* const stage_send = reinterpret_cast<T*>(staging_words(0, words(m_pack_elements)));
    for (const Message& m : m_recv_messages) {
      if (m.single_copy) continue;
      MPI_Request r = MPI_REQUEST_NULL;
      T* const base = m.buffer == staging ? stage_recv : dst[static_cast<std::size_t>(m.buffer)];
      DARRAY_MPI_CHECK(MPI_Irecv(base + m.offset, m.count, m.type, rank_of(m.process), MPI_ANY_TAG, c, &r));
      requests.push_back(r);
      peers.push_back(rank_of(m.process));
    }
    for (SingleCopy& s : m_copy_in)  // setup: the verdicts on directions to this process first
      if (setting_up) control(requests, peers, &s.theirs, 1, s.process, s.fingerprint, 1, false);
    for (SingleCopy& s : m_copy_out)
      if (setting_up) control(requests, peers, &s.theirs, 1, s.process, s.fingerprint, 1, false);
    for (SingleCopy& s : m_copy_in)
      if (s.on) control(ready, m_ready_peers, s.ready.data(), s.ready.size(), s.process, s.fingerprint, 2, false);
    for (SingleCopy& s : m_copy_out)
      if (s.on) control(requests, peers, &s.done, 1, s.process, s.fingerprint, 3, false);
    for (const BufferCopy& k : m_pack_copies)
      strided_copy_host(src[static_cast<std::size_t>(k.src)], stage_send, k.geometry, false);
    for (const Message& m : m_send_messages) {
      if (m.single_copy) continue;
      MPI_Request r = MPI_REQUEST_NULL;
      T* const base = m.buffer == staging ? stage_send : const_cast<T*>(src[static_cast<std::size_t>(m.buffer)]);
      DARRAY_MPI_CHECK(
          MPI_Isend(base + m.offset, m.count, m.type, rank_of(m.process), message_tag(m.fingerprint, dtype), c, &r));
      requests.push_back(r);
      peers.push_back(rank_of(m.process));
    }
    for (SingleCopy& s : m_copy_out)  // setup: the verdicts on directions from this process first
      if (setting_up) control(requests, peers, &s.mine, 1, s.process, s.fingerprint, 1, true);
    for (SingleCopy& s : m_copy_in)
      if (setting_up) control(requests, peers, &s.mine, 1, s.process, s.fingerprint, 1, true);
    struct LeaveRun {  // however the run ends, its pieces may no longer be read (see SingleCopy)
      std::vector<SingleCopy>& out;
      ~LeaveRun() {
        for (SingleCopy& s : out) __atomic_store_n(&s.live, std::uint64_t{0}, __ATOMIC_SEQ_CST);
      }
    } leave{m_copy_out};
    for (SingleCopy& s : m_copy_out) {
      if (!s.on) continue;
      announce_pieces<T>(s, src);
      control(requests, peers, s.ready.data(), s.ready.size(), s.process, s.fingerprint, 2, true);
    }
    int read_error = 0;
    int read_from = -1;
    try {
      copy_local_host<T, Op>(src, dst);
      if (!ready.empty()) {
        // The senders' pieces are ready: read them, then tell each sender it may go on.
        m_ready_statuses.resize(ready.size());
        wait_all_until(ready, m_api, m_ready_peers, m_ready_statuses.data(), wait_timeout_seconds(),
                       /*tolerate_truncation=*/true);
        std::size_t k = 0;
        for (SingleCopy& s : m_copy_in) {
          if (!s.on) continue;
          // Another operation's message (the processes called different operations): nothing is read, and the
          // sender learns it from the answer instead of waiting for one.
          if (!control_ok(m_ready_statuses[k++], control_tag(s.fingerprint, dtype, 2), s.ready.size()))
            s.done = EPROTO;
          else if constexpr (Op == CopyOp::assign)
            s.done = read_pieces<T>(s, dst);
          if (s.done != 0 && read_error == 0) {
            read_error = static_cast<int>(s.done);
            read_from = s.process;
          }
          if (s.done == sender_left) continue;  // it waits for no answer any more
          MPI_Request r = MPI_REQUEST_NULL;
          const int to = rank_of(s.process);
          DARRAY_MPI_CHECK(MPI_Isend(&s.done, 1, MPI_INT64_T, to, control_tag(s.fingerprint, dtype, 3), c, &r));
          requests.push_back(r);
          peers.push_back(to);
        }
      }
      m_statuses.resize(requests.size());
      // A message longer than its receive (another operation on the peer) completes the receive, flagged; the check
      // below reports it once everything arrived, so nothing of this call is left for the next one to receive.
      wait_all_until(requests, m_api, peers, m_statuses.data(), wait_timeout_seconds(), /*tolerate_truncation=*/true);
    } catch (...) {
      // A deadline passed or a message failed: withdraw what is still posted before the buffers go.
      for (std::vector<MPI_Request>* v : {&requests, &ready})
        for (MPI_Request& r : *v)
          if (r != MPI_REQUEST_NULL) {
            MPI_Cancel(&r);
            MPI_Request_free(&r);
          }
      throw;
    }
    check_received<T>(dtype);
    for (const Control& k : m_controls)
      if (!control_ok(m_statuses[k.request], k.tag, static_cast<std::size_t>(k.count)))
        throw_other_operation(k.process);
    if (setting_up) settle_single_copies();
    if (read_error == EPROTO) throw_other_operation(read_from);
    DARRAY_THROW_IF(read_error == sender_left, Error, m_api,
                    "process " << read_from
                               << " left this exchange before this process had read its pieces from its memory (its "
                                  "wait timed out under DARRAY_TIMEOUT_S, or it failed): what was read is not its "
                                  "data for this call");
    DARRAY_THROW_IF(
        read_error != 0, Error, m_api,
        "reading the pieces of process " << read_from << " from its memory failed: " << std::strerror(read_error));
    for (const SingleCopy& s : m_copy_out) {
      if (!s.on || s.done == 0) continue;
      if (s.done == EPROTO) throw_other_operation(s.process);
      DARRAY_THROW(Error, m_api,
                   "process " << s.process << " could not read this process's pieces from its memory: "
                              << std::strerror(static_cast<int>(s.done)));
    }
    for (const BufferCopy& k : m_unpack_copies)
      strided_copy_host<T, Op>(stage_recv, dst[static_cast<std::size_t>(k.dst)], k.geometry, false);
    fan_out_host(dst);
  }

  // Whether a control message (setup, ready, done) carried its kind's tag and `count` words: else the peer ran
  // another operation.
  static bool control_ok(MPI_Status st, int expected_tag, std::size_t count) {
    int got = 0;
    DARRAY_MPI_CHECK(MPI_Get_count(&st, MPI_INT64_T, &got));
    return st.MPI_ERROR != MPI_ERR_TRUNCATE && st.MPI_TAG == expected_tag && static_cast<std::size_t>(got) == count;
  }

  [[noreturn]] void throw_other_operation(int process) const {
    DARRAY_THROW(InvalidArgument, m_api,
                 "process " << process
                            << " sent data of another operation or of other arrays: the processes called different "
                               "operations, or the same one with different shapes, shardings or element types");
  }

  template <class T, class M, CopyOp Op>
  void run_staged(const std::vector<const T*>& src, const std::vector<T*>& dst, EngineBuffers<T, M>& buffers) const {
    using Exec = typename M::execution_space;
    const Exec& space = default_instance<Exec>();
    const bool nccl = !host_accessible_v<M> && backend() == Backend::nccl;
    const bool mirrors = !nccl && mpi_needs_host_copy<M>();
    buffers.reserve(m_send_elements, m_recv_elements, mirrors);
    last_staging_bytes() = static_cast<std::size_t>(m_send_elements + m_recv_elements) * sizeof(T);
    T* const send = buffers.send.data();
    T* const recv = buffers.recv.data();
    int64_t at = 0;
    for (const PeerMoves& p : m_list.sends)
      for (const Move& m : p.moves) {
        strided_copy<T, M>(space, src[static_cast<std::size_t>(m.src.buffer)], send,
                           move_geometry(m, m.src, packed_region(m, at)));
        at += m.elements();
      }
    for (const BufferCopy& c : m_local_copies)
      strided_copy<T, M, Op>(space, src[static_cast<std::size_t>(c.src)], dst[static_cast<std::size_t>(c.dst)],
                             c.geometry);
    // MPI reads what the kernels wrote; NCCL and the copies to host mirrors follow them on their stream.
    if (!nccl && !mirrors) detail::fence(space);

    {
      Transport* const t = staged_transport(nccl ? Backend::nccl : Backend::mpi);
      const ExchangePlan& xplan = staged_plan(dtype_code<T>());
      ExchangeOptions options;
      options.method = ExchangeMethod::point_to_point;  // decided here, without a collective call
      options.tag = tag;
      if (!mirrors) {
        t->exchange(xplan, reinterpret_cast<const std::byte*>(send), reinterpret_cast<std::byte*>(recv), options,
                    gpu_stream(space));
      } else {
        const auto sent = std::make_pair(std::size_t(0), static_cast<std::size_t>(m_send_elements));
        const auto got = std::make_pair(std::size_t(0), static_cast<std::size_t>(m_recv_elements));
        copy_contiguous(space, Kokkos::subview(buffers.send_host, sent), Kokkos::subview(buffers.send, sent));
        t->exchange(xplan, reinterpret_cast<const std::byte*>(buffers.send_host.data()),
                    reinterpret_cast<std::byte*>(buffers.recv_host.data()), options);
        // Unfenced: the unpack kernels follow the copy on its stream, and the run's last fence covers both before
        // the next run writes recv_host again.
        copy_contiguous(space, Kokkos::subview(buffers.recv, got), Kokkos::subview(buffers.recv_host, got),
                        /*then_fence=*/false);
      }
    }
    at = 0;
    for (const PeerMoves& p : m_list.recvs)
      for (const Move& m : p.moves) {
        for (const Region& d : m.dst)
          strided_copy<T, M, Op>(space, static_cast<const T*>(recv), dst[static_cast<std::size_t>(d.buffer)],
                                 move_geometry(m, packed_region(m, at), d));
        at += m.elements();
      }
    for (const BufferCopy& c : m_after_copies)  // in stream order, after the pieces they copy
      strided_copy<T, M>(space, static_cast<const T*>(dst[static_cast<std::size_t>(c.src)]),
                         dst[static_cast<std::size_t>(c.dst)], c.geometry);
    detail::fence(space);
  }

  MoveList m_list;
  std::size_t m_element_bytes;
  const char* m_api;
  CopyOp m_op;
  std::vector<int> m_colors;
  int64_t m_send_elements = 0, m_recv_elements = 0;
  std::size_t m_max_message_bytes = 0;
  // Host path: datatypes and messages, built on the first direct run and freed with the engine.
  mutable MpiTypes m_types;
  // Staging of the host path's packed messages (0: sends, 1: receives), shared by the engines of a thread (runs do
  // not nest) and grown to the largest run's; in words so that any element type is aligned.
  static std::max_align_t* staging_words(int which, std::size_t words) {
    static thread_local std::vector<std::max_align_t> buffers[2];
    std::vector<std::max_align_t>& b = buffers[which];
    if (b.size() < words) b.resize(words);
    return b.data();
  }
  std::size_t words(int64_t elements) const {
    return (static_cast<std::size_t>(elements) * m_element_bytes + sizeof(std::max_align_t) - 1) /
           sizeof(std::max_align_t);
  }

  std::vector<BufferCopy> m_local_copies, m_fan_out_copies, m_after_copies, m_pack_copies, m_unpack_copies;
  std::vector<HostCopy> m_local_host, m_fan_out_host, m_after_host;  // the first three as the host loops read them
  std::vector<RowGroup> m_row_groups;                                // local copies run as groups (group_rows)
  std::vector<RowMember> m_row_members;                              // (m_local_host holds the others)
  int64_t m_pack_elements = 0, m_unpack_elements = 0;

  bool m_streaming = false;
  mutable std::vector<Message> m_recv_messages, m_send_messages;
  mutable std::vector<MPI_Request> m_requests;
  mutable std::vector<int> m_request_peers;
  mutable std::vector<MPI_Status> m_statuses;
  mutable bool m_messages_ready = false;
  // Single copies: the directions with same-node peers that may take them, whether the first direct run settled
  // which do, the ready receives (waited for before the others), and where the control receives sit among the
  // requests.
  mutable std::vector<SingleCopy> m_copy_out, m_copy_in;
  mutable bool m_single_copy_settled = false;
  mutable std::vector<MPI_Request> m_ready_requests;
  mutable std::vector<int> m_ready_peers;
  mutable std::vector<MPI_Status> m_ready_statuses;
  struct Control {
    std::size_t request;
    int tag, count, process;
  };
  mutable std::vector<Control> m_controls;
  mutable PerEnvironment<const ProcessGroup*> m_group;      // see comm_and_ranks
  mutable PerEnvironment<Transport*, Backend> m_transport;  // see staged_transport
  mutable PerEnvironment<ExchangePlan> m_staged;            // see staged_plan: keyed by element type
};

}  // namespace detail
}  // namespace darray
