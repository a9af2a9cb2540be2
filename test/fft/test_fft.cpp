// Distributed 3-D FFTs against serial FFTW on the gathered array, at 1-4 processes x 1-4 host devices: random
// inputs on slab and pencil meshes (every 2-D factorisation of the device count), uneven shapes with empty blocks,
// replicated and multi-axis specs, both output layouts, double and float, c2c and r2c/c2r, every normalisation.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "darray/darray.hpp"
#include "darray/fft/detail/fftw.hpp"
#include "fft_test_util.hpp"
#include "mpi_test.hpp"

using namespace darray;
using darray::testing::all_ok;
using fft_test::relative_error;
using fft_test::Serial;

namespace {

using C = Kokkos::complex<double>;
using Cf = Kokkos::complex<float>;

// The specs a mesh is tested with: slabs over each dim on a 1-D mesh; pencils in every orientation, an axis
// pair on one dim, and a replicated axis on a 2-D mesh.
std::vector<PartitionSpec> specs_for(const Mesh& mesh, bool real) {
  if (mesh.ndim() == 1) {
    if (real) return {P("x"), P(none, "x")};
    return {P("x"), P(none, "x"), P(none, none, "x")};
  }
  if (real) return {P("r", "c", none), P("c", "r"), P(axes("r", "c")), P(none, "r")};
  return {P("r", "c", none), P(none, "r", "c"), P("r", none, "c"), P("c", "r"), P(axes("c", "r")), P(none, none, "r")};
}

const std::vector<Shape> shapes = {{6, 5, 4}, {3, 7, 2}};

template <class R>
void check_c2c(double tolerance) {
  using CT = Kokkos::complex<R>;
  uint64_t seed = 1;
  for (const Mesh& mesh : fft_test::test_meshes())
    for (const PartitionSpec& spec : specs_for(mesh, false))
      for (const Shape& shape : shapes)
        for (auto layout : {fft::OutputLayout::same, fft::OutputLayout::transposed}) {
          const NamedSharding sharding(mesh, spec);
          fft::Options options;
          options.output = layout;
          const fft::Plan<R> plan(shape, sharding, options);
          INFO(sharding << " shape " << shape_to_string(shape) << " layout " << layout);
          const auto x = fft_test::random_array<CT>(shape, sharding, seed++);
          const auto y = plan.forward(x);
          REQUIRE(all_ok(y.sharding() == plan.output_sharding() && y.shape() == shape));
          const auto gx = process_allgather(x);
          const auto expect = Serial<R>::c2c(gx, shape, FFTW_FORWARD);
          const double err = relative_error(process_allgather(y), expect);
          INFO("forward error " << err);
          REQUIRE(all_ok(err < tolerance));
          const auto z = plan.backward(y);
          REQUIRE(all_ok(z.sharding() == sharding));
          const double back = relative_error(process_allgather(z), gx);
          INFO("round-trip error " << back);
          REQUIRE(all_ok(back < tolerance));
          // The transforms never write their argument.
          REQUIRE(all_ok(relative_error(process_allgather(x), gx) == 0.0));
          REQUIRE(all_ok(relative_error(process_allgather(y), expect) == err));
          // Slabs transpose once, pencils twice, and the same layout costs one more.
          const int expected_transposes = static_cast<int>(plan.stages().size()) - 1 +
                                          (layout == fft::OutputLayout::same && plan.stages().size() > 1 ? 1 : 0);
          REQUIRE(all_ok(plan.transposes() == expected_transposes));
        }
}

TEST_CASE("c2c double: forward equals serial FFTW, backward(forward(x)) == x to 1e-12", "[fft]") {
  check_c2c<double>(1e-12);
}

TEST_CASE("c2c float: forward equals serial fftwf, round trip to 1e-5", "[fft]") { check_c2c<float>(1e-5); }

template <class R>
void check_real(double tolerance) {
  uint64_t seed = 100;
  for (const Mesh& mesh : fft_test::test_meshes())
    for (const PartitionSpec& spec : specs_for(mesh, true))
      for (const Shape& shape : {Shape{5, 4, 6}, Shape{4, 3, 7}})
        for (auto layout : {fft::OutputLayout::same, fft::OutputLayout::transposed}) {
          const NamedSharding sharding(mesh, spec);
          fft::Options options;
          options.output = layout;
          const fft::RealPlan<R> plan(shape, sharding, options);
          INFO(sharding << " shape " << shape_to_string(shape) << " layout " << layout);
          const Shape half{shape[0], shape[1], shape[2] / 2 + 1};
          REQUIRE(all_ok(plan.complex_shape() == half));
          const auto x = fft_test::random_array<R>(shape, sharding, seed++);
          const auto y = plan.forward(x);
          REQUIRE(all_ok(y.shape() == half && y.sharding() == plan.output_sharding()));
          const auto gx = process_allgather(x);
          const auto gy = process_allgather(y);
          const double err = relative_error(gy, Serial<R>::r2c(gx, shape));
          INFO("forward error " << err);
          REQUIRE(all_ok(err < tolerance));
          const auto z = plan.backward(y);
          REQUIRE(all_ok(z.shape() == shape && z.sharding() == sharding));
          const double back = relative_error(process_allgather(z), gx);
          INFO("round-trip error " << back);
          REQUIRE(all_ok(back < tolerance));
          REQUIRE(all_ok(relative_error(process_allgather(y), gy) == 0.0));  // c2r did not eat the caller's input
        }
}

TEST_CASE("r2c/c2r double: half spectrum equals serial FFTW, round trip to 1e-12", "[fft]") {
  check_real<double>(1e-12);
}

TEST_CASE("r2c/c2r float: round trip to 1e-5", "[fft]") { check_real<float>(1e-5); }

TEST_CASE("normalisations scale forward and backward as documented", "[fft]") {
  const Shape shape{4, 6, 5};
  const double n = 4 * 6 * 5;
  const NamedSharding sharding = fft::auto_sharding(shape);
  const auto x = fft_test::random_array<C>(shape, sharding, 7);
  const auto gx = process_allgather(x);
  const auto raw = Serial<double>::c2c(gx, shape, FFTW_FORWARD);
  struct Case {
    fft::Normalization norm;
    double forward, round_trip;
  };
  for (const Case& c :
       {Case{fft::Normalization::backward, 1.0, 1.0}, Case{fft::Normalization::ortho, 1 / std::sqrt(n), 1.0},
        Case{fft::Normalization::forward, 1 / n, 1.0}, Case{fft::Normalization::none, 1.0, n}}) {
    INFO("normalization " << c.norm);
    fft::Options options;
    options.normalization = c.norm;
    const fft::Plan<double> plan(shape, sharding, options);
    const auto y = plan.forward(x);
    REQUIRE(all_ok(relative_error(process_allgather(y), fft_test::scaled(raw, c.forward)) < 1e-12));
    REQUIRE(all_ok(relative_error(process_allgather(plan.backward(y)), fft_test::scaled(gx, c.round_trip)) < 1e-12));
    // The backward direction alone: sign +1 and the backward factor (raw forward then raw backward multiply by n).
    const double backward_factor = c.round_trip / (c.forward * n);
    const auto expect = fft_test::scaled(Serial<double>::c2c(gx, shape, FFTW_BACKWARD), backward_factor);
    const auto yb = fft_test::random_array<C>(shape, plan.output_sharding(), 7);  // the values of x
    REQUIRE(all_ok(relative_error(process_allgather(plan.backward(yb)), expect) < 1e-12));
    // ortho is unitary: Parseval's sum |x|^2 == sum |X|^2.
    if (c.norm == fft::Normalization::ortho) {
      double ex = 0, ey = 0;
      for (const C& v : gx) ex += Kokkos::real(v * Kokkos::conj(v));
      for (const C& v : process_allgather(y)) ey += Kokkos::real(v * Kokkos::conj(v));
      REQUIRE(all_ok(std::abs(ex - ey) < 1e-12 * ex));
    }
  }
  fft::Options ortho_same;
  ortho_same.normalization = fft::Normalization::ortho;
  const fft::RealPlan<double> rplan(shape, sharding, ortho_same);
  const auto xr = fft_test::random_array<double>(shape, sharding, 8);
  const auto gxr = process_allgather(xr);
  REQUIRE(all_ok(relative_error(process_allgather(rplan.forward(xr)),
                                fft_test::scaled(Serial<double>::r2c(gxr, shape), 1 / std::sqrt(n))) < 1e-12));
}

TEST_CASE("fftn / ifftn / rfftn / irfftn reuse cached plans and keep the sharding", "[fft]") {
  const Shape shape{5, 6, 4};
  const NamedSharding sharding = fft::auto_sharding(shape);
  const auto x = fft_test::random_array<C>(shape, sharding, 11);
  const auto gx = process_allgather(x);
  const auto y = fft::fftn(x);
  REQUIRE(all_ok(y.sharding() == sharding));
  REQUIRE(all_ok(relative_error(process_allgather(y), Serial<double>::c2c(gx, shape, FFTW_FORWARD)) < 1e-12));
  REQUIRE(all_ok(relative_error(process_allgather(fft::ifftn(y)), gx) < 1e-12));
  const auto yo = fft::fftn(x, fft::Normalization::ortho);
  REQUIRE(all_ok(relative_error(process_allgather(yo), process_allgather(y)) > 0.1));  // a distinct cached plan

  const auto xr = fft_test::random_array<float>(shape, sharding, 12);
  const auto gxr = process_allgather(xr);
  const auto yr = fft::rfftn(xr);
  REQUIRE(all_ok(yr.shape() == Shape{5, 6, 3}));
  REQUIRE(all_ok(relative_error(process_allgather(yr), Serial<float>::r2c(gxr, shape)) < 1e-5));
  REQUIRE(all_ok(relative_error(process_allgather(fft::irfftn(yr)), gxr) < 1e-5));
  // An odd last dim needs the real shape: (5, 6, 5) also halves to 3.
  const Shape odd{5, 6, 5};
  const auto xo = fft_test::random_array<double>(odd, fft::auto_sharding(odd), 13);
  REQUIRE(all_ok(relative_error(process_allgather(fft::irfftn(fft::rfftn(xo), odd)), process_allgather(xo)) < 1e-12));
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, fft::irfftn(yr, Shape{5, 6, 7}), "does not match the half spectrum");
}

