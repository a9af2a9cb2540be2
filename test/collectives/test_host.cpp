// The documented examples of the collectives (each checked value by value), meshes that leave processes out,
// axis_index, broadcast_from_root of host data and sync_global_devices.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "collectives_test_util.hpp"

using namespace darray;
using namespace darray::testing;

namespace {

template <class View>
std::vector<typename View::non_const_value_type> to_host(const View& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<typename View::non_const_value_type>(h.data(), h.data() + h.size());
}

}  // namespace

// Which axis groups a reduction reduces together (collectives/detail/reduction_units.hpp), on device tables of any
// size made here: replica groups whose devices split alike over separate processes stay apart (no larger
// allreduce for a model axis reduced per data replica), others form one unit, so that the replicas agree bit for bit.
TEST_CASE("reduction units: replica groups split alike stay apart, the others are reduced together") {
  auto table = [](int processes, int per) {  // process-major, as the Environment numbers devices
    std::vector<Device> devs;
    for (int p = 0; p < processes; ++p)
      for (int k = 0; k < per; ++k) devs.push_back(Device{p * per + k, p, k, DeviceKind::cpu, -1});
    return devs;
  };
  auto units = [](const Mesh& mesh, const PartitionSpec& spec, const std::vector<int>& axes, int processes) {
    const detail::AxisGroups groups(mesh, axes);
    const std::vector<int64_t> volume(static_cast<std::size_t>(groups.group_count()), 16);
    return detail::reduction_units(groups, NamedSharding(mesh, spec), volume, processes, 0).unit;
  };
  using U = std::vector<int64_t>;
  // data x model, "model" reduced, the operand replicated along "data": each replica's group on one process, or on
  // processes 0-3 and 4-7 alike.
  CHECK(units(Mesh(table(2, 4), {2, 4}, {"data", "model"}), P(none, "model"), {1}, 2) == U{0, 1});
  CHECK(units(Mesh(table(8, 1), {2, 4}, {"data", "model"}), P(none, "model"), {1}, 8) == U{0, 1});
  CHECK(units(Mesh(table(8, 1), {4, 2}, {"data", "model"}), P("model"), {1}, 8) == U{0, 1, 2, 3});
  // z=2, y=3 over 3 processes of 2 devices: z=0 on (p0, p0, p1), z=1 on (p1, p2, p2): one unit.
  CHECK(units(Mesh(table(3, 2), {2, 3}, {"z", "y"}), P(none, "y"), {1}, 3) == U{0, 0});
  // y=4, z=2 over 4 processes of 2 devices: both groups on processes 0-3, one component: one unit.
  CHECK(units(Mesh(table(4, 2), {4, 2}, {"y", "z"}), P("y"), {0}, 4) == U{0, 0});
  // The operand sharded along every axis not reduced: no replicas, every group its own unit.
  CHECK(units(Mesh(table(3, 2), {2, 3}, {"z", "y"}), P("z", "y"), {1}, 3) == U{0, 1});
  // Two replica classes along x, each of 2 groups along z: x=0's on one process each, x=1's on processes 2 and 3.
  std::vector<Device> devs = table(4, 3);  // mesh (x=2, z=2, y=3) over 4 processes of 3
  std::swap(devs[7], devs[9]);             // x=1, z=0 now on (p2, p3, p2); x=1, z=1 on (p2, p3, p3)
  CHECK(units(Mesh(devs, {2, 2, 3}, {"x", "z", "y"}), P("x", "y"), {2}, 4) == U{0, 1, 2, 2});
  // Groups in separate components of two processes: apart where the members pair up alike (whichever process is
  // first), together where they do not.
  const std::vector<Device> all = table(4, 3);
  auto pick = [&](std::initializer_list<int> ids) {
    std::vector<Device> d;
    for (const int id : ids) d.push_back(all[static_cast<std::size_t>(id)]);
    return d;
  };
  CHECK(units(Mesh(pick({0, 1, 3, 9, 10, 6}), {2, 3}, {"z", "y"}), P(none, "y"), {1}, 4) == U{0, 1});
  CHECK(units(Mesh(pick({0, 1, 3, 6, 9, 10}), {2, 3}, {"z", "y"}), P(none, "y"), {1}, 4) == U{0, 0});
}

