// The shard memory cache across Environments: the limit is read at each start-up (DARRAY_CACHE_BYTES, with a clear
// error for malformed values), the cache is emptied when the Environment ends, and a view that outlives the
// Environment still owns its block, which then goes straight back to the system. This test's main
// (DARRAY_TEST_BARE) starts MPI and Kokkos itself, so each case builds its own Environment.
#include <catch2/catch.hpp>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "darray/array/detail/block_cache.hpp"
#include "darray/darray.hpp"
#include "mpi_test.hpp"

using namespace darray;
using darray::testing::all_ok;

namespace {
struct EnvVar {
  std::string name;
  std::optional<std::string> saved;
  EnvVar(const char* n, const char* value) : name(n), saved(detail::getenv_opt(n)) { ::setenv(n, value, 1); }
  ~EnvVar() {
    if (saved)
      ::setenv(name.c_str(), saved->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
};

NamedSharding rows() { return NamedSharding(make_mesh({device_count()}, {"x"}), P{"x"}); }
}  // namespace

// Every case here is about the host memory cache (its arrays in Kokkos::HostSpace, its statistics of that space), so
// it asks the same in GPU builds: the kept view is read and written by the host after the end, and a device view
// may not outlive Kokkos, which the Environment finalizes.
using Host = Kokkos::HostSpace;

TEST_CASE("the Environment's end releases every cached block; views that outlive it stay valid") {
  Shard<double, 2, Host>::view_type kept;
  std::size_t cached_inside = 0, limit_inside = 0;
  {
    Environment env;
    limit_inside = memory_stats<Host>().cache_limit_bytes;
    { auto a = iota<double, 2, Host>({4 * device_count(), 100}, rows()); }
    auto b = iota<double, 2, Host>({2 * device_count(), 100}, rows());
    kept = b.addressable_shards().front().data;
    { auto c = zeros<double, 2, Host>({8 * device_count(), 64}, rows()); }
    cached_inside = memory_stats<Host>().bytes_cached;
  }
  const MemoryStats after = memory_stats<Host>();
  bool ok = limit_inside > 0 && cached_inside > 0 && after.bytes_cached == 0 && after.cache_limit_bytes == 0;
  ok = ok && after.bytes_in_use >= kept.size() * sizeof(double);
  // The kept view still reads its values (iota: row-major flat index of its block) and can be written.
  for (std::size_t j = 0; j < kept.extent(1); ++j) ok = ok && kept(0, j) == kept(0, 0) + static_cast<double>(j);
  kept(1, 1) = 42.0;
  ok = ok && kept(1, 1) == 42.0;
  const std::size_t in_use = after.bytes_in_use;
  kept = {};  // goes straight back to the system: no Environment, nothing is cached
  ok = ok && memory_stats<Host>().bytes_in_use < in_use && memory_stats<Host>().bytes_cached == 0;
  REQUIRE(all_ok(ok));
}

TEST_CASE("the blocks of small results kept for the next result go back when the Environment ends") {
  auto& cache = detail::BlockCache<Host>::instance();
  const std::size_t in_use_before = cache.counters().bytes_in_use;  // counters(): kept views stay as they are
  std::size_t in_use_inside = 0;
  {
    Environment env;
    const auto x = iota<double, 2, Host>({device_count(), 3}, rows());
    {
      auto y = psum(x, "x");
      y = psum(x, "x");
      auto z = zeros<double, 2, Host>({device_count(), 2}, rows());
    }
    in_use_inside = cache.counters().bytes_in_use;
  }
  const std::size_t in_use_after = cache.counters().bytes_in_use;
  INFO("bytes in use: " << in_use_before << " before, " << in_use_inside << " inside, " << in_use_after << " after");
  REQUIRE(all_ok(in_use_inside > in_use_before && in_use_after == in_use_before));
}

// Only the Environment's own thread keeps a small result's blocks for the next one: the Environment's end lets go of
// that thread's kept blocks, and could not reach another's (a thread still running when the Environment ends, as a
// pool's workers may be, would hold them past the end, and past Kokkos' finalisation where the Environment does it).
TEST_CASE("small results made on another thread keep no blocks past the Environment's end") {
  auto& cache = detail::BlockCache<Host>::instance();
  const std::size_t in_use_before = cache.counters().bytes_in_use;
  std::mutex m;
  std::condition_variable cv;
  int stage = 0;  // 1: the worker's results went; 2: the worker may end
  auto set_stage = [&](int k) {
    {
      const std::lock_guard<std::mutex> lock(m);
      stage = k;
    }
    cv.notify_all();
  };
  auto wait_stage = [&](int k) {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return stage >= k; });
  };
  std::thread worker;
  std::size_t in_use_inside = 0;
  {
    Environment env;
    const auto x = iota<double, 2, Host>({device_count(), 3}, rows());
    worker = std::thread([&] {
      {
        auto y = x + x;  // elementwise: no MPI call, as a worker thread may make under MPI_THREAD_FUNNELED
        y = x + x;
      }
      set_stage(1);
      wait_stage(2);  // still running when the Environment ends
    });
    wait_stage(1);
    in_use_inside = cache.counters().bytes_in_use;
  }
  const std::size_t in_use_after = cache.counters().bytes_in_use;
  set_stage(2);
  worker.join();
  INFO("bytes in use: " << in_use_before << " before, " << in_use_inside << " inside, " << in_use_after << " after");
  REQUIRE(all_ok(in_use_inside > in_use_before && in_use_after == in_use_before));
}

TEST_CASE("DARRAY_CACHE_BYTES is read at each start-up") {
  {
    EnvVar v("DARRAY_CACHE_BYTES", "3M");
    Environment env;
    REQUIRE(all_ok(memory_stats<Host>().cache_limit_bytes == 3u << 20));
  }
  {
    EnvVar v("DARRAY_CACHE_BYTES", "0");
    Environment env;
    reset_memory_stats<Host>();
    { auto a = iota<double, 2, Host>({4 * device_count(), 100}, rows()); }
    const MemoryStats s = memory_stats<Host>();
    REQUIRE(all_ok(s.cache_limit_bytes == 0 && s.bytes_cached == 0 && s.allocations_from_system == 0));
  }
  Environment env;  // unset: the default, a quarter of this process's share of the host memory
  const std::size_t expected =
      detail::physical_host_memory_bytes() / static_cast<std::size_t>(local_process_count()) / 4;
  REQUIRE(all_ok(memory_stats<Host>().cache_limit_bytes == expected));
}

TEST_CASE("a malformed DARRAY_CACHE_BYTES stops the Environment with an error naming it") {
  for (const char* bad : {"lots", "-1", "4X", "", "1.5G"}) {
    EnvVar v("DARRAY_CACHE_BYTES", bad);
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, Environment(), "DARRAY_CACHE_BYTES", std::string("\"") + bad + "\"",
                              "a byte count");
  }
}