TEST_CASE("auto_sharding: slab while every device gets a plane, pencil beyond", "[fft]") {
  const int64_t n = device_count();
  const NamedSharding slab = fft::auto_sharding({n, n, 3});
  REQUIRE(all_ok(slab.mesh().ndim() == 1 && slab.spec() == P("x", none, none)));
  REQUIRE(all_ok(fft::choose_decomposition({n, n - 1 > 0 ? n - 1 : 1, 3}, n) ==
                 (n == 1 ? fft::Decomposition::slab : fft::Decomposition::pencil)));
  const NamedSharding pencil = fft::auto_sharding({n, n, 3}, fft::Decomposition::pencil);
  const auto grid = fft::pencil_grid(n);
  REQUIRE(all_ok(pencil.mesh().shape() == Shape{grid.first, grid.second} && pencil.spec() == P("r", "c", none)));
  REQUIRE(fft::pencil_grid(12) == std::pair<int64_t, int64_t>{3, 4});
  REQUIRE(fft::pencil_grid(7) == std::pair<int64_t, int64_t>{1, 7});
  REQUIRE(fft::pencil_grid(16) == std::pair<int64_t, int64_t>{4, 4});
  const fft::Plan<double> plan({n, n, 3}, slab);
  REQUIRE(all_ok(plan.transposes() == (n > 1 ? 2 : 0)));
  // The local transforms run where the array lives: FFTW on host memory, cuFFT on device memory.
  const bool host = darray::detail::host_accessible_v<DefaultMemorySpace>;
  REQUIRE(all_ok(std::string(plan.backend()) == (host ? "fftw" : "cufft")));
}

