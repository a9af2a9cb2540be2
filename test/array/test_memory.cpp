// The shard memory cache: freed shards are handed out again without a system allocation, views outlive their
// arrays, the limit is honoured, release_cached_memory() empties it, and DARRAY_CACHE_BYTES=0 turns it off
// (the [cache_off] cases run under that setting only).
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "array_test_util.hpp"
#include "darray/array/detail/shard_lists.hpp"
#include "darray/array/memory.hpp"
#include "darray/collectives/ppermute.hpp"
#include "darray/collectives/reductions.hpp"
#include "darray/ops/elementwise.hpp"
#include "darray/redistribute/migrate.hpp"
#include "darray/redistribute/reshard.hpp"
#include "huge_page_flags.hpp"

using namespace darray;
using darray::testing::all_ok;

namespace {

using Cache = detail::BlockCache<DefaultMemorySpace>;

std::set<const void*> shard_pointers(const DistributedArray<double, 2>& a) {
  std::set<const void*> out;
  for (const auto& s : a.addressable_shards())
    if (s.data.size() > 0) out.insert(s.data.data());
  return out;
}

bool is_iota(const DistributedArray<double, 2>& a) {
  const std::string err = testing::check_shards(a, [](int64_t flat) { return static_cast<double>(flat); });
  INFO(err);
  return err.empty();
}

NamedSharding row_sharding() { return NamedSharding(make_mesh({device_count()}, {"x"}), P{"x"}); }

// Restores the limit in force when a test changed it through the test hook.
struct LimitGuard {
  std::size_t saved = memory_stats().cache_limit_bytes;
  ~LimitGuard() { Cache::instance().set_limit(saved); }
};

// Every Kokkos allocation while it lives (the cache's own allocations from the system included), by label, through
// Kokkos' tools interface: on a GPU each is a cudaMalloc (device) or a fresh host allocation (mirrors).
struct KokkosAllocations {
  static std::map<std::string, int>& seen() {
    static std::map<std::string, int> labels;
    return labels;
  }
  static void on_allocate(const Kokkos_Profiling_SpaceHandle, const char* label, const void*, const uint64_t) {
    ++seen()[label];
  }
  KokkosAllocations() {
    seen().clear();
    Kokkos::Tools::Experimental::set_allocate_data_callback(&on_allocate);
  }
  ~KokkosAllocations() { Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr); }
  KokkosAllocations(const KokkosAllocations&) = delete;
  KokkosAllocations& operator=(const KokkosAllocations&) = delete;
  static std::string describe() {
    std::string out;
    for (const auto& [label, n] : seen()) out += label + " x" + std::to_string(n) + "; ";
    return out;
  }
};

}  // namespace

TEST_CASE("on the device path, allocating calls in a warm loop make no allocation at all") {
  // The host hooks take the device-memory path: pack kernels into staging, host mirrors for an MPI that cannot read
  // device memory, unpack kernels. After one warm-up call every buffer comes from the cache.
  {
    const KokkosAllocations counted;  // the counter sees an allocation
    const Kokkos::View<double*, DefaultMemorySpace> probe("darray::test probe", 10);
    REQUIRE(KokkosAllocations::seen()["darray::test probe"] == 1);
  }
  const darray::detail::StageAsIfOnDevice device_path;
  const int64_t n = device_count();
  const NamedSharding rows(make_mesh({n}, {"x"}), P{"x"}), cols(make_mesh({n}, {"x"}), P{none, "x"});
  auto a = iota<double, 2>({16 * n, 24 * n}, rows);
  auto b = reshard(a, cols);
  auto y = psum(a, "x");
  auto small = iota<double, 2>({n, 3}, rows);  // reduced in the fingerprint records
  auto z = psum(small, "x");
  // Rows of 4 doubles, 100 per device, each bound for the next device of the mesh (destinations as views).
  const Mesh line = make_mesh({n}, {"x"});
  std::vector<RaggedArray<double>::view_type> parts;
  std::vector<Kokkos::View<const int*, DefaultMemorySpace>> dest;
  const RaggedArray<double> layout(line, 4);
  for (const Device& d : layout.local_devices()) {
    RaggedArray<double>::view_type v("darray::test rows", 100, 4);
    Kokkos::deep_copy(v, static_cast<double>(d.id));
    parts.push_back(v);
    Kokkos::View<int*, DefaultMemorySpace> to("darray::test dest", 100);
    Kokkos::deep_copy(to, static_cast<int>((d.id + 1) % n));
    dest.push_back(to);
  }
  const RaggedArray<double> particles(line, 4, parts);
  auto moved = migrate(particles, dest);
  b = reshard(a, cols);
  y = psum(a, "x");
  z = psum(small, "x");
  moved = migrate(particles, dest);
  bool ok = true;
  {
    const KokkosAllocations counted;
    for (int k = 0; k < 3; ++k) {
      b = reshard(a, cols);
      y = psum(a, "x");
      z = psum(small, "x");
      moved = migrate(particles, dest);
    }
    INFO("Kokkos allocations in the warm loop: " << KokkosAllocations::describe());
    ok = KokkosAllocations::seen().empty();
    CHECK(ok);
  }
  REQUIRE(all_ok(ok));
  REQUIRE(all_ok(is_iota(b)));
  REQUIRE(all_ok(moved.local_row_count() == 100 * local_device_count()));
}

