// ReshardPlan built offline for every process of simulated layouts: every destination box is tiled exactly once,
// every piece lies inside its source's block, and what one process plans to send its peer plans to receive.
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <random>
#include <set>

#include "darray/redistribute/detail/messages.hpp"
#include "darray/redistribute/plan.hpp"
#include "darray/sharding/mesh.hpp"
#include "darray/sharding/named_sharding.hpp"
#include "random_layouts.hpp"

// Bytes a plan allocates, counted through a replaced operator new: a plan that sized anything by the mesh (a
// per-process color table, a copy of the device list) would allocate at least a byte per device. CUDA builds leave
// operator new alone here (test_allocations.cpp counts there).
#if !defined(__CUDACC__)
#include "counting_new.hpp"
#define DARRAY_TEST_COUNTS_ALLOCATIONS 1
#endif

using namespace darray;
using darray::testing::random_mesh;

namespace {

// The mesh-axis groups as the plan first computed them, by visiting every device: the stable axes' coordinates
// name a device's group; a process's color is its devices' group, and there are no colors when some process spans
// two groups, when only one group exists, or when nothing moves or everything may.
std::vector<int> reference_colors(const NamedSharding& src, const NamedSharding& dst) {
  const Mesh& mesh = src.mesh();
  if (!(mesh == dst.mesh())) return {};
  auto dim_of = [](const PartitionSpec& spec, const std::string& axis) -> int {
    for (std::size_t d = 0; d < spec.size(); ++d)
      for (const auto& a : spec[d])
        if (a == axis) return static_cast<int>(d);
    return -1;
  };
  std::vector<int> stable;
  bool moving = false;
  for (int a = 0; a < mesh.ndim(); ++a) {
    const std::string& name = mesh.axis_names()[static_cast<std::size_t>(a)];
    const int ds = dim_of(src.spec(), name), dd = dim_of(dst.spec(), name);
    if ((ds < 0 && dd < 0) ||
        (ds >= 0 && ds == dd && src.spec()[static_cast<std::size_t>(ds)] == dst.spec()[static_cast<std::size_t>(dd)]))
      stable.push_back(a);
    else
      moving = true;
  }
  if (!moving || stable.empty()) return {};
  std::map<int, int> color_of;
  std::set<int> distinct;
  for (int64_t pos = 0; pos < mesh.size(); ++pos) {
    int color = 0;
    for (int a : stable)
      color =
          color * static_cast<int>(mesh.shape()[static_cast<std::size_t>(a)]) + static_cast<int>(mesh.coord(pos, a));
    const int p = mesh.devices()[static_cast<std::size_t>(pos)].process_index;
    if (color_of.count(p) && color_of[p] != color) return {};
    color_of[p] = color;
    distinct.insert(color);
  }
  if (distinct.size() < 2) return {};
  std::vector<int> colors(static_cast<std::size_t>(color_of.rbegin()->first) + 1, -1);
  for (const auto& [p, c] : color_of) colors[static_cast<std::size_t>(p)] = c;
  return colors;
}

struct Layout {
  std::vector<Device> devices;
  int processes = 1;
};

Layout make_layout(int processes, int per_process) {
  return {make_device_table(std::vector<int>(static_cast<std::size_t>(processes), per_process)), processes};
}

// Checks all properties for one (src, dst, shape) over all processes. Returns a description of the first failure.
std::string check_plans(const NamedSharding& src, const NamedSharding& dst, const Shape& shape, int processes) {
  std::vector<ReshardPlan> plans;
  for (int p = 0; p < processes; ++p) plans.emplace_back(src, dst, shape, 8, p);
  // Coverage: count how often each destination element of each destination device is written.
  std::map<int, std::vector<int>> cover;
  for (const auto& [d, box] : dst.devices_indices_map(shape))
    cover[d.id].assign(static_cast<std::size_t>(volume(box)), 0);
  auto add_piece = [&](const PlanPiece& piece) -> std::string {
    const Index sbox = src.index(shape, piece.src);
    const Index dbox = dst.index(shape, piece.dst);
    if (!contains(sbox, piece.box)) return "piece " + to_string(piece.box) + " outside source block " + to_string(sbox);
    if (!contains(dbox, piece.box)) return "piece " + to_string(piece.box) + " outside dest block " + to_string(dbox);
    auto& c = cover[piece.dst.id];
    const Shape dshape = box_shape(dbox);
    const Shape strides = row_major_strides(dshape);
    // Walk the piece's elements.
    std::vector<int64_t> i(shape.size());
    for (std::size_t k = 0; k < shape.size(); ++k) i[k] = piece.box[k].start;
    for (int64_t e = 0; e < piece.elements(); ++e) {
      int64_t off = 0;
      for (std::size_t k = 0; k < shape.size(); ++k) off += (i[k] - dbox[k].start) * strides[k];
      c[static_cast<std::size_t>(off)]++;
      for (std::size_t k = shape.size(); k-- > 0;) {
        if (++i[k] < piece.box[k].stop) break;
        i[k] = piece.box[k].start;
      }
    }
    return "";
  };
  for (int p = 0; p < processes; ++p) {
    const auto& plan = plans[static_cast<std::size_t>(p)];
    for (const auto& piece : plan.local_pieces()) {
      if (piece.src.process_index != p || piece.dst.process_index != p) return "local piece not local";
      if (auto e = add_piece(piece); !e.empty()) return e;
    }
    for (const auto& peer : plan.recvs()) {
      for (const auto& piece : peer.pieces) {
        if (piece.dst.process_index != p || piece.src.process_index != peer.process) return "recv piece misfiled";
        if (auto e = add_piece(piece); !e.empty()) return e;
      }
      // Symmetry: the peer's send list to p is identical, in the same order.
      const auto& theirs = plans[static_cast<std::size_t>(peer.process)].sends();
      auto it = std::find_if(theirs.begin(), theirs.end(), [&](const PeerPieces& s) { return s.process == p; });
      if (it == theirs.end())
        return "process " + std::to_string(peer.process) + " plans no send to " + std::to_string(p);
      if (it->pieces.size() != peer.pieces.size() || it->elements != peer.elements) return "send/recv size mismatch";
      for (std::size_t k = 0; k < peer.pieces.size(); ++k)
        if (it->pieces[k].src != peer.pieces[k].src || it->pieces[k].dst != peer.pieces[k].dst ||
            it->pieces[k].box != peer.pieces[k].box)
          return "send/recv order mismatch";
    }
    for (const auto& peer : plan.sends()) {
      const auto& theirs = plans[static_cast<std::size_t>(peer.process)].recvs();
      if (std::none_of(theirs.begin(), theirs.end(), [&](const PeerPieces& r) { return r.process == p; }))
        return "process " + std::to_string(p) + " sends to " + std::to_string(peer.process) + " which expects nothing";
      if (peer.process == p) return "send to self";
    }
  }
  for (const auto& [id, c] : cover)
    for (int v : c)
      if (v != 1) return "device " + std::to_string(id) + " has an element written " + std::to_string(v) + " times";
  return "";
}

}  // namespace

