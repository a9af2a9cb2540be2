// How one logical message of any size_t length is cut into MPI messages of at most max_message_bytes(), and the
// guard that stops any count above INT_MAX before it reaches MPI. Pure arithmetic: sender and receiver compute the
// same chunks independently, so no sizes travel on the wire.
#pragma once

#include <climits>
#include <cstddef>
#include <limits>

#include "darray/core/error.hpp"

namespace darray {
namespace detail {

struct Chunk {
  std::size_t offset = 0;  // from the start of the logical message
  std::size_t bytes = 0;
};

// Number of chunks of a total-byte message; 0 for an empty message (nothing is sent for it).
inline std::size_t chunk_count(std::size_t total, std::size_t max_chunk) {
  DARRAY_THROW_IF(max_chunk == 0, InvalidArgument, "chunk_count", "maximum chunk size 0; expected at least 1 byte");
  return total / max_chunk + (total % max_chunk != 0 ? 1 : 0);
}

// Chunk i: every chunk is max_chunk bytes except the last, which takes the remainder.
inline Chunk chunk_at(std::size_t total, std::size_t max_chunk, std::size_t i) {
  const std::size_t n = chunk_count(total, max_chunk);
  DARRAY_THROW_IF(i >= n, InvalidArgument, "chunk_at",
                  "chunk " << i << " requested of a " << total << "-byte message that has " << n << " chunk(s)");
  const std::size_t offset = i * max_chunk;
  return Chunk{offset, total - offset < max_chunk ? total - offset : max_chunk};
}

// The int count MPI takes. Open MPI 4.1 has no large-count calls, and a count above 4 GiB cast to int can wrap to a
// small valid value that silently moves the wrong bytes, so this throws instead of casting.
inline int to_mpi_count(std::size_t n, const char* api) {
  DARRAY_THROW_IF(n > static_cast<std::size_t>(INT_MAX), InvalidArgument, api,
                  "count " << n << " exceeds INT_MAX (" << INT_MAX << "), the largest count an MPI call accepts");
  return static_cast<int>(n);
}

// offset + bytes, or InvalidArgument when the range wraps around size_t (a corrupt plan).
inline std::size_t checked_end(std::size_t offset, std::size_t bytes, const char* api) {
  DARRAY_THROW_IF(bytes > std::numeric_limits<std::size_t>::max() - offset, InvalidArgument, api,
                  "byte range at offset " << offset << " with " << bytes << " bytes overflows size_t");
  return offset + bytes;
}

}  // namespace detail
}  // namespace darray
