// Waiting on MPI requests with a deadline (DARRAY_TIMEOUT_S). Without a deadline it is MPI_Waitsome until every
// request completed; with one it polls until every request completed or the deadline passed, and then throws an
// MpiError naming the operation and the processes whose requests did not complete, so a peer that failed or took
// another path gives an error, not a hang.
// Every blocking wait of the library should go through wait_all_until.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "darray/core/env_vars.hpp"
#include "darray/core/error.hpp"
#include "darray/runtime/detail/mpi.hpp"
#include "darray/runtime/detail/state.hpp"

namespace darray {

// The deadline of blocking waits inside the library, in seconds; 0 means none (DARRAY_TIMEOUT_S, agreed across
// processes at start-up: the largest value any process set).
inline int wait_timeout_seconds() {
  const auto& s = detail::state();
  return s.active ? s.wait_timeout_s : detail::env_wait_timeout_seconds();
}

namespace detail {

// The pause between polls of a wait with a deadline: none for the first 1000 empty polls (messages usually arrive
// within microseconds), then sleeps from 20 us doubling to 1 ms, so a long wait does not hold a core.
class PollPause {
 public:
  void progressed() {
    m_polls = 0;
    m_pause = std::chrono::microseconds(0);
  }
  void idle() {
    if (++m_polls < 1000) return;
    m_pause = std::min(std::chrono::microseconds(1000), std::max(std::chrono::microseconds(20), m_pause * 2));
    std::this_thread::sleep_for(m_pause);
  }

 private:
  long m_polls = 0;
  std::chrono::microseconds m_pause{0};
};

// The MpiError of a wait that passed its deadline: "<op>: timed out after T s (DARRAY_TIMEOUT_S) waiting for
// process(es) 1, 3; ...". `missing`: the peers (communicator ranks) whose requests did not complete, may repeat.
[[noreturn]] inline void throw_timed_out(const char* op, double timeout_s, std::vector<int> missing) {
  std::sort(missing.begin(), missing.end());
  missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
  std::ostringstream os;
  os << "timed out after " << timeout_s << " s (DARRAY_TIMEOUT_S) waiting for ";
  if (missing.empty()) {
    os << "the other processes";
  } else {
    os << "process" << (missing.size() > 1 ? "es " : " ");
    for (std::size_t i = 0; i < missing.size() && i < 16; ++i) os << (i ? ", " : "") << missing[i];
    if (missing.size() > 16) os << " and " << missing.size() - 16 << " more";
  }
  os << "; they may have failed, left early or called a different operation";
  throw MpiError(op, os.str(), MPI_ERR_PENDING, __FILE__, __LINE__);
}

// Waits until every request in `requests` completed; completed ones become MPI_REQUEST_NULL. peers[i] (when given)
// is the process, in the communicator's ranks, that request i waits on. With timeout_s > 0, after timeout_s seconds
// throws throw_timed_out's MpiError. The unfinished requests are then left in `requests` for the caller to cancel or
// free (only it knows which are receives whose buffers must stay alive). Failed requests throw MpiError naming op and
// the peer, except, with `tolerate_truncation`, receives that got a longer message than posted (MPI_ERR_TRUNCATE):
// they count as completed and the wait goes on, so the caller can report a mismatch once every message of the
// operation has arrived instead of leaving the rest for its next operation to receive.
// statuses_out (when given) receives request i's status at [i] (MPI_Get_count and MPI_TAG of receives); with
// tolerate_truncation its MPI_ERROR is MPI_ERR_TRUNCATE for the truncated receives and MPI_SUCCESS for the others.
inline void wait_all_until(std::vector<MPI_Request>& requests, const char* op, const std::vector<int>& peers,
                           MPI_Status* statuses_out, double timeout_s = wait_timeout_seconds(),
                           bool tolerate_truncation = false) {
  const int n = static_cast<int>(requests.size());
  if (n == 0) return;
  static thread_local std::vector<MPI_Status> scratch;  // reused: small exchanges should not allocate
  static thread_local std::vector<int> indices;
  scratch.resize(requests.size());
  // Request `i` ended with status `st` (its MPI_ERROR valid when in_status): kept, tolerated or thrown.
  const auto finish = [&](int i, const MPI_Status& st, bool in_status) {
    const int err = in_status ? st.MPI_ERROR : MPI_SUCCESS;
    if (err != MPI_SUCCESS && !(tolerate_truncation && err == MPI_ERR_TRUNCATE)) {
      std::ostringstream os;
      os << "request " << i;
      if (!peers.empty()) os << " (process " << peers[static_cast<std::size_t>(i)] << ")";
      throw MpiError(op, os.str() + " failed: " + mpi_error_string(err), err, __FILE__, __LINE__);
    }
    if (statuses_out != nullptr) {
      if (&statuses_out[i] != &st) statuses_out[i] = st;
      if (tolerate_truncation) statuses_out[i].MPI_ERROR = err;
    }
  };
  const WorldReturnsErrors world_returns_errors;
  indices.resize(requests.size());
  // Without a deadline MPI_Waitsome, each failed request handled as it comes. Not MPI_Waitall: Open MPI 4.1 with
  // threads (the library asks for MPI_THREAD_FUNNELED) never returns from an MPI_Waitall that finds a request failed
  // already (a receive truncated by a longer message: a peer running another operation) while another is still
  // pending; it spins in the release of its wait object (test_deadline has the case). With one, MPI_Testsome polls.
  const bool blocking = timeout_s <= 0;
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  PollPause pause;
  while (true) {
    int done = 0;
    const int rc = blocking ? MPI_Waitsome(n, requests.data(), &done, indices.data(), scratch.data())
                            : MPI_Testsome(n, requests.data(), &done, indices.data(), scratch.data());
    if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) DARRAY_MPI_CHECK(rc);
    if (done == MPI_UNDEFINED) return;  // no active request is left
    for (int k = 0; k < done; ++k)
      finish(indices[static_cast<std::size_t>(k)], scratch[static_cast<std::size_t>(k)], rc == MPI_ERR_IN_STATUS);
    if (blocking) continue;
    if (std::chrono::duration<double>(clock::now() - start).count() >= timeout_s) break;
    if (done > 0)
      pause.progressed();
    else
      pause.idle();
  }
  std::vector<int> missing;
  for (std::size_t i = 0; i < requests.size(); ++i)
    if (requests[i] != MPI_REQUEST_NULL && !peers.empty()) missing.push_back(peers[i]);
  throw_timed_out(op, timeout_s, std::move(missing));
}

inline void wait_all_until(std::vector<MPI_Request>& requests, const char* op, const std::vector<int>& peers = {},
                           double timeout_s = wait_timeout_seconds()) {
  wait_all_until(requests, op, peers, nullptr, timeout_s);
}

}  // namespace detail
}  // namespace darray
