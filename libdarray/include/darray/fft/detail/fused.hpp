// A stage of a distributed FFT fused with the transposes around it, where every process of the job can read and
// write every other's memory (one node, single copies: runtime/detail/single_copy.hpp). Tile by tile, each process
// gathers a cache-sized part of its block of the stage straight from the blocks it comes from (its own and its
// peers'), runs the stage's FFTs on it there, and writes the result straight into the blocks it goes to. The stage's
// data then crosses memory once each way, instead of a transpose into a work buffer, a pass (or more) of FFTs over
// the whole block, and a transpose out of it (bench/README, "A slab's second stage fused with its transposes").
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "darray/array/detail/stream_copy.hpp"
#include "darray/array/detail/strided_copy.hpp"
#include "darray/core/error.hpp"
#include "darray/core/index.hpp"
#include "darray/fft/detail/local_problem.hpp"
#include "darray/redistribute/reshard.hpp"
#include "darray/runtime/detail/agree.hpp"
#include "darray/runtime/detail/arrival.hpp"
#include "darray/runtime/detail/single_copy.hpp"
#include "darray/runtime/environment.hpp"
#include "darray/sharding/named_sharding.hpp"

namespace darray {
namespace fft {
namespace detail {

// Bytes of one tile: the FFTs of a tile then run in the core's cache (L2 is 1-2 MiB per core on the CPUs we meet).
// 128^3 c2c at 2 processes, a (128, jt, 128) tile of the second stage (a scratch prototype, the blocks out of cache as
// in bench/fft): jt = 1 (256 KiB) 6.1 ms, 2 (512 KiB) 5.3 ms, 4 (1 MiB) 5.6 ms per fused stage.
inline constexpr int64_t fused_tile_bytes = int64_t(512) << 10;

// Where one side of a stage is its own layout (a transposed output), a process's tiles stay in their blocks while
// its blocks of the stage total at most this much, and go through the tile buffer beyond: the gather then writes
// lines that are not in cache, and the FFTs stride through a block by its planes, whose power-of-two sizes thrash
// the cache. bench/fft at 2 processes, FFTW_MEASURE, transposed output, ratio to FFTW-MPI in the block -> through the
// buffer: c2c 64^3 (2 MiB) 0.84 -> 0.86-0.88, r2c 64^3 0.85 -> 0.88-0.95; c2c 128^3 (16 MiB) 0.91-0.93 -> 0.86-0.87,
// r2c 128^3 (8.5 MiB) 0.85-0.90 -> 0.80-0.83; backward r2c 128^3 4.2-4.7 -> 3.7-3.9 ms. A reference so that tests
// can take either way with small blocks (the same value on every process).
inline int64_t& fused_in_block_max_bytes() {
  static int64_t bytes = int64_t(4) << 20;
  return bytes;
}

// Whether a stage between `from` and `to` can run fused: every process of the job reaches every other by single copy,
// and no two devices hold the same block of the stage (replicas would read a region while their twin writes it).
// The same answer on every process (replicated metadata and the Environment's agreed probe).
inline bool fused_stage_possible(const NamedSharding& stage) {
  if (process_count() < 2 || !darray::detail::single_copy_reaches_all()) return false;
  for (const Device& d : stage.mesh().devices())
    if (stage.replica_id(d) != 0) return false;
  return true;
}

// The mesh's devices process by process, each process's in local-device order (the order of its shards): where a
// process's blocks of a stage, or of a work buffer, lie among its blocks.
inline std::vector<Device> devices_by_process(const Mesh& mesh) {
  std::vector<Device> devs = mesh.devices();
  std::sort(devs.begin(), devs.end(), [](const Device& a, const Device& b) {
    return a.process_index != b.process_index ? a.process_index < b.process_index : a.local_index < b.local_index;
  });
  return devs;
}

// The tiles of one stage of one FFT plan and direction on this process's devices, with every copy that gathers them
// from the `from` sharding's blocks and scatters them to the `to` sharding's blocks. Blocks are row-major (the stage
// orders of a plan whose processes reach each other by single copy: pipeline.hpp's stage_order) of the complex shape.
template <class T>
class FusedStage {
 public:
  // A copy between a tile and one block of a device: of its process, at position `slot` among that process's blocks
  // (the local-device order of a DistributedArray's shards). Source and destination offsets of `geometry` are the
  // block's and the tile's (gather) or the tile's and the block's (scatter).
  struct Copy {
    int process = 0;
    int slot = 0;
    darray::detail::CopyGeometry geometry;
  };
  struct Tile {
    std::size_t block = 0;  // this process's block of the stage (local device position)
    Index box;
    std::vector<Copy> in, out;
    int64_t at = 0;        // where the tile starts in that block (elements): where its FFTs run outside the buffer
    LocalProblem problem;  // its FFTs where they run (home()): FFTW's guru plan of it
  };
  // Where a tile's FFTs read and write it. buffer: the tile buffer (gathered into it, in place there, scattered out of
  // it). to_block: this process's block of `to` where `to` is the stage's own sharding (a plan whose output keeps the
  // stage's layout): gathered straight into that block, in place there, nothing to scatter. from_block: this
  // process's block of `from` where `from` is the stage's (the backward of such a plan): the FFTs read the tile there
  // and write the tile buffer, nothing to gather. Either way the tile's data crosses memory once each way. A stage
  // takes the blocks' ways while its blocks here total at most fused_in_block_max_bytes(), the buffer beyond.
  enum class Home { buffer, to_block, from_block };
  // The blocks of a side (`from`, `to`) that every process maps (runtime/detail/node_shared.hpp): per process, its
  // blocks as mapped here, in local-device order. A copy with a peer's block there is a plain copy instead of a single
  // copy. Null: that side's peers go by single copies.
  struct Mapped {
    const std::vector<std::vector<T*>>* from = nullptr;
    const std::vector<std::vector<T*>>* to = nullptr;
  };

