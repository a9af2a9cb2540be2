// What every SPMD program needs around its computation: the library's MPI communicator for users who mix in their
// own MPI calls, printing one text per process in process order, and run(), which starts the Environment, runs the
// program's body and turns an error on any process into one clean message and a non-zero exit for the launch.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <exception>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "darray/core/error.hpp"
#include "darray/runtime/detail/mpi.hpp"
#include "darray/runtime/detail/shutdown.hpp"
#include "darray/runtime/detail/state.hpp"
#include "darray/runtime/environment.hpp"

namespace darray {

// The communicator the library runs on: its own duplicate of MPI_COMM_WORLD (same ranks, process_index() ==
// rank), made by the Environment and freed when it ends. Use it for your own collectives (or duplicate it): your
// messages can never match the library's pending ones by accident, as they could on MPI_COMM_WORLD with equal
// tags. Errors on it come back as codes (MPI_ERRORS_RETURN) instead of aborting.
inline MPI_Comm mpi_comm() { return detail::active_state("mpi_comm").comm; }

// Writes each process's `text` to `os` of process 0, in process order, so lines of different processes never
// interleave (process 0 gathers them all). Collective; nothing is added between the texts.
inline void print_in_process_order(const std::string& text, std::ostream& os = std::cout) {
  const MPI_Comm comm = mpi_comm();
  const int n = process_count(), me = process_index();
  long long len = static_cast<long long>(text.size());
  std::vector<long long> lens(static_cast<std::size_t>(n));
  DARRAY_MPI_CHECK(MPI_Gather(&len, 1, MPI_LONG_LONG, lens.data(), 1, MPI_LONG_LONG, 0, comm));
  if (me != 0) {
    // One message per process, in chunks of at most INT_MAX bytes.
    for (long long off = 0; off < len; off += (1LL << 30))
      DARRAY_MPI_CHECK(MPI_Send(text.data() + off, static_cast<int>(std::min<long long>(1LL << 30, len - off)),
                                MPI_CHAR, 0, 0, comm));
    return;
  }
  os << text;
  for (int p = 1; p < n; ++p) {
    std::string other(static_cast<std::size_t>(lens[static_cast<std::size_t>(p)]), '\0');
    for (long long off = 0; off < lens[static_cast<std::size_t>(p)]; off += (1LL << 30))
      DARRAY_MPI_CHECK(
          MPI_Recv(&other[static_cast<std::size_t>(off)],
                   static_cast<int>(std::min<long long>(1LL << 30, lens[static_cast<std::size_t>(p)] - off)), MPI_CHAR,
                   p, 0, comm, MPI_STATUS_IGNORE));
    os << other;
  }
  os << std::flush;
}

namespace detail {

// How long a failed process waits for the others to report in before it ends the launch with MPI_Abort: they may
// be blocked in a collective it will never join.
inline constexpr double run_agreement_seconds = 10.0;

// Collective on `comm` (a private duplicate): every process reports whether it failed. Returns the lowest failed
// rank (size when none) and the number that failed; {-1, -1} when the others did not report in time: a failed
// process waits run_agreement_seconds, one whose body returned DARRAY_SHUTDOWN_TIMEOUT_S (the end of its program, as
// the Environment's end waits; 0: without limit), since the others may wait in a collective it will never join.
inline std::pair<int, int> agree_on_failure(MPI_Comm comm, bool failed) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int first_in = failed ? rank : size, count_in = failed ? 1 : 0, first = size, count = 0;
  MPI_Request req[2];
  MPI_Iallreduce(&first_in, &first, 1, MPI_INT, MPI_MIN, comm, &req[0]);
  MPI_Iallreduce(&count_in, &count, 1, MPI_INT, MPI_SUM, comm, &req[1]);
  const double timeout_s = failed ? run_agreement_seconds : static_cast<double>(state().shutdown_timeout_s);
  if (!complete_within(req, 2, timeout_s)) return {-1, -1};
  return {first, count};
}

template <class Body>
int run_body(Body& body) {
  if constexpr (std::is_convertible<decltype(body()), int>::value) {
    return body();
  } else {
    body();
    return 0;
  }
}

}  // namespace detail

// Runs a program: starts the Environment, calls body() (returning void or an exit code), and returns what main
// should return:
//   int main(int argc, char** argv) { return darray::run(argc, argv, [&] { ... }); }
// An exception on any process ends the launch cleanly: one process (the lowest failed rank) prints
// "error: <message>" to stderr, and every process returns 1. When the other processes cannot take part because
// they wait in a collective that the failed process left, it ends the launch with MPI_Abort after
// detail::run_agreement_seconds; a process whose body returned while the others wait in a collective it skipped
// (it caught an error, say) ends it after DARRAY_SHUTDOWN_TIMEOUT_S, as the Environment's end does. Without an error
// every process returns body's exit code (0 for void).
template <class Body>
int run(int& argc, char**& argv, const EnvironmentOptions& options, Body&& body) {
  std::string message;
  int code = 0;
  bool failed = false;
  std::unique_ptr<Environment> env;
  try {
    env = std::make_unique<Environment>(argc, argv, options);
  } catch (const std::exception& e) {
    // The Environment agrees on start-up errors across processes, so each one has the same message: print once.
    int rank = 0, initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_dup(mpi_comm(), &comm);
  try {
    code = detail::run_body(body);
  } catch (const std::exception& e) {
    failed = true;
    message = e.what();
  } catch (...) {
    failed = true;
    message = "an exception that is not a std::exception";
  }
  const auto [first, count] = detail::agree_on_failure(comm, failed);
  if (first < 0) {  // the others did not report in time
    std::ostringstream os;
    if (failed)
      os << "error on process " << process_index() << " (the others did not respond within "
         << detail::run_agreement_seconds << " s, so the launch is aborted): " << message;
    else
      os << detail::early_exit_message(process_index(), process_count(), "the body given to darray::run returned",
                                       detail::state().shutdown_timeout_s);
    detail::abort_job(comm, os.str());
  }
  MPI_Comm_free(&comm);
  if (count > 0 && process_index() == first) {
    std::cerr << "error";
    if (process_count() > 1)
      std::cerr << " on process " << first << (count > 1 ? " and " + std::to_string(count - 1) + " other(s)" : "");
    std::cerr << ": " << message << std::endl;
  }
  return count > 0 ? 1 : code;
}

template <class Body>
int run(int& argc, char**& argv, Body&& body) {
  return run(argc, argv, EnvironmentOptions{}, std::forward<Body>(body));
}

}  // namespace darray
