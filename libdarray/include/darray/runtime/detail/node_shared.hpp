// Buffers that the processes of one node map into each other's address spaces. Each process allocates its own as an
// anonymous memory file (memfd, mapped shared) and maps every peer's through /proc/<pid>/fd/<fd>, which the kernel
// allows where a process may read the other's memory (the single-copy probe's condition: single_copy.hpp). Peers then
// copy to and from each other's buffer with plain loads and stores, at memory speed, where a single copy costs a
// system call that pins every page it touches (bench/README, "Work buffers the processes of a node share").
// Only buffers the library owns can be shared this way; a caller's arrays still go by single copies.
#pragma once

#include <mpi.h>

#if defined(__linux__)
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "darray/runtime/detail/mpi.hpp"
#include "darray/runtime/detail/single_copy.hpp"

namespace darray {
namespace detail {

// Whether buffers may be shared between processes (a test hook: off, the callers take their single-copy paths, which
// tests must keep covered). Must be the same on every process when a NodeSharedBuffer is made (else none is shared).
inline bool& node_shared_buffers_enabled() {
  static bool enabled = true;
  return enabled;
}

// One buffer of `bytes` per process of the job, every one mapped by every process. Collective over `comm` (every
// process of the job, all on one node that single copies reach: single_copy_reaches_all()). ok() is the same on every
// process: false where any process could not allocate its buffer or map a peer's (nothing is mapped then).
class NodeSharedBuffer {
 public:
  NodeSharedBuffer(MPI_Comm comm, std::size_t bytes) {
    int size = 0, rank = 0;
    DARRAY_MPI_CHECK(MPI_Comm_size(comm, &size));
    DARRAY_MPI_CHECK(MPI_Comm_rank(comm, &rank));
    m_maps.assign(static_cast<std::size_t>(size), Map{});
    int ok = node_shared_buffers_enabled() && bytes > 0 && single_copy_reaches_all() ? 1 : 0;
    std::int64_t mine[2] = {-1, static_cast<std::int64_t>(bytes)};
#if defined(__linux__)
    int fd = -1;
    if (ok) {
      fd = ::memfd_create("darray shared", MFD_CLOEXEC);
      void* p = MAP_FAILED;
      if (fd >= 0 && ::ftruncate(fd, static_cast<off_t>(bytes)) == 0)
        p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (p == MAP_FAILED) {
        ok = 0;
      } else {
        m_maps[static_cast<std::size_t>(rank)] = Map{static_cast<std::byte*>(p), bytes};
        mine[0] = fd;
      }
    }
#else
    ok = 0;
#endif
    std::vector<std::int64_t> all(static_cast<std::size_t>(size) * 2);
    DARRAY_MPI_CHECK(MPI_Allgather(mine, 2, MPI_INT64_T, all.data(), 2, MPI_INT64_T, comm));
#if defined(__linux__)
    for (int p = 0; p < size && ok; ++p) {
      const std::int64_t peer_fd = all[static_cast<std::size_t>(p) * 2];
      const auto peer_bytes = static_cast<std::size_t>(all[static_cast<std::size_t>(p) * 2 + 1]);
      if (p == rank) continue;
      const int pid = single_copy_pid(p);
      if (peer_fd < 0 || pid < 0) {
        ok = 0;
        break;
      }
      const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(peer_fd);
      const int peer = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
      void* q = MAP_FAILED;
      if (peer >= 0) {
        q = ::mmap(nullptr, peer_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, peer, 0);
        ::close(peer);
      }
      if (q == MAP_FAILED)
        ok = 0;
      else
        m_maps[static_cast<std::size_t>(p)] = Map{static_cast<std::byte*>(q), peer_bytes};
    }
    // The peers have mapped this buffer (or failed to): the file is no longer needed, the mappings keep the memory.
    DARRAY_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm));
    if (fd >= 0) ::close(fd);
#else
    DARRAY_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm));
#endif
    m_ok = ok != 0;
    m_rank = rank;
    if (!m_ok) unmap();
  }
  NodeSharedBuffer(const NodeSharedBuffer&) = delete;
  NodeSharedBuffer& operator=(const NodeSharedBuffer&) = delete;
  // Not collective: a peer's memory lives on until the last process that maps it lets it go.
  ~NodeSharedBuffer() { unmap(); }

  bool ok() const { return m_ok; }
  // This process's buffer, and `process`'s as mapped here (nullptr unless ok()).
  std::byte* local() const { return of(m_rank); }
  std::byte* of(int process) const { return m_maps[static_cast<std::size_t>(process)].base; }

 private:
  struct Map {
    std::byte* base = nullptr;
    std::size_t bytes = 0;
  };
  void unmap() {
#if defined(__linux__)
    for (Map& m : m_maps)
      if (m.base != nullptr) ::munmap(m.base, m.bytes);
#endif
    for (Map& m : m_maps) m = Map{};
  }

  std::vector<Map> m_maps;
  bool m_ok = false;
  int m_rank = 0;
};

}  // namespace detail
}  // namespace darray