TEST_CASE("a freed shard is handed out again from the cache") {
  REQUIRE(all_ok(memory_stats().cache_limit_bytes > 0));
  const Shape shape{8 * device_count(), 1000};
  std::set<const void*> first;
  {
    auto a = iota<double, 2>(shape, row_sharding());
    first = shard_pointers(a);
  }
  const MemoryStats freed = memory_stats();
  reset_memory_stats();
  auto b = iota<double, 2>(shape, row_sharding());
  const MemoryStats after = memory_stats();
  const auto local = static_cast<std::size_t>(local_device_count());
  const std::size_t need = local * 8 * 1000 * sizeof(double);
  bool ok = freed.bytes_cached >= need;
  // The process's shards share one cached block (allocate_views_each): one allocation, from the cache.
  ok = ok && after.allocations_from_cache == 1 && after.allocations_from_system == 0;
  ok = ok && shard_pointers(b) == first;  // the very same memory
  // The block taken is the one freed, at most a size class (12.5%) and the shards' 64-byte alignment above the need.
  ok = ok && after.bytes_cached + need <= freed.bytes_cached &&
       freed.bytes_cached - after.bytes_cached <= need + need / 8 + local * 64;
  INFO("freed: cached " << freed.bytes_cached << "; after: from cache " << after.allocations_from_cache
                        << ", from system " << after.allocations_from_system);
  REQUIRE(all_ok(ok));
  // The reused blocks hold the new array's values, not the old ones.
  REQUIRE(all_ok(is_iota(b)));
}

TEST_CASE("an array's shard list serves the next result: its views released at once, its storage reused") {
  const Shape shape{4 * device_count(), 3};
  Shard<double, 2>::view_type kept;
  const Slice* first_index = nullptr;
  {
    auto a = iota<double, 2>(shape, row_sharding());
    if (!a.addressable_shards().empty()) {
      kept = a.addressable_shards()[0].data;
      first_index = a.addressable_shards()[0].index.data();
    }
  }
  // The view the array held is gone (the copy kept here is the block's only owner), so the block returns as before.
  bool ok = local_device_count() == 0 || kept.use_count() == 1;
  // The next array of the type takes the list: its first index lives where the old one's did, and holds its own box.
  const auto b = iota<double, 2>(shape, row_sharding());
  if (!b.addressable_shards().empty()) ok = ok && b.addressable_shards()[0].index.data() == first_index;
  INFO("kept view's use count " << kept.use_count());
  REQUIRE(all_ok(ok));
  REQUIRE(all_ok(is_iota(b)));
  // And a collective's result that comes from a reused list names its own devices, boxes and replica ids.
  auto y = psum(b, "x");
  y = psum(b, "x");
  const auto again = psum(b, "x");
  REQUIRE(all_ok(again.addressable_shards().size() == y.addressable_shards().size()));
  const std::vector<Device> devices = local_devices();
  for (std::size_t k = 0; k < again.addressable_shards().size(); ++k) {
    const auto& s = again.addressable_shards()[k];
    const Device& d = devices[k];
    REQUIRE(s.device == d);
    REQUIRE(s.index == again.sharding().index(again.shape(), d));
    REQUIRE(s.replica_id == again.sharding().replica_id(d));
  }
}

