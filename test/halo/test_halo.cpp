// Halo exchange at 1-4 processes x 1-4 host devices: every padded cell of every device, corners included, equals
// the value computed from its global index (wrapped along periodic dims, the fill value outside open ones), for
// random 1-, 2- and 3-D meshes, specs with replicated dims and axis pairs, uneven and empty blocks, and widths wider
// than a neighbour's block (several hops). Offline: both sides of every pair derive the same pieces, and devices
// only talk to neighbours.
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

#include "darray/darray.hpp"
#include "darray/halo/exchange.hpp"
#include "darray/halo/plan.hpp"
#include "halo_layouts.hpp"
#include "mpi_test.hpp"
#include "random_layouts.hpp"

using namespace darray;
using darray::testing::all_ok;

namespace {

constexpr int64_t fill_value = -7;

// Flat row-major index of a global position, or fill_value when the position lies outside an open dim.
int64_t expected_cell(const Shape& shape, const std::vector<Boundary>& bc, const std::vector<int64_t>& x) {
  int64_t flat = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    int64_t v = x[d];
    if (v < 0 || v >= shape[d]) {
      if (bc[d] == Boundary::open) return fill_value;
      v = ((v % shape[d]) + shape[d]) % shape[d];
    }
    flat = flat * shape[d] + v;
  }
  return flat;
}

// Every cell of every padded shard (host views in this build) against expected_cell; `offset` is added to the
// in-domain values (the blocks were shifted by it before the exchange).
template <int N>
bool padded_ok(const std::vector<PaddedShard<int64_t, N>>& shards, const Shape& shape, const std::vector<Boundary>& bc,
               int64_t offset, std::string& why) {
  for (const auto& s : shards) {
    const Shape ext = box_shape(s.padded_index);
    const int64_t n = volume(ext);
    const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s.data);  // device memory too
    const int64_t* p = host.data();
    for (int64_t e = 0; e < n; ++e) {
      std::vector<int64_t> x(N);
      int64_t rest = e;
      for (int d = N - 1; d >= 0; --d) {
        x[d] = s.padded_index[d].start + rest % ext[d];
        rest /= ext[d];
      }
      int64_t want = expected_cell(shape, bc, x);
      if (want != fill_value) want += offset;
      if (p[e] != want) {
        std::ostringstream os;
        os << s.device << " padded " << s.padded_index << " cell " << e << ": got " << p[e] << ", expected " << want;
        why = os.str();
        return false;
      }
    }
  }
  return true;
}

template <int N>
void random_case(std::mt19937_64& rng, int mesh_axes) {
  const auto layout = darray::testing::random_halo_layout(rng, N, mesh_axes);
  const Shape& shape = layout.shape;
  const std::vector<int64_t>& widths = layout.widths;
  const std::vector<Boundary>& bc = layout.bc;
  const NamedSharding& sharding = layout.sharding;
  INFO(sharding << " shape " << shape_to_string(shape) << " widths " << shape_to_string(widths) << " boundary0 "
                << bc[0]);
  const auto a = iota<int64_t, N>(shape, sharding);
  HaloExchange<int64_t, N> halo(shape, sharding, widths, bc, fill_value);
  auto padded = halo.pad(a);
  std::string why;
  const bool ok = padded_ok<N>(padded, shape, bc, 0, why);
  INFO(why);
  REQUIRE(all_ok(ok));
  // Overwrite every cell, put shifted blocks back in place, exchange again: the halos follow the new blocks and the
  // out-of-domain cells return to the fill value.
  const auto shifted = make_array_from_callback<int64_t, N>(shape, sharding, [&](const Index& box) {
    std::vector<int64_t> v(static_cast<std::size_t>(volume(box)));
    const Shape strides = row_major_strides(shape);
    for (std::size_t e = 0; e < v.size(); ++e) {
      int64_t rest = static_cast<int64_t>(e), flat = 0;
      for (int d = N - 1; d >= 0; --d) {
        flat += (box[d].start + rest % box[d].size()) * strides[d];
        rest /= box[d].size();
      }
      v[e] = flat + 1000;
    }
    return v;
  });
  for (std::size_t i = 0; i < padded.size(); ++i) {
    Kokkos::deep_copy(padded[i].data, 999);
    Kokkos::deep_copy(interior(padded[i]), shifted.addressable_shards()[i].data);
  }
  halo.exchange(padded);
  const bool ok2 = padded_ok<N>(padded, shape, bc, 1000, why);
  INFO(why);
  REQUIRE(all_ok(ok2));
  // unpad gives back the (shifted) array.
  const auto back = process_allgather(halo.unpad(padded));
  bool same = true;
  for (std::size_t i = 0; i < back.size(); ++i) same = same && back[i] == static_cast<int64_t>(i) + 1000;
  REQUIRE(all_ok(same));
}