TEST_CASE("psum of ones over every device: the tutorial's all-reduce") {
  const int n = device_count();
  const Mesh mesh = make_mesh({n}, {"i"});
  const auto x = full<float, 1>({n}, 1.0f, NamedSharding(mesh, P("i")));
  const auto y = psum(x, "i");
  bool ok = y.shape() == Shape{1} && y.sharding() == NamedSharding(mesh, P(none)) && y.is_fully_replicated();
  for (const auto& s : y.addressable_shards()) ok = ok && to_host(s.data) == std::vector<float>{float(n)};
  ok = ok && y.addressable_shards().size() == static_cast<std::size_t>(local_device_count());
  REQUIRE(all_ok(ok));
  // The second psum sums n replicas (its operand is replicated along "i"), as jax.lax.psum of an invariant value.
  const auto yi = psum(psum(full<int64_t, 1>({n}, 2, NamedSharding(mesh, P("i"))), "i"), "i");
  bool ok2 = yi.shape() == Shape{1};
  for (const auto& s : yi.addressable_shards()) ok2 = ok2 && to_host(s.data) == std::vector<int64_t>{2 * n * n};
  REQUIRE(all_ok(ok2));
}

TEST_CASE("rank-0 blocks: psum and pmin of scalars") {
  const int n = device_count();
  const Mesh mesh = make_mesh({n}, {"x"});
  const auto a = full<double, 0>({}, 2.5, NamedSharding(mesh, P()));
  const auto s = psum(a, "x");
  const auto m = pmin(a, "x");
  bool ok = s.shape().empty() && s.sharding() == NamedSharding(mesh, P()) && m.shape().empty();
  for (const auto& sh : s.addressable_shards()) ok = ok && to_host(sh.data) == std::vector<double>{2.5 * n};
  for (const auto& sh : m.addressable_shards()) ok = ok && to_host(sh.data) == std::vector<double>{2.5};
  REQUIRE(all_ok(ok));
}

TEST_CASE("all_gather of the only sharded axis gives back the whole array, uneven blocks included") {
  const int n = device_count();
  const Mesh mesh = make_mesh({n}, {"x"});
  for (const int64_t len : {int64_t{10}, int64_t{3}, int64_t{0}, int64_t{2 * n + 1}}) {
    const auto a = operand<double, 1>({len}, NamedSharding(mesh, P("x")));
    const auto g = all_gather(a, "x", 0, tiled);
    bool ok = g.shape() == Shape{len} && g.sharding() == NamedSharding(mesh, P(none));
    const auto want = operand_block<double>(full_index({len}), {len}).data;
    for (const auto& s : g.addressable_shards()) ok = ok && to_host(s.data) == want;
    INFO("length " << len);
    REQUIRE(all_ok(ok));
  }
}

