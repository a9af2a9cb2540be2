// What a collective or reshard call allocates on the host heap once its plan is cached, counted through a replaced
// global operator new: the kept-output forms nothing at all (the plan lookup fills a reused key, the engine and the
// reductions reuse their buffers), on host memory, on the device-memory path of the staged test hook, and in GPU
// builds on the device (Kokkos 4: runtime/detail/kokkos_compat.hpp); the allocating forms in a loop nothing either (the
// blocks come from the shard memory cache, the shard list from the one the previous result gave back).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "counting_new.hpp"
#include "darray/darray.hpp"
#include "mpi_test.hpp"

namespace {

using namespace darray;
using darray::testing::all_ok;

using darray_testing::count_news;

// operator new calls of three rounds of every kept-output collective (and of executed plans), after a warm-up round,
// per size: one element per device and chunk (all_to_all and psum_scatter split each block into nd chunks), the small
// calls whose overhead this guards; and 9216 elements (72 KiB of doubles, a multiple of every nd up to 6: reductions
// across processes take the reduce-scatter path there).
void require_kept_collectives_allocate_nothing() {
  const int64_t nd = device_count();
  const Mesh mesh = make_mesh({nd}, {"i"});
  const NamedSharding by_i(mesh, P{"i"});
  std::vector<std::pair<int, int>> shift;
  for (int i = 0; i < static_cast<int>(nd); ++i) shift.emplace_back(i, (i + 1) % static_cast<int>(nd));
  for (const int64_t per_device : {nd, int64_t(9216)}) {
    const auto x = iota<double, 1>({nd * per_device}, by_i);
    auto y0 = psum(x, "i");
    auto y1 = pmax(x, "i");
    auto y2 = all_gather(x, "i", 0, tiled);
    auto y3 = all_to_all(x, "i", 0, 0);
    auto y4 = ppermute(x, "i", shift);
    auto y5 = psum_scatter(x, "i", 0);
    const auto plan0 = psum_plan(x, "i");
    const auto plan2 = all_gather_plan(x, "i", 0, tiled);
    const auto plan4 = ppermute_plan(x, "i", shift);
    const auto run = [&] {
      psum(x, "i", y0);
      pmax(x, "i", y1);
      all_gather(x, "i", 0, tiled, y2);
      all_to_all(x, "i", 0, 0, y3);
      ppermute(x, "i", shift, y4);
      psum_scatter(x, "i", 0, y5);
      execute(plan0, x, y0);  // held plans (collectives/plan.hpp)
      execute(plan2, x, y2);
      execute(plan4, x, y4);
    };
    run();  // warm-up: plans, communicators, engines and buffers are made here
    const long n = count_news(3, run);
    INFO(per_device << " elements per device: " << n << " operator new calls in 3 rounds");
    REQUIRE(all_ok(n == 0));
  }
}

}  // namespace

// The counter the cases below read: it counts, so their zeros mean something (a replacement that no longer counted,
// or a nothrow form left to the runtime, fails here).
TEST_CASE("the replaced operator new counts its calls and bytes, the nothrow form's too") {
  DARRAY_RETURN_UNLESS_NEW_COUNTED();
  volatile std::size_t bytes = 24;
  void* volatile a = nullptr;
  void* volatile b = nullptr;
  darray_testing::counted_new_bytes = 0;
  const long n = count_news(1, [&] {
    a = ::operator new(bytes);
    b = ::operator new(bytes, std::nothrow);
  });
  ::operator delete(a);
  ::operator delete(b, std::nothrow);
  REQUIRE(n == 2);
  REQUIRE(darray_testing::counted_new_bytes == 48);
}

// In a GPU build (device memory) this is the device path: kernels, fences and execution space instances, each of
// which Kokkos 4 can make allocate (runtime/detail/kokkos_compat.hpp).
TEST_CASE("kept-output collectives allocate nothing once their plan is cached") {
  require_kept_collectives_allocate_nothing();
}

// The host test hook's device path: host copies for MPI and the reductions across processes, staging buffers.
TEST_CASE("kept-output collectives allocate nothing on the device-memory path either") {
  const darray::detail::StageAsIfOnDevice device_path;
  require_kept_collectives_allocate_nothing();
}

namespace {

// The same for a reshard into a kept output (rows to columns, an uneven shape): the engine's buffers come from the
// shard memory cache, its transport, group and message plan are kept, the device pointers go in reused vectors.
void require_kept_reshard_allocates_nothing() {
  const int64_t nd = device_count();
  const Mesh mesh = make_mesh({nd}, {"i"});
  const NamedSharding rows(mesh, P{"i", none}), cols(mesh, P{none, "i"});
  for (const int64_t n : {nd + 1, 24 * nd + 5}) {
    const auto a = iota<double, 2>({n, n + 3}, rows);
    auto b = reshard(a, cols);
    const auto plan = reshard_plan<double>(rows, cols, a.shape());
    execute(*plan, a, b);  // warm-up
    const long news_seen = count_news(3, [&] { execute(*plan, a, b); });
    INFO(n << "x" << n + 3 << " rows to columns: " << news_seen << " operator new calls in 3 kept-output reshards");
    REQUIRE(all_ok(news_seen == 0));
  }
}

}  // namespace

