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

// Copies every range from process `pid` (or, with `write`, to it: PeerRange::local is then the source), in calls of
// at most 1024 ranges (IOV_MAX). Returns 0, or the errno of the call that failed (or EFAULT when it copied fewer
// bytes than asked).
inline int copy_with_process(int pid, const std::vector<PeerRange>& ranges, bool write) {
#if defined(__linux__)
  constexpr std::size_t batch = 1024;
  static thread_local std::vector<iovec> local, remote;
  for (std::size_t at = 0; at < ranges.size(); at += batch) {
    const std::size_t n = std::min(batch, ranges.size() - at);
    local.resize(n);
    remote.resize(n);
    std::size_t bytes = 0;
    for (std::size_t k = 0; k < n; ++k) {
      const PeerRange& r = ranges[at + k];
      local[k] = iovec{r.local, r.bytes};
      remote[k] = iovec{reinterpret_cast<void*>(static_cast<std::uintptr_t>(r.remote)), r.bytes};
      bytes += r.bytes;
    }
    const auto p = static_cast<pid_t>(pid);
    const ssize_t got = write ? ::process_vm_writev(p, local.data(), n, remote.data(), n, 0)
                              : ::process_vm_readv(p, local.data(), n, remote.data(), n, 0);
    if (got < 0) return errno != 0 ? errno : EFAULT;
    if (static_cast<std::size_t>(got) != bytes) return EFAULT;
  }
  return 0;
#else
  (void)pid;
  (void)ranges;
  (void)write;
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