TEST_CASE("a small all_gather's replica blocks are copied whole from the first; a large one's are assembled") {
  const int n = device_count();
  const auto k = static_cast<std::size_t>(local_device_count());
  const Mesh mesh = make_mesh({n}, {"x"});
  const NamedSharding s(mesh, P("x"));
  // 1 double per device (a result block of 8n bytes) and 16384 (128 KiB per device: a block past the bound).
  for (const int64_t per_device : {int64_t{1}, int64_t{16384}}) {
    const Shape shape{n * per_device};
    const bool small = static_cast<std::size_t>(n * per_device) * sizeof(double) <= detail::replica_copy_max_bytes;
    const detail::CollectiveSchedule plan = detail::build_all_gather_plan(s, shape, 0, 0, false);
    const detail::MoveList moves = detail::collective_moves(plan, sizeof(double));
    // Every result block is the whole array: the first takes this process's k blocks; when small, the other k - 1
    // take it whole after the run; else each takes the k blocks itself.
    const std::size_t whole = small ? k - 1 : 0, local = small ? k : k * k;
    bool ok = moves.after.size() == whole && moves.local.size() == local;
    const auto a = operand<double, 1>(shape, s);
    const auto want = operand_block<double>(full_index(shape), shape).data;
    for (const bool staged : {false, true}) {
      std::optional<detail::StageAsIfOnDevice> device_path;
      if (staged) device_path.emplace();
      auto g = all_gather(a, "x", 0, tiled);
      for (const auto& sh : g.addressable_shards()) ok = ok && to_host(sh.data) == want;
      for (const auto& sh : g.addressable_shards()) Kokkos::deep_copy(sh.data, 77.0);
      all_gather(a, "x", 0, tiled, g);
      for (const auto& sh : g.addressable_shards()) ok = ok && to_host(sh.data) == want;
    }
    INFO(per_device << " elements per device: " << moves.local.size() << " local pieces, " << moves.after.size()
                    << " whole-block copies; expected " << local << " and " << whole);
    REQUIRE(all_ok(ok));
  }
}

TEST_CASE("all_to_all from P(none, x) to P(x, none) is a pencil transpose: same values, new layout") {
  const int n = device_count();
  const Mesh mesh = make_mesh({n}, {"x"});
  const Shape shape{2 * n, 3 * n};
  const auto a = operand<float, 2>(shape, NamedSharding(mesh, P(none, "x")));
  const auto t = all_to_all(a, "x", 0, 1);
  const std::string err = check_result(t, [&](const Device& d) {
    return operand_block<float>(NamedSharding(mesh, P("x", none)).index(shape, d), shape);
  });
  INFO(err);
  REQUIRE(all_ok(err.empty() && t.shape() == shape && t.sharding() == NamedSharding(mesh, P("x", none))));
}

TEST_CASE("psum_scatter of a replicated array: each device keeps its chunk of n times the array") {
  const int n = device_count();
  const Mesh mesh = make_mesh({n}, {"x"});
  const auto a = operand<int32_t, 1>({2 * n}, NamedSharding(mesh, P()));
  const auto r = psum_scatter(a, "x", 0);
  const std::string err = check_result(r, [&](const Device& d) {
    HostBlock<int32_t> b = operand_block<int32_t>(NamedSharding(mesh, P("x")).index({2 * n}, d), {2 * n});
    for (auto& v : b.data) v *= n;
    return b;
  });
  INFO(err);
  REQUIRE(all_ok(err.empty() && r.shape() == Shape{2 * n} && r.sharding() == NamedSharding(mesh, P("x"))));
}

TEST_CASE("stacked all_gather puts the axis index in a new dim") {
  const int n = device_count();
  const Mesh mesh = make_mesh({n}, {"x"});
  const auto a = operand<int64_t, 2>({2 * n, 3}, NamedSharding(mesh, P("x")));
  const auto g = all_gather(a, "x", -1, stacked);  // the new dim last: (2, 3, n) per device
  bool ok = g.shape() == Shape{2, 3, n} && g.sharding() == NamedSharding(mesh, P(none));
  for (const auto& s : g.addressable_shards()) {
    const auto host = to_host(s.data);
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t c = 0; c < 3; ++c)
        for (int64_t k = 0; k < n; ++k)
          ok = ok && host[static_cast<std::size_t>((r * 3 + c) * n + k)] == value_of<int64_t>((2 * k + r) * 3 + c);
  }
  REQUIRE(all_ok(ok));
}

