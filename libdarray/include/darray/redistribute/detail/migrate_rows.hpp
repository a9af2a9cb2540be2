// The steps of migrate(): a stable counting sort of each local device's rows by destination (Kokkos kernels, so it
// runs where the rows are), one exchange of the counts (and of any error) among the processes, then the rows: those
// bound for a device of this process scattered straight into their new view by the sort's last kernel, the others
// into a send buffer grouped by destination, from which one MoveEngine moves each run of rows from one device to a
// remote one as a (rows x row_width) box.
#pragma once

#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "darray/array/detail/host_loop.hpp"
#include "darray/array/detail/stream_copy.hpp"
#include "darray/array/detail/view.hpp"
#include "darray/array/dtype.hpp"
#include "darray/comm/check.hpp"
#include "darray/comm/exchange.hpp"
#include "darray/core/error.hpp"
#include "darray/redistribute/detail/engine.hpp"
#include "darray/runtime/detail/state.hpp"
#include "darray/runtime/environment.hpp"
#include "darray/sharding/mesh.hpp"

namespace darray {
namespace detail {

// One device's rows ordered by destination: places in mesh-position order of the destinations, stable within
// each; `starts[k]` the first place bound for the device at mesh position k (starts[D] = rows). The rows are cut
// into `chunks` runs of `per_chunk`; slots(k * chunks + c) is chunk c's first place bound for k. `rows`, the send
// buffer, receives the rows bound for other processes (only those), by destination in mesh-position order;
// `remote_first[k]` is where the rows for a remote k begin in it.
template <class T, class M>
struct SortedRows {
  Kokkos::View<T**, Kokkos::LayoutRight, M> rows;
  std::vector<int64_t> remote_first;
  // Host: how many runs of one destination chunk c holds, their ends at run_ends(c * run_capacity + r), found by
  // the count and used again by the scatter; 0 when the chunk goes row by row (its destinations change too often).
  std::vector<int64_t> runs;
  Kokkos::View<int64_t*, Kokkos::HostSpace> run_ends;
  int64_t run_capacity = 0;
  Kokkos::View<int64_t*, M> slots;
  int64_t chunks = 0, per_chunk = 0;
  std::vector<int64_t> starts;
  int64_t first_invalid = 0;  // the first row whose destination is not a device of the mesh (rows: none)
};

// What a process tells every other before the rows move: the first error it found (code 0: none) and its counts.
enum class MigrateError : int64_t { none = 0, dest_count = 1, dest_extent = 2, destination = 3 };
inline constexpr std::size_t migrate_header_words = 4;  // code, then three values the message names

// On the host, rows go run by run while their runs of one destination are 4 rows long on average or more
// (particles that mostly stay, or rows sorted by owner): a run is one counter update and one copy. Scattered
// destinations go row by row, as a loop over short runs would mispredict a branch per row (measured: 2.5x the time);
// a chunk switches for good once its runs so far average under 4 rows (after a grace of run_grace runs).
inline constexpr int64_t run_grace = 16;

// The most runs a chunk of `rows` rows stores before it switches to row by row.
inline int64_t run_capacity_of(int64_t rows) { return rows / 4 + run_grace + 1; }

// The end (at most `end`) of the run of rows from row i on with row i's destination; four per SSE2 compare.
template <class View>
int64_t run_end(const View& dest, int64_t i, int64_t end) {
  const int id = dest(i);
  int64_t j = i + 1;
#if defined(__SSE2__)
  if (dest.span_is_contiguous()) {
    const int* d = dest.data();
    const __m128i same = _mm_set1_epi32(id);
    for (; j + 4 <= end; j += 4) {
      const int equal =
          _mm_movemask_epi8(_mm_cmpeq_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(d + j)), same));
      if (equal != 0xFFFF) return j + __builtin_ctz(static_cast<unsigned>(~equal) & 0xFFFFu) / 4;
    }
  }
#endif
  while (j < end && dest(j) == id) ++j;
  return j;
}