  // `stage`: the stage's sharding (its transformed dims whole in every block); `from` and `to`: the shardings of the
  // blocks read and written; `dims` and `forward`: the stage's transformed dims and sign; `operation`: what identifies
  // the stage and direction across processes (checked per run, so processes running different transforms get an
  // error, not each other's blocks). Collective over nothing.
  FusedStage(const NamedSharding& from, const NamedSharding& stage, const NamedSharding& to, const Shape& shape,
             const std::vector<int>& dims, bool forward, std::uint64_t operation)
      : m_operation(operation) {
    const Mesh& mesh = stage.mesh();
    // Every device's position among its process's devices of the mesh (local-device order).
    const std::vector<Device> devs = devices_by_process(mesh);
    std::unordered_map<int, int> slot_of;
    m_slots.assign(static_cast<std::size_t>(process_count()), 0);
    for (const Device& d : devs) slot_of[d.id] = m_slots[static_cast<std::size_t>(d.process_index)]++;
    // What each process publishes per run: the operation, then per block the addresses of its two blocks.
    m_counts.resize(m_slots.size());
    m_offsets.resize(m_slots.size());
    for (std::size_t p = 0, at = 0; p < m_slots.size(); ++p) {
      m_offsets[p] = static_cast<int>(at);
      m_counts[p] = 1 + 2 * m_slots[p];
      at += static_cast<std::size_t>(m_counts[p]);
    }
    std::vector<Device> mine;
    for (const Device& d : local_devices())
      if (mesh.contains(d)) mine.push_back(d);
    // Where tiles stay: by the largest process's blocks, so that every process takes (and describes) the same way.
    std::vector<int64_t> stage_bytes(m_slots.size(), 0);
    for (const Device& d : devs)
      stage_bytes[static_cast<std::size_t>(d.process_index)] +=
          volume(stage.index(shape, d)) * static_cast<int64_t>(sizeof(T));
    m_stage_bytes = stage_bytes[static_cast<std::size_t>(process_index())];
    if (*std::max_element(stage_bytes.begin(), stage_bytes.end()) <= fused_in_block_max_bytes() &&
        columns_fit(stage, shape, devs, dims))
      m_home = to == stage ? Home::to_block : from == stage ? Home::from_block : Home::buffer;

    // The pieces of the transposes the stage replaces (none on the side where the tile stays in its block).
    std::vector<const PlanPiece*> in, out;
    std::shared_ptr<const ReshardPlan> gather, scatter;
    if (m_home != Home::from_block) {
      gather = reshard_plan<T>(from, stage, shape);
      for (const PlanPiece& p : gather->local_pieces()) in.push_back(&p);
      for (const PeerPieces& peer : gather->recvs())
        for (const PlanPiece& p : peer.pieces) in.push_back(&p);
    }
    if (m_home != Home::to_block) {
      scatter = reshard_plan<T>(stage, to, shape);
      for (const PlanPiece& p : scatter->local_pieces()) out.push_back(&p);
      for (const PeerPieces& peer : scatter->sends())
        for (const PlanPiece& p : peer.pieces) out.push_back(&p);
    }

    for (std::size_t k = 0; k < mine.size(); ++k) {
      const Index block = stage.index(shape, mine[k]);
      const Shape strides = row_major_strides(box_shape(block));
      for (const Index& box : tiles(block, dims, sizeof(T))) {
        Tile t{k, box, {}, {}, 0, LocalProblem{}};
        for (std::size_t d = 0; d < box.size(); ++d) t.at += (box[d].start - block[d].start) * strides[d];
        // In place in the tile buffer or in the output's block, or from the input's block into the tile buffer.
        const Laid laid = lay_out(box, dims, m_home == Home::buffer);  // the tile as the tile buffer holds it
        LocalProblem& problem = t.problem;
        problem.kind = Kind::c2c;
        problem.forward = forward;
        problem.in_block = problem.out_block = m_home == Home::buffer ? laid.extents : box_shape(box);
        problem.dims = dims;
        problem.in_place = m_home != Home::from_block;
        problem.in_embed = m_home == Home::buffer ? laid.embed : box_shape(block);
        problem.out_embed = m_home == Home::to_block ? box_shape(block) : laid.embed;
        // Gathered into the tile buffer, or into its block where the tile stays there; scattered from the buffer.
        for (const PlanPiece* p : in) {
          if (p->dst != mine[k]) continue;
          const Index region = intersect(p->box, box);
          if (volume(region) == 0) continue;
          const Index src = from.index(shape, p->src);
          const auto g = m_home == Home::to_block
                             ? darray::detail::box_copy_geometry(src, block, region)
                             : laid.into(darray::detail::box_copy_geometry(src, box, region), box, region, true);
          t.in.push_back(Copy{p->src.process_index, slot_of.at(p->src.id), darray::detail::simplify(g)});
        }
        for (const PlanPiece* p : out) {
          if (p->src != mine[k]) continue;
          const Index region = intersect(p->box, box);
          if (volume(region) == 0) continue;
          const auto g =
              laid.into(darray::detail::box_copy_geometry(box, to.index(shape, p->dst), region), box, region, false);
          t.out.push_back(Copy{p->dst.process_index, slot_of.at(p->dst.id), darray::detail::simplify(g)});
        }
        if (m_home != Home::to_block) m_max_tile = std::max(m_max_tile, laid.elements);
        m_tiles.push_back(std::move(t));
      }
    }
    m_streaming = static_cast<std::size_t>(m_stage_bytes) >= darray::detail::streaming_min_total_bytes;
  }

