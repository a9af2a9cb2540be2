// The shutdown agreement of ~Environment. A process whose Environment ends while the others still wait for it in a
// collective would leave them hanging forever once it calls MPI_Finalize; instead it first waits (non-blocking
// barrier, polled) for every process to reach its own end, and when they do not arrive within
// DARRAY_SHUTDOWN_TIMEOUT_S it aborts the whole job with one message saying which process left and why.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>

namespace darray {
namespace detail {

// Whether the n requests (a barrier's, an agreement's reductions) all completed within timeout_s seconds
// (timeout_s <= 0: waits without limit). `waited` receives the seconds spent. Polls quickly at first, so processes
// that arrive within microseconds of one another cost one round; then backs off to 10 ms so a long wait does not burn
// a core that another process may need. Unfinished requests are left as they are. Never throws.
inline bool complete_within(MPI_Request* requests, int n, double timeout_s, double* waited = nullptr) noexcept {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  bool completed = false;
  auto pause = std::chrono::microseconds(0);
  for (long polls = 0;; ++polls) {
    int done = 0;
    if (MPI_Testall(n, requests, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS) break;
    if (done) {
      completed = true;
      break;
    }
    const double elapsed = std::chrono::duration<double>(clock::now() - start).count();
    if (timeout_s > 0 && elapsed >= timeout_s) break;
    if (polls >= 1000) {
      pause = std::min(std::chrono::microseconds(10000), std::max(std::chrono::microseconds(50), pause * 2));
      std::this_thread::sleep_for(pause);
    }
  }
  if (waited != nullptr) *waited = std::chrono::duration<double>(clock::now() - start).count();
  return completed;
}

// Collective over comm in the sense of MPI_Ibarrier: true when every process entered it within timeout_s seconds
// (timeout_s <= 0: waits without limit), as complete_within waits. Never throws.
inline bool all_arrive_within(MPI_Comm comm, double timeout_s, double* waited = nullptr) noexcept {
  MPI_Request request = MPI_REQUEST_NULL;
  if (MPI_Ibarrier(comm, &request) != MPI_SUCCESS) {
    if (waited != nullptr) *waited = 0;
    return false;
  }
  return complete_within(&request, 1, timeout_s, waited);
}

// The one message of a process that aborts the job because the others did not reach the end.
// `how` says how it left, e.g. "its darray::Environment ended: main returned or the Environment went out of scope".
inline std::string early_exit_message(int rank, int size, const char* how, int timeout_s) {
  std::ostringstream os;
  os << "darray: process " << rank << " left (" << how << ") while other processes were still communicating: the other "
     << size - 1 << " process(es) did not reach the end of the program within DARRAY_SHUTDOWN_TIMEOUT_S = " << timeout_s
     << " s, so they are most likely waiting in a collective that process " << rank
     << " skipped. Aborting the job instead of hanging (raise DARRAY_SHUTDOWN_TIMEOUT_S if processes legitimately "
        "finish that far apart; 0 waits forever).";
  return os.str();
}

// Seconds an aborting process waits between printing its message and calling MPI_Abort. The launcher forwards a
// process's stderr through a pipe and tears the job down on the abort request, which travels on another socket: a
// launcher short of CPU (Hydra's proxy beside processes busy-polling in a collective, on a loaded node) can act on the
// abort first and drop the message, leaving the user with a dead job and no reason. Only the failing process waits,
// once, after its deadline already passed, so the wait costs nothing a working run would see.
inline constexpr double abort_grace_seconds = 0.5;

// The one way libdarray ends a whole launch: prints message (one line, to stderr), gives the launcher
// abort_grace_seconds to forward it, then MPI_Abort(comm, 1). Never returns.
[[noreturn]] inline void abort_job(MPI_Comm comm, const std::string& message) noexcept {
  std::cerr << message << std::endl;  // std::cerr is unbuffered: written out here
  std::this_thread::sleep_for(std::chrono::duration<double>(abort_grace_seconds));
  MPI_Abort(comm, 1);
  std::abort();  // MPI_Abort does not return; should an MPI return from it, the process must still end
}

}  // namespace detail
}  // namespace darray