// Mesh position of each global device id (-1: not in the mesh), as a view in M for the kernels.
template <class M>
Kokkos::View<int*, M> mesh_position_table(const Mesh& mesh) {
  int max_id = -1;
  for (const Device& d : mesh.devices()) max_id = std::max(max_id, d.id);
  auto host = cached_view<Kokkos::View<int*, Kokkos::HostSpace>>("darray::migrate positions",
                                                                 static_cast<std::size_t>(max_id + 1));
  for (std::size_t i = 0; i < host.extent(0); ++i) host(i) = -1;
  for (std::size_t k = 0; k < mesh.devices().size(); ++k)
    host(static_cast<std::size_t>(mesh.devices()[k].id)) = static_cast<int>(k);
  return copy_to_space<M>(host, "darray::migrate positions");
}

// Stable counting sort of rows by destination mesh position. The rows are cut into C chunks; kernel 1 counts each
// chunk's rows per destination (a chunk is one sequential loop, so no atomics) and finds the first row with an
// invalid destination (then nothing more is done), an exclusive scan over
// (destination, chunk) gives each chunk its first place per destination; scatter_rows then hands out the places in
// row order and moves each row there.
template <class T, class M>
SortedRows<T, M> order_rows(const Kokkos::View<T**, Kokkos::LayoutRight, M>& rows,
                            const Kokkos::View<const int*, M>& dest, const Kokkos::View<int*, M>& table,
                            int64_t devices) {
  using Exec = typename M::execution_space;
  using Policy = Kokkos::RangePolicy<Exec, Kokkos::IndexType<int64_t>>;
  const int64_t n = static_cast<int64_t>(rows.extent(0));
  SortedRows<T, M> out;
  out.starts.assign(static_cast<std::size_t>(devices + 1), n);
  if (n == 0) {
    std::fill(out.starts.begin(), out.starts.end(), 0);
    return out;
  }
  // Enough chunks to occupy the execution space, at least 64 rows each, and at most 4M counters in all.
  const int64_t budget = std::max<int64_t>(1, (int64_t(1) << 22) / devices);
  const int64_t chunks =
      std::max<int64_t>(1, std::min({static_cast<int64_t>(Exec::concurrency()), (n + 63) / 64, budget}));
  const int64_t per_chunk = (n + chunks - 1) / chunks;
  auto slots =
      cached_view<Kokkos::View<int64_t*, M>>("darray::migrate slots", static_cast<std::size_t>(devices * chunks));
  Kokkos::deep_copy(slots, int64_t(0));
  const int64_t ids = static_cast<int64_t>(table.extent(0));
  out.first_invalid = n;
  if constexpr (host_execution_space_v<Exec>) {
    // Host: one scan of the destinations per chunk finds its runs (stored for the scatter) and counts them, a run
    // one counter update (an update per row chains through memory), until the runs prove short; the rest of the
    // chunk is then counted row by row, and the scatter goes row by row over the whole chunk.
    out.runs.assign(static_cast<std::size_t>(chunks), 0);
    out.run_capacity = run_capacity_of(per_chunk);
    out.run_ends = cached_view<Kokkos::View<int64_t*, Kokkos::HostSpace>>(
        "darray::migrate runs", static_cast<std::size_t>(chunks * out.run_capacity));
    int64_t* const runs = out.runs.data();
    int64_t* const run_ends = out.run_ends.data();
    const int64_t capacity = out.run_capacity;
    static const std::string kernel_name = "darray::migrate count";  // kokkos_compat.hpp: built once
    Kokkos::parallel_reduce(
        kernel_name, Policy(0, chunks),
        [=](const int64_t c, int64_t& bad) {
          const int64_t begin = c * per_chunk, end = std::min(n, begin + per_chunk);
          int64_t* const ends = run_ends + c * capacity;
          int64_t r = 0, i = begin;
          while (i < end && 4 * r <= i - begin + 4 * run_grace) {
            const int id = dest(i);
            const int64_t next = run_end(dest, i, end);
            const int k = id >= 0 && id < ids ? table(id) : -1;
            if (k < 0)
              bad = std::min(bad, i);
            else
              slots(k * chunks + c) += next - i;
            ends[r++] = next;
            i = next;
          }
          runs[c] = i == end ? r : 0;
          for (; i < end; ++i) {
            const int id = dest(i);
            const int k = id >= 0 && id < ids ? table(id) : -1;
            if (k < 0)
              bad = std::min(bad, i);
            else
              slots(k * chunks + c) += 1;
          }
        },
        Kokkos::Min<int64_t>(out.first_invalid));
  } else {
    static const std::string kernel_name = "darray::migrate count";  // kokkos_compat.hpp: built once
    Kokkos::parallel_reduce(
        kernel_name, Policy(0, chunks),
        KOKKOS_LAMBDA(const int64_t c, int64_t& bad) {
          const int64_t end = c * per_chunk + per_chunk < n ? c * per_chunk + per_chunk : n;
          for (int64_t i = c * per_chunk; i < end; ++i) {
            const int id = dest(i);
            const int k = id >= 0 && id < ids ? table(id) : -1;
            if (k < 0) {
              if (i < bad) bad = i;
              continue;
            }
            slots(k * chunks + c) += 1;
          }
        },
        Kokkos::Min<int64_t>(out.first_invalid));
  }
  if (out.first_invalid < n) return out;
  static const std::string scan_name = "darray::migrate scan";  // kokkos_compat.hpp: built once
  Kokkos::parallel_scan(
      scan_name, Policy(0, devices * chunks), KOKKOS_LAMBDA(const int64_t i, int64_t& sum, const bool final) {
        const int64_t count = slots(i);
        if (final) slots(i) = sum;
        sum += count;
      });
  // Each destination's first row: its first chunk's slot.
  auto starts = cached_view<Kokkos::View<int64_t*, M>>("darray::migrate starts", static_cast<std::size_t>(devices));
  static const std::string starts_name = "darray::migrate starts";  // kokkos_compat.hpp: built once
  Kokkos::parallel_for(
      starts_name, Policy(0, devices), KOKKOS_LAMBDA(const int64_t k) { starts(k) = slots(k * chunks); });
  out.slots = slots;
  out.chunks = chunks;
  out.per_chunk = per_chunk;
  const auto host = host_copy_target(starts, "darray::migrate starts");  // from the cache, not a fresh mirror
  Kokkos::deep_copy(host, starts);                                       // fences
  for (int64_t k = 0; k < devices; ++k) out.starts[static_cast<std::size_t>(k)] = host(static_cast<std::size_t>(k));
  return out;
}