TEST_CASE("a mesh over some processes only: the others take part with nothing to do") {
  if (process_count() < 2) return;
  std::vector<Device> some;
  for (const Device& d : devices())
    if (d.process_index != 0) some.push_back(d);
  const auto n = static_cast<int64_t>(some.size());
  const Mesh mesh(some, {n}, {"x"});
  const auto a = operand<double, 1>({2 * n}, NamedSharding(mesh, P("x")));
  const auto s = psum(a, "x");
  const auto p = ppermute(a, "x", {{0, static_cast<int>(n - 1)}});
  const auto g = all_gather(a, "x", 0, tiled);
  bool ok =
      s.addressable_shards().size() == (process_index() == 0 ? 0u : static_cast<std::size_t>(local_device_count()));
  ok = ok && s.shape() == Shape{2} && g.shape() == Shape{2 * n} && p.shape() == Shape{2 * n};
  const auto whole = operand_block<double>(full_index({2 * n}), {2 * n}).data;
  for (const auto& sh : g.addressable_shards()) ok = ok && to_host(sh.data) == whole;
  for (const auto& sh : s.addressable_shards()) {
    std::vector<double> want{0, 0};
    for (int64_t k = 0; k < n; ++k)
      for (int64_t e = 0; e < 2; ++e) want[static_cast<std::size_t>(e)] += whole[static_cast<std::size_t>(2 * k + e)];
    ok = ok && to_host(sh.data) == want;
  }
  REQUIRE(all_ok(ok));
}

TEST_CASE("axis_index: coordinates along one axis and mixed radix over several") {
  const int n = device_count();
  const Mesh mesh = random_mesh(*std::make_unique<std::mt19937_64>(9), 3, true);
  bool ok = true;
  for (const Device& d : mesh.devices()) {
    const auto c = mesh.coords(d);
    ok = ok && axis_index(mesh, "x", d) == c[0] && axis_index(mesh, "z", d) == c[2];
    ok = ok && axis_index(mesh, {"z", "x"}, d) == c[2] * mesh.shape()[0] + c[0];
  }
  const Mesh line = make_mesh({n}, {"i"});
  for (const Device& d : local_devices()) ok = ok && axis_index(line, "i", d) == d.id;
  REQUIRE(all_ok(ok));
}

TEST_CASE("broadcast_from_root: root's data on every process, any root, empty included") {
  for (int root = 0; root < process_count(); ++root) {
    for (const std::size_t len : {std::size_t{0}, std::size_t{1}, std::size_t{1000}}) {
      std::vector<double> mine;
      if (process_index() == root) {
        mine.resize(len);
        std::iota(mine.begin(), mine.end(), 0.5 + root);
      }
      const auto got = broadcast_from_root(mine, root);
      bool ok = got.size() == len;
      for (std::size_t i = 0; ok && i < len; ++i) ok = got[i] == 0.5 + root + static_cast<double>(i);
      INFO("root " << root << " length " << len);
      REQUIRE(all_ok(ok));
    }
  }
  std::vector<Kokkos::complex<double>> buffer(17, Kokkos::complex<double>(process_index(), 1));
  broadcast_from_root(buffer.data(), buffer.size(), process_count() - 1);
  bool ok = true;
  for (const auto& v : buffer) ok = ok && v == Kokkos::complex<double>(process_count() - 1, 1);
  REQUIRE(all_ok(ok));
}

TEST_CASE("sync_global_devices: same names pass, different names fail on every process") {
  sync_global_devices("start");
  sync_global_devices("start");
  if (process_count() < 2) return;
  const std::string mine = process_index() == 1 ? "after load" : "before load";
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, sync_global_devices(mine), "sync_global_devices",
                            "process 0 is at \"before load\" but process 1 is at \"after load\"");
}

