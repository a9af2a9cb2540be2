// DARRAY_TIMEOUT_S (run with DARRAY_TIMEOUT_S=1) on the library's collective steps that MPI gives no deadline: the
// comparison of a call's arguments, an agreement on errors, the creation of a group's communicator, the allgather of
// a whole-array reduction, an FFT plan's first agreement. A process that comes late or never comes (it failed,
// returned, or took another path) makes the others throw an MpiError naming it within the deadline instead of
// leaving them in MPI forever; a late one times out too instead of entering the collective alone.
//
// The cases where one process skips a call run one per launch (hidden, "[.skip]": ctest names them one by one): a
// skipped call leaves the processes counting their collective steps differently, so later calls of that launch time
// out rather than match up.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "darray/darray.hpp"
#include "mpi_test.hpp"

using namespace darray;
using darray::testing::all_ok;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Every process but the last runs `call`; the last skips it. The others must throw an MpiError that names the
// deadline and the last process, within the deadline (1 s) and well before the test's own timeout.
template <class Call>
void others_time_out_when_the_last_skips(Call call) {
  const int skipper = process_count() - 1;
  std::string msg;
  double took = 0;
  if (process_index() != skipper) {
    const auto start = std::chrono::steady_clock::now();
    msg = darray::testing::error_message<MpiError>(call);
    took = seconds_since(start);
  }
  INFO(msg << " (" << took << " s)");
  const std::string who = std::to_string(skipper);
  REQUIRE(
      all_ok(process_index() == skipper || (msg.find("timed out after 1 s (DARRAY_TIMEOUT_S)") != std::string::npos &&
                                            msg.find(who) != std::string::npos && took < 2.4)));
  MPI_Barrier(MPI_COMM_WORLD);  // no deadline: the skipper waits here for the others' timeouts
}

}  // namespace

TEST_CASE("a process late to a call's argument comparison: the others time out, then the late one; later calls match") {
  const int late = process_count() - 1;
  const Mesh mesh = make_mesh({device_count()}, {"i"});
  auto x = iota<double, 1>({2 * device_count()}, NamedSharding(mesh, P{"i"}));
  std::string msg;
  double took = 0;
  const auto start = std::chrono::steady_clock::now();
  if (process_index() == late) std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // past the 1 s deadline
  msg = darray::testing::error_message<MpiError>([&] { (void)process_allgather(x); });
  took = seconds_since(start);
  INFO(msg << " (" << took << " s)");
  // The on-time processes name the late one; the late one saw them arrive but not confirm that everyone had, so it
  // does not enter the allgather alone: it times out as well, naming one of them.
  REQUIRE(all_ok(
      msg.find("timed out after 1 s (DARRAY_TIMEOUT_S)") != std::string::npos &&
      (process_index() == late ? took >= 3.4 : took < 2.4 && msg.find(std::to_string(late)) != std::string::npos)));
  // Every process took the same steps, so the next calls match up again.
  MPI_Barrier(MPI_COMM_WORLD);
  const std::vector<double> all = process_allgather(x);
  bool ok = all.size() == static_cast<std::size_t>(2 * device_count());
  for (std::size_t k = 0; ok && k < all.size(); ++k) ok = all[k] == static_cast<double>(k);
  REQUIRE(all_ok(ok));
  barrier();
}

TEST_CASE("with every process on time, the calls with collective steps run as without a deadline") {
  const Mesh mesh = make_mesh({device_count()}, {"i"});
  auto x = iota<double, 1>({4 * device_count()}, NamedSharding(mesh, P{"i"}));
  const double n = static_cast<double>(4 * device_count());
  for (int round = 0; round < 3; ++round) {
    REQUIRE(all_ok(sum(x) == n * (n - 1) / 2));
    REQUIRE(all_ok(process_allgather(x).size() == static_cast<std::size_t>(n)));
    sync_global_devices("arrival round " + std::to_string(round));
  }
}

TEST_CASE("process_allgather skipped by the last process: the others time out", "[.skip]") {
  const Mesh mesh = make_mesh({device_count()}, {"i"});
  auto x = iota<double, 1>({2 * device_count()}, NamedSharding(mesh, P{"i"}));
  others_time_out_when_the_last_skips([&] { (void)process_allgather(x); });
}

TEST_CASE("a whole-array sum skipped by the last process: the others time out", "[.skip]") {
  const Mesh mesh = make_mesh({device_count()}, {"i"});
  auto x = iota<double, 1>({2 * device_count()}, NamedSharding(mesh, P{"i"}));
  others_time_out_when_the_last_skips([&] { (void)sum(x); });
}

TEST_CASE("an FFT plan skipped by the last process: the others time out", "[.skip]") {
  const Shape shape{8, 8, 8};
  const NamedSharding sharding = fft::auto_sharding(shape);
  others_time_out_when_the_last_skips([&] { fft::Plan<double> plan(shape, sharding); });
}

TEST_CASE("sync_global_devices skipped by the last process: the others time out", "[.skip]") {
  others_time_out_when_the_last_skips([&] { sync_global_devices("skipped"); });
}

TEST_CASE("the first psum over groups of processes, skipped by the last process: the others time out", "[.skip]") {
  // Groups along "b" that each span processes, and more than one of them (4 processes of 1 device: {0, 1} and
  // {2, 3}): the first psum over "b" creates the groups' communicators (MPI_Comm_split over every process).
  REQUIRE(process_count() % 2 == 0);
  const Mesh mesh = make_mesh({device_count() / 2, 2}, {"a", "b"});
  auto x = iota<double, 2>({mesh.shape()[0], 2}, NamedSharding(mesh, P{"a", "b"}));
  others_time_out_when_the_last_skips([&] { (void)psum(x, "b"); });
}