  const std::vector<Tile>& tiles() const { return m_tiles; }
  Home home() const { return m_home; }
  // The tile buffer run() needs (0 where the tiles stay in their blocks).
  int64_t max_tile_elements() const { return m_max_tile; }

  // Runs the stage: `from` and `to` are this process's blocks of the two shardings (local-device order), `tile` a
  // buffer of max_tile_elements(), fft(t, in, out) runs t.problem from `in` to `out`: the tile buffer (in place), or
  // the tile's place in its block (home()), in place there or into the tile buffer; `mapped`: the
  // peers' blocks this process maps, where they are (see Mapped). Collective over the job: the blocks' addresses
  // are exchanged first (after which peers read `from` and write `to`), and no process
  // returns before every process is done with every block. A failed copy (a peer gone) is the same error everywhere.
  template <class FFT>
  void run(const char* api, const std::vector<const T*>& from, const std::vector<T*>& to, T* tile, FFT&& fft,
           const Mapped& mapped) const {
    MPI_Comm comm = darray::detail::world_comm();
    const int procs = process_count(), me = process_index();
    const std::vector<int>& counts = m_counts;
    const std::vector<int>& offsets = m_offsets;
    std::vector<std::uint64_t>& mine = m_mine;  // reused, as `all` and `ranges`: a run allocates nothing once warm
    mine.resize(static_cast<std::size_t>(counts[static_cast<std::size_t>(me)]));
    mine[0] = m_operation;
    for (std::size_t k = 0; k < from.size(); ++k) {
      mine[1 + 2 * k] = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(from[k]));
      mine[2 + 2 * k] = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(to[k]));
    }
    std::vector<std::uint64_t>& all = m_all;
    all.resize(static_cast<std::size_t>(offsets.back() + counts.back()));
    darray::detail::arrive_together(comm, api);  // under DARRAY_TIMEOUT_S: a process that never comes is an error
    DARRAY_MPI_CHECK(MPI_Allgatherv(mine.data(), static_cast<int>(mine.size()), MPI_UINT64_T, all.data(), counts.data(),
                                    offsets.data(), MPI_UINT64_T, comm));
    const std::uint64_t first = all[0];
    for (int p = 1; p < procs; ++p) {
      const std::uint64_t theirs = all[static_cast<std::size_t>(offsets[static_cast<std::size_t>(p)])];
      DARRAY_THROW_IF(theirs != first, InvalidArgument, api,
                      "processes 0 and " << p << " ran different transforms at the same time (operations " << first
                                         << " and " << theirs
                                         << "): every process must call the same plan's forward() or backward()");
    }
    auto address = [&](const Copy& c, int which) {
      return all[static_cast<std::size_t>(offsets[static_cast<std::size_t>(c.process)] + 1 + 2 * c.slot + which)];
    };