// NCCL's ncclMax/ncclMin drop NaN, so on NCCL floating-point pmax/pmin reduce order keys (element_ops.hpp) as
// unsigned integers. The transform is checked here on the host, where the kernels also run.
template <class F>
void check_order_keys() {
  using K = darray::detail::order_key_t<F>;
  using L = std::numeric_limits<F>;
  const std::vector<F> ascending = {
      -L::infinity(), -L::max(),       F(-2.5),  F(-1), -L::min(), -L::denorm_min(), F(-0.0),
      F(0.0),         L::denorm_min(), L::min(), F(1),  F(2.5),    L::max(),         L::infinity()};
  bool ordered = true, round_trip = true;
  for (std::size_t i = 0; i < ascending.size(); ++i) {
    for (const bool high : {true, false}) {
      const K k = darray::detail::order_key<F>(ascending[i], high);
      const F back = darray::detail::from_order_key<F>(k);
      round_trip = round_trip && std::memcmp(&back, &ascending[i], sizeof(F)) == 0;
      if (i > 0) ordered = ordered && darray::detail::order_key<F>(ascending[i - 1], high) < k;
    }
  }
  CHECK(ordered);
  CHECK(round_trip);
  const F nans[] = {L::quiet_NaN(), -L::quiet_NaN()};
  for (const F nan : nans) {
    const K high = darray::detail::order_key<F>(nan, true), low = darray::detail::order_key<F>(nan, false);
    for (const F v : ascending) {
      CHECK(high > darray::detail::order_key<F>(v, true));  // max of keys: NaN wins
      CHECK(low < darray::detail::order_key<F>(v, false));  // min of keys: NaN wins
    }
    const F h = darray::detail::from_order_key<F>(high), l = darray::detail::from_order_key<F>(low);
    CHECK((h != h && l != l));
    const F quiet = L::quiet_NaN();  // bit for bit: the device-safe spelling of it in from_order_key
    CHECK((std::memcmp(&h, &quiet, sizeof(F)) == 0 && std::memcmp(&l, &quiet, sizeof(F)) == 0));
  }
  // In place through the kernel, as the NCCL path runs it: max of [NaN, 1] and of [-1, 3] per lane, by key.
  Kokkos::View<F*, Kokkos::HostSpace> a("a", 2), b("b", 2);
  a(0) = L::quiet_NaN();
  a(1) = F(-1);
  b(0) = F(1);
  b(1) = F(3);
  const Kokkos::DefaultHostExecutionSpace space;
  darray::detail::order_keys_in_place(space, a.data(), 2, true, true);
  darray::detail::order_keys_in_place(space, b.data(), 2, true, true);
  space.fence();
  const K* ka = reinterpret_cast<const K*>(a.data());
  const K* kb = reinterpret_cast<const K*>(b.data());
  K m[2] = {ka[0] > kb[0] ? ka[0] : kb[0], ka[1] > kb[1] ? ka[1] : kb[1]};
  std::memcpy(static_cast<void*>(a.data()), m, sizeof m);
  darray::detail::order_keys_in_place(space, a.data(), 2, false, true);
  space.fence();
  CHECK((a(0) != a(0) && a(1) == F(3)));
}

TEST_CASE("order keys: an integer max/min of the keys is a NaN-propagating max/min of float and double values") {
  check_order_keys<float>();
  check_order_keys<double>();
}