TEST_CASE("the shard list pool keeps a bounded number of lists and outlives none of its arrays") {
  // A shard type of its own (rank 7), so the pool starts empty here.
  using S = Shard<float, 7, Kokkos::HostSpace>;
  using Pool = detail::ShardListPool<S>;
  std::vector<detail::ShardList<S>> lists;
  for (std::size_t k = 0; k < Pool::kept_lists + 1; ++k) {
    lists.push_back(Pool::take(2));
    for (S& s : lists.back().shards) s.index.assign(7, Slice{0, 1});
    lists.back().shape.assign(7, 1);
  }
  std::vector<const Slice*> given;
  for (detail::ShardList<S>& list : lists) {
    given.push_back(list.shards[0].index.data());
    Pool::give(list.shape, list.shards);
  }
  for (std::size_t k = 0; k < Pool::kept_lists; ++k) REQUIRE(lists[k].shards.empty());  // moved into the pool
  REQUIRE(lists.back().shards.size() == 2);  // the pool was full: left to its owner to free
  // Taken back last given first, their storage as it was; then new lists.
  for (std::size_t k = Pool::kept_lists; k-- > 0;) {
    const detail::ShardList<S> list = Pool::take(1);
    REQUIRE(list.shards[0].index.data() == given[k]);
    REQUIRE(list.shape.capacity() >= 7);
  }
  REQUIRE(Pool::take(1).shards[0].index.capacity() == 0);
  {
    detail::ShardList<S> long_list = Pool::take(Pool::max_shards + 1);
    Pool::give(long_list.shape, long_list.shards);
    REQUIRE(long_list.shards.size() == Pool::max_shards + 1);  // not kept: left to its owner to free
  }
  // An object of a thread that goes after the thread's pool (constructed before it, so destroyed after it) gives
  // its list back to no pool instead of a destroyed one (sanitizer and valgrind runs would report the latter).
  std::thread([] {
    struct Holder {
      Shape shape{1};
      std::vector<S> shards{S{}};
      ~Holder() { Pool::give(shape, shards); }
    };
    static thread_local Holder holder;
    holder.shards[0].index.assign(7, Slice{0, 1});
    detail::ShardList<S> list = Pool::take(1);  // the pool, constructed after the holder
    Pool::give(list.shape, list.shards);
  }).join();
}

TEST_CASE("zeros from a reused block are zero") {
  const Shape shape{4 * device_count(), 333};
  { auto a = full<double, 2>(shape, 7.0, row_sharding()); }
  reset_memory_stats();
  auto z = zeros<double, 2>(shape, row_sharding());
  bool ok = memory_stats().allocations_from_cache == 1;  // one block for the process's shards
  for (const auto& s : z.addressable_shards()) {
    const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s.data);  // a GPU's shards too
    for (std::size_t i = 0; i < h.extent(0); ++i)
      for (std::size_t j = 0; j < h.extent(1); ++j) ok = ok && h(i, j) == 0.0;
  }
  REQUIRE(all_ok(ok));
}

// A small array's views wait in the shard list pool when it goes (shard_lists.hpp): the next result of the same
// block shapes takes them as they are, without a block from the cache.
TEST_CASE("a small result's blocks serve the next result of its shapes, with no block from the cache") {
  const int64_t n = device_count();
  const auto x = iota<double, 2>({2 * n, 3}, row_sharding());  // 48 bytes per device
  auto y = psum(x, "x");
  psum(x, "x", y);
  // The kept form's own per-call blocks (staging where there is any), counted over as many calls.
  reset_memory_stats();
  for (int k = 0; k < 6; ++k) psum(x, "x", y);
  const MemoryStats kept = memory_stats();
  y = psum(x, "x");
  reset_memory_stats();  // lets go of the views kept so far: the first call below takes a block
  for (int k = 0; k < 6; ++k) y = psum(x, "x");
  const MemoryStats allocating = memory_stats();
  const std::size_t kept_blocks = kept.allocations_from_cache + kept.allocations_from_system;
  const std::size_t blocks = allocating.allocations_from_cache + allocating.allocations_from_system;
  INFO("blocks taken: " << blocks << " in 6 allocating calls, " << kept_blocks << " in 6 kept ones");
  // One block for the first result (the views kept before were let go); each later one takes the views of the
  // result it replaces, which went into the pool as that call returned.
  REQUIRE(all_ok(blocks == kept_blocks + 1));
  // Each result holds its own values: the column sums of x over the devices, for every element.
  const std::vector<double> got = process_allgather(y);
  bool ok = got.size() == static_cast<std::size_t>(2 * 3);
  for (std::size_t e = 0; ok && e < got.size(); ++e) {
    double sum = 0;
    for (int64_t d = 0; d < n; ++d) sum += static_cast<double>(d * 6) + static_cast<double>(e);
    ok = got[e] == sum;
  }
  REQUIRE(all_ok(ok));
}