TEST_CASE("a kept-output reshard allocates nothing once its plan is cached") {
  require_kept_reshard_allocates_nothing();
  const darray::detail::StageAsIfOnDevice device_path;
  require_kept_reshard_allocates_nothing();
}

TEST_CASE("allocating collectives in a loop allocate nothing once warm") {
  const int64_t nd = device_count();
  const auto local = static_cast<long>(local_device_count());
  const Mesh mesh = make_mesh({nd}, {"i"});
  const NamedSharding by_i(mesh, P{"i"});
  const auto x = iota<double, 1>({nd}, by_i);
  auto y = psum(x, "i");
  y = psum(x, "i");
  // The result's shard list, its shape and its indices come from the list the previous result gave back.
  const long n = count_news(1, [&] { y = psum(x, "i"); });
  INFO(n << " operator new calls for one psum with " << local << " local devices");
  REQUIRE(all_ok(n == 0));
  const std::vector<double> got = process_allgather(y);  // device memory in GPU builds: read through a host copy
  REQUIRE(all_ok(got[0] == static_cast<double>(nd * (nd - 1) / 2)));
  // The same for every collective, whatever the length of its name (the result blocks' label, "darray::all_gather",
  // is longer than std::string's inline buffer).
  std::vector<std::pair<int, int>> shift;
  for (int i = 0; i < static_cast<int>(nd); ++i) shift.emplace_back(i, (i + 1) % static_cast<int>(nd));
  const auto xc = iota<double, 1>({nd * nd}, by_i);
  auto y1 = pmax(x, "i");
  auto y2 = all_gather(x, "i", 0, tiled);
  auto y3 = all_to_all(xc, "i", 0, 0);
  auto y4 = ppermute(x, "i", shift);
  auto y5 = psum_scatter(xc, "i", 0);
  const std::vector<std::pair<const char*, std::function<void()>>> calls = {
      {"pmax", [&] { y1 = pmax(x, "i"); }},
      {"all_gather", [&] { y2 = all_gather(x, "i", 0, tiled); }},
      {"all_to_all", [&] { y3 = all_to_all(xc, "i", 0, 0); }},
      {"ppermute", [&] { y4 = ppermute(x, "i", shift); }},
      {"psum_scatter", [&] { y5 = psum_scatter(xc, "i", 0); }}};
  for (const auto& [name, call] : calls) {
    call();  // warm-up
    const long m = count_news(1, call);
    INFO(m << " operator new calls for one " << name << " with " << local << " local devices");
    REQUIRE(all_ok(m == 0));
  }
}

// The collectives look their plans up with a probe (detail::PlanProbe): compared with the front plan's key in place,
// its key made only when the front plan is another call's, and then found by hash or built.
TEST_CASE("a plan cache's probe makes its key only when the front plan is another call's") {
  static detail::PlanCache<int, const int> cache(4);  // static: emptied when the Environment ends
  struct Probe {
    int value;
    int* keys_made;
    bool matches(const int& key) const { return key == value; }
    const int& key() const {
      ++*keys_made;
      return value;
    }
  };
  int made = 0, built = 0;
  auto build = [&](int v) {
    return [&built, v] {
      ++built;
      return std::make_shared<const int>(10 * v);
    };
  };
  REQUIRE(*cache.get_ref_by(Probe{1, &made}, build(1)) == 10);  // a miss: key made, plan built
  REQUIRE((made == 1 && built == 1));
  for (int i = 0; i < 3; ++i) REQUIRE(*cache.get_ref_by(Probe{1, &made}, build(1)) == 10);  // the front plan
  REQUIRE((made == 1 && built == 1));
  REQUIRE(*cache.get_ref_by(Probe{2, &made}, build(2)) == 20);  // another call: key made, plan built
  REQUIRE((made == 2 && built == 2));
  REQUIRE(*cache.get_ref_by(Probe{1, &made}, build(1)) == 10);  // not the front one: key made, found by hash
  REQUIRE((made == 3 && built == 2));
  REQUIRE(*cache.get_ref_by(Probe{1, &made}, build(1)) == 10);  // the front one again
  REQUIRE((made == 3 && built == 2));
  REQUIRE(cache.size() == 2);
  REQUIRE(cache.misses() == 2);
}

TEST_CASE("a plan cache keeps the key it was asked for when build() reuses the caller's key") {
  // The collectives look their plans up with a per-thread scratch key (PlanProbe::key); a build() that looks up
  // another plan refills it, so the cache must store a copy taken before build() runs.
  static detail::PlanCache<int, const int> cache(4);  // static: emptied when the Environment ends
  int scratch = 1;
  const auto first = cache.get(scratch, [&] {
    scratch = 2;  // as a nested lookup would
    return std::make_shared<const int>(10);
  });
  bool rebuilt = false;
  const auto again = cache.get(1, [&] {
    rebuilt = true;
    return std::make_shared<const int>(11);
  });
  REQUIRE(!rebuilt);
  REQUIRE(*again == 10);
  REQUIRE(cache.size() == 1);
}
