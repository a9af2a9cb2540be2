// Waiting on MPI requests with a deadline (DARRAY_TIMEOUT_S). Without a deadline it is MPI_Waitall; with one it polls
// until every request completed or the deadline passed, and then throws an MpiError naming the operation and the
// processes whose requests did not complete, so a peer that failed or took another path gives an error, not a hang.
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

// Waits until every request in `requests` completed; completed ones become MPI_REQUEST_NULL. peers[i] (when given)
// is the process, in the communicator's ranks, that request i waits on. With timeout_s > 0, after timeout_s seconds
// throws MpiError: "<op>: timed out after T s (DARRAY_TIMEOUT_S) waiting for process(es) 1, 3; ...". The unfinished
// requests are then left in `requests` for the caller to cancel or free (only it knows which are receives whose
// buffers must stay alive). Failed requests throw MpiError naming op and the peer.
inline void wait_all_until(std::vector<MPI_Request>& requests, const char* op, const std::vector<int>& peers = {},
                           double timeout_s = wait_timeout_seconds()) {
  const int n = static_cast<int>(requests.size());
  if (n == 0) return;
  std::vector<MPI_Status> statuses(requests.size());
  const auto fail_in_status = [&](int count, const int* indices) {
    for (int k = 0; k < count; ++k) {
      const int i = indices ? indices[k] : k;
      const int err = statuses[static_cast<std::size_t>(indices ? k : i)].MPI_ERROR;
      if (err != MPI_SUCCESS && err != MPI_ERR_PENDING) {
        std::ostringstream os;
        os << "request " << i;
        if (!peers.empty()) os << " (process " << peers[static_cast<std::size_t>(i)] << ")";
        throw MpiError(op, os.str() + " failed: " + mpi_error_string(err), err, __FILE__, __LINE__);
      }
    }
  };
  if (timeout_s <= 0) {
    const int rc = MPI_Waitall(n, requests.data(), statuses.data());
    if (rc == MPI_ERR_IN_STATUS) fail_in_status(n, nullptr);
    DARRAY_MPI_CHECK(rc);
    return;
  }
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  std::vector<int> indices(requests.size());
  auto pause = std::chrono::microseconds(0);
  for (long polls = 0;; ++polls) {
    int done = 0;
    const int rc = MPI_Testsome(n, requests.data(), &done, indices.data(), statuses.data());
    if (rc == MPI_ERR_IN_STATUS) fail_in_status(done, indices.data());
    DARRAY_MPI_CHECK(rc);
    if (done == MPI_UNDEFINED) return;  // no active request is left
    const double elapsed = std::chrono::duration<double>(clock::now() - start).count();
    if (elapsed >= timeout_s) break;
    if (done > 0) {
      polls = 0;
      pause = std::chrono::microseconds(0);
    } else if (polls >= 1000) {
      pause = std::min(std::chrono::microseconds(1000), std::max(std::chrono::microseconds(20), pause * 2));
      std::this_thread::sleep_for(pause);
    }
  }
  std::vector<int> missing;
  for (std::size_t i = 0; i < requests.size(); ++i)
    if (requests[i] != MPI_REQUEST_NULL && !peers.empty()) missing.push_back(peers[i]);
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

}  // namespace detail
}  // namespace darray