TEST_CASE("stage sequences: slab, pencils, replicated axes (offline)", "[fft]") {
  const Mesh line(make_device_table({4}), {4}, {"x"});
  const Mesh grid(make_device_table({4, 4}), {2, 4}, {"r", "c"});
  auto describe = [](const std::vector<fft::Stage>& stages) {
    std::ostringstream os;
    for (std::size_t s = 0; s < stages.size(); ++s) os << (s ? " -> " : "") << stages[s];
    return os.str();
  };
  CHECK(describe(fft::plan_stages(P("x"), line, false, "t")) ==
        "PartitionSpec('x', None, None) {1,2} -> PartitionSpec(None, 'x', None) {0}");
  CHECK(describe(fft::plan_stages(P(none, none, "x"), line, false, "t")) ==
        "PartitionSpec(None, None, 'x') {0,1} -> PartitionSpec('x', None, None) {2}");
  CHECK(describe(fft::plan_stages(P("r", "c", none), grid, true, "t")) ==
        "PartitionSpec('r', 'c', None) {2} -> PartitionSpec('r', None, 'c') {1} -> PartitionSpec(None, 'r', 'c') {0}");
  CHECK(describe(fft::plan_stages(P(none, "r", "c"), grid, false, "t")) ==
        "PartitionSpec(None, 'r', 'c') {0} -> PartitionSpec('c', 'r', None) {2} -> PartitionSpec('c', None, 'r') {1}");
  CHECK(describe(fft::plan_stages(P("r"), grid, false, "t")) ==
        "PartitionSpec('r', None, None) {1,2} -> PartitionSpec(None, 'r', None) {0}");
  CHECK(describe(fft::plan_stages(P(axes("r", "c")), grid, false, "t")) ==
        "PartitionSpec(('r', 'c'), None, None) {1,2} -> PartitionSpec(None, ('r', 'c'), None) {0}");
  // A size-1 axis splits nothing: the dim counts as whole.
  const Mesh flat(make_device_table({4}), {1, 4}, {"r", "c"});
  CHECK(describe(fft::plan_stages(P("r", "c"), flat, false, "t")) ==
        "PartitionSpec('r', 'c', None) {0,2} -> PartitionSpec(('r', 'c'), None, None) {1}");
  const Mesh cube(make_device_table({8}), {2, 2, 2}, {"a", "b", "c"});
  CHECK_THROWS_WITH(fft::plan_stages(P("a", "b", "c"), cube, false, "fft::Plan"),
                    Catch::Contains("splits all three dims") && Catch::Contains("at least one whole dim"));
  CHECK_THROWS_WITH(fft::plan_stages(P(none, "r", "c"), grid, true, "fft::RealPlan"),
                    Catch::Contains("splits dim 2") && Catch::Contains("real-to-complex"));
  CHECK_THROWS_WITH(fft::plan_stages(P("q"), grid, false, "fft::Plan"), Catch::Contains("mesh axis \"q\" not found"));
}

TEST_CASE("bad plans and inputs throw the same error on every process", "[fft]") {
  const Shape shape{4, 4, 4};
  const NamedSharding sharding = fft::auto_sharding(shape);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, fft::Plan<double>(Shape{4, 0, 4}, sharding), "extent 0 in dim 1");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, fft::Plan<double>(Shape{4, 4}, sharding), "expected a 3-D shape");
  const fft::Plan<double> plan(shape, sharding);
  const auto wrong_shape = fft_test::random_array<C>({4, 4, 5}, sharding, 1);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, plan.forward(wrong_shape), "input array of shape 4x4x5",
                            "this plan's input has shape 4x4x4");
  const NamedSharding other(sharding.mesh(), P(none, none, sharding.mesh().axis_names()[0]));
  const auto wrong_sharding = fft_test::random_array<C>(shape, other, 1);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, plan.forward(wrong_sharding), "reshard it first");
  const auto x = fft_test::random_array<C>(shape, sharding, 1);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, plan.forward(x, wrong_sharding), "output array sharded as");
}