    int failed_errno = 0, failed_process = -1;
    std::vector<std::vector<darray::detail::PeerRange>>& ranges = m_ranges;
    ranges.resize(static_cast<std::size_t>(procs));
    // Copies of one direction of a tile: same-process ones at once, the others gathered per process into one call.
    // `here`: the tile's side of the copies (the tile buffer, or its block).
    auto move = [&](const std::vector<Copy>& copies, bool gathering, T* here) {
      for (auto& r : ranges) r.clear();
      for (const Copy& c : copies) {
        if (c.process == me) {
          if (gathering)
            darray::detail::strided_copy_host<T>(from[static_cast<std::size_t>(c.slot)], here, c.geometry, false);
          else
            darray::detail::strided_copy_host<T>(here, to[static_cast<std::size_t>(c.slot)], c.geometry, m_streaming);
          continue;
        }
        const std::vector<std::vector<T*>>* shared = gathering ? mapped.from : mapped.to;
        if (shared != nullptr) {
          T* peer = (*shared)[static_cast<std::size_t>(c.process)][static_cast<std::size_t>(c.slot)];
          if (gathering)
            darray::detail::strided_copy_host<T>(peer, here, c.geometry, false);
          else
            darray::detail::strided_copy_host<T>(here, peer, c.geometry, m_streaming);
          continue;
        }
        const std::uint64_t base = address(c, gathering ? 0 : 1);
        auto& r = ranges[static_cast<std::size_t>(c.process)];
        darray::detail::for_each_run(c.geometry, [&](int64_t s, int64_t d, int64_t run) {
          const int64_t remote = gathering ? s : d;
          T* local = here + (gathering ? d : s);
          r.push_back(darray::detail::PeerRange{local, base + static_cast<std::uint64_t>(remote) * sizeof(T),
                                                static_cast<std::size_t>(run) * sizeof(T)});
        });
      }
      for (int p = 0; p < procs && failed_errno == 0; ++p) {
        const auto& r = ranges[static_cast<std::size_t>(p)];
        if (r.empty()) continue;
        const int pid = darray::detail::single_copy_pid(p);
        const int err =
            gathering ? darray::detail::read_from_process(pid, r) : darray::detail::write_to_process(pid, r);
        if (err != 0) {
          failed_errno = err;
          failed_process = p;
        }
      }
    };
    for (const Tile& t : m_tiles) {
      switch (m_home) {
        case Home::buffer:
          move(t.in, true, tile);
          if (failed_errno != 0) break;
          fft(t, static_cast<const T*>(tile), tile);
          move(t.out, false, tile);
          break;
        case Home::to_block: {
          T* block = to[t.block];
          move(t.in, true, block);
          if (failed_errno != 0) break;
          fft(t, static_cast<const T*>(block + t.at), block + t.at);
          break;
        }
        case Home::from_block:
          fft(t, from[t.block] + t.at, tile);
          move(t.out, false, tile);
          break;
      }
      if (failed_errno != 0) break;
    }

