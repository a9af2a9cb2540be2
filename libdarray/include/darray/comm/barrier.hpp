// darray::barrier(): every process waits for all the others, after fencing its devices (sync_global_devices without
// a name). Takes part in DARRAY_CHECK, and honours the DARRAY_TIMEOUT_S deadline.
#pragma once

#include <mpi.h>

#include "darray/comm/check.hpp"
#include "darray/core/error.hpp"
#include "darray/runtime/detail/arrival.hpp"
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
  // One round of arrive_together's meeting (runtime/detail/arrival.hpp): the late process passes once it arrives,
  // its peers' messages being there already.
  detail::meet_round(s, detail::next_sync_tag(s), "barrier");
}

}  // namespace darray