TEST_CASE("forward(in, out) / backward(in, out) into kept arrays, in place too", "[fft]") {
  const Shape shape{7, 6, 5};
  for (const Mesh& mesh : fft_test::test_meshes())
    for (auto layout : {fft::OutputLayout::same, fft::OutputLayout::transposed}) {
      const NamedSharding sharding(mesh, mesh.ndim() == 1 ? P("x") : P("r", "c"));
      INFO(sharding << " layout " << layout);
      fft::Options options;
      options.output = layout;
      const fft::Plan<double> plan(shape, sharding, options);
      const auto x = fft_test::random_array<C>(shape, sharding, 31);
      const auto gx = process_allgather(x);
      const auto expect = Serial<double>::c2c(gx, shape, FFTW_FORWARD);
      auto y = plan.allocate_output();
      auto z = plan.allocate_input();
      for (int repeat = 0; repeat < 2; ++repeat) {  // the plan's buffers are reused
        plan.forward(x, y);
        plan.backward(y, z);
        REQUIRE(all_ok(relative_error(process_allgather(y), expect) < 1e-12));
        REQUIRE(all_ok(relative_error(process_allgather(z), gx) < 1e-12));
      }
      if (layout == fft::OutputLayout::same) {  // input and output share a sharding: one array can be both
        plan.forward(z, z);
        REQUIRE(all_ok(relative_error(process_allgather(z), expect) < 1e-12));
        plan.backward(z, z);
        REQUIRE(all_ok(relative_error(process_allgather(z), gx) < 1e-12));
      }
      const fft::RealPlan<double> rplan(shape, sharding, options);
      const auto xr = fft_test::random_array<double>(shape, sharding, 32);
      auto yr = rplan.allocate_output();
      auto zr = rplan.allocate_input();
      rplan.forward(xr, yr);
      rplan.backward(yr, zr);
      REQUIRE(all_ok(relative_error(process_allgather(yr), Serial<double>::r2c(process_allgather(xr), shape)) < 1e-12));
      REQUIRE(all_ok(relative_error(process_allgather(zr), process_allgather(xr)) < 1e-12));
    }
}

// r2c of a random array against serial FFTW, and c2r back to it, element type R, within tol.
template <class R>
void check_real_round_trip(const Shape& shape, const NamedSharding& sharding, const fft::Options& options,
                           std::uint64_t seed, double tol) {
  INFO(sharding << " shape " << shape_to_string(shape) << " real type " << dtype_name<R>() << " planner "
                << options.planner);
  const fft::RealPlan<R> plan(shape, sharding, options);
  const auto x = fft_test::random_array<R>(shape, sharding, seed);
  const auto gx = process_allgather(x);
  const auto y = plan.forward(x);
  REQUIRE(all_ok(relative_error(process_allgather(y), Serial<R>::r2c(gx, shape)) < tol));
  REQUIRE(all_ok(relative_error(process_allgather(plan.backward(y)), gx) < tol));
}

// c2c double on dim-0 slabs over every device, against serial FFTW, and its round trip.
void check_c2c_slabs(const Shape& shape, std::uint64_t seed) {
  const NamedSharding sharding(make_mesh({device_count()}, {"x"}), P("x"));
  INFO(sharding << " shape " << shape_to_string(shape));
  const fft::Plan<double> plan(shape, sharding);
  const auto x = fft_test::random_array<C>(shape, sharding, seed);
  const auto gx = process_allgather(x);
  const auto y = plan.forward(x);
  REQUIRE(all_ok(relative_error(process_allgather(y), Serial<double>::c2c(gx, shape, FFTW_FORWARD)) < 1e-12));
  REQUIRE(all_ok(relative_error(process_allgather(plan.backward(y)), gx) < 1e-12));
}

TEST_CASE("strided dims beyond the cache go through tiled passes, partial last tiles included", "[fft]") {
  // FFTW plans a strided dim itself while its column group (the dim times the dims inside it) spans at most 32 KiB
  // where the columns' pitch is a multiple of 512 B, else a quarter of L2 (128 to 256 KiB); up to 4 MiB the dim is
  // tiled group by group after FFTW's plan of the dims inside; beyond, over the whole block. Column tiles (n > 128) of
  // 16 columns: 180 x 230 complex128 groups (662 KB, by group), 230 = 14 x 16 + 6; 256 x 100 (410 KB, by group), the
  // columns 4 KiB + 64 B apart in the tile, 100 = 6 x 16 + 4. Interleaved tiles (n <= 128) of 32 KiB: 100 x 331 (530
  // KB, by group), 20 columns, 331 = 16 x 20 + 11; 90 x 200 (288 KB, by group), 22 columns, 200 = 9 x 22 + 2; r2c half
  // spectra 90 x 201 (289 KB, by group) and 90 x 101 (145 KB: by group where the limit is 128 KiB, with 1 MiB of L2 or
  // less). Whole-block passes: 1100 x 260 (4.6 MB) in three-column tiles, 260 = 86 x 3 + 2. 64 x 64 (64 KiB, pitch 1
  // KiB: by group at one device, a whole-block pass at four). complex64: 256 x 260 (532 KB, by group), 8 columns.
  for (const Shape& shape : {Shape{3, 180, 230}, Shape{180, 2, 230}, Shape{3, 256, 100}, Shape{4, 100, 331},
                             Shape{4, 90, 200}, Shape{2, 1100, 260}, Shape{4, 64, 64}})
    check_c2c_slabs(shape, 41);
  const NamedSharding slabs(make_mesh({device_count()}, {"x"}), P("x"));
  check_real_round_trip<double>(Shape{4, 90, 200}, slabs, fft::Options{}, 43, 1e-12);
  check_real_round_trip<double>(Shape{4, 90, 400}, slabs, fft::Options{}, 44, 1e-12);
  check_real_round_trip<float>(Shape{3, 256, 260}, slabs, fft::Options{}, 42, 1e-5);
}