// Each row to its place: chunk by chunk, in row order, row i bound for mesh position k takes the next place p of
// its chunk for k and goes to the address base(k) + p rows (base as an integer: for a destination on this process,
// its new view's address, shifted by the run's first row there and back by starts[k], wrapping modulo 2^64; for the
// others, the send buffer's).
template <class T, class M>
void scatter_rows(const Kokkos::View<T**, Kokkos::LayoutRight, M>& rows, const Kokkos::View<const int*, M>& dest,
                  const Kokkos::View<int*, M>& table, const SortedRows<T, M>& order,
                  const std::vector<std::uintptr_t>& bases) {
  using Exec = typename M::execution_space;
  const int64_t n = static_cast<int64_t>(rows.extent(0)), width = static_cast<int64_t>(rows.extent(1));
  if (n == 0) return;
  Kokkos::View<std::uintptr_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> host(
      const_cast<std::uintptr_t*>(bases.data()), bases.size());
  const auto base = copy_to_space<M>(host, "darray::migrate bases");
  const auto slots = order.slots;
  const int64_t chunks = order.chunks, per_chunk = order.per_chunk;
  const Kokkos::RangePolicy<Exec, Kokkos::IndexType<int64_t>> policy(0, chunks);
  if constexpr (host_execution_space_v<Exec>) {
    // Host: long runs of rows bound for the same device move run by run (particles that stay where they are, or
    // rows sorted by owner, copy at memcpy speed; scattered rows one at a time), and large scatters write with
    // streaming stores, as the engine's large local copies do (the new rows are not read again before the call
    // returns, and skipping the read-for-ownership of each line saves a third).
    const std::size_t row_bytes = static_cast<std::size_t>(width) * sizeof(T);
    // Either every store of the scatter streams or none does: a plain store into a line that streaming stores are
    // filling costs far more than either (measured: a random scatter at 2x the time).
    const bool streaming = row_bytes % 8 == 0 && static_cast<std::size_t>(n) * row_bytes >= streaming_min_total_bytes;
    const int64_t* const runs = order.runs.data();
    const int64_t* const run_ends = order.run_ends.data();
    const int64_t capacity = order.run_capacity;
    static const std::string kernel_name = "darray::migrate scatter";  // kokkos_compat.hpp: built once
    Kokkos::parallel_for(kernel_name, policy, [=](const int64_t c) {
      const int64_t begin = c * per_chunk, end = std::min(n, begin + per_chunk);
      if (runs[c] == 0) {
        for (int64_t i = begin; i < end; ++i) {
          const int k = table(dest(i));
          const int64_t place = slots(k * chunks + c)++;
          void* to = reinterpret_cast<void*>(base(k) + static_cast<std::uintptr_t>(place) * row_bytes);
          copy_small(to, rows.data() + i * width, row_bytes, streaming);
        }
      } else {
        const int64_t* const ends = run_ends + c * capacity;
        for (int64_t r = 0, i = begin; r < runs[c]; ++r) {
          const int64_t next = ends[r];
          const int k = table(dest(i));
          const int64_t place = slots(k * chunks + c);
          slots(k * chunks + c) = place + (next - i);
          void* to = reinterpret_cast<void*>(base(k) + static_cast<std::uintptr_t>(place) * row_bytes);
          const std::size_t bytes = static_cast<std::size_t>(next - i) * row_bytes;
          if (streaming)
            copy_small(to, rows.data() + i * width, bytes, true);
          else
            copy_bytes(to, rows.data() + i * width, bytes);
          i = next;
        }
      }
      if (streaming) stream_fence();
    });
  } else {
    static const std::string kernel_name = "darray::migrate scatter";  // kokkos_compat.hpp: built once
    Kokkos::parallel_for(
        kernel_name, policy, KOKKOS_LAMBDA(const int64_t c) {
          const int64_t end = c * per_chunk + per_chunk < n ? c * per_chunk + per_chunk : n;
          for (int64_t i = c * per_chunk; i < end; ++i) {
            const int k = table(dest(i));
            const int64_t place = slots(k * chunks + c)++;
            T* to = reinterpret_cast<T*>(base(k) + static_cast<std::uintptr_t>(place * width) * sizeof(T));
            const T* from = rows.data() + i * width;
            for (int64_t v = 0; v < width; ++v) to[v] = from[v];
          }
        });
  }
}

