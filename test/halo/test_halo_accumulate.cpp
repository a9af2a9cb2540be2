// Halo accumulation (the reverse of the halo fill) at 1-4 processes x 1-4 host devices: every padded cell of every
// device gets a known value, accumulate() runs, and every block cell must equal the sum, counted independently here,
// of every padded cell (of any device holding a copy of the same block family) that maps onto it; halos come back
// zero. Random 1-, 2- and 3-D layouts with uneven and empty blocks, periodic and open dims, halos wider than a
// neighbour's block and wider than the array; the adjoint identity <exchange(x), y> = <x, accumulate(y)>; the
// device-memory path of the engine.
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "darray/darray.hpp"
#include "darray/halo/exchange.hpp"
#include "halo_layouts.hpp"
#include "mpi_test.hpp"
#include "random_layouts.hpp"

using namespace darray;
using darray::testing::all_ok;

namespace {

// The value painted into padded cell e (row-major position in the padded block) of device d.
int64_t paint(const Device& d, int64_t e) { return 1 + d.id * 31 + e % 17; }

// The global flat index a padded cell stands for (wrapped along periodic dims), or -1 outside an open dim.
int64_t home(const Shape& shape, const std::vector<Boundary>& bc, const Index& padded, int64_t e) {
  const std::size_t n = shape.size();
  const Shape ext = box_shape(padded);
  std::vector<int64_t> x(n);
  int64_t rest = e;
  for (std::size_t d = n; d-- > 0;) {
    x[d] = padded[d].start + rest % ext[d];
    rest /= ext[d];
  }
  int64_t flat = 0;
  for (std::size_t d = 0; d < n; ++d) {
    int64_t v = x[d];
    if (v < 0 || v >= shape[d]) {
      if (bc[d] == Boundary::open) return -1;
      v = ((v % shape[d]) + shape[d]) % shape[d];
    }
    flat = flat * shape[d] + v;
  }
  return flat;
}

// Paints, accumulates and checks every cell of every local padded shard: a block cell holds the sum over the devices
// of its replica family (same replica id: the devices whose halos draw on each other) of every padded cell mapping
// onto it; every halo cell is 0. Then a second accumulate leaves the blocks as they are (halos were zeroed).
template <int N>
bool accumulate_ok(const HaloExchange<int64_t, N>& halo, const std::vector<Boundary>& bc, std::string& why) {
  const HaloPlan& plan = halo.plan();
  const Shape& shape = plan.shape();
  const NamedSharding& sharding = plan.sharding();
  // Expected sums per replica family, from every device of the mesh (remote ones included).
  std::map<int64_t, std::vector<int64_t>> sums;
  for (const Device& d : sharding.mesh().devices()) {
    auto& acc = sums[sharding.replica_id(d)];
    acc.resize(static_cast<std::size_t>(volume(shape)), 0);
    const Index padded = plan.padded_index(d);
    for (int64_t e = 0; e < volume(box_shape(padded)); ++e) {
      const int64_t g = home(shape, bc, padded, e);
      if (g >= 0) acc[static_cast<std::size_t>(g)] += paint(d, e);
    }
  }
  auto shards = halo.allocate();
  for (const auto& s : shards) {
    auto host = Kokkos::create_mirror_view(s.data);
    for (int64_t e = 0; e < static_cast<int64_t>(s.data.size()); ++e) host.data()[e] = paint(s.device, e);
    Kokkos::deep_copy(s.data, host);
  }
  for (int round = 0; round < 2; ++round) {
    halo.accumulate(shards);
    for (const auto& s : shards) {
      const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s.data);
      const auto& acc = sums.at(sharding.replica_id(s.device));
      const Shape ext = box_shape(s.padded_index);
      for (int64_t e = 0; e < static_cast<int64_t>(host.size()); ++e) {
        bool inside = true;
        int64_t rest = e;
        for (int d = N - 1; d >= 0; --d) {
          const int64_t x = s.padded_index[d].start + rest % ext[d];
          rest /= ext[d];
          inside = inside && x >= s.index[d].start && x < s.index[d].stop;
        }
        const int64_t want = inside ? acc[static_cast<std::size_t>(home(shape, bc, s.padded_index, e))] : 0;
        if (host.data()[e] != want) {
          std::ostringstream os;
          os << "round " << round << " " << s.device << " padded " << s.padded_index << " cell " << e << ": got "
             << host.data()[e] << ", expected " << want;
          why = os.str();
          return false;
        }
      }
    }
  }
  return true;
}

