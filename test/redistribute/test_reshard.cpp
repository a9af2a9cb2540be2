// reshard at 1-4 processes x 1-4 host devices: iota pushed through chains of random shardings (random mesh shapes
// and device orders, none/one/several axes per dim, uneven and empty blocks, ranks 1-4) stays bit-exact on every
// shard, replicas included, on both the direct and the staged path.
#include <algorithm>
#include <catch2/catch.hpp>
#include <optional>
#include <random>

#include "darray/darray.hpp"
#include "darray/redistribute/detail/reshard_moves.hpp"
#include "holds_iota.hpp"
#include "mpi_test.hpp"
#include "random_layouts.hpp"
#include "split_sizes.hpp"

using namespace darray;
using darray::testing::all_ok;
using darray::testing::holds_iota;
using darray::testing::random_spec;

namespace {

template <class T, int N>
void random_chain(std::mt19937_64& rng, int steps) {
  // 0-10 per dim; under a lowered DARRAY_MPI_MAX_MESSAGE_BYTES (test_reshard_split) about four messages per device
  // pair more, so pieces between devices are cut into several chunks.
  const int64_t grow = darray::testing::split_extent(N, sizeof(T), 4.0 * device_count() * device_count());
  Shape shape(N);
  for (auto& n : shape) n = static_cast<int64_t>(rng() % 11) + grow;
  Mesh mesh = darray::testing::random_mesh(rng, devices(), 0, true, 'p');
  NamedSharding first(mesh, random_spec(rng, mesh.axis_names(), N));
  auto a = iota<T, N>(shape, first);
  for (int k = 0; k < steps; ++k) {
    Mesh m = rng() % 2 ? darray::testing::random_mesh(rng, devices(), 0, true, 'p') : mesh;
    NamedSharding next(m, random_spec(rng, m.axis_names(), N));
    INFO("step " << k << ": " << a.sharding() << " -> " << next << " shape " << shape_to_string(shape));
    a = reshard(a, next);
    REQUIRE(all_ok(holds_iota(a)));
  }
}

}  // namespace

TEST_CASE("reshard: random chains, direct path") {
  std::mt19937_64 rng(7);  // same seed everywhere: every process draws the same shardings
  for (int trial = 0; trial < 12; ++trial) {
    random_chain<double, 1>(rng, 4);
    random_chain<float, 2>(rng, 4);
    random_chain<int32_t, 3>(rng, 3);
    random_chain<int64_t, 4>(rng, 3);
  }
}

TEST_CASE("reshard: random chains, staged path (the GPU path's packing and transport)") {
  std::mt19937_64 rng(11);
  const darray::detail::StageAsIfOnDevice staged;
  for (int trial = 0; trial < 8; ++trial) {
    random_chain<double, 2>(rng, 3);
    random_chain<Kokkos::complex<double>, 3>(rng, 3);
  }
}

TEST_CASE("reshard: pencil transposes x -> y -> z -> y -> x on a 2-D mesh") {
  const int n = device_count();
  int64_t r = 1;
  for (int64_t k = 1; k * k <= n; ++k)
    if (n % k == 0) r = k;
  Mesh mesh = make_mesh({n / r, r}, {"r", "c"});
  NamedSharding x(mesh, P{none, "r", "c"}), y(mesh, P{"r", none, "c"}), z(mesh, P{"r", "c", none});
  const Shape shape{9, 10, 7};  // uneven on purpose
  auto a = iota<Kokkos::complex<float>, 3>(shape, x);
  for (const auto* s : {&y, &z, &y, &x}) {
    a = reshard(a, *s);
    REQUIRE(all_ok(holds_iota(a)));
  }
}

TEST_CASE("reshard: sharded <-> replicated, and the plan cache is reused") {
  Mesh mesh = make_mesh({device_count()}, {"x"});
  NamedSharding rows(mesh, P{"x"}), rep(mesh, P{});
  auto a = iota<double, 2>({13, 5}, rows);
  const auto misses = detail::reshard_plan_cache().misses();
  for (int k = 0; k < 3; ++k) {
    auto full = reshard(a, rep);
    REQUIRE(all_ok(holds_iota(full)));
    a = reshard(full, rows);
    REQUIRE(all_ok(holds_iota(a)));
  }
  REQUIRE(all_ok(detail::reshard_plan_cache().misses() - misses <= 2));
}

TEST_CASE("reshard: errors name what differs") {
  Mesh mesh = make_mesh({device_count()}, {"x"});
  auto a = iota<double, 2>({8, 8}, NamedSharding(mesh, P{"x"}));
  if (device_count() > 1) {
    std::vector<Device> fewer = devices();
    fewer.pop_back();
    Mesh small(fewer, {static_cast<int64_t>(fewer.size())}, {"x"});
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, reshard(a, NamedSharding(small, P{"x"})), "different device sets");
  }
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, reshard(a, NamedSharding(mesh, P{none, none, "x"})), "rank 2");
  ReshardPlan other(NamedSharding(mesh, P{"x"}), NamedSharding(mesh, P{}), {8, 9}, 8, process_index());
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, execute(other, a), "shape 8x8", "8x9");
  ReshardPlan floats(NamedSharding(mesh, P{"x"}), NamedSharding(mesh, P{}), {8, 8}, 4, process_index());
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, execute(floats, a), "float64", "4-byte");
  // A plan made offline for another process is refused, in both forms, before anything is allocated or moved.
  const int someone_else = (process_index() + 1) % std::max(process_count(), 2);
  ReshardPlan foreign(NamedSharding(mesh, P{"x"}), NamedSharding(mesh, P{}), {8, 8}, 8, someone_else);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, execute(foreign, a), "plan made for process");
  auto b = reshard(a, NamedSharding(mesh, P{}));
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, execute(foreign, a, b), "plan made for process");
}

