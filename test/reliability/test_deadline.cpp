// DARRAY_TIMEOUT_S (run with DARRAY_TIMEOUT_S=1): a blocking wait of the library whose peers do not arrive in time
// throws an error naming the operation and the processes that did not arrive, instead of hanging.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstddef>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "darray/comm/detail/requests.hpp"
#include "darray/darray.hpp"
#include "mpi_test.hpp"
#include "single_copy_pin.hpp"

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

TEST_CASE("a single copy whose sender left the exchange is an error on the reader, never the sender's later data") {
  // Device 0 (process 0) sends a 128 KiB block to device 1 (process 1); nothing goes back. From the plan's second
  // run on, process 1 reads it straight from process 0's memory where the system allows single copies (from 128 KiB
  // here, whatever size the start-up probe picked).
  const darray::testing::SingleCopiesFrom pinned(std::size_t(128) << 10);
  const int64_t nd = device_count(), n = 16384;
  const Mesh mesh = make_mesh({nd}, {"i"});
  auto values = [&](const Index& b) {
    std::vector<double> v(static_cast<std::size_t>(volume(b)));
    for (std::size_t k = 0; k < v.size(); ++k) v[k] = static_cast<double>(b[0].start) + static_cast<double>(k);
    return v;
  };
  auto x = make_array_from_callback<double, 1, Kokkos::HostSpace>(Shape{nd * n}, NamedSharding(mesh, P{"i"}), values);
  const std::vector<std::pair<int, int>> perm{{0, 1}};
  auto y = ppermute(x, "i", perm);
  ppermute(x, "i", perm, y);
  const std::vector<double> sent = values(Index{Slice{0, n}});
  auto holds_sent = [&] {
    const auto& s = y.addressable_shards().front();
    return std::equal(sent.begin(), sent.end(), s.data.data());
  };
  REQUIRE(all_ok(process_index() != 1 || holds_sent()));
  // Process 1 comes late: process 0's wait for it times out (1 s), and process 0 then writes its block anew, as a
  // program that goes on after the error would. Process 1 must not take the new values for the ones sent.
  std::string late_msg, sender_msg;
  if (process_index() == 1) {
    for (auto& s : y.addressable_shards()) std::fill(s.data.data(), s.data.data() + s.data.size(), 0.0);
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    late_msg = darray::testing::error_message<Error>([&] { ppermute(x, "i", perm, y); });
  } else if (process_index() == 0) {
    sender_msg = darray::testing::error_message<MpiError>([&] { ppermute(x, "i", perm, y); });
    for (auto& s : x.addressable_shards()) std::fill(s.data.data(), s.data.data() + s.data.size(), -1.0);
  }
  MPI_Barrier(MPI_COMM_WORLD);  // no deadline: process 1 may have waited for its own timeout too
  INFO("sender: " << sender_msg << "\nlate reader: " << late_msg);
  REQUIRE(all_ok(process_index() != 0 || sender_msg.find("timed out") != std::string::npos));
  REQUIRE(all_ok(process_index() != 1 ||
                 (late_msg.empty() ? holds_sent() : late_msg.find("process 0") != std::string::npos)));
  // The library goes on: the same exchange with both processes on time moves the current values.
  x = make_array_from_callback<double, 1, Kokkos::HostSpace>(Shape{nd * n}, NamedSharding(mesh, P{"i"}), values);
  ppermute(x, "i", perm, y);
  ppermute(x, "i", perm, y);
  REQUIRE(all_ok(process_index() != 1 || holds_sent()));
}

TEST_CASE("a movement over every process, run the first time with one process late: the others time out") {
  // The axis spans the whole job, so the exchange runs on the job's communicator and its first run creates none: a
  // communicator's creation is collective and has no deadline (the others waited in it until the late one came).
  // Last in the file: the late process's messages to the others, whose receives were cancelled at their deadline,
  // stay queued, as they would in a program that goes on after the error (README, Reliability).
  const int late = process_count() - 1;
  const Mesh mesh = make_mesh({device_count()}, {"g"});
  auto x = iota<float, 1>({3 * device_count()}, NamedSharding(mesh, P{"g"}));  // an operation no other case runs
  std::string msg;
  double took = 0;
  if (process_index() == late) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // well past the 1 s deadline
    try {
      (void)all_gather(x, "g", 0, tiled);  // may complete (the others' messages are there) or time out
    } catch (const Error&) {
    }
  } else {
    const auto start = std::chrono::steady_clock::now();
    msg = darray::testing::error_message<MpiError>([&] { (void)all_gather(x, "g", 0, tiled); });
    took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  INFO(msg << " (" << took << " s)");
  REQUIRE(all_ok(process_index() == late ||
                 (msg.find("timed out after 1 s (DARRAY_TIMEOUT_S)") != std::string::npos && took < 2.4)));
  MPI_Barrier(MPI_COMM_WORLD);  // no deadline: the late process may have waited for its own timeout too
}

// Open MPI 4.1 with threads (the library asks for MPI_THREAD_FUNNELED) never returned from an MPI_Waitall that found
// a request failed already while another was still pending: here a receive truncated by a longer message (what a
// peer running another operation sends), taken before the wait, and one whose message comes 0.2 s into the wait.
// The wait without a deadline (timeout 0; this file's DARRAY_TIMEOUT_S is not used) must end, with the truncated
// receive reported as tolerated. An alarm ends the process instead of a hang.
TEST_CASE("a wait without a deadline ends when a receive failed before it and another is still pending") {
  MPI_Comm comm = MPI_COMM_NULL;  // returns errors, as the library's communicators do
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  if (process_index() <= 1 && process_count() >= 2) {
    alarm(30);
    const int peer = 1 - process_index();
    if (process_index() == 1) {
      const int longer[2] = {1, 2};
      MPI_Send(longer, 2, MPI_INT, peer, 5, comm);
      int go = 0;
      MPI_Recv(&go, 1, MPI_INT, peer, 7, comm, MPI_STATUS_IGNORE);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      const int later = 3;
      MPI_Send(&later, 1, MPI_INT, peer, 6, comm);
    } else {
      int first = 0, second = 0;
      std::vector<MPI_Request> requests(2, MPI_REQUEST_NULL);
      MPI_Irecv(&first, 1, MPI_INT, peer, MPI_ANY_TAG, comm, &requests[0]);
      MPI_Irecv(&second, 1, MPI_INT, peer, 6, comm, &requests[1]);
      int arrived = 0;  // progress until the longer message completed the first receive (truncated)
      MPI_Status probe;
      {
        // MPICH reports a request's error through MPI_COMM_WORLD's handler (fatal by default), not comm's.
        const detail::WorldReturnsErrors world_returns_errors;
        while (!arrived)
          if (MPI_Request_get_status(requests[0], &arrived, &probe) != MPI_SUCCESS) arrived = 1;
      }
      const int go = 1;
      MPI_Send(&go, 1, MPI_INT, peer, 7, comm);
      std::vector<MPI_Status> statuses(2);
      detail::wait_all_until(requests, "test wait", {peer, peer}, statuses.data(), /*timeout_s=*/0,
                             /*tolerate_truncation=*/true);
      REQUIRE(requests[0] == MPI_REQUEST_NULL);
      REQUIRE(requests[1] == MPI_REQUEST_NULL);
      REQUIRE(statuses[0].MPI_ERROR == MPI_ERR_TRUNCATE);
      REQUIRE(statuses[1].MPI_ERROR == MPI_SUCCESS);
      REQUIRE(second == 3);
    }
    alarm(0);
  }
  MPI_Comm_free(&comm);
}