    if (m_streaming) darray::detail::stream_fence();
    // Nobody returns (and reuses its blocks) before everyone is done with them; a failure anywhere fails all.
    int failed = failed_errno != 0 ? 1 : 0, any = 0;
    darray::detail::arrive_together(comm, api);
    DARRAY_MPI_CHECK(MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, comm));
    if (any == 0) return;
    darray::detail::CapturedError error;
    if (failed != 0) {
      error.kind = darray::detail::ErrorKind::mpi;
      error.api = api;
      std::ostringstream os;
      os << "a single copy with process " << failed_process << " failed: " << std::strerror(failed_errno)
         << " (the process left the run, or its memory is no longer readable)";
      error.message = os.str();
    }
    darray::detail::agree_on_error(comm, error);
  }

 private:
  // A tile as the tile buffer lays it out: row-major, except where the points of its innermost strided transformed
  // dim t meet too few L1 sets (column_thrashes): then t's pitch is one cache line longer. Where no dim inside t is
  // transformed (a slab's dim-0 stage) and both sides of the FFT are the buffer, the dims inside t are one run of
  // columns there, padded after each of t's points, so FFTW still loops over one batch of columns; otherwise (a
  // side in a block, which keeps the block's rank) the rows are one line longer. FFTW_ESTIMATE's plan of a column
  // whose points share a few sets evicts them before it is done with them (FFTW_MEASURE picks a buffered plan
  // instead): 256 points 2 KiB apart, 128 of them side by side, 636 us against 91 measured and 88 with rows of 124
  // (r2c 256^3 at 2 processes, tiles of 256 x 1 x 128: 107-115 ms of FFTs a transform). bench/fft, c2c 64^3 at 2
  // processes, same layout (tiles of 64 x 8 x 64 through the buffer both ways, 64 points 8 KiB apart: one set; AMD
  // EPYC, 48 KiB of L1 at 12 ways): a forward in 1.33-1.36 ms unpadded, 1.09-1.14 with rows one line longer (the
  // rows no longer one batch of columns: on an earlier EPYC with 32 KiB of L1 that cost more than it saved), 0.76-0.80
  // with the points 8 KiB + 64 B apart.
  struct Laid {
    Shape strides;         // each dim's element stride in the tile buffer
    int64_t elements = 0;  // the buffer the tile takes
    Shape extents, embed;  // the tile's FFT problem there: its extents (dims inside t as one where padded after t's
                           // points) and its embedding (empty: none)

    // `g`, box_copy_geometry of `region` with the tile's `box` as its `dst` side or its source, with the tile's side
    // as the buffer lays it out.
    darray::detail::CopyGeometry into(darray::detail::CopyGeometry g, const Index& box, const Index& region,
                                      bool dst) const {
      int64_t* stride = dst ? g.dst_stride : g.src_stride;
      int64_t& offset = dst ? g.dst_offset : g.src_offset;
      offset = 0;
      for (int d = 0; d < g.rank; ++d) {
        const auto k = static_cast<std::size_t>(d);
        stride[d] = strides[k];
        offset += (region[k].start - box[k].start) * strides[k];
      }
      return g;
    }
  };
  static Laid lay_out(const Index& box, const std::vector<int>& dims, bool both_in_buffer) {
    constexpr int64_t line = 64;
    const auto bytes = static_cast<int64_t>(sizeof(T));
    const int rank = static_cast<int>(box.size());
    Laid laid;
    const Shape extents = box_shape(box);
    const Shape row_major = row_major_strides(extents);
    laid.strides = row_major;
    laid.elements = volume(extents);
    laid.extents = extents;
    int t = -1;  // the innermost strided transformed dim
    for (int d : dims)
      if (d + 1 < rank) t = std::max(t, d);
    const auto tk = static_cast<std::size_t>(t);
    if (t < 0 || bytes > line || line % bytes != 0 ||
        !column_thrashes(static_cast<std::size_t>(row_major[tk] * bytes), extents[tk]))
      return laid;
    const int64_t pad = line / bytes;
    bool inner_transformed = false;
    for (int d : dims)
      if (d > t) inner_transformed = true;
    if (both_in_buffer && !inner_transformed) {
      // Dims 0..t as they are, the dims inside t as one run of columns, padded after each of t's points.
      laid.extents.assign(extents.begin(), extents.begin() + t + 1);
      laid.extents.push_back(row_major[tk]);
      laid.embed = laid.extents;
      laid.embed.back() += pad;
      laid.strides[tk] += pad;
    } else {
      // Rows one line longer.
      laid.embed = extents;
      laid.embed.back() += pad;
      laid.strides = row_major_strides(laid.embed);
    }
    for (int d = t; d-- > 0;) {
      const auto k = static_cast<std::size_t>(d);
      laid.strides[k] = laid.strides[k + 1] * extents[k + 1];
    }
    laid.elements = laid.strides[0] * extents[0];
    return laid;
  }

