// Point-to-point transfers of any size_t byte count: each message is split into chunks of at most
// max_message_bytes(), sent with the same tag so MPI's non-overtaking rule reassembles them in order, and every
// received chunk is checked to have exactly the size the receiver derived.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "darray/comm/detail/chunking.hpp"
#include "darray/comm/detail/requests.hpp"
#include "darray/comm/limits.hpp"
#include "darray/core/error.hpp"
#include "darray/runtime/detail/mpi.hpp"

namespace darray {

namespace detail {

// Chunked messages need one concrete peer: MPI_ANY_SOURCE could interleave chunks of different senders.
inline void check_peer(MPI_Comm comm, int peer, const char* api) {
  DARRAY_THROW_IF(comm == MPI_COMM_NULL, InvalidArgument, api, "communicator is MPI_COMM_NULL");
  int size = 0;
  DARRAY_MPI_CHECK(MPI_Comm_size(comm, &size));
  DARRAY_THROW_IF(peer < 0 || peer >= size, InvalidArgument, api,
                  "peer " << peer << " is not a rank of the communicator; expected 0.." << size - 1);
}

inline void check_buffer(const void* data, std::size_t bytes, const char* api) {
  DARRAY_THROW_IF(data == nullptr && bytes > 0, InvalidArgument, api, "null buffer for " << bytes << " bytes");
}

}  // namespace detail

// Outstanding chunks of one or more nonblocking messages. wait() completes them (and checks received sizes);
// destroying a Request that was not waited for cancels its receives and releases its sends.
class Request {
 public:
  Request() = default;
  void wait() { m_set.wait_all("Request::wait"); }
  bool pending() const { return m_set.pending() > 0; }

 private:
  friend Request isend(MPI_Comm, const void*, std::size_t, int, int);
  friend Request irecv(MPI_Comm, void*, std::size_t, int, int);
  detail::RequestSet m_set;
};

inline Request isend(MPI_Comm comm, const void* data, std::size_t bytes, int dest, int tag = 0) {
  detail::check_peer(comm, dest, "isend");
  detail::check_buffer(data, bytes, "isend");
  Request r;
  r.m_set.post_send(comm, static_cast<const std::byte*>(data), bytes, dest, tag, 0, max_message_bytes(), "isend");
  return r;
}

inline Request irecv(MPI_Comm comm, void* data, std::size_t bytes, int source, int tag = 0) {
  detail::check_peer(comm, source, "irecv");
  detail::check_buffer(data, bytes, "irecv");
  Request r;
  r.m_set.post_recv(comm, static_cast<std::byte*>(data), bytes, source, tag, 0, max_message_bytes(), "irecv");
  return r;
}

inline void wait_all(std::vector<Request>& requests) {
  for (Request& r : requests) r.wait();
}

// Blocking send of `bytes` bytes (0 sends nothing: the receiver derives the same empty chunk list).
inline void send(MPI_Comm comm, const void* data, std::size_t bytes, int dest, int tag = 0) {
  detail::check_peer(comm, dest, "send");
  detail::check_buffer(data, bytes, "send");
  const std::size_t max_chunk = max_message_bytes();
  const auto* p = static_cast<const std::byte*>(data);
  for (std::size_t i = 0, n = detail::chunk_count(bytes, max_chunk); i < n; ++i) {
    const detail::Chunk c = detail::chunk_at(bytes, max_chunk, i);
    DARRAY_MPI_CHECK(MPI_Send(p + c.offset, detail::to_mpi_count(c.bytes, "send"), MPI_BYTE, dest, tag, comm));
  }
}

// Blocking receive of exactly `bytes` bytes from `source`.
inline void recv(MPI_Comm comm, void* data, std::size_t bytes, int source, int tag = 0) {
  detail::check_peer(comm, source, "recv");
  detail::check_buffer(data, bytes, "recv");
  const std::size_t max_chunk = max_message_bytes();
  auto* p = static_cast<std::byte*>(data);
  for (std::size_t i = 0, n = detail::chunk_count(bytes, max_chunk); i < n; ++i) {
    const detail::Chunk c = detail::chunk_at(bytes, max_chunk, i);
    const int count = detail::to_mpi_count(c.bytes, "recv");
    MPI_Status st;
    DARRAY_MPI_CHECK(MPI_Recv(p + c.offset, count, MPI_BYTE, source, tag, comm, &st));
    detail::RequestSet::check_received(st, count, source, "recv");
  }
}

}  // namespace darray