TEST_CASE("plan: row blocks to column blocks on 4 processes") {
  const auto layout = make_layout(4, 1);
  Mesh mesh(layout.devices, {4}, {"x"});
  NamedSharding rows(mesh, P{"x"}), cols(mesh, P{none, "x"});
  const Shape shape{8, 8};
  REQUIRE(check_plans(rows, cols, shape, 4).empty());
  ReshardPlan plan(rows, cols, shape, 8, 1);
  CHECK(plan.local_pieces().size() == 1);
  CHECK(plan.local_pieces()[0].box == Index{{2, 4}, {2, 4}});
  CHECK(plan.sends().size() == 3);
  CHECK(plan.recvs().size() == 3);
  CHECK(plan.stats().bytes_sent == 3 * 4 * 8);
  CHECK(plan.stats().bytes_kept == 4 * 8);
}

TEST_CASE("plan: replicated to sharded moves nothing between processes") {
  const auto layout = make_layout(2, 4);
  Mesh mesh(layout.devices, {2, 4}, {"a", "b"});
  NamedSharding rep(mesh, P{}), sh(mesh, P{"a", "b"});
  for (int p = 0; p < 2; ++p) {
    ReshardPlan plan(rep, sh, {16, 16}, 4, p);
    CHECK(plan.sends().empty());
    CHECK(plan.recvs().empty());
    CHECK(plan.local_pieces().size() == 4);
    for (const auto& piece : plan.local_pieces()) CHECK(piece.src == piece.dst);  // each device slices its own copy
  }
  REQUIRE(check_plans(sh, rep, {16, 16}, 2).empty());  // and back: an all-gather
}

