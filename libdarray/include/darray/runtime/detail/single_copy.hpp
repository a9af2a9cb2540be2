// Single-copy transfers between the processes of one node: Linux's process_vm_readv (cross-memory attach) copies
// from another process's memory straight into this one's, where MPI's shared-memory transport copies twice (into its
// shared fragments, then out of them). The Environment probes once whether every process of the node can read every
// other's memory this way (a kernel without it, a container that forbids it, processes in different PID namespaces,
// DARRAY_SINGLE_COPY=0 anywhere on the node: then none do) and records the process ids; the exchange engine then reads
// large pieces from same-node peers itself (redistribute/detail/engine.hpp).
#pragma once

#include <mpi.h>

#if defined(__linux__)
#include <sys/uio.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "darray/runtime/detail/mpi.hpp"
#include "darray/runtime/detail/state.hpp"

namespace darray {
namespace detail {

// One contiguous range copied from a peer's address space to this process's.
struct PeerRange {
  void* local;
  std::uint64_t remote;
  std::size_t bytes;
};

// What copy_with_process has passed to the kernel in this process (a test hook): calls, and iovecs on each side.
struct SingleCopyCalls {
  std::size_t calls = 0, local_iovecs = 0, remote_iovecs = 0;
};
inline SingleCopyCalls& single_copy_calls() {
  static SingleCopyCalls counts;
  return counts;
}

// Copies every range from process `pid` (or, with `write`, to it: PeerRange::local is then the source), in order.
// A range that starts where the one before it ends on one side joins that side's iovec, so ranges given in the peer's
// address order (the rows of pieces that lie side by side in the peer's block) cost the kernel one page walk per
// stretch of the peer's memory instead of one per range: reading 4 pieces' 1024 rows of 4 KiB, side by side in a
// 32 KiB row, took 1.7 ms as 1024 remote iovecs against 2.2-2.4 ms as 4096 (2 processes on the VM of 2026-12-07).
// Calls carry at most 1024 iovecs a side (IOV_MAX) and max_call_bytes (the kernel copies at most about 2 GiB a call),
// cut between ranges or inside one. Returns 0, or the errno of the call that failed (or EFAULT when it copied fewer
// bytes than asked).
inline int copy_with_process(int pid, const std::vector<PeerRange>& ranges, bool write,
                             std::size_t max_call_bytes = std::size_t(1) << 30) {
#if defined(__linux__)
  constexpr std::size_t max_iovecs = 1024;
  static thread_local std::vector<iovec> local, remote;
  std::size_t at = 0, done = 0;  // the range being added, and how many of its bytes earlier calls carry
  while (at < ranges.size()) {
    local.clear();
    remote.clear();
    std::size_t bytes = 0;
    while (at < ranges.size() && bytes < max_call_bytes) {
      const PeerRange& r = ranges[at];
      const std::size_t n = std::min(r.bytes - done, max_call_bytes - bytes);
      char* const l = static_cast<char*>(r.local) + done;
      const std::uint64_t q = r.remote + done;
      const bool joins_local = !local.empty() && static_cast<char*>(local.back().iov_base) + local.back().iov_len == l;
      const bool joins_remote =
          !remote.empty() && reinterpret_cast<std::uintptr_t>(remote.back().iov_base) + remote.back().iov_len == q;
      if (n > 0) {
        if ((!joins_local && local.size() == max_iovecs) || (!joins_remote && remote.size() == max_iovecs)) break;
        if (joins_local)
          local.back().iov_len += n;
        else
          local.push_back(iovec{l, n});
        if (joins_remote)
          remote.back().iov_len += n;
        else
          remote.push_back(iovec{reinterpret_cast<void*>(static_cast<std::uintptr_t>(q)), n});
        bytes += n;
      }
      done += n;
      if (done == r.bytes) {
        ++at;
        done = 0;
      }
    }
    if (bytes == 0) continue;
    SingleCopyCalls& counts = single_copy_calls();
    ++counts.calls;
    counts.local_iovecs += local.size();
    counts.remote_iovecs += remote.size();
    const auto p = static_cast<pid_t>(pid);
    const ssize_t got = write ? ::process_vm_writev(p, local.data(), local.size(), remote.data(), remote.size(), 0)
                              : ::process_vm_readv(p, local.data(), local.size(), remote.data(), remote.size(), 0);
    if (got < 0) return errno != 0 ? errno : EFAULT;
    if (static_cast<std::size_t>(got) != bytes) return EFAULT;
  }
  return 0;
#else
  (void)pid;
  (void)ranges;
  (void)write;
  (void)max_call_bytes;
  return ENOSYS;
#endif
}

inline int read_from_process(int pid, const std::vector<PeerRange>& ranges) {
  return copy_with_process(pid, ranges, false);
}
inline int write_to_process(int pid, const std::vector<PeerRange>& ranges) {
  return copy_with_process(pid, ranges, true);
}

// Collective over `world` (its processes' ranks index the result) and `node` (this node's processes). Every process
// of the node publishes its process id and the address of a known word; each reads every other's word and writes it
// back unchanged (the FFT's fused stages write into their peers' blocks: fft/detail/fused.hpp). When all succeed and
// every process of the node wants single copies, returns each node process's id at its world rank (others -1); else an
// empty vector.
inline std::vector<int> probe_single_copy(MPI_Comm world, MPI_Comm node, bool wanted) {
  int world_size = 0, world_rank = 0, node_size = 0;
  DARRAY_MPI_CHECK(MPI_Comm_size(world, &world_size));
  DARRAY_MPI_CHECK(MPI_Comm_rank(world, &world_rank));
  DARRAY_MPI_CHECK(MPI_Comm_size(node, &node_size));
  if (node_size < 2) return {};
  static std::uint64_t word = 0x6461727261790001ull;  // "darray", 1; writable: peers write it back
#if defined(__linux__)
  const auto pid = static_cast<std::int64_t>(::getpid());
#else
  const std::int64_t pid = -1;
#endif
  const std::int64_t mine[4] = {pid, world_rank, static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(&word)),
                                wanted ? 1 : 0};
  std::vector<std::int64_t> all(static_cast<std::size_t>(node_size) * 4);
  DARRAY_MPI_CHECK(MPI_Allgather(mine, 4, MPI_INT64_T, all.data(), 4, MPI_INT64_T, node));
  int ok = 1;
  for (int k = 0; k < node_size && ok; ++k) {
    const std::int64_t* e = &all[static_cast<std::size_t>(k) * 4];
    if (e[3] == 0 || e[0] < 0) ok = 0;
    if (!ok || e[1] == world_rank) continue;
    std::uint64_t got = 0;
    const std::vector<PeerRange> range{PeerRange{&got, static_cast<std::uint64_t>(e[2]), sizeof got}};
    if (read_from_process(static_cast<int>(e[0]), range) != 0 || got != word ||
        write_to_process(static_cast<int>(e[0]), range) != 0)
      ok = 0;
  }
  DARRAY_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, node));
  if (!ok) return {};
  std::vector<int> pids(static_cast<std::size_t>(world_size), -1);
  for (int k = 0; k < node_size; ++k) {
    const std::int64_t* e = &all[static_cast<std::size_t>(k) * 4];
    pids[static_cast<std::size_t>(e[1])] = static_cast<int>(e[0]);
  }
  return pids;
}

// The process id of `process` (a rank of the job) for single copies from it, or -1 (another node, or single copies
// unavailable). This process's own id is never used: same-process pieces are plain copies.
inline int single_copy_pid(int process) {
  const std::vector<int>& pids = state().single_copy_pids;
  return process >= 0 && static_cast<std::size_t>(process) < pids.size() ? pids[static_cast<std::size_t>(process)] : -1;
}

// Whether this process can read and write every process of the job by single copy (the job on one node and the probe
// passed there): the same answer on every process.
inline bool single_copy_reaches_all() {
  const std::vector<int>& pids = state().single_copy_pids;
  if (pids.empty()) return false;
  for (int pid : pids)
    if (pid < 0) return false;
  return true;
}

}  // namespace detail
}  // namespace darray