TEST_CASE("random meshes, specs, shapes, widths and boundaries: every padded cell from its global index", "[halo]") {
  std::mt19937_64 rng(2024);
  darray::testing::random_halo_rounds(rng, 12, false,
                                      [&](auto n, int axes) { random_case<decltype(n)::value>(rng, axes); });
}

TEST_CASE("every halo phase on the device-memory path (pack kernels, transport, unpack)", "[halo]") {
  const darray::detail::StageAsIfOnDevice device_path;
  std::mt19937_64 rng(2025);
  darray::testing::random_halo_rounds(rng, 6, true,
                                      [&](auto n, int axes) { random_case<decltype(n)::value>(rng, axes); });
}

TEST_CASE("3-D meshes (n,1,1) and rotations under P(a, b, c), periodic and open, halos wider than blocks", "[halo]") {
  const int64_t n = device_count();
  const Shape shape{7, 6, 5};
  // A 3-D mesh (n, 1, 1) and its rotations split one dim into n parts; widths 3 exceed blocks of 1 or 2 cells.
  for (const auto& mesh_shape :
       {std::vector<int64_t>{n, 1, 1}, std::vector<int64_t>{1, n, 1}, std::vector<int64_t>{1, 1, n}}) {
    const Mesh mesh = make_mesh(mesh_shape, {"a", "b", "c"});
    for (const std::vector<Boundary>& bc :
         {std::vector<Boundary>{Boundary::periodic, Boundary::open, Boundary::periodic},
          std::vector<Boundary>{Boundary::open, Boundary::periodic, Boundary::open}}) {
      const NamedSharding sharding(mesh, P("a", "b", "c"));
      INFO(sharding << " boundary0 " << bc[0]);
      const auto a = iota<int64_t, 3>(shape, sharding);
      const auto padded = halo_exchange(a, {3, 1, 2}, bc, fill_value);
      std::string why;
      const bool ok = padded_ok<3>(padded, shape, bc, 0, why);
      INFO(why);
      REQUIRE(all_ok(ok));
    }
  }
  // Replicated dims: P(none, "x") on a 1-D mesh; every device's dim 0 is whole and wraps onto itself.
  const NamedSharding rep(make_mesh({n}, {"x"}), P(none, "x"));
  const std::vector<Boundary> periodic(2, Boundary::periodic);
  const auto padded = halo_exchange(iota<int64_t, 2>({3, 5}, rep), {2, 2}, Boundary::periodic, fill_value);
  std::string why;
  const bool ok = padded_ok<2>(padded, {3, 5}, periodic, 0, why);
  INFO(why);
  REQUIRE(all_ok(ok));
}

TEST_CASE("halo of floating-point data on a 2-D mesh with a replicated axis", "[halo]") {
  const int64_t n = device_count();
  const auto grid = n % 2 == 0 ? std::vector<int64_t>{2, n / 2} : std::vector<int64_t>{1, n};
  const NamedSharding sharding(make_mesh(grid, {"r", "c"}), P("c"));  // "r" unused: replicas exchange alike
  const Shape shape{9, 4};
  const auto a = iota<double, 2>(shape, sharding);
  const auto padded = halo_exchange(a, {1, 1}, {Boundary::periodic, Boundary::open}, -1.0);
  bool ok = true;
  for (const auto& s : padded) {
    const Shape ext = box_shape(s.padded_index);
    const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s.data);  // device memory too
    for (int64_t i = 0; i < ext[0]; ++i)
      for (int64_t j = 0; j < ext[1]; ++j) {
        const int64_t gi = ((s.padded_index[0].start + i) % 9 + 9) % 9, gj = s.padded_index[1].start + j;
        const double want = gj < 0 || gj >= 4 ? -1.0 : static_cast<double>(gi * 4 + gj);
        ok = ok && host(i, j) == want;
      }
  }
  REQUIRE(all_ok(ok));
}

// All processes' plans built offline on one process.
std::vector<HaloPlan> plans_for(const Mesh& mesh, const PartitionSpec& spec, const Shape& shape,
                                const std::vector<int64_t>& widths, const std::vector<Boundary>& bc, int processes) {
  std::vector<HaloPlan> plans;
  for (int p = 0; p < processes; ++p) plans.emplace_back(shape, NamedSharding(mesh, spec), widths, bc, p);
  return plans;
}

