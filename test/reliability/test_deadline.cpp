// DARRAY_TIMEOUT_S (run with DARRAY_TIMEOUT_S=1): a blocking wait of the library whose peers do not arrive in time
// throws an error naming the operation and the processes that did not arrive, instead of hanging.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstddef>
#include <thread>
#include <vector>

#include "darray/comm/detail/requests.hpp"
#include "darray/darray.hpp"
#include "mpi_test.hpp"

using namespace darray;
using darray::testing::all_ok;

TEST_CASE("DARRAY_TIMEOUT_S is read and agreed at start-up") { REQUIRE(all_ok(wait_timeout_seconds() == 1)); }

TEST_CASE("wait_all_until names the operation and the peer that never sent") {
  int never = 0;
  std::vector<MPI_Request> requests(1, MPI_REQUEST_NULL);
  MPI_Irecv(&never, 1, MPI_INT, 0, 4242, MPI_COMM_SELF, &requests[0]);
  const auto start = std::chrono::steady_clock::now();
  const std::string msg =
      darray::testing::error_message<MpiError>([&] { detail::wait_all_until(requests, "test wait", {7}, 0.25); });
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const bool left = requests[0] != MPI_REQUEST_NULL;  // the unfinished request is the caller's to cancel
  if (left) {
    MPI_Cancel(&requests[0]);
    MPI_Wait(&requests[0], MPI_STATUS_IGNORE);
  }
  INFO(msg);
  REQUIRE(all_ok(left && took >= 0.25 && took < 5 && msg.find("test wait") != std::string::npos &&
                 msg.find("timed out after 0.25 s (DARRAY_TIMEOUT_S) waiting for process 7") != std::string::npos));
  // Completed requests pass straight through.
  int value = process_index(), got = -1;
  std::vector<MPI_Request> pair(2, MPI_REQUEST_NULL);
  MPI_Irecv(&got, 1, MPI_INT, 0, 1, MPI_COMM_SELF, &pair[0]);
  MPI_Isend(&value, 1, MPI_INT, 0, 1, MPI_COMM_SELF, &pair[1]);
  detail::wait_all_until(pair, "test wait", {0, 0}, 0.25);
  REQUIRE(all_ok(got == value && pair[0] == MPI_REQUEST_NULL && pair[1] == MPI_REQUEST_NULL));
}

TEST_CASE("the exchange's request set (the device-memory path's MPI transport) waits under the deadline too") {
  std::byte never[8];
  const auto start = std::chrono::steady_clock::now();
  const std::string msg = darray::testing::error_message<MpiError>([&] {
    detail::RequestSet requests;
    requests.post_recv(MPI_COMM_SELF, never, sizeof never, 0, 4243, 0, 1 << 20, "test exchange");
    requests.wait_all("test exchange");  // nothing is ever sent: the deadline (1 s) ends the wait
  });
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(msg);
  REQUIRE(all_ok(took >= 1 && took < 10 && msg.find("test exchange") != std::string::npos &&
                 msg.find("timed out after 1 s (DARRAY_TIMEOUT_S) waiting for process 0") != std::string::npos));
}

TEST_CASE("barrier: processes whose peer is late throw an error naming it, the late one passes") {
  const int late = process_count() - 1;
  std::string msg;
  if (process_index() == late) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // well past the 1 s deadline
    barrier();  // the others' messages are there already; this one finishes
  } else {
    msg = darray::testing::error_message<MpiError>([] { barrier(); });
  }
  const std::string who = "waiting for process " + std::to_string(late) + ";";
  INFO(msg);
  REQUIRE(all_ok(process_index() == late
                     ? msg.empty()
                     : msg.find("barrier") != std::string::npos && msg.find(who) != std::string::npos));
  // The library goes on: later barriers match up again.
  barrier();
  barrier();
}