// Device ids of a mesh for an error message: a range when they are consecutive, else the first ones.
inline std::string mesh_ids_text(const Mesh& mesh) {
  std::vector<int> ids;
  for (const Device& d : mesh.devices()) ids.push_back(d.id);
  std::sort(ids.begin(), ids.end());
  std::ostringstream os;
  if (ids.back() - ids.front() + 1 == static_cast<int>(ids.size())) {
    os << ids.front() << ".." << ids.back();
    return os.str();
  }
  for (std::size_t k = 0; k < ids.size() && k < 16; ++k) os << (k ? ", " : "") << ids[k];
  if (ids.size() > 16) os << ", ... (" << ids.size() << " devices)";
  return os.str();
}

// The rows of every local device moved to the devices dest names; the new views in local-device order.
template <class T, class M>
std::vector<Kokkos::View<T**, Kokkos::LayoutRight, M>> migrate_rows(
    const Mesh& mesh, int64_t width, const std::vector<Device>& locals,
    const std::vector<Kokkos::View<T**, Kokkos::LayoutRight, M>>& rows,
    const std::vector<Kokkos::View<const int*, M>>& dest) {
  using Exec = typename M::execution_space;
  const int me = process_index(), processes = process_count();
  const int64_t devices = static_cast<int64_t>(mesh.devices().size());
  if (consistency_checks_enabled())  // DARRAY_CHECK=1: every process migrates alike, or who diverged
    check_consistent(world_comm(), "migrate row_width " + std::to_string(width) + " dtype " + dtype_name<T>() +
                                       " mesh of " + std::to_string(devices) + " devices");
  detail::fence(default_instance<Exec>());  // kernels may still be writing the rows or the destinations

  // 1. Check the destinations and sort each device's rows by them; an error is kept, not thrown, until every
  //    process has heard of it.
  std::array<int64_t, migrate_header_words> error{};
  std::vector<SortedRows<T, M>> sorted(locals.size());
  Kokkos::View<int*, M> table;
  if (dest.size() != locals.size()) {
    error = {static_cast<int64_t>(MigrateError::dest_count), static_cast<int64_t>(dest.size()),
             static_cast<int64_t>(locals.size()), 0};
  } else {
    table = mesh_position_table<M>(mesh);
    for (std::size_t s = 0; s < locals.size() && error[0] == 0; ++s) {
      const int64_t n = static_cast<int64_t>(rows[s].extent(0));
      if (static_cast<int64_t>(dest[s].extent(0)) != n) {
        error = {static_cast<int64_t>(MigrateError::dest_extent), locals[s].id, static_cast<int64_t>(dest[s].extent(0)),
                 n};
        break;
      }
      sorted[s] = order_rows<T, M>(rows[s], dest[s], table, devices);
      const int64_t bad = sorted[s].first_invalid;
      if (bad < n) {
        int value = 0;
        Kokkos::deep_copy(value, Kokkos::subview(dest[s], bad));
        error = {static_cast<int64_t>(MigrateError::destination), locals[s].id, bad, value};
        break;
      }
    }
  }
  if (error[0] != 0) {
    SortedRows<T, M> none;
    none.starts.assign(static_cast<std::size_t>(devices + 1), 0);
    sorted.assign(locals.size(), none);
  }

  // 2. Counts: to every process, this process's error header and how many rows each of its devices sends to each
  //    of that process's devices (local-device order on both sides). Every pair talks, so one Alltoallv.
  std::vector<std::vector<int64_t>> positions(static_cast<std::size_t>(processes));  // mesh positions, local order
  for (int q = 0; q < processes; ++q) {
    auto& pos = positions[static_cast<std::size_t>(q)];
    pos = mesh.process_positions(q);
    std::sort(pos.begin(), pos.end(), [&](int64_t x, int64_t y) {
      return mesh.devices()[static_cast<std::size_t>(x)].local_index <
             mesh.devices()[static_cast<std::size_t>(y)].local_index;
    });
  }
  const std::size_t mine = locals.size();
  ExchangePlan xplan;
  std::vector<int64_t> send_words, recv_words;
  std::size_t recv_at = 0;
  for (int q = 0; q < processes; ++q) {
    const auto& theirs = positions[static_cast<std::size_t>(q)];
    const std::size_t at = send_words.size();
    send_words.insert(send_words.end(), error.begin(), error.end());
    for (std::size_t s = 0; s < mine; ++s)
      for (const int64_t t : theirs)
        send_words.push_back(sorted[s].starts[static_cast<std::size_t>(t) + 1] -
                             sorted[s].starts[static_cast<std::size_t>(t)]);
    xplan.sends.push_back(PeerBytes{q, at * sizeof(int64_t), (send_words.size() - at) * sizeof(int64_t)});
    const std::size_t words = migrate_header_words + theirs.size() * mine;
    xplan.recvs.push_back(PeerBytes{q, recv_at * sizeof(int64_t), words * sizeof(int64_t)});
    recv_at += words;
  }
  recv_words.resize(recv_at);
  ExchangeOptions options;
  options.method = processes > 1 ? ExchangeMethod::alltoallv : ExchangeMethod::point_to_point;
  exchange(world_comm(), xplan, reinterpret_cast<const std::byte*>(send_words.data()),
           reinterpret_cast<std::byte*>(recv_words.data()), options);

  // 3. The first process that found an error names it on every process.
  for (int q = 0; q < processes; ++q) {
    const int64_t* h = recv_words.data() + xplan.recvs[static_cast<std::size_t>(q)].offset / sizeof(int64_t);
    const auto code = static_cast<MigrateError>(h[0]);
    if (code == MigrateError::none) continue;
    std::ostringstream os;
    if (processes > 1) os << "process " << q << ": ";
    if (code == MigrateError::dest_count)
      os << h[1] << " destination views given but the array has " << h[2]
         << " local devices; expected one view per local device";
    else if (code == MigrateError::dest_extent)
      os << "the destinations of device " << h[1] << " have " << h[2] << " entries but it holds " << h[3]
         << " rows; expected one destination per row";
    else
      os << "row " << h[2] << " of device " << h[1] << " has destination " << h[3]
         << ", which is not a device of the mesh; expected a device id in " << mesh_ids_text(mesh);
    DARRAY_THROW(InvalidArgument, "migrate", os.str());
  }

  // 4. Where rows land: each local destination takes its sources' runs by source device id ascending.
  struct Run {
    int src_id;
    int process;
    std::size_t src_slot;  // the source's local slot (this process's sources only)
    std::size_t dst_slot;  // the destination's local slot (this process's destinations only)
    int dst_id;
    int64_t rows;
    int64_t src_start;  // first row in the source's sorted rows (this process's sources only)
  };
  std::vector<std::vector<Run>> into(mine);  // per local destination: runs from every source with rows
  for (int q = 0; q < processes; ++q) {
    const auto& theirs = positions[static_cast<std::size_t>(q)];
    const int64_t* c =
        recv_words.data() + xplan.recvs[static_cast<std::size_t>(q)].offset / sizeof(int64_t) + migrate_header_words;
    for (std::size_t s = 0; s < theirs.size(); ++s)
      for (std::size_t t = 0; t < mine; ++t) {
        const int64_t count = c[s * mine + t];
        if (count == 0) continue;
        const Device& src = mesh.devices()[static_cast<std::size_t>(theirs[s])];
        int64_t start = 0;
        if (q == me) start = sorted[s].starts[static_cast<std::size_t>(positions[static_cast<std::size_t>(me)][t])];
        into[t].push_back(Run{src.id, q, s, t, locals[t].id, count, start});
      }
  }
  std::vector<Kokkos::View<T**, Kokkos::LayoutRight, M>> out;
  MoveList list;
  std::vector<std::pair<std::pair<int, int>, std::pair<int, Move>>> remote_recvs;  // ((src id, dst id), (proc, move))
  auto box = [&](int64_t n) { return Index{Slice{0, n}, Slice{0, width}}; };
  auto region = [&](std::size_t buffer, int64_t first_row) {
    Region r;
    r.buffer = static_cast<int>(buffer);
    r.offset = first_row * width;
    r.stride[0] = width;
    r.stride[1] = 1;
    return r;
  };
  // Where the scatter puts each source's rows, per destination mesh position: the send buffer, which holds only the
  // rows bound for other processes (none is allocated when all stay), or, for a device of this process, its new
  // view (see scatter_rows).
  std::vector<std::vector<std::uintptr_t>> bases(mine);
  for (std::size_t s = 0; s < mine; ++s) {
    SortedRows<T, M>& o = sorted[s];
    o.remote_first.assign(static_cast<std::size_t>(devices), 0);
    int64_t remote = 0;
    for (int64_t k = 0; k < devices; ++k) {
      const auto kk = static_cast<std::size_t>(k);
      o.remote_first[kk] = remote;
      if (mesh.devices()[kk].process_index != me) remote += o.starts[kk + 1] - o.starts[kk];
    }
    if (remote > 0) o.rows = allocate_view<T, 2, M>("darray::migrate send", {remote, width}, false);
    bases[s].resize(static_cast<std::size_t>(devices));
    for (std::size_t k = 0; k < bases[s].size(); ++k)  // unsigned arithmetic: wraps as for the local runs below
      bases[s][k] = reinterpret_cast<std::uintptr_t>(o.rows.data()) +
                    static_cast<std::uintptr_t>(o.remote_first[k] - o.starts[k]) * width * sizeof(T);
  }
  for (std::size_t t = 0; t < mine; ++t) {
    auto& runs = into[t];
    std::sort(runs.begin(), runs.end(), [](const Run& x, const Run& y) { return x.src_id < y.src_id; });
    int64_t total = 0;
    for (const Run& r : runs) total += r.rows;
    out.push_back(allocate_view<T, 2, M>("darray::ragged(" + to_string(locals[t]) + ")", {total, width}, false));
    const auto k = static_cast<std::size_t>(positions[static_cast<std::size_t>(me)][t]);
    int64_t at = 0;
    for (const Run& r : runs) {
      if (r.process == me)  // unsigned arithmetic: wraps when the run starts before its place in the sort
        bases[r.src_slot][k] = reinterpret_cast<std::uintptr_t>(out[t].data()) +
                               static_cast<std::uintptr_t>(at - r.src_start) * width * sizeof(T);
      else if (width > 0)
        remote_recvs.push_back({{r.src_id, r.dst_id}, {r.process, make_move(box(r.rows), {}, region(t, at))}});
      at += r.rows;
    }
  }
  for (std::size_t s = 0; s < mine; ++s) scatter_rows<T, M>(rows[s], dest[s], table, sorted[s], bases[s]);
  // Remote pieces in the order both sides derive: by source device id, then destination device id.
  std::sort(remote_recvs.begin(), remote_recvs.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  for (auto& r : remote_recvs) add_peer_move(list.recvs, r.second.first, std::move(r.second.second));
  if (width > 0) {
    std::vector<std::pair<std::pair<int, int>, std::pair<int, Move>>> remote_sends;
    for (std::size_t s = 0; s < mine; ++s)
      for (int64_t k = 0; k < devices; ++k) {
        const int64_t count =
            sorted[s].starts[static_cast<std::size_t>(k) + 1] - sorted[s].starts[static_cast<std::size_t>(k)];
        const Device& dst = mesh.devices()[static_cast<std::size_t>(k)];
        if (count == 0 || dst.process_index == me) continue;
        remote_sends.push_back(
            {{locals[s].id, dst.id},
             {dst.process_index,
              make_move(box(count), region(s, sorted[s].remote_first[static_cast<std::size_t>(k)]), {})}});
      }
    std::sort(remote_sends.begin(), remote_sends.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    for (auto& r : remote_sends) add_peer_move(list.sends, r.second.first, std::move(r.second.second));
  }
  std::sort(list.sends.begin(), list.sends.end(),
            [](const PeerMoves& x, const PeerMoves& y) { return x.process < y.process; });
  std::sort(list.recvs.begin(), list.recvs.end(),
            [](const PeerMoves& x, const PeerMoves& y) { return x.process < y.process; });

  // 5. The rows bound for other processes, on the exchange engine (MPI, or the device path's pack, transport and
  //    unpack), once the scatter's kernels are done.
  std::vector<const T*> src(mine);
  std::vector<T*> dst(mine);
  for (std::size_t k = 0; k < mine; ++k) {
    src[k] = sorted[k].rows.data();
    dst[k] = out[k].data();
  }
  detail::fence(default_instance<Exec>());
  const MoveEngine engine(std::move(list), sizeof(T), "migrate");
  engine.run<T, M>(src, dst);
  return out;
}

}  // namespace detail
}  // namespace darray
