// The file one process reads its blocks from in io::load_npy. Every process opens it on its own (MPI_COMM_SELF):
// a collective MPI_File_open cannot be left half done, which is what hung the job when the file vanished between
// two processes' opens (Open MPI's ompio opens on rank 0 first, then on the others, and a process whose open failed
// went to a barrier the others never joined). Each process checks that it opened the very file process 0 read the
// header from, and that the file did not change while it read; failures go to the latch, agreed after the reads.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "darray/io/detail/file_identity.hpp"
#include "darray/io/detail/mpi_file.hpp"
#include "darray/runtime/detail/mpi.hpp"

namespace darray {
namespace detail {

class LoadFile {
 public:
  // `expected`: the identity process 0 saw when it read the header. No collective call: failures go to latch.
  LoadFile(const char* api, const std::string& path, const FileIdentity& expected, IoLatch& latch)
      : m_expected(expected) {
    latch.run([&] { m_pinned = std::make_unique<PinnedFile>(api, path); });
    if (!latch.ok()) return;
    if (!compare(m_pinned->identity(), latch)) return;
    // MPI-IO opens by name; the path must still name the pinned file afterwards (the pin keeps its inode from being
    // reused, so an equal inode is the same file).
    MPI_File fh = MPI_FILE_NULL;
    if (!latch.check(MPI_File_open(MPI_COMM_SELF, path.c_str(), MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), "MPI_File_open"))
      return;
    m_fh = fh;
    latch.check(MPI_File_set_errhandler(m_fh, MPI_ERRORS_RETURN), "MPI_File_set_errhandler");
    FileIdentity now;
    latch.run([&] { now = path_identity(api, path); });
    if (latch.ok()) compare(now, latch);
  }
  LoadFile(const LoadFile&) = delete;
  LoadFile& operator=(const LoadFile&) = delete;
  ~LoadFile() {
    if (m_fh != MPI_FILE_NULL) MPI_File_close(&m_fh);
  }

  // The open file, or MPI_FILE_NULL when opening failed (the latch says why).
  MPI_File handle() const { return m_fh; }

  // After the reads: the file must be as it was when process 0 read the header (no write in between), then closes.
  void finish(IoLatch& latch) {
    if (m_pinned && latch.ok()) {
      FileIdentity now;
      latch.run([&] { now = m_pinned->current(); });
      if (latch.ok()) compare(now, latch);
    }
    if (m_fh != MPI_FILE_NULL) latch.check(MPI_File_close(&m_fh), "MPI_File_close");
  }

 private:
  // Records a failure unless `now` is the expected file, unchanged; returns whether it is.
  bool compare(const FileIdentity& now, IoLatch& latch) const {
    if (!now.same_file(m_expected))
      latch.fail(changed_while_loading("this process found another file than the one whose header was read"));
    else if (now != m_expected)
      latch.fail(changed_while_loading("its size or modification time differ from when its header was read"));
    return now == m_expected;
  }

  FileIdentity m_expected;
  std::unique_ptr<PinnedFile> m_pinned;
  MPI_File m_fh = MPI_FILE_NULL;
};

}  // namespace detail
}  // namespace darray