// A reduction across processes takes one of three paths by its block's bytes (comm/detail/same_reduction.hpp):
// records up to 16 KiB, reduce-scatter then allgather up to 16 MiB (halves that split unevenly, process counts that
// are not powers of two), a record then the data's MPI_Allreduce beyond (and beyond 16 KiB under
// test_collectives_checked's DARRAY_MPI_MAX_MESSAGE_BYTES=4099, the chunked MPI_Allreduce). Sums of global indices are
// exact, so every element is checked for equality, and a NaN on either side of every halving survives pmax.
TEST_CASE("psum and pmax of blocks of every size class across processes: exact sums, NaN kept") {
  const int n = device_count();
  const Mesh mesh = make_mesh({n}, {"i"});
  const NamedSharding line(mesh, P("i"));
  for (const int64_t per :
       {int64_t{2048}, int64_t{2049}, int64_t{8193}, int64_t{131071}, int64_t{131072}, int64_t{131073}}) {
    INFO("elements per device " << per);
    const auto a = iota<double, 1>({n * per}, line);
    const auto s = psum(a, "i");
    // Element j of the sum: sum over devices d of d * per + j.
    const double base = static_cast<double>(per) * n * (n - 1) / 2;
    bool ok = s.shape() == Shape{per};
    for (const auto& sh : s.addressable_shards()) {
      const auto h = to_host(sh.data);
      for (int64_t j = 0; j < per; ++j) ok = ok && h[static_cast<std::size_t>(j)] == base + static_cast<double>(n) * j;
    }
    REQUIRE(all_ok(ok));
    const auto f = iota<float, 1>({n * per}, line);  // 4-byte elements: halves at other byte boundaries
    const auto sf = psum(f, "i");
    bool okf = true;
    for (const auto& sh : sf.addressable_shards()) {
      const auto h = to_host(sh.data);
      for (int64_t j = 0; j < per; j += 7)
        okf = okf && h[static_cast<std::size_t>(j)] == static_cast<float>(base + static_cast<double>(n) * j);
    }
    REQUIRE(all_ok(okf));
    // NaN at position 1 of the first device and at the last position of the last one.
    auto b = iota<double, 1>({n * per}, line);
    for (const auto& sh : b.addressable_shards()) {
      if (sh.device.id != 0 && sh.device.id != n - 1) continue;
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), sh.data);
      if (sh.device.id == 0) h(1) = std::numeric_limits<double>::quiet_NaN();
      if (sh.device.id == n - 1) h(per - 1) = std::numeric_limits<double>::quiet_NaN();
      Kokkos::deep_copy(sh.data, h);
    }
    const auto m = pmax(b, "i");
    bool okm = true;
    for (const auto& sh : m.addressable_shards()) {
      const auto h = to_host(sh.data);
      for (int64_t j = 0; j < per; ++j) {
        const double v = h[static_cast<std::size_t>(j)];
        okm = okm && (j == 1 || j == per - 1 ? v != v : v == static_cast<double>((n - 1) * per + j));
      }
    }
    REQUIRE(all_ok(okm));
  }
}

namespace {

// The left fold of the blocks in `which` order, element by element, with the operation psum/pmax/pmin use.
template <darray::detail::ReduceOp Op, class T>
std::vector<T> fold_in_order(const std::vector<const T*>& blocks, const std::vector<std::size_t>& which, int64_t n) {
  std::vector<T> out(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    T acc = blocks[which[0]][i];
    for (std::size_t k = 1; k < which.size(); ++k) acc = darray::detail::combine_one<Op>(acc, blocks[which[k]][i]);
    out[static_cast<std::size_t>(i)] = acc;
  }
  return out;
}

template <darray::detail::ReduceOp Op, class T, class Gen>
bool combine_blocks_matches_fold(std::mt19937_64& rng, Gen gen) {
  bool ok = true;
  for (const std::size_t count : {std::size_t{2}, std::size_t{3}, std::size_t{4}, std::size_t{5}, std::size_t{7},
                                  std::size_t{8}, std::size_t{10}})
    for (const int64_t n : {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{9}, int64_t{255}, int64_t{256}, int64_t{257},
                            int64_t{1000}, int64_t{2 * 512 + 3}}) {
      std::vector<std::vector<T>> data(count + 2);  // two blocks the slot leaves out
      std::vector<const T*> blocks;
      for (auto& d : data) {
        for (int64_t i = 0; i < n; ++i) d.push_back(gen(rng));
        blocks.push_back(d.data());
      }
      std::vector<std::size_t> which(data.size());
      std::iota(which.begin(), which.end(), std::size_t{0});
      std::shuffle(which.begin(), which.end(), rng);
      which.resize(count);
      std::vector<T> got(static_cast<std::size_t>(n));
      darray::detail::combine_blocks(Op, got.data(), blocks, which, n);
      const std::vector<T> want = fold_in_order<Op>(blocks, which, n);
      const bool same = std::memcmp(static_cast<const void*>(got.data()), static_cast<const void*>(want.data()),
                                    got.size() * sizeof(T)) == 0;
      if (!same) UNSCOPED_INFO("op " << darray::detail::to_string(Op) << ", " << count << " blocks of " << n);
      ok = ok && same;
    }
  return ok;
}

}  // namespace

