// The memory side of a .npy transfer: each block a process moves, cut into file pieces, with the host bytes of
// every piece (in place for host memory, through one staging buffer for device memory), plus the agreement on the
// number of collective rounds and the DARRAY_CHECK comparison of the call.
#pragma once

#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "darray/array/detail/view.hpp"
#include "darray/comm/check.hpp"
#include "darray/comm/limits.hpp"
#include "darray/core/error.hpp"
#include "darray/core/index.hpp"
#include "darray/io/detail/file_pieces.hpp"
#include "darray/io/detail/mpi_file.hpp"
#include "darray/io/detail/npy_header.hpp"
#include "darray/runtime/detail/mpi.hpp"
#include "darray/runtime/detail/state.hpp"

namespace darray {
namespace detail {

// The pieces of the blocks one process moves, each with its memory: in place when the host can address the
// shard, else through one host staging buffer as large as the largest piece (device memory in GPU builds).
template <class T, class MemorySpace>
class BlockTransfers {
 public:
  // Memory the host cannot address goes through host staging (so does host memory under the StageAsIfOnDevice
  // test hook).
  explicit BlockTransfers(bool writing) : m_writing(writing), m_staged(!direct_host_access<MemorySpace>()) {}

  // `data` is the block's first element in MemorySpace.
  void add(T* data, const Shape& shape, const Index& block) {
    for (FilePiece& p : plan_file_pieces(shape, block, sizeof(T), static_cast<int64_t>(max_message_bytes()))) {
      m_largest = std::max(m_largest, p.count);
      m_entries.push_back(Entry{std::move(p), data});
    }
  }

  std::size_t size() const { return m_entries.size(); }

  // Transfers for transfer_rounds, valid while this object lives and no piece is added. Staged writes copy a piece
  // to the host when its round asks for the buffer; staged reads copy it to the device when the round is done.
  std::vector<PieceTransfer> transfers() {
    std::vector<PieceTransfer> out;
    for (Entry& e : m_entries) {
      Entry* entry = &e;
      PieceTransfer t;
      t.piece = &entry->piece;
      t.item_size = static_cast<int64_t>(sizeof(T));
      if (!m_staged) {
        t.buffer = [entry] { return reinterpret_cast<char*>(entry->data + entry->piece.memory_offset); };
        t.done = [] {};
      } else {
        t.buffer = [this, entry] {
          if (m_staging.extent(0) < static_cast<std::size_t>(m_largest))  // from the host cache, not zero-filled
            m_staging = cached_view<Kokkos::View<T*, Kokkos::HostSpace>>("darray::io host copy",
                                                                         static_cast<std::size_t>(m_largest));
          if (m_writing) Kokkos::deep_copy(host_run(*entry), device_run(*entry));
          return reinterpret_cast<char*>(m_staging.data());
        };
        t.done = [this, entry] { Kokkos::deep_copy(device_run(*entry), host_run(*entry)); };
      }
      out.push_back(std::move(t));
    }
    return out;
  }

 private:
  struct Entry {
    FilePiece piece;
    T* data;
  };
  using HostRun = Kokkos::View<T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using DeviceRun = Kokkos::View<T*, MemorySpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  HostRun host_run(const Entry& e) { return HostRun(m_staging.data(), static_cast<std::size_t>(e.piece.count)); }
  DeviceRun device_run(const Entry& e) {
    return DeviceRun(e.data + e.piece.memory_offset, static_cast<std::size_t>(e.piece.count));
  }

  bool m_writing;
  bool m_staged;
  std::vector<Entry> m_entries;
  Kokkos::View<T*, Kokkos::HostSpace> m_staging;
  int64_t m_largest = 0;
};

// Processes first compare the call (path, dtype, shape, sharding), with or without DARRAY_CHECK: MPI-IO needs the
// same file name everywhere, and a divergent call would otherwise write process 0's path alone, mix two layouts in
// one file, or hang. One allgather of 8 bytes, next to a file's open, writes, sync and rename.
inline void check_io_call(const std::string& api, const std::string& path, const std::string& details) {
  require_same_call(world_comm(), api + "(" + npy_where(path) + (details.empty() ? "" : ", " + details) + ")", "");
}

// Every process makes the same number of collective rounds: the largest piece count of any process.
inline int agreed_rounds(std::size_t mine, MPI_Comm comm) {
  DARRAY_THROW_IF(mine > static_cast<std::size_t>(INT_MAX), NotSupported, "io",
                  mine << " file pieces on one process; at most " << INT_MAX << " are supported");
  int local = static_cast<int>(mine), rounds = 0;
  DARRAY_MPI_CHECK(MPI_Allreduce(&local, &rounds, 1, MPI_INT, MPI_MAX, comm));
  return rounds;
}

}  // namespace detail
}  // namespace darray