// <exchange(x), y> == <x, accumulate(y)> over all padded cells of all devices, for random integer x and y (exact).
template <int N>
bool adjoint_ok(const HaloExchange<int64_t, N>& halo, std::mt19937_64& rng, std::string& why) {
  auto x = halo.allocate();
  auto y = halo.allocate();
  std::vector<decltype(Kokkos::create_mirror_view(x[0].data))> xh, yh;
  // Every process draws the same stream per device, so the values do not depend on the process layout.
  const uint64_t seed = rng();
  for (std::size_t i = 0; i < x.size(); ++i) {
    std::mt19937_64 local(seed + static_cast<uint64_t>(x[i].device.id));
    for (auto* v : {&x[i], &y[i]}) {
      auto host = Kokkos::create_mirror_view(v->data);
      for (std::size_t e = 0; e < host.size(); ++e) host.data()[e] = static_cast<int64_t>(local() % 201) - 100;
      Kokkos::deep_copy(v->data, host);
    }
  }
  halo.exchange(x);
  auto dot = [](const std::vector<PaddedShard<int64_t, N>>& a, const std::vector<PaddedShard<int64_t, N>>& b) {
    int64_t s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a[i].data);
      const auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b[i].data);
      for (std::size_t e = 0; e < ha.size(); ++e) s += ha.data()[e] * hb.data()[e];
    }
    int64_t total = 0;
    MPI_Allreduce(&s, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    return total;
  };
  const int64_t left = dot(x, y);
  // exchange(x) kept x's blocks; its halos do not matter on the right, where accumulate(y) is zero.
  halo.accumulate(y);
  const int64_t right = dot(x, y);
  if (left != right) {
    why = "<exchange(x), y> = " + std::to_string(left) + " but <x, accumulate(y)> = " + std::to_string(right);
    return false;
  }
  return true;
}

template <int N>
void random_case(std::mt19937_64& rng, int mesh_axes) {
  // Periodic halos sometimes wider than twice the array; meshes sometimes over shuffled devices.
  const auto layout = darray::testing::random_halo_layout(rng, N, mesh_axes, true, true);
  const Shape& shape = layout.shape;
  const std::vector<int64_t>& widths = layout.widths;
  const std::vector<Boundary>& bc = layout.bc;
  const NamedSharding& sharding = layout.sharding;
  std::ostringstream bcs;
  for (const Boundary b : bc) bcs << b << " ";
  INFO(sharding << " shape " << shape_to_string(shape) << " widths " << shape_to_string(widths) << " boundaries "
                << bcs.str());
  const HaloExchange<int64_t, N> halo(shape, sharding, widths, bc);
  std::string why;
  const bool ok = accumulate_ok<N>(halo, bc, why);
  INFO(why);
  REQUIRE(all_ok(ok));
  const bool adj = adjoint_ok<N>(halo, rng, why);
  INFO(why);
  REQUIRE(all_ok(adj));
}

TEST_CASE("random layouts: every block cell gets every ghost contribution, halos come back zero", "[halo]") {
  std::mt19937_64 rng(4242);
  darray::testing::random_halo_rounds(rng, 10, false,
                                      [&](auto n, int axes) { random_case<decltype(n)::value>(rng, axes); });
}

TEST_CASE("accumulate on the device-memory path (pack kernels, transport, add-unpack kernels)", "[halo]") {
  const darray::detail::StageAsIfOnDevice device_path;
  std::mt19937_64 rng(4343);
  darray::testing::random_halo_rounds(rng, 5, true,
                                      [&](auto n, int axes) { random_case<decltype(n)::value>(rng, axes); });
}