bool same_pieces(const std::vector<HaloPiece>& a, const std::vector<HaloPiece>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].src != b[i].src || a[i].dst != b[i].dst || a[i].region != b[i].region || a[i].src_frame != b[i].src_frame)
      return false;
  return true;
}

TEST_CASE("offline plans: senders and receivers agree piece by piece; neighbours only", "[halo]") {
  // 64 processes, one device each, on an 8x8 mesh: width 1 talks to 2 peers per phase and never diagonally.
  const Mesh mesh(make_device_table(std::vector<int>(64, 1)), {8, 8}, {"r", "c"});
  const Shape shape{64, 40};
  const std::vector<Boundary> bc{Boundary::periodic, Boundary::open};
  const auto plans = plans_for(mesh, P("r", "c"), shape, {1, 2}, bc, 64);
  for (int p = 0; p < 64; ++p) {
    const HaloPlan& plan = plans[static_cast<std::size_t>(p)];
    REQUIRE(plan.phases().size() == 2);
    const int row = p / 8, col = p % 8;
    // Phase 0 (dim 0, periodic): the rows above and below, wrapping.
    std::vector<int> peers;
    for (const HaloPeer& s : plan.phases()[0].recvs) peers.push_back(s.process);
    CHECK(peers == std::vector<int>{std::min((row + 7) % 8, (row + 1) % 8) * 8 + col,
                                    std::max((row + 7) % 8, (row + 1) % 8) * 8 + col});
    // Phase 1 (dim 1, open): left and right neighbours only, none beyond the edges.
    const std::size_t expected = (col > 0 ? 1 : 0) + (col < 7 ? 1 : 0);
    CHECK(plan.phases()[1].recvs.size() == expected);
    CHECK(plan.phases()[1].sends.size() == expected);
    for (const HaloPeer& s : plan.phases()[1].sends) CHECK(s.process / 8 == row);
    // Phase 1 carries the rows phase 0 filled: 8 block rows + 2 halo rows, 2 columns deep.
    for (const HaloPeer& s : plan.phases()[1].recvs) CHECK(s.elements == (8 + 2) * 2);
    // Out-of-domain columns: open dim 1 at the first and last column of devices.
    CHECK(plan.fills().size() == (col == 0 || col == 7 ? 1u : 0u));
  }
  // Random layouts: what p sends to q is exactly what q expects from p, in the same order.
  std::mt19937_64 rng(7);
  for (int k = 0; k < 40; ++k) {
    const int processes = 1 + static_cast<int>(rng() % 6);
    std::vector<int> counts(static_cast<std::size_t>(processes));
    int total = 0;
    for (int& c : counts) total += c = 1 + static_cast<int>(rng() % 3);
    const Mesh m(make_device_table(counts), {total}, {"x"});
    const Shape sh{static_cast<int64_t>(rng() % 9), static_cast<int64_t>(1 + rng() % 5)};
    const std::vector<int64_t> widths{static_cast<int64_t>(rng() % 5), static_cast<int64_t>(rng() % 3)};
    const std::vector<Boundary> b{rng() % 2 && sh[0] > 0 ? Boundary::periodic : Boundary::open, Boundary::periodic};
    const auto ps = plans_for(m, rng() % 2 ? P("x") : P(none, "x"), sh, widths, b, processes);
    for (int p = 0; p < processes; ++p)
      for (std::size_t ph = 0; ph < ps[static_cast<std::size_t>(p)].phases().size(); ++ph)
        for (const HaloPeer& send : ps[static_cast<std::size_t>(p)].phases()[ph].sends) {
          const auto& recvs = ps[static_cast<std::size_t>(send.process)].phases()[ph].recvs;
          const auto it = std::find_if(recvs.begin(), recvs.end(), [&](const HaloPeer& r) { return r.process == p; });
          INFO("case " << k << " phase " << ph << " " << p << " -> " << send.process);
          REQUIRE(it != recvs.end());
          CHECK(it->elements == send.elements);
          CHECK(same_pieces(it->pieces, send.pieces));
        }
  }
}