  // Whether FFTs run in place in the stage's blocks without thrashing L1: in every device's block of the stage,
  // the points of each strided transformed dim meet enough L1 sets (column_thrashes); the same answer everywhere.
  // bench/fft, c2c 64^3 at 2 processes, transposed output (FFTW_ESTIMATE, the EPYC above): the tiles' 64 points 32
  // KiB apart in the output's blocks (one set), a forward in 1.24-1.40 ms, against 0.64-0.67 through the tile buffer.
  static bool columns_fit(const NamedSharding& stage, const Shape& shape, const std::vector<Device>& devs,
                          const std::vector<int>& dims) {
    for (const Device& d : devs) {
      const Shape extents = box_shape(stage.index(shape, d));
      const Shape strides = row_major_strides(extents);
      for (int t : dims) {
        const auto k = static_cast<std::size_t>(t);
        if (k + 1 < extents.size() && column_thrashes(static_cast<std::size_t>(strides[k]) * sizeof(T), extents[k]))
          return false;
      }
    }
    return true;
  }

  // The tiles of a block: whole along the transformed dims, split along the outermost other dim (and the next one
  // where a single plane of the outermost is over fused_tile_bytes) into about fused_tile_bytes each.
  static std::vector<Index> tiles(const Index& block, const std::vector<int>& dims, std::size_t element_bytes) {
    std::vector<Index> out;
    if (volume(block) == 0) return out;
    auto transformed = [&](int d) { return std::find(dims.begin(), dims.end(), d) != dims.end(); };
    std::vector<int> free;
    for (int d = 0; d < static_cast<int>(block.size()); ++d)
      if (!transformed(d) && block[static_cast<std::size_t>(d)].size() > 1) free.push_back(d);
    if (free.empty()) return {block};
    const int u = free[0];
    const int v = free.size() > 1 ? free[1] : -1;
    const int64_t elements = std::max<int64_t>(1, fused_tile_bytes / static_cast<int64_t>(element_bytes));
    const int64_t per_u = volume(block) / block[static_cast<std::size_t>(u)].size();
    int64_t step_u = std::max<int64_t>(1, elements / per_u), step_v = 0;
    if (per_u > elements && v >= 0)
      step_v = std::max<int64_t>(1, elements / (per_u / block[static_cast<std::size_t>(v)].size()));
    const Slice bu = block[static_cast<std::size_t>(u)];
    for (int64_t a = bu.start; a < bu.stop; a += step_u) {
      Index box = block;
      box[static_cast<std::size_t>(u)] = Slice{a, std::min(a + step_u, bu.stop)};
      if (step_v == 0) {
        out.push_back(box);
        continue;
      }
      const Slice bv = block[static_cast<std::size_t>(v)];
      for (int64_t b = bv.start; b < bv.stop; b += step_v) {
        box[static_cast<std::size_t>(v)] = Slice{b, std::min(b + step_v, bv.stop)};
        out.push_back(box);
      }
    }
    return out;
  }

  std::uint64_t m_operation;
  Home m_home = Home::buffer;
  std::vector<int> m_slots;              // per process: its blocks (devices of the mesh)
  std::vector<int> m_counts, m_offsets;  // per process: its words in a run's address exchange, and where they start
  std::vector<Tile> m_tiles;
  int64_t m_max_tile = 0;
  int64_t m_stage_bytes = 0;  // this process's blocks of the stage
  // Blocks beyond a share of the last-level cache are written with streaming stores: they are not read again in
  // this transform, and the stores then spare the reads of their lines (bench/fft, 128^3 c2c at 2 processes, the
  // transposed layout's local writes 2.0 -> 0.9-1.0 ms); smaller ones stay in cache for the caller (64^3 and r2c
  // 128^3 streamed: 0.74-0.86 -> 1.02-1.27x FFTW-MPI).
  bool m_streaming = false;
  mutable std::vector<std::vector<darray::detail::PeerRange>> m_ranges;
  mutable std::vector<std::uint64_t> m_mine, m_all;  // run()'s address exchange
};

}  // namespace detail
}  // namespace fft
}  // namespace darray