TEST_CASE("a small result's blocks are not reused while a view of them is held elsewhere") {
  const int64_t n = device_count();
  const auto x = iota<double, 2>({n, 4}, row_sharding());
  const auto ones = full<double, 2>({n, 4}, 1.0, row_sharding());
  auto y = psum(x, "x");
  y = psum(x, "x");
  // A copy of one shard's view: y's blocks are the caller's too now.
  Shard<double, 2>::view_type held;
  if (!y.addressable_shards().empty()) held = y.addressable_shards().front().data;
  std::vector<double> before;
  if (held.size() > 0) {
    const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), held);
    before.assign(h.data(), h.data() + h.size());
  }
  for (int k = 0; k < 4; ++k) y = psum(ones, "x");  // y's old blocks go while `held` holds them
  auto z = psum(ones, "x");
  bool ok = true;
  for (const auto* a : {&y, &z})
    for (const auto& s : a->addressable_shards()) ok = ok && s.data.data() != held.data();
  if (held.size() > 0) {
    const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), held);
    ok = ok && std::vector<double>(h.data(), h.data() + h.size()) == before;
  }
  const std::vector<double> got = process_allgather(z);
  for (double v : got) ok = ok && v == static_cast<double>(n);
  REQUIRE(all_ok(ok));
}

TEST_CASE("a result made from kept views carries its own sharding") {
  const int64_t n = device_count();
  // Two meshes over the same devices with differently named axes: arrays of the same block shapes, other shardings.
  const NamedSharding by_x(make_mesh({n}, {"x"}), P{"x"}), by_y(make_mesh({n}, {"y"}), P{"y"});
  const auto a = iota<double, 2>({n, 2}, by_x), b = iota<double, 2>({n, 2}, by_y);
  std::vector<std::pair<int, int>> shift;
  for (int d = 0; d < static_cast<int>(n); ++d) shift.emplace_back(d, (d + 1) % static_cast<int>(n));
  auto y = ppermute(a, "x", shift);
  y = ppermute(a, "x", shift);  // the first result's views and sharding wait in the pool
  bool ok = y.sharding() == by_x;
  y = ppermute(b, "y", shift);  // takes those views: the sharding must be b's
  ok = ok && y.sharding() == by_y && !(y.sharding() == by_x);
  y = ppermute(a, "x", shift);
  ok = ok && y.sharding() == by_x;
  // And the values are a's rows moved one device on: row d of the result is row d - 1 of a.
  const std::vector<double> got = process_allgather(y);
  for (int64_t d = 0; ok && d < n; ++d)
    for (int64_t j = 0; j < 2; ++j)
      ok = got[static_cast<std::size_t>(d * 2 + j)] == static_cast<double>(((d + n - 1) % n) * 2 + j);
  REQUIRE(all_ok(ok));
}

// A result of the sharding and shape of an array that went takes that array's blocks as they are laid out
// (devices, indices, views): every element is written again, the blocks no piece writes (a partial permutation's)
// zeroed again though they held the last result's values.
TEST_CASE("a result laid out as an array that went rewrites every element, zeros included") {
  const int64_t n = device_count();
  const int ni = static_cast<int>(n);
  std::vector<std::pair<int, int>> shift, partial;  // partial: device 0's block to device 1 (n > 1), others zero
  for (int d = 0; d < ni; ++d) shift.emplace_back(d, (d + 1) % ni);
  if (n > 1) partial.emplace_back(0, 1);
  bool ok = true;
  for (int step = 1; step <= 4; ++step) {
    const double v = static_cast<double>(step);
    // The operand's sharding equal by fields to the last step's, another object at every other step.
    const NamedSharding rows = row_sharding();
    const auto x = full<double, 2>({n, 3}, v, rows);
    auto y = ppermute(x, "x", shift);
    y = ppermute(x, "x", shift);  // the first result's blocks, every element v, wait in the pool
    for (double e : process_allgather(y)) ok = ok && e == v;
    const auto z = ppermute(x, "x", partial);  // takes them: row 1 v, every other row 0
    const std::vector<double> got = process_allgather(z);
    for (int d = 0; d < ni; ++d)
      for (int j = 0; j < 3; ++j) ok = ok && got[static_cast<std::size_t>(d * 3 + j)] == (d == 1 ? v : 0.0);
    ok = ok && z.sharding() == rows && z.shape() == Shape{n, 3};
    INFO("step " << step);
    REQUIRE(all_ok(ok));
  }
}