TEST_CASE("normalisations are applied by stage 0's local FFTs as they write, on every path", "[fft]") {
  // Stage 0's local FFTs scale what they write (FftwPlan::execute), the first step of a forward, the last of a
  // backward: at one device 40 x 50 x 36 transforms dim 0 in a whole-block pass of interleaved tiles (scaled as each
  // tile is scattered) after FFTW's plan plane by plane, 180 x 2 x 230 dim 0 in column tiles (n > 128), 4 x 6 x 5 and
  // 3 x 5 x 7 in one FFTW plan (the group scaled after it); r2c and c2r of 40 x 50 x 32 go through half-length rows
  // plane by plane. More devices give thinner slabs and pencils, whose forwards go on through transposes and more
  // stages after the scaled one.
  struct Factors {
    fft::Normalization norm;
    double forward, backward;  // of a shape of n elements: n^-forward, n^-backward
  };
  for (const Shape& shape :
       {Shape{40, 50, 36}, Shape{180, 2, 230}, Shape{4, 6, 5}, Shape{3, 5, 7}, Shape{40, 50, 32}}) {
    const double n = static_cast<double>(volume(shape));
    const NamedSharding slabs(make_mesh({device_count()}, {"x"}), P("x"));
    for (const NamedSharding& sharding : {slabs, fft::auto_sharding(shape, fft::Decomposition::pencil)})
      for (auto layout : {fft::OutputLayout::same, fft::OutputLayout::transposed})
        for (const Factors& f :
             {Factors{fft::Normalization::backward, 0, 1}, Factors{fft::Normalization::ortho, 0.5, 0.5},
              Factors{fft::Normalization::forward, 1, 0}}) {
          INFO(shape_to_string(shape) << " " << sharding << " layout " << layout << " normalization " << f.norm);
          fft::Options options;
          options.output = layout;
          options.normalization = f.norm;
          const double forward = std::pow(n, -f.forward), backward = std::pow(n, -f.backward);
          const fft::Plan<double> plan(shape, sharding, options);
          const auto x = fft_test::random_array<C>(shape, sharding, 81);
          const auto gx = process_allgather(x);
          const auto y = plan.forward(x);
          REQUIRE(
              all_ok(relative_error(process_allgather(y),
                                    fft_test::scaled(Serial<double>::c2c(gx, shape, FFTW_FORWARD), forward)) < 1e-12));
          const auto yb = fft_test::random_array<C>(shape, plan.output_sharding(), 82);
          auto z = plan.allocate_input();
          plan.backward(yb, z);
          REQUIRE(
              all_ok(relative_error(process_allgather(z),
                                    fft_test::scaled(Serial<double>::c2c(process_allgather(yb), shape, FFTW_BACKWARD),
                                                     backward)) < 1e-12));
          // Real transforms: r2c against serial FFTW, c2r by the round trip (c2r of an r2c result is its input).
          const fft::RealPlan<double> rplan(shape, sharding, options);
          const auto xr = fft_test::random_array<double>(shape, sharding, 83);
          const auto gxr = process_allgather(xr);
          const auto yr = rplan.forward(xr);
          REQUIRE(all_ok(relative_error(process_allgather(yr),
                                        fft_test::scaled(Serial<double>::r2c(gxr, shape), forward)) < 1e-12));
          REQUIRE(all_ok(relative_error(process_allgather(rplan.backward(yr)), gxr) < 1e-12));
        }
  }
}

TEST_CASE("whole-block tiled passes over 16 MiB and more prefetch their rows: the same transform", "[fft]") {
  // At one device: 1024 x 2 x 1024 complex128 (32 MiB) transforms dim 0 in column tiles over the whole block, 128 x
  // 8 x 2048 (32 MiB) in interleaved tiles; at two devices the dim-0 stages hold 16 MiB. Smaller blocks and fused
  // groups take the same loops without prefetching (the cases above).
  for (const Shape& shape : {Shape{1024, 2, 1024}, Shape{128, 8, 2048}}) check_c2c_slabs(shape, 71);
}

// Whether a plan's second stage runs fused with its transposes (fft/detail/fused.hpp): a slab plan of a job whose
// processes reach each other by single copy, with no replicated blocks (in either output layout).
template <class PlanT>
bool fused(const PlanT& plan) {
  return plan.describe().find("fused") != std::string::npos;
}

