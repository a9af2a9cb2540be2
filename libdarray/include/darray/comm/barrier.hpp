// darray::barrier(): every process waits for all the others, after fencing its devices (sync_global_devices without
// a name). Takes part in DARRAY_CHECK, and honours the DARRAY_TIMEOUT_S deadline.
#pragma once

#include <mpi.h>

#include <vector>

#include "darray/comm/check.hpp"
#include "darray/comm/detail/deadline.hpp"
#include "darray/core/error.hpp"
#include "darray/runtime/detail/kokkos_compat.hpp"
#include "darray/runtime/detail/mpi.hpp"
#include "darray/runtime/detail/state.hpp"

namespace darray {

// Collective over every process. With DARRAY_CHECK, a process that calls another collective meanwhile makes every
// process throw the same InvalidArgument naming both. With DARRAY_TIMEOUT_S, a process whose peers do not arrive in
// time throws an MpiError naming them; the barrier then exchanges one empty message with every other process (on a
// communicator of its own), which is what lets it name the absent ones, so leave the deadline off for production
// runs on thousands of processes.
inline void barrier() {
  const auto& s = detail::active_state("barrier");
  check_consistent(s.comm, "barrier()");
  detail::fence_all();
  if (s.wait_timeout_s <= 0 || s.sync_comm == MPI_COMM_NULL) {
    DARRAY_MPI_CHECK(MPI_Barrier(s.comm));
    return;
  }
  // Every process counts its barriers alike, so a message of a barrier that timed out cannot complete a later one
  // (until the tag wraps around, 32,767 barriers later at the least).
  static unsigned generation = 0;
  const int tag = static_cast<int>(generation++ % 32767u);
  std::vector<MPI_Request> requests;
  std::vector<int> peers;
  requests.reserve(2 * static_cast<std::size_t>(s.size));
  for (int p = 0; p < s.size; ++p) {
    if (p == s.rank) continue;
    requests.emplace_back(MPI_REQUEST_NULL);
    DARRAY_MPI_CHECK(MPI_Irecv(nullptr, 0, MPI_BYTE, p, tag, s.sync_comm, &requests.back()));
    peers.push_back(p);
  }
  const std::size_t receives = requests.size();
  for (int p = 0; p < s.size; ++p) {
    if (p == s.rank) continue;
    requests.emplace_back(MPI_REQUEST_NULL);
    DARRAY_MPI_CHECK(MPI_Isend(nullptr, 0, MPI_BYTE, p, tag, s.sync_comm, &requests.back()));
    peers.push_back(p);
  }
  try {
    detail::wait_all_until(requests, "barrier", peers, s.wait_timeout_s);
  } catch (...) {
    // Empty messages: nothing refers to a buffer, so the unfinished requests can simply be released.
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (requests[i] == MPI_REQUEST_NULL) continue;
      if (i < receives) {
        MPI_Cancel(&requests[i]);
        MPI_Wait(&requests[i], MPI_STATUS_IGNORE);
      } else {
        MPI_Request_free(&requests[i]);
      }
    }
    throw;
  }
}

}  // namespace darray
