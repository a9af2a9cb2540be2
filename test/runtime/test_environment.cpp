// Environment start-up and its error paths. This test's main (DARRAY_TEST_BARE) starts MPI and Kokkos itself, so
// each test case can build and destroy Environments, and checks that they leave the caller's MPI and Kokkos alone.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <optional>
#include <string>

#include "darray/darray.hpp"
#include "mpi_test.hpp"

using darray::testing::all_ok;

namespace {
// Sets an environment variable on the chosen processes (all when only_rank < 0) for one scope.
struct EnvVar {
  std::string name;
  std::optional<std::string> saved;
  EnvVar(const char* n, const char* value, int only_rank = -1) : name(n), saved(darray::detail::getenv_opt(n)) {
    if (only_rank < 0 || only_rank == darray::testing::world_rank()) ::setenv(n, value, 1);
  }
  ~EnvVar() {
    if (saved)
      ::setenv(name.c_str(), saved->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
};

int env_host_devices() {
  return static_cast<int>(darray::detail::env_int("DARRAY_HOST_DEVICE_COUNT", 1, 1, 4096, "count"));
}
}  // namespace

TEST_CASE("queries before any Environment are a clear error") {
  DARRAY_REQUIRE_THROWS_ALL(darray::InvalidArgument, darray::process_index(), "no darray::Environment is active");
  DARRAY_REQUIRE_THROWS_ALL(darray::InvalidArgument, darray::devices(), "devices");
}

TEST_CASE("an Environment over a caller's MPI and Kokkos leaves them running") {
  {
    darray::Environment env;
    REQUIRE(all_ok(!env.owns_mpi() && !env.owns_kokkos()));
    REQUIRE(all_ok(darray::device_count() == darray::testing::world_size() * env_host_devices()));
  }
  int finalized = 1;
  MPI_Finalized(&finalized);
  REQUIRE(all_ok(finalized == 0 && Kokkos::is_initialized()));
  // And a second one can start afterwards.
  darray::Environment again;
  REQUIRE(all_ok(darray::process_count() == darray::testing::world_size()));
}

TEST_CASE("host_device_count option overrides DARRAY_HOST_DEVICE_COUNT") {
  if (darray::detail::kokkos_uses_gpu()) return;  // GPU builds: one GPU per process, no host devices
  darray::EnvironmentOptions opt;
  opt.host_device_count = 3;
  darray::Environment env(opt);
  REQUIRE(all_ok(darray::local_device_count() == 3 && darray::device_count() == 3 * darray::process_count()));
  const auto mine = darray::local_devices();
  REQUIRE(all_ok(mine.front().id == 3 * darray::process_index()));
}

TEST_CASE("processes may own different numbers of host devices") {
  if (darray::detail::kokkos_uses_gpu()) return;  // GPU builds: one GPU per process, no host devices
  const int others = env_host_devices();
  EnvVar v("DARRAY_HOST_DEVICE_COUNT", "2", 0);  // process 0 gets 2, the others keep theirs
  darray::Environment env;
  const auto all = darray::devices();
  const int np = darray::testing::world_size();
  const int expect = (darray::testing::world_rank() == 0 ? 2 : others);
  int count0 = 0;
  for (const auto& d : all) count0 += d.process_index == 0;
  // Every process sees process 0's count as 2 (allgathered), and ids stay dense.
  bool ok = count0 == 2 && darray::local_device_count() == expect && all.back().id == static_cast<int>(all.size()) - 1;
  if (np > 1) ok = ok && static_cast<int>(all.size()) == 2 + (np - 1) * others;
  REQUIRE(all_ok(ok));
}

TEST_CASE("a second concurrent Environment is refused") {
  darray::Environment env;
  DARRAY_REQUIRE_THROWS_ALL(darray::InvalidArgument, darray::Environment(), "already active");
}

TEST_CASE("malformed DARRAY_HOST_DEVICE_COUNT fails on every process, naming variable and value") {
  for (const char* bad : {"abc", "0", "-3", "", "2.5", "100000"}) {
    INFO("value " << bad);
    EnvVar v("DARRAY_HOST_DEVICE_COUNT", bad);
    DARRAY_REQUIRE_THROWS_ALL(darray::InvalidArgument, darray::Environment(), "DARRAY_HOST_DEVICE_COUNT",
                              (std::string("\"") + bad + "\"").c_str(), "an integer from 1 to 4096");
  }
}

TEST_CASE("DARRAY_MPI_MAX_MESSAGE_BYTES below the 4096-byte minimum fails every process with the same message") {
  // 1 byte per message turned a 512x512 reshard into 11.5 s of MPI calls; the bound keeps a typo from doing that.
  for (const char* small : {"1", "7", "4095"}) {
    INFO("value " << small);
    EnvVar v("DARRAY_MPI_MAX_MESSAGE_BYTES", small);
    const std::string msg = darray::testing::error_message<darray::InvalidArgument>([] { darray::Environment env; });
    const bool names_all = msg.find("DARRAY_MPI_MAX_MESSAGE_BYTES") != std::string::npos &&
                           msg.find(std::string("\"") + small + "\"") != std::string::npos &&
                           msg.find("4096") != std::string::npos && msg.find("minimum") != std::string::npos;
    INFO("message: " << msg);
    REQUIRE(all_ok(names_all));
    REQUIRE(all_ok(darray::testing::same_on_all(msg)));
  }
  EnvVar ok("DARRAY_MPI_MAX_MESSAGE_BYTES", "4096");
  darray::Environment env;
  REQUIRE(all_ok(darray::max_message_bytes() == 4096));
}

TEST_CASE("a bad value on one process only fails all processes alike") {
  const int last = darray::testing::world_size() - 1;
  EnvVar v("DARRAY_HOST_DEVICE_COUNT", "seven", last);
  const std::string where = darray::testing::world_size() > 1 ? "process " + std::to_string(last) + ": " : "";
  DARRAY_REQUIRE_THROWS_ALL(darray::InvalidArgument, darray::Environment(), where.c_str(), "\"seven\"");
}

TEST_CASE("bad options are errors") {
  darray::EnvironmentOptions opt;
  opt.host_device_count = -2;
  DARRAY_REQUIRE_THROWS_ALL(darray::InvalidArgument, darray::Environment(opt), "host_device_count = -2");
  darray::EnvironmentOptions b;
  b.backend = "gloo";
  DARRAY_REQUIRE_THROWS_ALL(darray::InvalidArgument, darray::Environment(b), "EnvironmentOptions.backend", "\"gloo\"",
                            "mpi|nccl");
}

TEST_CASE("backend and GPU selection in a host-only build") {
  if (darray::detail::kokkos_uses_gpu()) return;  // GPU builds: one GPU per process, no host devices
  {
    EnvVar v("DARRAY_BACKEND", "nccl");
    DARRAY_REQUIRE_THROWS_ALL(darray::NotSupported, darray::Environment(), "DARRAY_BACKEND", "\"nccl\"", "use \"mpi\"");
  }
  {
    EnvVar v("DARRAY_BACKEND", "tcp");
    DARRAY_REQUIRE_THROWS_ALL(darray::InvalidArgument, darray::Environment(), "DARRAY_BACKEND", "\"tcp\"");
  }
  {
    EnvVar v("DARRAY_BACKEND", "mpi");
    darray::Environment env;
    REQUIRE(all_ok(darray::backend() == darray::Backend::mpi));
  }
  {
    EnvVar v("DARRAY_LOCAL_DEVICE_IDS", "0,x");
    DARRAY_REQUIRE_THROWS_ALL(darray::InvalidArgument, darray::Environment(), "DARRAY_LOCAL_DEVICE_IDS", "\"0,x\"");
  }
  {
    EnvVar v("DARRAY_LOCAL_DEVICE_IDS", "0");
    DARRAY_REQUIRE_THROWS_ALL(darray::NotSupported, darray::Environment(), "DARRAY_LOCAL_DEVICE_IDS",
                              "host devices only");
  }
  {
    EnvVar v("DARRAY_LOG", "loud");
    DARRAY_REQUIRE_THROWS_ALL(darray::InvalidArgument, darray::Environment(), "DARRAY_LOG", "\"loud\"",
                              "warn|info|debug");
  }
}