TEST_CASE("a slab's second stage fused with its transposes: tiles of one dim and of two, partial tiles", "[fft]") {
  // Tiles of about 512 KiB: 40 x 13 x 300 complex128 takes dim 1 two at a time (40 x 300 x 16 B = 192 KB a plane;
  // 13 and 7 = 3 x 2 + 1 leave a partial tile), 40 x 12 x 900 splits dim 2 too (a plane of 576 KB: 819 + 81), its
  // r2c half spectrum (451) one plane at a time, and complex64 halves every figure. In the tile buffer, the points of
  // a strided FFT that would meet too few L1 sets (fft::detail::column_thrashes) lie one cache line further apart
  // (FusedStage::lay_out): 72 x 4 x 64 and 32 x 4 x 64 under P("x") (complex128 and complex64: their dim-0 columns
  // 2 or 1 KiB times the device's share of dim 1 apart), dims 1-2 then one run of columns, and the half spectrum of
  // 72 x 4 x 126 (64 complex128, 2 KiB apart where a device holds two of dim 1's). With the output transposed the
  // forward's tiles are gathered into the output's blocks and transformed there, the backward's read from its
  // input's blocks (which it must leave as they were). The transposed layout's tiles stay in their blocks (the limit
  // raised over every process's blocks, as for blocks that fit in cache) or go through the tile buffer (the limit
  // lowered to 0, as for larger blocks; and whatever the limit, where the columns in some block would thrash L1). Work
  // buffer 0 (the transposed layout's stage 0, the c2r's input) is mapped by every process, or not (then the peers'
  // blocks go by single copies too).
  const bool reaches = process_count() > 1 && darray::detail::single_copy_reaches_all();
  struct Restore {
    int64_t limit = fft::detail::fused_in_block_max_bytes();
    ~Restore() {
      fft::detail::fused_in_block_max_bytes() = limit;
      darray::detail::node_shared_buffers_enabled() = true;
    }
  } restore;
  struct Way {
    fft::OutputLayout layout;
    int64_t limit;
    bool shared;
  };
  const int64_t all = int64_t(1) << 40;
  for (const Mesh& mesh : {make_mesh({device_count()}, {"x"})})
    for (const PartitionSpec& spec : {P("x"), P(none, "x")})
      for (const Shape& shape :
           {Shape{40, 13, 300}, Shape{40, 12, 900}, Shape{72, 4, 64}, Shape{72, 4, 126}, Shape{32, 4, 64}})
        for (const Way& way :
             {Way{fft::OutputLayout::same, all, true}, Way{fft::OutputLayout::transposed, all, true},
              Way{fft::OutputLayout::transposed, 0, true}, Way{fft::OutputLayout::transposed, 0, false}}) {
          const fft::OutputLayout layout = way.layout;
          const NamedSharding sharding(mesh, spec);
          fft::Options options;
          options.output = layout;
          fft::detail::fused_in_block_max_bytes() = way.limit;
          darray::detail::node_shared_buffers_enabled() = way.shared;
          INFO(sharding << " shape " << shape_to_string(shape) << " layout " << layout << " in-block limit "
                        << way.limit << (way.shared ? " shared" : " not shared"));
          const fft::Plan<double> plan(shape, sharding, options);
          REQUIRE(all_ok(fused(plan) == reaches));
          const std::string d = plan.describe();
          // Stage 1 transforms dim 0 in blocks sharded along dim 1 (P("x")), or dim 1 in blocks sharded along dim 0.
          const int t = spec == P("x") ? 0 : 1;
          const NamedSharding stage(mesh, t == 0 ? P(none, "x") : P("x"));
          bool thrashes = false;
          for (const Device& device : mesh.devices()) {
            const Index block = stage.index(shape, device);
            const int64_t pitch = t == 0 ? block[1].size() * block[2].size() : block[2].size();
            thrashes = thrashes || fft::detail::column_thrashes(static_cast<std::size_t>(pitch) * sizeof(C),
                                                                block[static_cast<std::size_t>(t)].size());
          }
          const bool in_blocks = layout == fft::OutputLayout::transposed && way.limit > 0 && !thrashes;
          REQUIRE(all_ok((d.find("in place in the blocks") != std::string::npos) == (reaches && in_blocks)));
          REQUIRE(all_ok((d.find("in a tile buffer") != std::string::npos) == (reaches && !in_blocks)));
          // Work buffer 0 is a side of the fused stage of a transposed output (and of a c2r's backward: not here).
          REQUIRE(all_ok((d.find("mapped by every process") != std::string::npos) ==
                         (reaches && way.shared && layout == fft::OutputLayout::transposed)));
          const auto x = fft_test::random_array<C>(shape, sharding, 61);
          const auto gx = process_allgather(x);
          auto y = plan.allocate_output();
          plan.forward(x, y);
          REQUIRE(all_ok(relative_error(process_allgather(y), Serial<double>::c2c(gx, shape, FFTW_FORWARD)) < 1e-12));
          plan.forward(x, y);  // again into the same blocks: the tiles' addresses are exchanged per call
          REQUIRE(all_ok(relative_error(process_allgather(y), Serial<double>::c2c(gx, shape, FFTW_FORWARD)) < 1e-12));
          const auto gy = process_allgather(y);
          REQUIRE(all_ok(relative_error(process_allgather(plan.backward(y)), gx) < 1e-12));
          REQUIRE(all_ok(relative_error(process_allgather(x), gx) == 0.0));
          REQUIRE(all_ok(relative_error(process_allgather(y), gy) == 0.0));
          const fft::Plan<float> single(shape, sharding, options);
          const auto xf = fft_test::random_array<Cf>(shape, sharding, 62);
          const auto gxf = process_allgather(xf);
          REQUIRE(all_ok(relative_error(process_allgather(single.forward(xf)),
                                        Serial<float>::c2c(gxf, shape, FFTW_FORWARD)) < 1e-5));
          options.planner = fft::Planner::measure;
          check_real_round_trip<double>(shape, sharding, options, 63, 1e-12);
        }
}

TEST_CASE("a fused stage run forward on one process and backward on another is the same error everywhere", "[fft]") {
  const Shape shape{8, 6, 10};
  const NamedSharding sharding(make_mesh({device_count()}, {"x"}), P("x"));
  const fft::Plan<double> plan(shape, sharding);
  if (!fused(plan)) return;  // needs two processes that reach each other by single copy
  const auto x = fft_test::random_array<C>(shape, sharding, 64);
  auto y = plan.allocate_output();
  if (process_index() == 0)
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, plan.forward(x, y), "ran different transforms at the same time",
                              "the same plan's forward() or backward()");
  else
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, plan.backward(x, y), "ran different transforms at the same time",
                              "the same plan's forward() or backward()");
  // Both sides go on to the same next transform.
  plan.forward(x, y);
  REQUIRE(all_ok(relative_error(process_allgather(y), Serial<double>::c2c(process_allgather(x), shape, FFTW_FORWARD)) <
                 1e-12));
}