TEST_CASE("one device, 4x5 periodic, width 1, all ones: corners 4, edges 2, inside 1", "[halo]") {
  // A mesh of device 0 only: the other processes hold no block and take part with nothing to send.
  const Mesh mesh({devices()[0]}, {1}, {"x"});
  const HaloExchange<double, 2> halo({4, 5}, NamedSharding(mesh, P("x")), {1, 1}, Boundary::periodic);
  auto shards = halo.allocate();
  for (auto& s : shards) Kokkos::deep_copy(s.data, 1.0);
  halo.accumulate(shards);
  bool ok = true;
  for (const auto& s : shards) {
    const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s.data);
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 7; ++j) {
        const bool in = i >= 1 && i <= 4 && j >= 1 && j <= 5;
        const int edges = (i == 1 || i == 4 ? 1 : 0) + (j == 1 || j == 5 ? 1 : 0);
        const double want = !in ? 0.0 : edges == 2 ? 4.0 : edges == 1 ? 2.0 : 1.0;
        ok = ok && host(i, j) == want;
      }
  }
  REQUIRE(all_ok(ok));
}

TEST_CASE("open boundaries drop what lies outside: 1-D slab, width 2 wider than the blocks", "[halo]") {
  // n = device count + 1 cells over all devices: blocks of 1 or 2 cells, width 2 reaches two devices away.
  const int64_t n = device_count() + 1;
  const HaloExchange<int64_t, 1> halo({n}, NamedSharding(make_mesh({device_count()}, {"x"}), P("x")), {2},
                                      Boundary::open);
  auto shards = halo.allocate();
  for (auto& s : shards) Kokkos::deep_copy(s.data, int64_t(1));
  halo.accumulate(shards);
  // Cell x is covered by the padded block [start - 2, stop + 2) of every device whose block lies within 2 cells.
  bool ok = true;
  for (const auto& s : shards) {
    const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s.data);
    for (int64_t x = s.index[0].start; x < s.index[0].stop; ++x) {
      int64_t want = 0;
      for (int64_t p = 0; p < device_count(); ++p) {
        const Slice b = block_slice(n, device_count(), p);
        want += x >= b.start - 2 && x < b.stop + 2 ? 1 : 0;  // an empty block's padded box counts too
      }
      ok = ok && host(x - s.padded_index[0].start) == want;
    }
  }
  REQUIRE(all_ok(ok));
}

TEST_CASE("accumulate rejects shards of another exchange on every process", "[halo]") {
  const NamedSharding sharding(make_mesh({device_count()}, {"x"}), P("x"));
  const HaloExchange<int64_t, 2> halo({8, 4}, sharding, {1, 1}, Boundary::periodic);
  const HaloExchange<int64_t, 2> other({8, 4}, sharding, {2, 1}, Boundary::periodic);
  auto wrong = other.allocate();
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, halo.accumulate(wrong), "this exchange expects");
}

}  // namespace

// Run only by test_halo_accumulate_check (DARRAY_CHECK=1): a process accumulating another halo is named everywhere.
TEST_CASE("DARRAY_CHECK=1: a process accumulating another halo is named on every process", "[.check]") {
  REQUIRE(all_ok(consistency_checks_enabled()));
  const NamedSharding sharding(make_mesh({device_count()}, {"x"}), P("x"));
  const HaloExchange<int64_t, 2> one({8, 4}, sharding, {1, 1}, Boundary::periodic);
  const HaloExchange<int64_t, 2> two({8, 4}, sharding, {2, 1}, Boundary::periodic);
  const auto& mine = process_index() == process_count() - 1 ? two : one;
  auto padded = mine.allocate();
  if (process_count() > 1)
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, mine.accumulate(padded), "processes disagree", "halo accumulate");
  else
    REQUIRE_NOTHROW(mine.accumulate(padded));
}