// Results made in a random order from the blocks of results that went, while others stay alive: every live array
// keeps its values (no result is ever given blocks an array still holds) and every new one has the right values.
TEST_CASE("results made from kept blocks, in a random order of calls and releases, keep every live array's values") {
  const int64_t n = device_count();
  const NamedSharding rows = row_sharding(), all(make_mesh({n}, {"x"}), P{});
  const int ni = static_cast<int>(n);
  std::vector<std::pair<int, int>> shift;
  for (int d = 0; d < ni; ++d) shift.emplace_back(d, (d + 1) % ni);
  struct Live {
    DistributedArray<double, 2> a;
    std::vector<double> expected;  // row-major global values
  };
  std::vector<Live> live;
  std::mt19937 rng(20261128);  // the same sequence on every process
  const auto pick = [&](int bound) { return static_cast<int>(rng() % static_cast<unsigned>(bound)); };
  const int64_t cols = 3;
  for (int step = 0; step < 120; ++step) {
    const int rows_per = 1 + pick(2);  // two block shapes: (1, 3) and (2, 3) per device
    const Shape shape{rows_per * n, cols};
    const auto count = static_cast<std::size_t>(rows_per * n * cols);
    // The operand: a live array of this shape, if any.
    const Live* operand = nullptr;
    for (const Live& l : live)
      if (l.a.shape() == shape && l.a.sharding() == rows) operand = &l;
    Live made{full<double, 2>(shape, 0.0, rows), {}};
    const int op = operand ? pick(5) : 0;
    if (op == 0) {
      const double v = static_cast<double>(step);
      made.a = full<double, 2>(shape, v, rows);
      made.expected.assign(count, v);
    } else if (op == 1) {
      made.a = operand->a + operand->a;
      made.expected = operand->expected;
      for (double& e : made.expected) e *= 2;
    } else if (op == 2) {
      made.a = ppermute(operand->a, "x", shift);  // block d moves to device d + 1
      made.expected.resize(count);
      const auto block = static_cast<std::size_t>(rows_per * cols);
      for (int64_t d = 0; d < n; ++d)
        for (std::size_t e = 0; e < block; ++e)
          made.expected[static_cast<std::size_t>((d + 1) % n) * block + e] =
              operand->expected[static_cast<std::size_t>(d) * block + e];
    } else if (op == 3) {
      made.a = reshard(reshard(operand->a, all), rows);
      made.expected = operand->expected;
    } else {
      made = *operand;  // a copy: the same blocks, held twice
    }
    // Keep it, replacing a random live array now and then (whose blocks go to the pool), at most four alive.
    if (live.size() < 4 && pick(3) != 0)
      live.push_back(std::move(made));
    else if (!live.empty())
      live[static_cast<std::size_t>(pick(static_cast<int>(live.size())))] = std::move(made);
    if (pick(5) == 0 && !live.empty()) live.erase(live.begin() + pick(static_cast<int>(live.size())));
    for (const Live& l : live) {
      const std::vector<double> got = process_allgather(l.a);
      INFO("step " << step << ", op " << op);
      REQUIRE(all_ok(got == l.expected));
    }
  }
}

TEST_CASE("memory_stats counts no block of a result that went") {
  const auto x = iota<double, 2>({device_count(), 5}, row_sharding());
  const MemoryStats before = memory_stats();
  {
    auto a = psum(x, "x");
    a = psum(x, "x");
    auto b = iota<double, 2>({device_count(), 5}, row_sharding());
  }
  const MemoryStats after = memory_stats();
  INFO("in use " << before.bytes_in_use << " before, " << after.bytes_in_use << " after");
  REQUIRE(all_ok(after.bytes_in_use == before.bytes_in_use));
}