TEST_CASE("plan: pencil transposes stay inside mesh-axis groups") {
  const auto layout = make_layout(8, 1);
  Mesh mesh(layout.devices, {4, 2}, {"r", "c"});
  NamedSharding x(mesh, P{none, "r", "c"}), y(mesh, P{"r", none, "c"}), z(mesh, P{"r", "c", none});
  const Shape shape{12, 10, 6};
  for (const auto& [a, b] : std::vector<std::pair<NamedSharding, NamedSharding>>{{x, y}, {y, z}, {z, y}, {y, x}}) {
    REQUIRE(check_plans(a, b, shape, 8).empty());
    ReshardPlan plan(a, b, shape, 16, 3);
    CHECK(plan.stats().sub_communicator);
    CHECK(plan.stats().moving_axes.size() == 1);
    for (const auto& peer : plan.sends())
      CHECK(plan.group_colors()[static_cast<std::size_t>(peer.process)] == plan.group_colors()[3]);
  }
  ReshardPlan xy(x, y, shape, 16, 0);
  CHECK(xy.stats().moving_axes == std::vector<std::string>{"r"});
  CHECK(xy.stats().send_peers == 3);  // the other members of its r-group (4 devices along r)
}

TEST_CASE("plan: randomized meshes, specs and shapes, uneven and empty blocks") {
  std::mt19937_64 rng(20261121);
  int cases = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const int processes = 1 + static_cast<int>(rng() % 4);
    const int per = 1 + static_cast<int>(rng() % 4);
    const auto layout = make_layout(processes, per);
    Mesh m1 = random_mesh(rng, layout.devices);
    Mesh m2 = rng() % 3 == 0 ? random_mesh(rng, layout.devices) : m1;
    const std::size_t rank = 1 + rng() % 4;
    Shape shape(rank);
    for (auto& n : shape) n = static_cast<int64_t>(rng() % 9);  // 0..8: uneven, empty, smaller than parts
    NamedSharding a(m1, darray::testing::random_spec(rng, m1.axis_names(), rank, true));
    NamedSharding b(m2, darray::testing::random_spec(rng, m2.axis_names(), rank, true));
    const std::string err = check_plans(a, b, shape, processes);
    INFO("trial " << trial << ": " << a << " -> " << b << " shape " << shape_to_string(shape));
    REQUIRE(err.empty());
    ++cases;
  }
  CHECK(cases == 600);
}

TEST_CASE("plan: errors") {
  const auto layout = make_layout(2, 2);
  Mesh mesh(layout.devices, {4}, {"x"});
  std::vector<Device> three(layout.devices.begin(), layout.devices.begin() + 3);
  Mesh small(three, {3}, {"x"});
  CHECK_THROWS_WITH(ReshardPlan(NamedSharding(mesh, P{"x"}), NamedSharding(small, P{"x"}), {8}, 4, 0),
                    Catch::Contains("different device sets"));
  CHECK_THROWS_WITH(ReshardPlan(NamedSharding(mesh, P{"x", none}), NamedSharding(mesh, P{}), {8}, 4, 0),
                    Catch::Contains("rank 1"));
}