// A slot's local blocks are combined up to three blocks a pass on the host (collectives/detail/element_ops.hpp:
// combine_blocks); the result is the left fold in member order, bit for bit, as one block after another gave it: sums
// of values of mixed magnitudes (whose order shows in the last bits), NaNs in max and min, integers and complex
// values, block counts that leave 0, 1 or 2 after the passes of three, sizes on both sides of the few-element path.
TEST_CASE("a slot's local blocks combine in member order, bit for bit, at every block count and size") {
  std::mt19937_64 rng(20261206);
  auto mixed = [](std::mt19937_64& r) {
    const double x = std::uniform_real_distribution<double>(-1, 1)(r);
    return std::ldexp(x, static_cast<int>(r() % 40) - 20);
  };
  auto with_nan = [&](std::mt19937_64& r) {
    return r() % 17 == 0 ? std::numeric_limits<double>::quiet_NaN() : mixed(r);
  };
  auto ints = [](std::mt19937_64& r) { return static_cast<int64_t>(r() % 2001) - 1000; };
  auto cplx = [&](std::mt19937_64& r) { return Kokkos::complex<double>(mixed(r), mixed(r)); };
  using darray::detail::ReduceOp;
  CHECK(combine_blocks_matches_fold<ReduceOp::sum, double>(rng, mixed));
  CHECK(combine_blocks_matches_fold<ReduceOp::max, double>(rng, with_nan));
  CHECK(combine_blocks_matches_fold<ReduceOp::min, double>(rng, with_nan));
  CHECK(combine_blocks_matches_fold<ReduceOp::sum, int64_t>(rng, ints));
  CHECK(combine_blocks_matches_fold<ReduceOp::min, int64_t>(rng, ints));
  CHECK(combine_blocks_matches_fold<ReduceOp::sum, Kokkos::complex<double>>(rng, cplx));
  // The sums above depend on the order: the same blocks folded the other way round differ somewhere.
  std::vector<std::vector<double>> data(8);
  std::vector<const double*> blocks;
  for (auto& d : data) {
    for (int i = 0; i < 64; ++i) d.push_back(mixed(rng));
    blocks.push_back(d.data());
  }
  std::vector<std::size_t> forward(8), backward(8);
  std::iota(forward.begin(), forward.end(), std::size_t{0});
  std::iota(backward.rbegin(), backward.rend(), std::size_t{0});
  CHECK(fold_in_order<ReduceOp::sum>(blocks, forward, 64) != fold_in_order<ReduceOp::sum>(blocks, backward, 64));
}

// Through psum at one process: every device's block of the result is the left fold of the devices' values in the
// axis's order, bit for bit, for one element per device (the few-element path) and for 5000.
TEST_CASE("psum over one process's devices sums them in the axis's order, bit for bit") {
  if (process_count() != 1 || device_count() < 2) return;
  const int n = device_count();
  const Mesh mesh = make_mesh({n}, {"i"});
  const NamedSharding line(mesh, P("i"));
  for (const int64_t per : {int64_t{1}, int64_t{5000}}) {
    INFO("elements per device " << per);
    auto a = iota<double, 1>({n * per}, line);
    std::vector<std::vector<double>> values(static_cast<std::size_t>(n));
    std::mt19937_64 rng(static_cast<std::uint64_t>(per));
    for (const auto& sh : a.addressable_shards()) {
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), sh.data);
      auto& v = values[static_cast<std::size_t>(sh.index[0].start / per)];
      for (int64_t j = 0; j < per; ++j) {
        h(j) = std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng), static_cast<int>(rng() % 40) - 20);
        v.push_back(h(j));
      }
      Kokkos::deep_copy(sh.data, h);
    }
    std::vector<double> want(values[0]);
    for (std::size_t d = 1; d < values.size(); ++d)
      for (int64_t j = 0; j < per; ++j) want[static_cast<std::size_t>(j)] += values[d][static_cast<std::size_t>(j)];
    const auto s = psum(a, "i");
    for (const auto& sh : s.addressable_shards()) {
      const auto h = to_host(sh.data);
      CHECK(std::memcmp(h.data(), want.data(), want.size() * sizeof(double)) == 0);
    }
  }
}
