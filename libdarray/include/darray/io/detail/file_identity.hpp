// Which file a path names, pinned: a read-only POSIX descriptor whose (device, inode, size, mtime) identify the file
// it opened. Loads compare what every process opened with what process 0 read the header from, so a file removed,
// recreated or replaced mid-load is an IoError instead of a hang or a mix of two files. While a descriptor is held
// the inode cannot be reused, so equal (device, inode) pairs name the very same file.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "darray/comm/detail/file_replace.hpp"
#include "darray/core/error.hpp"
#include "darray/io/detail/npy_header.hpp"

namespace darray {
namespace detail {

// Change time is left out on purpose: unlinking or renaming over a file changes it, yet a load that read the old
// file from start to end returned one complete version, as a reader of an atomically replaced file should.
struct FileIdentity {
  std::uint64_t device = 0, inode = 0, size = 0;
  std::int64_t mtime_s = 0, mtime_ns = 0;

  bool same_file(const FileIdentity& o) const { return device == o.device && inode == o.inode; }
  // Same file, and by size and modification time not written to since (as fine as the file system keeps times).
  bool operator==(const FileIdentity& o) const {
    return same_file(o) && size == o.size && mtime_s == o.mtime_s && mtime_ns == o.mtime_ns;
  }
  bool operator!=(const FileIdentity& o) const { return !(*this == o); }

  std::vector<std::uint64_t> fields() const {
    return {device, inode, size, static_cast<std::uint64_t>(mtime_s), static_cast<std::uint64_t>(mtime_ns)};
  }
  static FileIdentity from_fields(const std::vector<std::uint64_t>& f) {
    FileIdentity id;
    id.device = f.at(0);
    id.inode = f.at(1);
    id.size = f.at(2);
    id.mtime_s = static_cast<std::int64_t>(f.at(3));
    id.mtime_ns = static_cast<std::int64_t>(f.at(4));
    return id;
  }
};

inline FileIdentity identity_of(const struct stat& st) {
  FileIdentity id;
  id.device = static_cast<std::uint64_t>(st.st_dev);
  id.inode = static_cast<std::uint64_t>(st.st_ino);
  id.size = st.st_size < 0 ? 0 : static_cast<std::uint64_t>(st.st_size);
  id.mtime_s = static_cast<std::int64_t>(st.st_mtim.tv_sec);
  id.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_nsec);
  return id;
}

// Where the path points now (following symlinks); throws IoError naming the path when it cannot be examined.
inline FileIdentity path_identity(const char* api, const std::string& path) {
  struct stat st;
  DARRAY_THROW_IF(::stat(path.c_str(), &st) != 0, IoError, api,
                  npy_where(path) << ": cannot open: " << std::strerror(errno));
  return identity_of(st);
}

// A regular file opened read-only on this process alone, closed on destruction.
class PinnedFile {
 public:
  // O_NONBLOCK: a FIFO put in the file's place after the regular-file check opens at once instead of blocking until
  // a writer appears, and is then rejected.
  PinnedFile(const char* api, const std::string& path) : m_api(api), m_path(path) {
    m_fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    DARRAY_THROW_IF(m_fd < 0, IoError, api, npy_where(path) << ": cannot open: " << std::strerror(errno));
    struct stat st;
    if (::fstat(m_fd, &st) != 0) {
      const int err = errno;
      ::close(m_fd);
      DARRAY_THROW(IoError, api, npy_where(path) << ": cannot examine: " << std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(m_fd);
      DARRAY_THROW(
          IoError, api,
          npy_where(path) << " is " << file_kind(st.st_mode)
                          << ", not a regular file; .npy files are read from and written to regular files only");
    }
    m_identity = identity_of(st);
  }
  PinnedFile(const PinnedFile&) = delete;
  PinnedFile& operator=(const PinnedFile&) = delete;
  ~PinnedFile() { ::close(m_fd); }

  // As the file was when opened.
  const FileIdentity& identity() const { return m_identity; }

  // As the file is now (size and times change when it is written to).
  FileIdentity current() const {
    struct stat st;
    DARRAY_THROW_IF(::fstat(m_fd, &st) != 0, IoError, m_api,
                    npy_where(m_path) << ": cannot examine: " << std::strerror(errno));
    return identity_of(st);
  }

  // Exactly `count` bytes from `offset` (a preamble or a header); a short read is an IoError.
  std::vector<unsigned char> read(std::uint64_t offset, std::size_t count) const {
    std::vector<unsigned char> bytes(count);
    std::size_t got = 0;
    while (got < count) {
      const ssize_t n = ::pread(m_fd, bytes.data() + got, count - got, static_cast<off_t>(offset + got));
      if (n < 0 && errno == EINTR) continue;
      DARRAY_THROW_IF(n < 0, IoError, m_api, npy_where(m_path) << ": cannot read: " << std::strerror(errno));
      if (n == 0) break;
      got += static_cast<std::size_t>(n);
    }
    DARRAY_THROW_IF(got != count, IoError, m_api,
                    npy_where(m_path) << ": read " << got << " of " << count << " header bytes at offset " << offset
                                      << " although the file had " << m_identity.size
                                      << " bytes (was it truncated while being read?)");
    return bytes;
  }

 private:
  const char* m_api;
  std::string m_path;
  int m_fd = -1;
  FileIdentity m_identity;
};

// Why a file is not the one process 0 read the header from, or changed during the load (after the path).
inline std::string changed_while_loading(const char* what) {
  return std::string("changed while being loaded: ") + what +
         " (was it removed, recreated, replaced or written to meanwhile?); load it again once its writer is done";
}

}  // namespace detail
}  // namespace darray
