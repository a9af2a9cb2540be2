// Checked MPI-IO for the .npy layer: an error latch that keeps a process in the collective call sequence after a
// failure and makes every process throw the same IoError at the end, collective open, and the rounds of
// subarray-view reads and writes (one piece per round; processes with fewer pieces join with empty transfers).
#pragma once

#include <mpi.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "darray/core/error.hpp"
#include "darray/io/detail/file_pieces.hpp"
#include "darray/io/detail/npy_header.hpp"
#include "darray/runtime/detail/agree.hpp"
#include "darray/runtime/detail/mpi.hpp"

namespace darray {
namespace detail {

// The first failure this process saw during one save or load. MPI-IO calls return codes (files default to
// MPI_ERRORS_RETURN) that may differ between processes, and a process that stopped at its error would leave the
// others waiting in the next collective; so the sequence runs to the end and agree() then throws the first
// failure (lowest rank) on every process.
class IoLatch {
 public:
  IoLatch(const char* api, std::string path) : m_api(api), m_path(std::move(path)) {}

  bool ok() const { return m_error.kind == ErrorKind::none; }

  // Records the failure of `call` unless rc is MPI_SUCCESS; returns whether it succeeded.
  bool check(int rc, const char* call) {
    if (rc == MPI_SUCCESS) return true;
    fail(std::string(call) + " failed: " + mpi_error_string(rc));
    return false;
  }

  void fail(const std::string& what) {
    if (ok()) m_error = CapturedError{ErrorKind::io, m_api, npy_where(m_path) + ": " + what};
  }

  // Runs fn, recording anything it throws instead of letting it escape between collective calls.
  template <class Fn>
  void run(Fn&& fn) {
    const CapturedError e = capture_error(fn);
    if (e.kind != ErrorKind::none && ok()) m_error = e;
  }

  // Collective over comm: throws the first recorded failure on every process.
  void agree(MPI_Comm comm) const { agree_on_error(comm, m_error); }

 private:
  const char* m_api;
  std::string m_path;
  CapturedError m_error;
};

// A derived datatype freed when it goes out of scope.
class MpiDatatype {
 public:
  MpiDatatype() = default;
  MpiDatatype(const MpiDatatype&) = delete;
  MpiDatatype& operator=(const MpiDatatype&) = delete;
  ~MpiDatatype() {
    if (m_type != MPI_DATATYPE_NULL) MPI_Type_free(&m_type);
  }
  MPI_Datatype* out() { return &m_type; }
  MPI_Datatype get() const { return m_type; }

 private:
  MPI_Datatype m_type = MPI_DATATYPE_NULL;
};

// Collective open on comm. Throws (the same IoError everywhere) unless every process opened the file.
inline MPI_File open_collective(MPI_Comm comm, const std::string& path, int amode, IoLatch& latch) {
  MPI_File fh = MPI_FILE_NULL;
  const bool opened = latch.check(MPI_File_open(comm, path.c_str(), amode, MPI_INFO_NULL, &fh), "MPI_File_open");
  if (opened) latch.check(MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN), "MPI_File_set_errhandler");
  int mine = opened ? 1 : 0, all = 0;
  DARRAY_MPI_CHECK(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm));
  // When only some processes opened it, closing is a collective the others cannot join, so their handles are
  // left open rather than risk a hang; MPI releases them at finalize.
  if (!all) latch.agree(comm);
  return fh;
}

// Where one piece's bytes live on the host (a shard's memory, or a staging buffer) and how to move them.
struct PieceTransfer {
  const FilePiece* piece = nullptr;
  int64_t item_size = 0;
  // Called before a write to get the host bytes, before a read to get the destination; after a read, done() moves
  // the bytes to their final place (a no-op when they were read in place).
  std::function<char*()> buffer;
  std::function<void()> done;
};

// Runs `rounds` collective rounds of set_view + write_all (or read_all). Round r moves this process's piece r, or
// nothing when it has fewer pieces or already failed: every process makes the same collective calls.
inline void transfer_rounds(MPI_File fh, MPI_Offset data_offset, int rounds, const std::vector<PieceTransfer>& pieces,
                            bool write, IoLatch& latch) {
  static char no_data = 0;
  for (int r = 0; r < rounds; ++r) {
    const PieceTransfer* t = static_cast<std::size_t>(r) < pieces.size() && latch.ok() ? &pieces[r] : nullptr;
    char* buffer = nullptr;
    MpiDatatype frame;
    MPI_Datatype filetype = MPI_BYTE;
    MPI_Offset disp = 0;
    int bytes = 0;
    if (t != nullptr) {
      latch.run([&] { buffer = t->buffer(); });
      const FilePiece& p = *t->piece;
      if (latch.ok() && !p.frame_sizes.empty()) {
        const bool made =
            latch.check(MPI_Type_create_subarray(static_cast<int>(p.frame_sizes.size()), p.frame_sizes.data(),
                                                 p.frame_subsizes.data(), p.frame_starts.data(), MPI_ORDER_C, MPI_BYTE,
                                                 frame.out()),
                        "MPI_Type_create_subarray") &&
            latch.check(MPI_Type_commit(frame.out()), "MPI_Type_commit");
        if (made) filetype = frame.get();
      }
      if (latch.ok()) {
        disp = data_offset + static_cast<MPI_Offset>(p.file_offset);
        bytes = static_cast<int>(p.count * t->item_size);  // plan_file_pieces keeps it below INT_MAX
      } else {
        buffer = nullptr;
        filetype = MPI_BYTE;
      }
    }
    if (buffer == nullptr) {
      buffer = &no_data;
      bytes = 0;
      disp = 0;
    }
    latch.check(MPI_File_set_view(fh, disp, MPI_BYTE, filetype, "native", MPI_INFO_NULL), "MPI_File_set_view");
    MPI_Status status;
    const int want = latch.ok() ? bytes : 0;
    const bool moved = write
                           ? latch.check(MPI_File_write_all(fh, buffer, want, MPI_BYTE, &status), "MPI_File_write_all")
                           : latch.check(MPI_File_read_all(fh, buffer, want, MPI_BYTE, &status), "MPI_File_read_all");
    if (!moved || want == 0) continue;
    // A read past the end of the file is no MPI error, only a short count; a short write would lose data silently.
    int got = 0;
    if (!latch.check(MPI_Get_count(&status, MPI_BYTE, &got), "MPI_Get_count")) continue;
    if (got != want)
      latch.fail(std::string(write ? "MPI_File_write_all wrote " : "MPI_File_read_all read ") + std::to_string(got) +
                 " bytes where " + std::to_string(want) + " were expected" +
                 (write ? "" : " (was the file truncated while it was being read?)"));
    else if (!write)
      latch.run([&] { t->done(); });
  }
}

// A non-negative MPI_Offset as an unsigned size.
inline std::uint64_t offset_to_size(MPI_Offset v) { return v < 0 ? 0 : static_cast<std::uint64_t>(v); }

}  // namespace detail
}  // namespace darray