TEST_CASE("r2c/c2r rows of even lengths go through complex FFTs of half their length", "[fft]") {
  // Rows of 16 to 512 reals (even; to 128 under FFTW_MEASURE) go as rows of half as many complex points, a 16 KiB tile
  // of rows per FFTW plan. Row counts and tiles at one device: 5 x 3 x 16 (15 rows, under one tile of 128), 3 x 7 x 64
  // (21 rows, under one tile of 32), 5 x 33 x 128 (165 rows: 10 tiles of 16 and a tail of 5), 8 x 64 x 64 (dim 0 tiled
  // group by group, dim 1 FFTW's c2c after the rows), 6 x 300 x 128 (dims 0 and 1 both tiled, no c2c after the rows); 4
  // x 9 x 18 (9 points a row: no middle point), 3 x 10 x 100 and 2 x 6 x 256 (not powers of two; past 128 points,
  // estimate only); complex64: 3 x 45 x 64 (135 rows: 2 tiles of 64 and a tail of 7), 2 x 5 x 16 measured.
  auto round_trip = [](auto zero, const Shape& shape, fft::Planner planner, std::uint64_t seed, double tol) {
    fft::Options options;
    options.planner = planner;
    for (const PartitionSpec& spec : {P("x"), P(none, "x")})
      check_real_round_trip<decltype(zero)>(shape, NamedSharding(make_mesh({device_count()}, {"x"}), spec), options,
                                            seed, tol);
  };
  for (const Shape& shape : {Shape{5, 3, 16}, Shape{3, 7, 64}, Shape{5, 33, 128}, Shape{8, 64, 64}, Shape{6, 300, 128},
                             Shape{4, 9, 18}, Shape{3, 10, 100}, Shape{2, 6, 256}})
    round_trip(0.0, shape, fft::Planner::estimate, 61, 1e-12);
  round_trip(0.0, Shape{3, 7, 64}, fft::Planner::measure, 62, 1e-12);
  round_trip(0.0f, Shape{3, 45, 64}, fft::Planner::estimate, 63, 1e-5);
  round_trip(0.0f, Shape{2, 5, 16}, fft::Planner::measure, 64, 1e-5);
}

// FftwHalfRows on its own: rows x n reals with the AVX2 pass (on a CPU with AVX2) and with the baseline pass, r2c and
// c2r; both must give the same bits, and the spectra FFTW's r2c plan of the same rows gives. A build whose target has
// FMA (-march=native) may fuse products and sums in the two passes differently: there they agree to rounding (at most
// 4 epsilon of the largest value for the spectra, 16 for the c2r's rows after FFTW's c2c; measured 1.1 and 2.9).
template <class R>
void check_half_row_loops_agree(int64_t rows, int64_t n, unsigned flags) {
  using Rows = fft::detail::FftwHalfRows<R>;
  using Api = fft::detail::FftwApi<R>;
  const int64_t nc = n / 2 + 1;
  std::vector<R> x(static_cast<std::size_t>(rows * n)), spectra[2], back[2];
  std::uint64_t state = 77 + static_cast<std::uint64_t>(rows * n);
  for (R& v : x) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    v = static_cast<R>(static_cast<double>(state >> 11) / 9007199254740992.0 - 0.5);
  }
  for (int avx2 = 0; avx2 < 2; ++avx2) {
    Rows r2c(rows, n, true, flags), c2r(rows, n, false, flags);
    r2c.set_avx2(avx2 == 1);
    c2r.set_avx2(avx2 == 1);
    REQUIRE(r2c.avx2() == (avx2 == 1 && fft::detail::cpu_has_avx2()));
    spectra[avx2].assign(static_cast<std::size_t>(rows * nc * 2), R(0));
    back[avx2].assign(x.size(), R(0));
    r2c.execute(x.data(), spectra[avx2].data());
    const std::vector<R> in = spectra[avx2];
    c2r.execute(in.data(), back[avx2].data());
    REQUIRE(in == spectra[avx2]);  // c2r only reads its input
  }
#if defined(__FMA__)
  const double eps = std::numeric_limits<R>::epsilon();
  REQUIRE(relative_error(spectra[1], spectra[0]) <= 4 * eps);
  REQUIRE(relative_error(back[1], back[0]) <= 16 * eps);
#else
  REQUIRE(spectra[0] == spectra[1]);
  REQUIRE(back[0] == back[1]);
#endif
  // The spectra are FFTW's r2c of the rows, and back = n x (up to rounding).
  std::vector<R> xr = x, expect(spectra[0].size());
  const typename Api::iodim dim{static_cast<std::ptrdiff_t>(n), 1, 1};
  const typename Api::iodim loop{static_cast<std::ptrdiff_t>(rows), static_cast<std::ptrdiff_t>(n),
                                 static_cast<std::ptrdiff_t>(nc)};
  const auto plan = Api::r2c(1, &dim, 1, &loop, xr.data(), expect.data(), FFTW_ESTIMATE);
  REQUIRE(plan != nullptr);
  Api::execute_r2c(plan, xr.data(), expect.data());
  Api::destroy(plan);
  double err = 0, scale = 0;
  for (std::size_t i = 0; i < expect.size(); ++i) {
    err = std::max(err, std::abs(static_cast<double>(spectra[0][i]) - static_cast<double>(expect[i])));
    scale = std::max(scale, std::abs(static_cast<double>(expect[i])));
  }
  const double tol = std::is_same<R, double>::value ? 1e-13 : 1e-5;
  REQUIRE(err <= tol * scale);
  err = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    err = std::max(err, std::abs(static_cast<double>(back[0][i]) / static_cast<double>(n) - x[i]));
  REQUIRE(err < tol);
}