TEST_CASE("plan: construction on a 65,536-device mesh costs O(peers)") {
  // One process per device, as on a large GPU machine: a pencil transpose on a 256 x 256 mesh.
  const auto layout = make_layout(65536, 1);
  Mesh mesh(layout.devices, {256, 256}, {"r", "c"});
  NamedSharding x(mesh, P{none, "r", "c"}), y(mesh, P{"r", none, "c"});
  const auto t0 = std::chrono::steady_clock::now();
  ReshardPlan plan(x, y, {1024, 1024, 1024}, 8, 12345);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  CHECK(plan.stats().send_peers == 255);
  CHECK(plan.stats().recv_peers == 255);
  WARN("plan construction for one process of 65,536: " << ms << " ms");
}

TEST_CASE("plan: mesh-axis group colors match a visit of every device") {
  std::mt19937_64 rng(777);
  int grouped = 0;
  for (int trial = 0; trial < 400; ++trial) {
    // Pencil transposes on 2-d meshes of at least 2 x 2 are the grouped case; random specs rarely are.
    const bool pencils = trial % 2 == 0;
    std::vector<int> counts(pencils ? 4 + 2 * (rng() % 2) : 1 + rng() % 6);
    for (int& c : counts) c = pencils ? 1 + static_cast<int>(trial % 4 == 0) : 1 + static_cast<int>(rng() % 3);
    auto table = make_device_table(counts);
    if (!pencils && rng() % 2)
      table.erase(table.begin(), table.begin() + static_cast<std::ptrdiff_t>(rng() % table.size()));
    auto pencil_mesh = [&]() {
      const auto n = static_cast<int64_t>(table.size());
      std::vector<int64_t> rows;
      for (int64_t k = 2; k <= n / 2; ++k)
        if (n % k == 0) rows.push_back(k);
      const int64_t k = rows[rng() % rows.size()];
      if (rng() % 4 == 0) std::shuffle(table.begin(), table.end(), rng);
      return Mesh(table, {k, n / k}, {"r", "c"});
    };
    const Mesh mesh = pencils ? pencil_mesh() : random_mesh(rng, table);
    const std::size_t rank = pencils ? 3 : 1 + rng() % 3;
    auto spec = [&]() -> PartitionSpec {
      if (!pencils) return darray::testing::random_spec(rng, mesh.axis_names(), rank, true);
      const std::string& r = mesh.axis_names()[0];
      const std::string& c = mesh.axis_names()[1];
      const std::vector<PartitionSpec> pencil{P{none, r, c}, P{r, none, c}, P{r, c, none}, P{c, r, none}};
      return pencil[rng() % pencil.size()];
    };
    NamedSharding a(mesh, spec());
    NamedSharding b(mesh, spec());
    const std::vector<int> expected = reference_colors(a, b);
    INFO("trial " << trial << ": " << a << " -> " << b);
    const int process = mesh.process_indices()[rng() % mesh.process_indices().size()];
    ReshardPlan plan(a, b, Shape(rank, 6), 8, process);
    CHECK(plan.stats().sub_communicator == !expected.empty());
    CHECK(plan.group_colors() == expected);
    grouped += expected.empty() ? 0 : 1;
  }
  CHECK(grouped > 20);  // the grouped path was exercised, not only the world-communicator one
}