TEST_CASE("reshard: execute into an existing output reuses its buffers") {
  Mesh mesh = make_mesh({device_count()}, {"x"});
  NamedSharding rows(mesh, P{"x"}), cols(mesh, P{none, "x"});
  auto a = iota<double, 2>({11, 7}, rows);
  auto plan = reshard_plan<double>(rows, cols, a.shape());
  auto out = zeros<double, 2>({11, 7}, cols);
  std::vector<const double*> before;
  for (const auto& s : out.addressable_shards()) before.push_back(s.data.data());
  execute(*plan, a, out);
  bool same = true;
  for (std::size_t i = 0; i < before.size(); ++i) same = same && out.addressable_shards()[i].data.data() == before[i];
  REQUIRE(all_ok(same && holds_iota(out)));
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, execute(*plan, a, a), "output array", "expected shape 11x7");
}

TEST_CASE("reshard: a local phase above the streaming-store threshold stays bit-exact") {
  // Row blocks per process, column blocks per device -> row blocks per device: every piece stays in its process, so
  // each process copies more than streaming_min_total_bytes locally (with non-temporal stores on x86-64), in runs
  // of cols / local devices elements at odd offsets.
  const int procs = process_count();
  const int64_t local = local_device_count();
  Mesh mesh = make_mesh({procs, local}, {"p", "d"});
  const int64_t cols = 2053;
  // Rows divisible by the device count, so both shardings give every process the same rows; columns uneven.
  const int64_t rows_per_device =
      static_cast<int64_t>(detail::streaming_min_total_bytes / (sizeof(double) * static_cast<std::size_t>(cols))) /
          local +
      1;
  const Shape shape{procs * local * rows_per_device, cols};
  auto a = iota<double, 2>(shape, NamedSharding(mesh, P{"p", "d"}));
  const NamedSharding dst(mesh, P{axes("p", "d"), none});
  auto plan = reshard_plan<double>(a.sharding(), dst, shape);
  std::size_t moved = 0;
  for (const auto& peer : plan->sends()) moved += static_cast<std::size_t>(peer.elements);
  int64_t kept = 0;
  for (const auto& piece : plan->local_pieces()) kept += piece.elements();
  REQUIRE(all_ok(moved == 0 && static_cast<std::size_t>(kept) * sizeof(double) >= detail::streaming_min_total_bytes));
  auto b = reshard(a, dst);
  REQUIRE(all_ok(holds_iota(b)));
  auto back = reshard(b, a.sharding());
  REQUIRE(all_ok(holds_iota(back)));
}

TEST_CASE("reshard: a streaming local phase copies a block's pieces row by row across them, bit-exact") {
  // Row blocks per device -> the same rows per process, column blocks per device: every piece stays in its process
  // and each row block sends one piece of one geometry to each local device (runs of 257 elements, at odd offsets),
  // so the engine copies each block's pieces as one group, row by row (MoveEngine::group_rows).
  const int procs = process_count();
  const int64_t local = local_device_count();
  Mesh mesh = make_mesh({procs, local}, {"p", "d"});
  const int64_t width = 257, cols = local * width;
  const int64_t rows_per_device =
      static_cast<int64_t>(detail::streaming_min_total_bytes / (sizeof(double) * static_cast<std::size_t>(cols))) /
          local +
      1;
  const Shape shape{procs * local * rows_per_device, cols};
  auto a = iota<double, 2>(shape, NamedSharding(mesh, P{axes("p", "d"), none}));
  const NamedSharding dst(mesh, P{"p", "d"});
  auto plan = reshard_plan<double>(a.sharding(), dst, shape);
  auto b = zeros<double, 2>(shape, dst);
  execute(*plan, a, b);
  REQUIRE(all_ok(holds_iota(b)));
  REQUIRE(all_ok(detail::reshard_engine(*plan).engine.row_groups() == static_cast<std::size_t>(local > 1 ? local : 0)));
  // Again into the same output, over what the first run wrote.
  execute(*plan, a, b);
  REQUIRE(all_ok(holds_iota(b)));
}

// A kept output that shares blocks with the input: rows over the mesh's devices to rows over the same devices in
// reverse order (blocks of one shape, every block moves), the output made of the input's own views. The result is
// the input moved as it was, as the allocating form returns it.
TEST_CASE("reshard: execute into an output that shares blocks with the input moves the input as it was") {
  std::vector<Device> reversed = devices();
  std::reverse(reversed.begin(), reversed.end());
  const NamedSharding rows(make_mesh({device_count()}, {"x"}), P{"x"});
  const NamedSharding back(Mesh(reversed, {device_count()}, {"x"}), P{"x"});
  const Shape shape{3 * device_count(), 5};
  for (int staged = 0; staged < 2; ++staged) {
    CAPTURE(staged);
    std::optional<detail::StageAsIfOnDevice> hook;
    if (staged == 1) hook.emplace();
    auto a = iota<double, 2, Kokkos::HostSpace>(shape, rows);
    const std::vector<double> want = process_allgather(reshard(a, back));
    std::vector<detail::ShardView<double, 2, Kokkos::HostSpace>> views;
    for (const auto& s : a.addressable_shards()) views.push_back(s.data);
    auto out = make_array_from_single_device_arrays<double, 2, Kokkos::HostSpace>(shape, back, views);
    execute(*reshard_plan<double>(rows, back, shape), a, out);
    REQUIRE(all_ok(process_allgather(out) == want));
  }
}
