// sync_global_devices(name): the barrier of jax.experimental.multihost_utils. Every process waits for all the
// others (after fencing its devices) and checks that they all arrived at the sync point of the same name, so
// processes that took different paths get an error naming both points instead of matching the wrong barriers.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "darray/comm/check.hpp"
#include "darray/core/error.hpp"
#include "darray/runtime/detail/arrival.hpp"
#include "darray/runtime/detail/kokkos_compat.hpp"
#include "darray/runtime/detail/mpi.hpp"
#include "darray/runtime/detail/state.hpp"

namespace darray {

// Collective. darray::barrier() is the same wait without the name check.
inline void sync_global_devices(const std::string& name) {
  const MPI_Comm comm = detail::world_comm();
  detail::fence_all();
  const std::uint64_t h = detail::fnv1a64(name);
  // min(h) and min(~h) = ~max(h) in one call: the names agree exactly when min and max agree.
  std::uint64_t v[2] = {h, ~h};
  // Under DARRAY_TIMEOUT_S a process that never comes is an error, not a hang in the allreduce.
  detail::arrive_together(comm, "sync_global_devices");
  DARRAY_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_UINT64_T, MPI_MIN, comm));
  if (v[0] == ~v[1]) return;
  int size = 1, rank = 0;
  DARRAY_MPI_CHECK(MPI_Comm_size(comm, &size));
  DARRAY_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  std::vector<std::uint64_t> all(static_cast<std::size_t>(size));
  DARRAY_MPI_CHECK(MPI_Allgather(&h, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, comm));
  int first = 1;
  while (all[static_cast<std::size_t>(first)] == all[0]) ++first;
  std::string reference = rank == 0 ? name : std::string(), other = rank == first ? name : std::string();
  detail::bcast_string(comm, reference, 0);
  detail::bcast_string(comm, other, first);
  DARRAY_THROW(InvalidArgument, "sync_global_devices",
               "process 0 is at \"" << reference << "\" but process " << first << " is at \"" << other
                                    << "\"; every process must reach the same sync points in the same order");
}

}  // namespace darray
