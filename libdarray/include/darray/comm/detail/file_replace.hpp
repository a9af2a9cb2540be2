// Crash-safe file writing (io's .npy saves, fft's wisdom files): a save writes a temporary file beside its target (same
// directory, so the final rename(2) is atomic), every process writes and syncs its part, the processes agree that all
// succeeded, and only then process 0 renames the temporary over the target and syncs the directory. A crash or error at
// any moment leaves the old file or the new one, never a torn one; on an error the temporary is removed. A process
// killed mid-save cannot remove it: such leftovers are named ".<target name>.darray-tmp.*".
// Also the regular-file check shared by loads and saves: a FIFO, directory or device is rejected by process 0
// before any process opens it (opening a FIFO blocks until a writer appears, which would hang the job); and small
// files read whole, with the stamp that tells later whether a file changed since.
#pragma once

#include <fcntl.h>
#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

#include "darray/comm/check.hpp"
#include "darray/core/error.hpp"
#include "darray/runtime/detail/agree.hpp"
#include "darray/runtime/detail/mpi.hpp"

namespace darray {
namespace detail {

inline std::string quoted_path(const std::string& path) { return "\"" + path + "\""; }

inline const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Throws IoError unless `path` is absent (when missing_ok) or a regular file (after following symlinks). Runs on one
// process; callers broadcast the outcome. Returns whether the file exists and, if so, its stat data in *st.
inline bool require_regular_file(const char* api, const std::string& path, bool missing_ok, struct stat* st) {
  if (::stat(path.c_str(), st) != 0) {
    const int err = errno;
    DARRAY_THROW_IF(err != ENOENT || !missing_ok, IoError, api,
                    quoted_path(path) << ": cannot open: " << std::strerror(err));
    return false;
  }
  DARRAY_THROW_IF(!S_ISREG(st->st_mode), IoError, api,
                  quoted_path(path) << " is " << file_kind(st->st_mode)
                                    << ", not a regular file; darray reads and writes regular files only");
  return true;
}

struct FileReplacement {
  std::string target;      // where the file ends up (a symlink's target, so the link keeps pointing at it)
  std::string temporary;   // beside target, unique to this save
  bool keep_mode = false;  // the old file's permission bits go to the new one
  mode_t mode = 0;
};

inline std::string directory_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Collective over comm: process 0 checks the target and names the temporary; every process returns the same
// FileReplacement or throws the same IoError (for a target that is a FIFO, directory, device...).
inline FileReplacement prepare_replacement(const char* api, const std::string& path, MPI_Comm comm) {
  int rank = 0;
  DARRAY_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  FileReplacement r;
  CapturedError error;
  if (rank == 0) {
    error = capture_error([&] {
      DARRAY_THROW_IF(path.empty(), IoError, api, "the path is empty; expected a file name");
      struct stat st;
      r.target = path;
      if (require_regular_file(api, path, /*missing_ok=*/true, &st)) {
        r.keep_mode = true;
        r.mode = st.st_mode & 07777;
        struct stat link;
        if (::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
          char resolved[PATH_MAX];
          DARRAY_THROW_IF(::realpath(path.c_str(), resolved) == nullptr, IoError, api,
                          quoted_path(path) << ": cannot resolve the symbolic link: " << std::strerror(errno));
          r.target = resolved;
        }
      }
      static unsigned counter = 0;
      const auto slash = r.target.find_last_of('/');
      const std::string dir = directory_of(r.target);
      const std::string name = slash == std::string::npos ? r.target : r.target.substr(slash + 1);
      const auto now = std::chrono::system_clock::now().time_since_epoch();
      r.temporary = (slash == std::string::npos ? std::string() : dir + (dir == "/" ? "" : "/")) + "." + name +
                    ".darray-tmp." + std::to_string(::getpid()) + "." +
                    std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()) + "." +
                    std::to_string(counter++);
    });
  }
  agree_on_error(comm, error);
  bcast_string(comm, r.temporary, 0);
  return r;
}

// Process 0 removes the temporary (after a failed save); the others do nothing. Never throws.
inline void discard_replacement(const FileReplacement& r, MPI_Comm comm) noexcept {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank == 0 && !r.temporary.empty()) ::unlink(r.temporary.c_str());
}

