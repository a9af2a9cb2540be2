// Meeting points under DARRAY_TIMEOUT_S. MPI's blocking collectives have no deadline, so a process that never comes
// to one (it failed, returned, or took another path) leaves the others in it forever. The library's collective steps
// on the job's communicator that are not exchanges (comparing a call's arguments, creating a group's communicator, a
// whole-array reduction's allgather, an FFT plan's first agreement) therefore first meet here when a deadline is set:
// every process exchanges an empty message with every other in two rounds, point to point on a communicator of their
// own (so a round that times out leaves nothing pending in MPI): round one says "I am here", round two "I saw everyone
// here". A process enters the collective only after round two, so when the others time out in round one, a late process
// that completes round one still waits for round two and times out too, instead of entering the collective alone. Once
// any process passes round two, every process has sent its round-two messages (each does so only after passing round
// one), so the others' waits end too: only a message delivered later than the deadline could still split them. Without
// a deadline nothing happens here (no message, no cost).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "darray/runtime/detail/deadline.hpp"
#include "darray/runtime/detail/mpi.hpp"
#include "darray/runtime/detail/state.hpp"

namespace darray {
namespace detail {

// The tag of the next round on the sync communicator. Every process draws its tags alike (the same calls in the same
// order), from a range as wide as MPI allows, so the messages a timed-out round leaves behind are never taken by a
// later round (until the counter wraps: after 2^31 - 1 rounds in Open MPI and MPICH, 32,767 at the least).
inline int next_sync_tag(const RuntimeState& s) {
  static std::uint64_t next = 0;
  static int upper = 0;
  if (upper == 0) {
    int* value = nullptr;
    int found = 0;
    MPI_Comm_get_attr(s.sync_comm, MPI_TAG_UB, &value, &found);
    upper = found != 0 && value != nullptr && *value > 0 ? *value : 32767;
  }
  return static_cast<int>(next++ % static_cast<std::uint64_t>(upper));
}

// One round: an empty message to and from every other process on the sync communicator with `tag`, waited under
// the deadline. When it passes, the unfinished requests are released (nothing refers to a buffer) and the MpiError
// naming `op` and the processes that did not arrive is thrown.
inline void meet_round(const RuntimeState& s, int tag, const char* op) {
  static thread_local std::vector<MPI_Request> requests;
  static thread_local std::vector<int> peers;
  requests.clear();
  peers.clear();
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
    wait_all_until(requests, op, peers, s.wait_timeout_s);
  } catch (...) {
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

// Whether the library's collective steps on comm meet first (arrive_together): a deadline is set and comm is the
// job's communicator (the sync communicator pairs with it; steps on a group's communicator do not meet).
inline bool meets_before_collectives(MPI_Comm comm) {
  const RuntimeState& s = state();
  return s.active && s.wait_timeout_s > 0 && s.sync_comm != MPI_COMM_NULL && s.size > 1 && comm == s.comm;
}

// Collective over comm: returns once every process of the job has arrived here and seen the others arrive (two
// rounds, see above), or throws MpiError naming op and the absent processes after DARRAY_TIMEOUT_S. Call it right
// before a blocking collective on the job's communicator, with nothing in between that may throw on one process
// only. Without a deadline, or on another communicator, returns at once.
inline void arrive_together(MPI_Comm comm, const char* op) {
  if (!meets_before_collectives(comm)) return;
  const RuntimeState& s = state();
  const int here = next_sync_tag(s), seen = next_sync_tag(s);
  meet_round(s, here, op);
  meet_round(s, seen, op);
}

}  // namespace detail
}  // namespace darray