TEST_CASE("a copied shard view outlives its array and keeps its block") {
  const Shape shape{6 * device_count(), 50};
  const MemoryStats before = memory_stats();
  Shard<double, 2>::view_type kept;
  Index kept_index;
  {
    auto a = iota<double, 2>(shape, row_sharding());
    kept = a.addressable_shards().front().data;
    kept_index = a.addressable_shards().front().index;
  }
  bool ok = memory_stats().bytes_in_use >= before.bytes_in_use + kept.size() * sizeof(double);
  // While it lives, its block is not handed out again.
  auto b = iota<double, 2>(shape, row_sharding());
  for (const auto& s : b.addressable_shards()) ok = ok && s.data.data() != kept.data();
  // Its values are still the old array's, and it can be written.
  const auto flat = testing::global_flat_indices(kept_index, shape);
  ok = ok && flat.size() == kept.size();
  {  // through host mirrors (a GPU's shard too), which on the host are the view itself: dropped before use_count
    const auto old_values = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), kept);
    for (std::size_t k = 0; ok && k < flat.size(); ++k) ok = old_values.data()[k] == static_cast<double>(flat[k]);
    Kokkos::deep_copy(kept, -1.0);
    const auto new_values = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), kept);
    ok = ok && new_values(0, 0) == -1.0;
  }
  ok = ok && kept.use_count() == 1 && kept.label().find("darray::") == 0;
  const std::size_t in_use = memory_stats().bytes_in_use;
  kept = {};
  ok = ok && memory_stats().bytes_in_use < in_use;
  REQUIRE(all_ok(ok));
}

TEST_CASE("the cache honours its limit, evicting the oldest blocks") {
  LimitGuard guard;
  release_cached_memory();
  // A process's shards share one block: 64 KiB or more per local device.
  const std::size_t limit = 256 * 1024 * static_cast<std::size_t>(local_device_count());
  Cache::instance().set_limit(limit);
  reset_memory_stats();
  // Blocks of 10 different sizes, each 64 KiB or more per device, freed one after another: at most `limit` bytes stay.
  for (int k = 0; k < 10; ++k) {
    auto a = zeros<double, 2>({device_count(), 8192 + 1024 * k}, row_sharding());
  }
  const MemoryStats s = memory_stats();
  INFO("cached " << s.bytes_cached << " evictions " << s.evictions);
  REQUIRE(all_ok(s.bytes_cached <= limit && s.bytes_cached > 0 && s.evictions > 0 && s.cache_limit_bytes == limit));
  // A block larger than the whole limit is never kept.
  const std::size_t cached = s.bytes_cached;
  { auto big = zeros<double, 2>({device_count(), 65536}, row_sharding()); }
  REQUIRE(all_ok(memory_stats().bytes_cached <= cached));
}

TEST_CASE("release_cached_memory empties the cache and leaves live views alone") {
  auto live = iota<double, 2>({3 * device_count(), 77}, row_sharding());
  { auto a = iota<double, 2>({5 * device_count(), 99}, row_sharding()); }
  const bool had = memory_stats().bytes_cached > 0;
  release_cached_memory();
  const MemoryStats s = memory_stats();
  REQUIRE(all_ok(had && s.bytes_cached == 0 && s.bytes_in_use >= 3 * 77 * sizeof(double)));
  REQUIRE(all_ok(is_iota(live)));
}

TEST_CASE("b = reshard(a, s) in a loop stops allocating from the system") {
  const int64_t n = device_count();
  // 32 KiB or more per device: more than a shard list keeps with its views (shard_lists.hpp), so every call takes
  // its block from the cache.
  const Shape shape{128 * n, 32 * n};
  const NamedSharding rows(make_mesh({n}, {"x"}), P{"x"}), cols(make_mesh({n}, {"x"}), P{none, "x"});
  auto a = iota<double, 2>(shape, rows);
  auto b = reshard(a, cols);
  b = reshard(a, cols);  // the first output's blocks are back in the cache now
  reset_memory_stats();
  for (int k = 0; k < 5; ++k) b = reshard(a, cols);
  const MemoryStats s = memory_stats();
  INFO("from system " << s.allocations_from_system << ", from cache " << s.allocations_from_cache);
  REQUIRE(all_ok(s.allocations_from_system == 0 && s.allocations_from_cache >= 5));
  REQUIRE(all_ok(is_iota(b)));
}