// Collective over comm, after every process wrote, synced and closed the temporary: process 0 renames it over the
// target (atomic within a directory) and syncs the directory so the rename survives a power loss. Throws the same
// IoError everywhere on failure, with the temporary removed and the old file untouched.
inline void commit_replacement(const char* api, const FileReplacement& r, MPI_Comm comm) {
  int rank = 0;
  DARRAY_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  CapturedError error;
  if (rank == 0) {
    error = capture_error([&] {
      // MPI-IO creates files with its own permissions; a replaced file keeps the ones it had.
      DARRAY_THROW_IF(r.keep_mode && ::chmod(r.temporary.c_str(), r.mode) != 0, IoError, api,
                      quoted_path(r.target) << ": cannot set the permissions of the temporary file "
                                            << quoted_path(r.temporary) << ": " << std::strerror(errno));
      DARRAY_THROW_IF(::rename(r.temporary.c_str(), r.target.c_str()) != 0, IoError, api,
                      quoted_path(r.target) << ": cannot rename the complete temporary file "
                                            << quoted_path(r.temporary) << " over it: " << std::strerror(errno));
      const int fd = ::open(directory_of(r.target).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (fd >= 0) {
        // Some file systems cannot sync a directory (EINVAL); the rename itself has happened either way.
        const int rc = ::fsync(fd), err = errno;
        ::close(fd);
        DARRAY_THROW_IF(rc != 0 && err != EINVAL && err != ENOTSUP, IoError, api,
                        quoted_path(r.target)
                            << ": the file was replaced, but syncing its directory failed: " << std::strerror(err));
      }
    });
    if (error.kind != ErrorKind::none) {
      struct stat st;
      if (::stat(r.temporary.c_str(), &st) == 0) ::unlink(r.temporary.c_str());
    }
  }
  agree_on_error(comm, error);
}

// What tells a file's contents apart without reading them: its device and inode, size, and modification and change
// times (nanoseconds). A save through a replacement (above) makes a new inode; a write in place sets both times. The
// times come from the kernel's coarse clock (a few ms on most file systems), so a write in place of the same size
// within that tick of the stamp taken can go unseen.
struct FileStamp {
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = -1;
  struct timespec modified = {0, 0}, changed = {0, 0};

  friend bool operator==(const FileStamp& a, const FileStamp& b) {
    return a.device == b.device && a.inode == b.inode && a.size == b.size && a.modified.tv_sec == b.modified.tv_sec &&
           a.modified.tv_nsec == b.modified.tv_nsec && a.changed.tv_sec == b.changed.tv_sec &&
           a.changed.tv_nsec == b.changed.tv_nsec;
  }
};

inline FileStamp file_stamp(const struct stat& st) {
  FileStamp s;
  s.device = st.st_dev;
  s.inode = st.st_ino;
  s.size = st.st_size;
  s.modified = st.st_mtim;
  s.changed = st.st_ctim;
  return s;
}

// Small files handled whole by one process (no communication; the caller broadcasts what it read and agrees on
// errors). Reads `path` into *contents; returns false when it does not exist. IoError for anything else. `stamp`,
// where given: the file's stamp as stat gave it before the read (a file changed during the read then differs from
// it at the next look, never the other way).
inline bool read_whole_file(const char* api, const std::string& path, std::string* contents,
                            FileStamp* stamp = nullptr) {
  struct stat st;
  if (!require_regular_file(api, path, /*missing_ok=*/true, &st)) return false;
  if (stamp != nullptr) *stamp = file_stamp(st);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  DARRAY_THROW_IF(fd < 0, IoError, api, quoted_path(path) << ": cannot open: " << std::strerror(errno));
  // Read straight into the string, sized from stat (one spare byte to see the end in the same call); a file that
  // grows meanwhile is read to its end all the same.
  std::size_t size = 0;
  contents->resize(static_cast<std::size_t>(st.st_size > 0 ? st.st_size : 0) + 1);
  for (;;) {
    if (size == contents->size()) contents->resize(2 * size);
    const ssize_t got = ::read(fd, &(*contents)[size], contents->size() - size);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      const int err = errno;
      ::close(fd);
      contents->resize(size);
      DARRAY_THROW_IF(got < 0, IoError, api, quoted_path(path) << ": read failed: " << std::strerror(err));
      return true;
    }
    size += static_cast<std::size_t>(got);
  }
}

// Replaces `path` by a file holding `contents`, crash-safe as the saves above: a temporary beside it, written,
// synced, renamed over it. Runs on the calling process alone.
inline void write_whole_file(const char* api, const std::string& path, const std::string& contents) {
  const FileReplacement r = prepare_replacement(api, path, MPI_COMM_SELF);
  try {
    const int fd = ::open(r.temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    DARRAY_THROW_IF(fd < 0, IoError, api,
                    quoted_path(path) << ": cannot create the temporary file " << quoted_path(r.temporary) << ": "
                                      << std::strerror(errno));
    std::size_t done = 0;
    int err = 0;
    while (done < contents.size() && err == 0) {
      const ssize_t put = ::write(fd, contents.data() + done, contents.size() - done);
      if (put < 0 && errno != EINTR) err = errno;
      if (put > 0) done += static_cast<std::size_t>(put);
    }
    if (err == 0 && ::fsync(fd) != 0) err = errno;
    if (::close(fd) != 0 && err == 0) err = errno;
    DARRAY_THROW_IF(err != 0, IoError, api,
                    quoted_path(path) << ": writing the temporary file " << quoted_path(r.temporary)
                                      << " failed: " << std::strerror(err));
  } catch (...) {
    discard_replacement(r, MPI_COMM_SELF);
    throw;
  }
  commit_replacement(api, r, MPI_COMM_SELF);
}

}  // namespace detail
}  // namespace darray