TEST_CASE("plan: one process's plan in a 1,048,576-device mesh allocates for its peers only") {
  // One device per process, 1024 x 1024 pencils: 1023 send and 1023 receive peers, one piece each.
  const Mesh mesh(make_device_table(std::vector<int>(1 << 20, 1)), {1024, 1024}, {"r", "c"});
  NamedSharding x(mesh, P{none, "r", "c"}), y(mesh, P{"r", none, "c"});
#if defined(DARRAY_TEST_COUNTS_ALLOCATIONS)
  darray_testing::counted_new_bytes = 0;
  darray_testing::counting_allocations = true;
#endif
  const ReshardPlan plan(x, y, {4096, 4096, 4096}, 8, 12345);
#if defined(DARRAY_TEST_COUNTS_ALLOCATIONS)
  darray_testing::counting_allocations = false;
#endif
  CHECK(plan.stats().send_peers == 1023);
  CHECK(plan.stats().recv_peers == 1023);
  CHECK(plan.stats().sub_communicator);
#if defined(DARRAY_TEST_COUNTS_ALLOCATIONS)
  const std::size_t bytes = darray_testing::counted_new_bytes;
  // Less than one byte per device of the mesh (the per-process color table alone was 4 MiB), and bounded per piece.
  const std::size_t pieces = 1 + 2 * 1023;
  INFO("plan allocated " << bytes << " bytes for " << pieces << " pieces");
  CHECK(bytes < 512 * pieces);
  CHECK(bytes < static_cast<std::size_t>(mesh.size()));
#else
  WARN("SKIP: allocations are not counted in CUDA builds");
#endif
  // The colors a sub-communicator split needs are built when asked for, one per process.
  CHECK(plan.group_colors().size() == static_cast<std::size_t>(mesh.size()));
  CHECK(plan.group_colors()[12345] == 12345 % 1024);
}

TEST_CASE("split_for_messages: parts tile the box in row-major order, each within the byte limit") {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 3000; ++trial) {
    const std::size_t rank = 1 + rng() % 4;
    Index box(rank);
    for (auto& s : box) {
      s.start = static_cast<int64_t>(rng() % 5);
      s.stop = s.start + 1 + static_cast<int64_t>(rng() % 6);
    }
    const std::size_t eb = 1 + rng() % 16;
    const std::size_t max_bytes = eb + rng() % 400;
    int64_t covered = 0;
    std::vector<int64_t> next(rank);  // the row-major position the next part must start at
    bool ok = true;
    Index expect_start(rank);
    std::vector<Index> parts;
    detail::split_for_messages(box, eb, max_bytes, [&](const Index& part) { parts.push_back(part); });
    for (const Index& part : parts) {
      ok = ok && contains(box, part) && static_cast<std::size_t>(volume(part)) * eb <= max_bytes && volume(part) > 0;
      covered += volume(part);
    }
    // Disjoint and complete: count every element once.
    std::vector<int> count(static_cast<std::size_t>(volume(box)), 0);
    const Shape strides = row_major_strides(box_shape(box));
    for (const Index& part : parts) {
      std::vector<int64_t> i(rank);
      for (std::size_t k = 0; k < rank; ++k) i[k] = part[k].start;
      for (int64_t e = 0; e < volume(part); ++e) {
        int64_t off = 0;
        for (std::size_t k = 0; k < rank; ++k) off += (i[k] - box[k].start) * strides[k];
        count[static_cast<std::size_t>(off)]++;
        for (std::size_t k = rank; k-- > 0;) {
          if (++i[k] < part[k].stop) break;
          i[k] = part[k].start;
        }
      }
    }
    for (int c : count) ok = ok && c == 1;
    INFO("trial " << trial << " box " << to_string(box) << " eb " << eb << " max " << max_bytes);
    REQUIRE(ok);
    REQUIRE(covered == volume(box));
  }
  // A box that fits is one message; an empty box none.
  int calls = 0;
  detail::split_for_messages(Index{{0, 4}, {0, 4}}, 8, 128, [&](const Index&) { ++calls; });
  CHECK(calls == 1);
  detail::split_for_messages(Index{{0, 0}, {0, 4}}, 8, 128, [&](const Index&) { ++calls; });
  CHECK(calls == 1);
  // 5 GiB of doubles (5 planes of 1 GiB) under the default limit: one message per plane, none above INT_MAX bytes.
  std::vector<Index> big;
  detail::split_for_messages(Index{{0, 5}, {0, 1024 * 1024 / 8}, {0, 1024}}, 8, 2147483584,
                             [&](const Index& p) { big.push_back(p); });
  CHECK(big.size() == 5);
  for (const auto& p : big) CHECK(static_cast<std::size_t>(volume(p)) * 8 <= 2147483584u);
}