TEST_CASE("cached_view and cached_buffer serve the library's own buffers") {
  reset_memory_stats();
  {
    auto v = detail::cached_view<Kokkos::View<float*, DefaultMemorySpace>>("darray::test", 1000);
    auto buf = detail::cached_buffer<DefaultMemorySpace>(4000);
    Kokkos::deep_copy(v, 1.5f);  // usable memory of its space (a GPU's too)
    REQUIRE(v.extent(0) == 1000);
    REQUIRE(buf.extent(0) == 4000);
    REQUIRE(v.data() != reinterpret_cast<float*>(buf.data()));
  }
  const MemoryStats s1 = memory_stats();
  auto again = detail::cached_buffer<DefaultMemorySpace>(4000);
  const MemoryStats s2 = memory_stats();
  REQUIRE(s1.allocations_from_system + s1.allocations_from_cache == 2);
  REQUIRE(s2.allocations_from_cache == s1.allocations_from_cache + 1);
}

TEST_CASE("a large host block from the system is advised to huge pages before it is touched") {
  release_cached_memory();
  reset_memory_stats<Kokkos::HostSpace>();
  const std::size_t bytes = std::size_t(24) << 20;
  auto buf = detail::cached_buffer<Kokkos::HostSpace>(bytes);
  REQUIRE(memory_stats<Kokkos::HostSpace>().allocations_from_system == 1);
  if (darray::testing::kernel_has_huge_pages()) {
    const auto m = darray::testing::mapping_flags(buf.data() + bytes / 2);
    REQUIRE(m.found);
    CHECK(m.huge_advised);
  }
  std::memset(buf.data(), 7, bytes);
  CHECK(buf.data()[bytes - 1] == 7);
}

TEST_CASE("a large host block from the system is fresh memory, not pages malloc recycled") {
  // Memory the C library got back keeps the 4 KiB pages it was touched with, and advice no longer changes them: a
  // block in such memory would run on 4 KiB pages (the FFT's measuring planner frees large scratch blocks just before
  // the transforms' arrays are made). Leave some behind for certain: glibc's heap serves every allocation under 32 MiB
  // and keeps what is freed, then a 30 MiB block is touched and freed.
  release_cached_memory();
  // Under a sanitizer's allocator mallopt does nothing (returns 0): the check below still holds, it only loses its
  // recycled neighbourhood.
  const bool mmap_set = ::mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1,
             trim_set = ::mallopt(M_TRIM_THRESHOLD, 256 << 20) == 1;
  const std::size_t bytes = std::size_t(24) << 20, seed_bytes = std::size_t(30) << 20;
  auto* seed = static_cast<char*>(std::malloc(seed_bytes));
  REQUIRE(seed != nullptr);
  for (std::size_t i = 0; i < seed_bytes; i += 4096) static_cast<volatile char*>(seed)[i] = 1;  // kept by the compiler
  std::free(seed);
  auto buf = detail::cached_buffer<Kokkos::HostSpace>(bytes);
  if (mmap_set) ::mallopt(M_MMAP_THRESHOLD, 128 << 10);  // glibc's defaults (fixed from now on)
  if (trim_set) ::mallopt(M_TRIM_THRESHOLD, 128 << 10);
  REQUIRE(memory_stats<Kokkos::HostSpace>().allocations_from_system >= 1);
  // None of its pages is there before it is first touched, but those of the 2 MiB page the block's header lies in
  // (written when the block was made: one huge page where the kernel has them): mincore of the pages past it.
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const std::uintptr_t begin =
      (reinterpret_cast<std::uintptr_t>(buf.data()) + detail::huge_page_bytes + page - 1) & ~(page - 1);
  const std::size_t span = bytes - 2 * detail::huge_page_bytes;
  std::vector<unsigned char> resident((span + page - 1) / page);
  REQUIRE(::mincore(reinterpret_cast<void*>(begin), span, resident.data()) == 0);
  std::size_t there = 0;
  for (unsigned char r : resident) there += r & 1;
  CHECK(there == 0);
  if (darray::testing::kernel_has_huge_pages())
    CHECK(darray::testing::mapping_flags(buf.data() + bytes / 2).huge_advised);
  std::memset(buf.data(), 7, bytes);
  CHECK(buf.data()[bytes - 1] == 7);
}