TEST_CASE("r2c/c2r half-length rows: the AVX2 pass and the baseline pass give the same bits (to rounding with FMA)",
          "[fft]") {
  if (!fft::detail::cpu_has_avx2()) WARN("this CPU has no AVX2: both runs take the baseline pass");
  for (const int64_t n : {2, 4, 8, 16, 18, 64, 100, 128, 256})
    for (const int64_t rows : {int64_t{1}, int64_t{7}, int64_t{300}, int64_t{4096 / n + 1}}) {
      INFO("rows " << rows << " n " << n);
      check_half_row_loops_agree<double>(rows, n, FFTW_ESTIMATE);
      check_half_row_loops_agree<float>(rows, n, FFTW_ESTIMATE);
    }
}

TEST_CASE("FFTW's plan of the dims inside a group runs group by group, a lone outer group as a whole-block pass",
          "[fft]") {
  // Local blocks of 40 x 50 x n2 at one device: dim 0 spans 0.6-1.2 MB (a group of columns with nothing outside it:
  // a whole-block tiled pass), dim 1 29-58 KB (FFTW's plan, run on one 50 x n2 plane after the other). At more devices
  // the slabs of dim 0 are thinner, still planes. 40 x 7 x 9: groups of 63 reals and 35 complex (FFTW's unaligned
  // plans on odd group offsets); 40 x 50 x 32: half-length rows of 32, a plane at a time.
  const NamedSharding slabs(make_mesh({device_count()}, {"x"}), P("x"));
  for (const Shape& shape : {Shape{40, 50, 36}, Shape{40, 7, 9}}) {
    INFO("shape " << shape_to_string(shape));
    const fft::Plan<double> plan(shape, slabs);
    const auto x = fft_test::random_array<C>(shape, slabs, 71);
    const auto gx = process_allgather(x);
    const auto expect = Serial<double>::c2c(gx, shape, FFTW_FORWARD);
    const auto y = plan.forward(x);  // stage 0 out of place
    REQUIRE(all_ok(relative_error(process_allgather(y), expect) < 1e-12));
    REQUIRE(all_ok(relative_error(process_allgather(plan.backward(y)), gx) < 1e-12));
    auto z = plan.allocate_input();
    plan.backward(y, z);
    plan.forward(z, z);  // in place
    REQUIRE(all_ok(relative_error(process_allgather(z), expect) < 1e-12));
  }
  for (const Shape& shape : {Shape{40, 50, 36}, Shape{40, 7, 9}, Shape{40, 50, 32}})
    check_real_round_trip<double>(shape, slabs, fft::Options{}, 72, 1e-12);
  check_real_round_trip<float>(Shape{40, 7, 9}, slabs, fft::Options{}, 73, 1e-5);
  check_real_round_trip<float>(Shape{40, 50, 32}, slabs, fft::Options{}, 74, 1e-5);
}

TEST_CASE("FFTW_MEASURE plans and unaligned shards give the same transform", "[fft]") {
  const Shape shape{6, 4, 5};
  const NamedSharding sharding = fft::auto_sharding(shape);
  const auto x = fft_test::random_array<C>(shape, sharding, 21);
  const auto gx = process_allgather(x);
  const auto expect = Serial<double>::c2c(gx, shape, FFTW_FORWARD);
  fft::Options options;
  options.planner = fft::Planner::measure;
  const fft::Plan<double> plan(shape, sharding, options);
  REQUIRE(all_ok(relative_error(process_allgather(plan.forward(x)), expect) < 1e-12));
  // Shards that start 8 bytes past an aligned address take FFTW's unaligned path.
  std::vector<Kokkos::View<double*>> storage;
  std::vector<Kokkos::View<C***, Kokkos::LayoutRight, Kokkos::MemoryUnmanaged>> views;
  for (const auto& s : x.addressable_shards()) {
    const Shape b = box_shape(s.index);
    storage.emplace_back("storage", static_cast<std::size_t>(2 * volume(s.index) + 1));
    C* p = reinterpret_cast<C*>(storage.back().data() + 1);
    views.emplace_back(p, b[0], b[1], b[2]);
    Kokkos::deep_copy(views.back(), s.data);
  }
  const auto shifted = make_array_from_single_device_arrays<C, 3>(shape, sharding, views);
  REQUIRE(all_ok(relative_error(process_allgather(plan.forward(shifted)), expect) < 1e-12));
}

}  // namespace

// Run only by test_fft_check (DARRAY_CHECK=1): processes that call different transforms are told, instead of
// computing silently different scalings.
TEST_CASE("DARRAY_CHECK=1: a process running another transform is named on every process", "[.check]") {
  REQUIRE(all_ok(consistency_checks_enabled()));
  const Shape shape{4, 6, 5};
  const NamedSharding sharding = fft::auto_sharding(shape);
  fft::Options ortho;
  ortho.normalization = fft::Normalization::ortho;
  const fft::Plan<double> plain(shape, sharding), scaled(shape, sharding, ortho);
  const auto x = fft_test::random_array<C>(shape, sharding, 51);
  const fft::Plan<double>& mine = process_index() == process_count() - 1 ? scaled : plain;
  if (process_count() > 1)
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, mine.forward(x), "processes disagree", "norm ortho");
  else
    REQUIRE(all_ok(relative_error(process_allgather(mine.forward(x)),
                                  fft_test::scaled(Serial<double>::c2c(process_allgather(x), shape, FFTW_FORWARD),
                                                   1 / std::sqrt(120.0))) < 1e-12));
}