TEST_CASE("bad halo arguments throw the same error everywhere", "[halo]") {
  const NamedSharding sharding(make_mesh({device_count()}, {"x"}), P("x"));
  const auto a = iota<int64_t, 2>({8, 4}, sharding);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, halo_exchange(a, {1}, Boundary::open), "1 halo widths",
                            "expected one width per dim");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, halo_exchange(a, {1, -2}, Boundary::open), "halo width -2 for dim 1");
  DARRAY_REQUIRE_THROWS_ALL(
      InvalidArgument,
      (HaloExchange<int64_t, 2>({8, 0}, NamedSharding(sharding.mesh(), P("x")), {1, 1}, Boundary::periodic)),
      "dim 1 is periodic with extent 0");
  const HaloExchange<int64_t, 2> halo({8, 4}, sharding, {1, 1}, Boundary::periodic);
  const HaloExchange<int64_t, 2> other({8, 4}, sharding, {2, 1}, Boundary::periodic);
  auto wrong = other.allocate();
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, halo.exchange(wrong), "this exchange expects");
  // Shards of the right devices and extents whose padded box is another one, or of another rank, are refused too.
  auto moved = halo.allocate();
  moved.back().padded_index[0] = Slice{moved.back().padded_index[0].start + 1, moved.back().padded_index[0].stop + 1};
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, halo.exchange(moved), "this exchange expects");
  auto short_box = halo.allocate();
  short_box.front().padded_index.pop_back();
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, halo.exchange(short_box), "this exchange expects");
  const auto b = iota<int64_t, 2>({8, 5}, sharding);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, halo.pad(b), "given to an exchange for shape 8x4");
}

}  // namespace

// Run only by test_halo_check (DARRAY_CHECK=1): an exchange that differs on one process is reported everywhere.
TEST_CASE("DARRAY_CHECK=1: a process exchanging another halo is named on every process", "[.check]") {
  REQUIRE(all_ok(consistency_checks_enabled()));
  const NamedSharding sharding(make_mesh({device_count()}, {"x"}), P("x"));
  const HaloExchange<int64_t, 2> one({8, 4}, sharding, {1, 1}, Boundary::periodic);
  const HaloExchange<int64_t, 2> two({8, 4}, sharding, {2, 1}, Boundary::periodic);
  const auto& mine = process_index() == process_count() - 1 ? two : one;
  auto padded = mine.allocate();
  if (process_count() > 1)
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, mine.exchange(padded), "processes disagree", "widths 2x1");
  else
    REQUIRE_NOTHROW(mine.exchange(padded));
}

// Issue 16, finding 5: a periodic halo far wider than the array used to build a plan of width / extent pieces per
// device (2^40 on 8 cells: 5.5 GB and counting). Wide periodic halos are now one exchange of the nearest period
// plus log2(width / extent) local doubling phases.
TEST_CASE("a periodic halo far wider than the array builds a plan of O(log width) pieces", "[halo]") {
  const NamedSharding sharding(make_mesh({device_count()}, {"x"}), P("x"));
  const std::vector<Boundary> periodic{Boundary::periodic, Boundary::periodic};
  for (const int64_t w : {int64_t(1000000), int64_t(1) << 40}) {
    const HaloPlan plan({8, 3}, sharding, {w, 2}, periodic, process_index());
    std::size_t pieces = 0;
    for (const HaloPhase& ph : plan.phases()) {
      pieces += ph.local.size();
      for (const HaloPeer& p : ph.recvs) pieces += p.pieces.size();
      for (const HaloPeer& p : ph.sends) pieces += p.pieces.size();
    }
    // Per local device: at most 8 pieces per side from the exchange (one per owning block of the nearest period),
    // 2 per doubling step, plus the narrow dim 1.
    const std::size_t bound = static_cast<std::size_t>(local_device_count()) * (2 * 8 * 2 + 2 * 42 + 2 * 2 * 3);
    INFO("width " << w << ": " << plan.phases().size() << " phases, " << pieces << " pieces");
    REQUIRE(all_ok(pieces <= bound && plan.phases().size() <= 44));
  }
}

TEST_CASE("periodic halos many times wider than the array repeat its cells exactly", "[halo]") {
  const std::vector<Boundary> bc{Boundary::periodic, Boundary::periodic};
  const Mesh mesh = make_mesh({device_count()}, {"x"});
  for (const PartitionSpec& spec : {P("x"), P(none, "x")})
    for (const std::vector<int64_t>& widths : {std::vector<int64_t>{37, 7}, std::vector<int64_t>{5, 16}}) {
      const Shape shape{5, 3};
      const NamedSharding sharding(mesh, spec);
      INFO(sharding << " widths " << shape_to_string(widths));
      const auto a = iota<int64_t, 2>(shape, sharding);
      HaloExchange<int64_t, 2> halo(shape, sharding, widths, bc, fill_value);
      const auto padded = halo.pad(a);
      std::string why;
      const bool ok = padded_ok<2>(padded, shape, bc, 0, why);
      INFO(why);
      REQUIRE(all_ok(ok));
    }
}
