// Reading a .npy header from a file: process 0 reads the preamble, checks the length field against the file before
// allocating anything, reads and parses the header, and broadcasts either the header (with the identity of the file
// it came from) or its error, so a bad file makes every process throw the same error and no other process touches a
// file it cannot trust.
#pragma once

#include <mpi.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "darray/comm/detail/file_replace.hpp"
#include "darray/core/error.hpp"
#include "darray/io/detail/file_identity.hpp"
#include "darray/io/detail/mpi_file.hpp"
#include "darray/io/detail/npy_header.hpp"
#include "darray/io/npy_header.hpp"
#include "darray/runtime/detail/agree.hpp"
#include "darray/runtime/detail/mpi.hpp"

namespace darray {
namespace detail {

struct NpyFileInfo {
  io::NpyHeader header;
  std::uint64_t file_size = 0;
  FileIdentity identity;               // the file the header came from, on every process
  std::shared_ptr<PinnedFile> pinned;  // process 0 only: held open so that its inode is not reused during a load
};

// Reads and parses the header on this process only.
inline NpyFileInfo read_npy_header_here(const char* api, const std::string& path) {
  // A FIFO, directory or device gets its own message before anything opens it.
  struct stat st;
  require_regular_file(api, path, /*missing_ok=*/false, &st);
  auto pinned = std::make_shared<PinnedFile>(api, path);
  const PinnedFile& file = *pinned;
  NpyFileInfo info;
  info.identity = file.identity();
  info.pinned = pinned;
  info.file_size = info.identity.size;
  const std::size_t first = static_cast<std::size_t>(std::min<std::uint64_t>(info.file_size, npy_max_preamble_size));
  const std::vector<unsigned char> preamble = file.read(0, first);
  const NpyPreamble pre = parse_npy_preamble(preamble.data(), preamble.size(), api, path);
  // The length field is checked against the file and a sane cap before it sizes any allocation.
  DARRAY_THROW_IF(pre.header_length > npy_max_header_bytes, IoError, api,
                  npy_where(path) << " is corrupt: its header length field says " << pre.header_length
                                  << " bytes; real headers are a few hundred bytes and this reader accepts at most "
                                  << npy_max_header_bytes << " bytes");
  DARRAY_THROW_IF(pre.header_start + pre.header_length > info.file_size, IoError, api,
                  npy_where(path) << " is truncated or corrupt: its header length field says " << pre.header_length
                                  << " bytes, but the file has only " << info.file_size - pre.header_start
                                  << " bytes after the " << pre.header_start << "-byte preamble");
  // Sized exactly to the header, so the parser could not read past it even if it tried.
  const std::vector<unsigned char> bytes = file.read(0, pre.header_start + static_cast<std::size_t>(pre.header_length));
  info.header = parse_npy_header(bytes, api, path);
  return info;
}

inline void pack_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
inline std::uint64_t unpack_u64(const std::string& in, std::size_t& pos) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[pos + i])) << (8 * i);
  pos += 8;
  return v;
}
inline void pack_string(std::string& out, const std::string& s) {
  pack_u64(out, s.size());
  out += s;
}
inline std::string unpack_string(const std::string& in, std::size_t& pos) {
  const auto n = static_cast<std::size_t>(unpack_u64(in, pos));
  std::string s = in.substr(pos, n);
  pos += n;
  return s;
}

// Collective over comm: process 0 reads the header; every process returns it, or throws process 0's error.
inline NpyFileInfo read_npy_header_collective(const char* api, const std::string& path, MPI_Comm comm) {
  int rank = 0;
  DARRAY_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  std::string packed;
  std::shared_ptr<PinnedFile> pinned;
  if (rank == 0) {
    NpyFileInfo info;
    const CapturedError e = capture_error([&] { info = read_npy_header_here(api, path); });
    pinned = info.pinned;
    pack_u64(packed, static_cast<std::uint64_t>(e.kind));
    if (e.kind != ErrorKind::none) {
      pack_string(packed, e.api);
      pack_string(packed, e.message);
    } else {
      const io::NpyHeader& h = info.header;
      pack_string(packed, h.dtype);
      pack_u64(packed, h.fortran_order ? 1 : 0);
      pack_u64(packed, h.data_offset);
      pack_u64(packed, static_cast<std::uint64_t>(h.version_major));
      pack_u64(packed, static_cast<std::uint64_t>(h.version_minor));
      pack_u64(packed, info.file_size);
      for (std::uint64_t f : info.identity.fields()) pack_u64(packed, f);
      pack_u64(packed, h.shape.size());
      for (int64_t n : h.shape) pack_u64(packed, static_cast<std::uint64_t>(n));
    }
  }
  // The header is capped at npy_max_header_bytes, so the message fits an int count.
  int length = static_cast<int>(packed.size());
  DARRAY_MPI_CHECK(MPI_Bcast(&length, 1, MPI_INT, 0, comm));
  packed.resize(static_cast<std::size_t>(length));
  DARRAY_MPI_CHECK(MPI_Bcast(&packed[0], length, MPI_CHAR, 0, comm));

  std::size_t pos = 0;
  const auto kind = static_cast<ErrorKind>(unpack_u64(packed, pos));
  if (kind != ErrorKind::none) {
    CapturedError e;
    e.kind = kind;
    e.api = unpack_string(packed, pos);
    e.message = unpack_string(packed, pos);
    // Process 0 throws the rebuilt error too, so the message is the same everywhere.
    rethrow_captured(e, "");
  }
  NpyFileInfo info;
  io::NpyHeader& h = info.header;
  h.dtype = unpack_string(packed, pos);
  h.fortran_order = unpack_u64(packed, pos) != 0;
  h.data_offset = unpack_u64(packed, pos);
  h.version_major = static_cast<int>(unpack_u64(packed, pos));
  h.version_minor = static_cast<int>(unpack_u64(packed, pos));
  info.file_size = unpack_u64(packed, pos);
  std::vector<std::uint64_t> fields(FileIdentity{}.fields().size());
  for (std::uint64_t& f : fields) f = unpack_u64(packed, pos);
  info.identity = FileIdentity::from_fields(fields);
  info.pinned = pinned;
  const auto rank_n = static_cast<std::size_t>(unpack_u64(packed, pos));
  for (std::size_t d = 0; d < rank_n; ++d) h.shape.push_back(static_cast<int64_t>(unpack_u64(packed, pos)));
  return info;
}

}  // namespace detail
}  // namespace darray
