// DARRAY_CHECK=1 support: before a collective, processes compare a hash of what they are about to do, so a program
// whose processes diverge gets the same InvalidArgument everywhere (naming both operations) instead of a deadlock.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "darray/comm/chunked_collectives.hpp"
#include "darray/core/env.hpp"
#include "darray/core/error.hpp"
#include "darray/runtime/detail/arrival.hpp"
#include "darray/runtime/detail/mpi.hpp"
#include "darray/runtime/detail/state.hpp"

namespace darray {

namespace detail {

// FNV-1a: a fixed, platform-independent hash, unlike std::hash, so heterogeneous builds still agree.
inline std::uint64_t fnv1a64(const std::string& s) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// Broadcasts a string of any length from root (collective).
inline void bcast_string(MPI_Comm comm, std::string& s, int root) {
  std::uint64_t len = s.size();
  DARRAY_MPI_CHECK(MPI_Bcast(&len, 1, MPI_UINT64_T, root, comm));
  s.resize(static_cast<std::size_t>(len));
  if (len > 0) bcast(comm, &s[0], s.size(), root);
}

}  // namespace detail

// Whether DARRAY_CHECK asks for consistency checks (0/1/true/false/on/off/yes/no; unset: off). Read once by the
// Environment and agreed across processes (on if any process set it), so every process runs the same checks.
inline bool consistency_checks_enabled() {
  const auto& s = detail::state();
  return s.active ? s.consistency_checks : detail::env_bool("DARRAY_CHECK", false);
}

namespace detail {

// The comparison itself, whatever DARRAY_CHECK says: collective over comm; on a mismatch every process throws the
// same InvalidArgument naming process 0's operation and the first process whose description differs. `setting`
// names what asked for it in the message (" (DARRAY_CHECK)", or nothing for checks that are always on). Under
// DARRAY_TIMEOUT_S the processes meet first (detail::arrive_together), so one that never comes is an MpiError naming
// it and this process's call, not a hang in the allgather.
inline void require_same_call(MPI_Comm comm, const std::string& op_description, const char* setting) {
  DARRAY_THROW_IF(comm == MPI_COMM_NULL, InvalidArgument, "check_consistent", "communicator is MPI_COMM_NULL");
  int rank = 0, size = 1;
  DARRAY_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  DARRAY_MPI_CHECK(MPI_Comm_size(comm, &size));
  try {
    arrive_together(comm, "check_consistent");  // under DARRAY_TIMEOUT_S: a process that never comes is an error
  } catch (const MpiError& e) {
    throw MpiError(e.api(), e.message() + " (this process was about to run " + op_description + ")", e.code());
  }
  const std::uint64_t mine = fnv1a64(op_description);
  std::vector<std::uint64_t> all(static_cast<std::size_t>(size));
  DARRAY_MPI_CHECK(MPI_Allgather(&mine, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, comm));
  int first = -1;
  for (int p = 1; p < size && first < 0; ++p)
    if (all[static_cast<std::size_t>(p)] != all[0]) first = p;
  if (first < 0) return;
  std::string reference = rank == 0 ? op_description : std::string();
  std::string differing = rank == first ? op_description : std::string();
  bcast_string(comm, reference, 0);
  bcast_string(comm, differing, first);
  DARRAY_THROW(InvalidArgument, "check_consistent",
               "processes disagree on the collective operation"
                   << setting << ": process 0 runs \"" << reference << "\" but process " << first << " runs \""
                   << differing
                   << "\"; every process must call the same collectives with the same arguments in the same order");
}

}  // namespace detail

// Collective over comm when checks are enabled, a no-op otherwise. op_description should capture everything the
// processes must agree on (operation, shape, sharding). On a mismatch every process throws the same InvalidArgument
// naming process 0's operation and the first process whose description differs, with both descriptions.
inline void check_consistent(MPI_Comm comm, const std::string& op_description) {
  if (!consistency_checks_enabled()) return;
  detail::require_same_call(comm, op_description, " (DARRAY_CHECK)");
}

}  // namespace darray
