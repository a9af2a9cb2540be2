// Broadcast and allreduce of any size_t length, issued as a sequence of MPI calls whose counts stay within
// max_message_bytes(). Every process derives the same sequence from the same length, so the calls match. Internal:
// users who mix in their own MPI calls use darray::mpi_comm() with MPI itself.
#pragma once

#include <mpi.h>

#include <cstddef>

#include "darray/comm/detail/chunking.hpp"
#include "darray/comm/detail/mpi_types.hpp"
#include "darray/comm/limits.hpp"
#include "darray/comm/p2p.hpp"
#include "darray/core/error.hpp"
#include "darray/runtime/detail/mpi.hpp"

namespace darray {
namespace detail {

// Broadcasts `bytes` bytes from root to every process of comm. Collective; `bytes` must be equal everywhere.
inline void bcast(MPI_Comm comm, void* data, std::size_t bytes, int root) {
  detail::check_peer(comm, root, "bcast");
  detail::check_buffer(data, bytes, "bcast");
  const std::size_t max_chunk = max_message_bytes();
  auto* p = static_cast<std::byte*>(data);
  for (std::size_t i = 0, n = detail::chunk_count(bytes, max_chunk); i < n; ++i) {
    const detail::Chunk c = detail::chunk_at(bytes, max_chunk, i);
    DARRAY_MPI_CHECK(MPI_Bcast(p + c.offset, detail::to_mpi_count(c.bytes, "bcast"), MPI_BYTE, root, comm));
  }
}

// Element-wise reduction of `count` elements of `type` into recv on every process. send == MPI_IN_PLACE reduces
// recv in place. Chunks hold max_message_bytes() / element size elements, but at least one element, so a limit
// below the element size still makes progress (the limit exists to keep counts within int, which one element does).
inline void allreduce(MPI_Comm comm, const void* send, void* recv, std::size_t count, MPI_Datatype type, MPI_Op op) {
  DARRAY_THROW_IF(comm == MPI_COMM_NULL, InvalidArgument, "allreduce", "communicator is MPI_COMM_NULL");
  detail::check_buffer(recv, count, "allreduce");
  const bool in_place = send == MPI_IN_PLACE;
  if (!in_place) detail::check_buffer(send, count, "allreduce");
  int type_size = 0;
  DARRAY_MPI_CHECK(MPI_Type_size(type, &type_size));
  DARRAY_THROW_IF(type_size <= 0, InvalidArgument, "allreduce", "datatype of size " << type_size);
  const auto elem = static_cast<std::size_t>(type_size);
  // A message no larger than the smallest limit allowed is never split: no need to look the limit up (it is read
  // from the environment, which costs as much as a small allreduce).
  const std::size_t limit = count * elem <= min_max_message_bytes ? count * elem : max_message_bytes();
  const std::size_t per_chunk = limit / elem > 0 ? limit / elem : 1;
  const auto* s = static_cast<const std::byte*>(send);
  auto* r = static_cast<std::byte*>(recv);
  for (std::size_t i = 0, n = detail::chunk_count(count, per_chunk); i < n; ++i) {
    const detail::Chunk c = detail::chunk_at(count, per_chunk, i);
    const void* chunk_send = in_place ? MPI_IN_PLACE : static_cast<const void*>(s + c.offset * elem);
    DARRAY_MPI_CHECK(
        MPI_Allreduce(chunk_send, r + c.offset * elem, detail::to_mpi_count(c.bytes, "allreduce"), type, op, comm));
  }
}

// In-place typed allreduce: allreduce(comm, values.data(), values.size(), MPI_SUM).
template <class T>
void allreduce(MPI_Comm comm, T* data, std::size_t count, MPI_Op op) {
  allreduce(comm, MPI_IN_PLACE, data, count, detail::mpi_datatype<T>(), op);
}

}  // namespace detail
}  // namespace darray
