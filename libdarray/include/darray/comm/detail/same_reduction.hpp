// Reductions travel through MPI_Allreduce (or an allgather of partial results), which carries no tag: a process that
// reduces other data (another element type of the same size, another operation, another length) would combine its
// bytes with the others' and every process would return garbage. So the processes compare a 64-bit fingerprint of
// the reduction first — one 16-byte allreduce, always on, DARRAY_CHECK or not — and on a mismatch all of them throw
// the same InvalidArgument, which names what each process ran (the descriptions are gathered only then).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "darray/core/error.hpp"
#include "darray/runtime/detail/mpi.hpp"

namespace darray {
namespace detail {

// h combined with v (the splitmix64 finaliser): order-sensitive, the same on every platform.
constexpr std::uint64_t mix_fingerprint(std::uint64_t h, std::uint64_t v) {
  std::uint64_t z = h ^ (v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2));
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Collective over comm, only once the processes know they disagree: every process throws the same InvalidArgument,
// listing each process's description of its reduction (distinct ones, up to 8, each cut to 160 characters).
[[noreturn]] inline void throw_other_reduction(MPI_Comm comm, const char* api, const std::string& mine) {
  constexpr std::size_t width = 160;
  int size = 1;
  DARRAY_MPI_CHECK(MPI_Comm_size(comm, &size));
  std::vector<char> all(static_cast<std::size_t>(size) * width, '\0');
  char own[width] = {};
  std::memcpy(own, mine.data(), std::min(mine.size(), width - 1));
  DARRAY_MPI_CHECK(
      MPI_Allgather(own, static_cast<int>(width), MPI_CHAR, all.data(), static_cast<int>(width), MPI_CHAR, comm));
  std::vector<std::string> seen;
  std::string list;
  for (int r = 0; r < size; ++r) {
    std::string d(&all[static_cast<std::size_t>(r) * width]);
    if (std::find(seen.begin(), seen.end(), d) != seen.end()) continue;
    if (seen.size() == 8) {
      list += "; ...";
      break;
    }
    list += (seen.empty() ? "" : "; ") + d;
    seen.push_back(std::move(d));
  }
  throw InvalidArgument(api,
                        "the processes of this call ran another reduction (each must reduce the same element "
                        "type, operation and length): " +
                            list);
}

// Collective over comm: returns when every process passed the same fingerprint; otherwise every process throws
// throw_other_reduction's error, with describe() (called only then) as this process's line.
template <class Describe>
void check_same_reduction(MPI_Comm comm, std::uint64_t fingerprint, const char* api, const Describe& describe) {
  // max of f and of -f: equal everywhere exactly when max(f) == min(f). 63 bits keep the negation in range.
  const auto f = static_cast<std::int64_t>(fingerprint >> 1);
  std::int64_t v[2] = {f, -f};
  DARRAY_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_INT64_T, MPI_MAX, comm));
  if (v[0] != -v[1]) throw_other_reduction(comm, api, describe());
}

}  // namespace detail
}  // namespace darray