TEST_CASE("DARRAY_HUGE_PAGES=0: a large host block from the system is not advised") {
  release_cached_memory();
  // Over glibc's largest mmap threshold (32 MiB): a mapping of its own, whose flags no earlier block shares.
  const std::size_t bytes = std::size_t(40) << 20;
  const auto saved = detail::getenv_opt("DARRAY_HUGE_PAGES");
  ::setenv("DARRAY_HUGE_PAGES", "0", 1);
  auto buf = detail::cached_buffer<Kokkos::HostSpace>(bytes);
  if (saved)
    ::setenv("DARRAY_HUGE_PAGES", saved->c_str(), 1);
  else
    ::unsetenv("DARRAY_HUGE_PAGES");
  const auto m = darray::testing::mapping_flags(buf.data() + bytes / 2);
  REQUIRE(m.found);
  CHECK(!m.huge_advised);
  auto advised = detail::cached_buffer<Kokkos::HostSpace>(bytes + (std::size_t(8) << 20));  // another size class
  if (darray::testing::kernel_has_huge_pages())
    CHECK(darray::testing::mapping_flags(advised.data() + bytes / 2).huge_advised);
}

TEST_CASE("a size class hands out its most recently freed block; eviction takes the oldest of all") {
  LimitGuard guard;
  release_cached_memory();
  Cache::instance().set_limit(std::size_t(1) << 30);
  using Buffer = Kokkos::View<char*, DefaultMemorySpace>;
  const std::size_t small = 64 * 1024, large = 96 * 1024;  // two size classes
  Buffer a = detail::cached_buffer<DefaultMemorySpace>(small), b = detail::cached_buffer<DefaultMemorySpace>(small),
         c = detail::cached_buffer<DefaultMemorySpace>(large);
  const void *pb = b.data(), *pc = c.data();
  a = Buffer();  // freed first: the oldest
  b = Buffer();
  c = Buffer();  // freed last: the newest
  bool ok = memory_stats().bytes_cached == 2 * small + large;
  reset_memory_stats();
  Buffer b2 = detail::cached_buffer<DefaultMemorySpace>(small);
  ok = ok && b2.data() == pb && memory_stats().allocations_from_cache == 1;  // b, not the older a
  b2 = Buffer();                                                             // cached again: now the newest
  // Room for two blocks: a (the oldest) goes, c and b stay.
  Cache::instance().set_limit(small + large);
  MemoryStats s = memory_stats();
  ok = ok && s.bytes_cached == small + large && s.evictions == 1;
  Buffer c2 = detail::cached_buffer<DefaultMemorySpace>(large), b3 = detail::cached_buffer<DefaultMemorySpace>(small);
  ok = ok && c2.data() == pc && b3.data() == pb;
  reset_memory_stats();
  Buffer fresh = detail::cached_buffer<DefaultMemorySpace>(small);  // the class is empty: from the system
  s = memory_stats();
  ok = ok && s.allocations_from_system == 1 && s.allocations_from_cache == 0 && fresh.extent(0) == small;
  REQUIRE(all_ok(ok));
}

TEST_CASE("size classes: at most 12.5% above the request, equal requests equal classes") {
  for (std::size_t bytes : {1ul, 511ul, 512ul, 4095ul, 4097ul, 1000000ul, 67108864ul, 67108865ul, 268435455ul}) {
    const std::size_t c = detail::cache_size_class(bytes);
    INFO(bytes << " -> " << c);
    CHECK(c >= bytes);
    CHECK((c <= 4608 || c <= bytes + bytes / 8));
    CHECK(detail::cache_size_class(c) == c);
  }
}

TEST_CASE("with DARRAY_CACHE_BYTES=0 every shard is a plain Kokkos allocation", "[.cache_off]") {
  reset_memory_stats();
  const MemoryStats before = memory_stats();
  Shard<double, 2>::view_type kept;
  {
    auto a = iota<double, 2>({4 * device_count(), 10}, row_sharding());
    kept = a.addressable_shards().front().data;
  }
  auto b = iota<double, 2>({4 * device_count(), 10}, row_sharding());
  const MemoryStats s = memory_stats();
  bool ok = before.cache_limit_bytes == 0 && s.allocations_from_cache == 0 && s.allocations_from_system == 0;
  ok = ok && s.bytes_cached == 0 && s.bytes_in_use == before.bytes_in_use && kept.use_count() == 1;
  REQUIRE(all_ok(ok));
  REQUIRE(all_ok(is_iota(b)));
}
