// Every collective against a host reference computed from global indices: random 1-d, 2-d and 3-d meshes over all
// devices (make_mesh order and shuffled device orders, so axis groups span processes unevenly), random specs,
// ranks 1-3, on float, double, int32, int64 and complex<double>. The generator is seeded alike on every process,
// so all draw the same layouts; each result is checked shard by shard, replicas included, and its sharding and
// shape against the documented convention.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "collectives_test_util.hpp"

using namespace darray;
using namespace darray::testing;

namespace {

struct Draw {
  Mesh mesh;
  NamedSharding sharding;
  std::string describe(const Shape& shape) const { return sharding.to_string() + " shape " + shape_to_string(shape); }
};

template <int N>
Draw draw_layout(std::mt19937_64& rng) {
  const int ndim = 1 + static_cast<int>(rng() % 3);
  Mesh mesh = random_mesh(rng, ndim, rng() % 2 == 0);
  NamedSharding s(mesh, random_spec(rng, mesh, N));
  return Draw{mesh, s};
}

std::vector<std::string> random_axes(std::mt19937_64& rng, const Mesh& mesh) {
  std::vector<std::string> names = mesh.axis_names();
  std::shuffle(names.begin(), names.end(), rng);
  names.resize(1 + rng() % names.size());
  return names;
}

// The global shape of a result whose blocks are all `block`: block times the number of parts, per dim.
Shape tiled_shape(const NamedSharding& s, const Shape& block) {
  Shape out(block.size());
  for (std::size_t d = 0; d < block.size(); ++d) out[d] = block[d] * s.num_parts(static_cast<int>(d));
  return out;
}

template <class Array>
bool layout_is(const Array& r, const Mesh& mesh, const PartitionSpec& spec, const Shape& shape) {
  return r.sharding() == NamedSharding(mesh, spec) && r.shape() == shape;
}

enum class Red { sum, max, min };

template <class T>
constexpr bool is_complex_v = std::is_same<T, Kokkos::complex<double>>::value;

// pmax and pmin exist for real types only (a static_assert rejects complex ones).
template <class T, int N>
DistributedArray<T, N> reduce(const DistributedArray<T, N>& a, const std::vector<std::string>& axes, Red red) {
  if constexpr (is_complex_v<T>) {
    return psum(a, axes);
  } else {
    return red == Red::sum ? psum(a, axes) : red == Red::max ? pmax(a, axes) : pmin(a, axes);
  }
}

template <class T>
T combine(T x, T y, Red red) {
  if constexpr (is_complex_v<T>) {
    return x + y;
  } else {
    return red == Red::sum ? x + y : red == Red::max ? (x > y ? x : y) : (x < y ? x : y);
  }
}

template <class T, int N>
void reduction_trial(std::mt19937_64& rng, Red red) {
  const Draw l = draw_layout<N>(rng);
  const auto axes = random_axes(rng, l.mesh);
  const Shape shape = even_shape(rng, l.sharding, N);
  INFO(l.describe(shape) << " over " << Catch::Detail::stringify(axes));
  const auto a = operand<T, N>(shape, l.sharding);
  const auto r = reduce(a, axes, red);
  const Shape block = l.sharding.shard_shape(shape);
  const PartitionSpec spec = expected_spec(l.sharding.spec(), N, axes);
  const std::string err = check_result(r, [&](const Device& u) {
    std::vector<HostBlock<T>> blocks;
    for (const Device& v : group_of(l.mesh, axes, u))
      blocks.push_back(operand_block<T>(l.sharding.index(shape, v), shape));
    return fold(blocks, [&](T x, T y) { return combine(x, y, red); });
  });
  INFO(err);
  REQUIRE(all_ok(err.empty() && layout_is(r, l.mesh, spec, tiled_shape(NamedSharding(l.mesh, spec), block))));
}

template <class T, int N>
void psum_scatter_trial(std::mt19937_64& rng) {
  const Draw l = draw_layout<N>(rng);
  const std::string axis = l.mesh.axis_names()[rng() % l.mesh.axis_names().size()];
  const int64_t n = l.mesh.axis_size(axis);
  const int dim = static_cast<int>(rng() % N);
  const Shape shape = even_shape(rng, l.sharding, N, dim, n);
  INFO(l.describe(shape) << " axis " << axis << " dim " << dim);
  const auto a = operand<T, N>(shape, l.sharding);
  const auto r = psum_scatter(a, axis, rng() % 2 ? dim : dim - N);
  Shape block = l.sharding.shard_shape(shape);
  block[static_cast<std::size_t>(dim)] /= n;
  const PartitionSpec spec = expected_spec(l.sharding.spec(), N, {axis}, dim, axis);
  const std::string err = check_result(r, [&](const Device& u) {
    std::vector<HostBlock<T>> blocks;
    for (const Device& v : group_of(l.mesh, {axis}, u))
      blocks.push_back(operand_block<T>(l.sharding.index(shape, v), shape));
    const HostBlock<T> sum = fold(blocks, [](T x, T y) { return x + y; });
    const int64_t i = axis_index(l.mesh, axis, u), c = block[static_cast<std::size_t>(dim)];
    return slice(sum, static_cast<std::size_t>(dim), i * c, c);
  });
  INFO(err);
  REQUIRE(all_ok(err.empty() && layout_is(r, l.mesh, spec, tiled_shape(NamedSharding(l.mesh, spec), block))));
}

template <class T, int N>
void all_gather_trial(std::mt19937_64& rng, bool stacked_form) {
  const Draw l = draw_layout<N>(rng);
  const std::string axis = l.mesh.axis_names()[rng() % l.mesh.axis_names().size()];
  const int64_t n = l.mesh.axis_size(axis);
  const int dim = static_cast<int>(rng() % (stacked_form ? N + 1 : N));
  const Shape shape = even_shape(rng, l.sharding, N);
  INFO(l.describe(shape) << " axis " << axis << " dim " << dim << (stacked_form ? " stacked" : " tiled"));
  const auto a = operand<T, N>(shape, l.sharding);
  auto expected = [&](const Device& u) {
    std::vector<HostBlock<T>> blocks;
    for (const Device& v : group_of(l.mesh, {axis}, u)) {
      HostBlock<T> b = operand_block<T>(l.sharding.index(shape, v), shape);
      blocks.push_back(stacked_form ? insert_dim(b, static_cast<std::size_t>(dim)) : b);
    }
    return concat(blocks, static_cast<std::size_t>(dim));
  };
  Shape block = l.sharding.shard_shape(shape);
  std::string err;
  bool layout_ok = false;
  if (stacked_form) {
    const auto r = all_gather(a, axis, dim, stacked);
    block.insert(block.begin() + dim, n);
    const PartitionSpec spec = expected_spec(l.sharding.spec(), N, {axis}, -1, "", dim);
    err = check_result(r, expected);
    layout_ok = layout_is(r, l.mesh, spec, tiled_shape(NamedSharding(l.mesh, spec), block));
  } else {
    const auto r = all_gather(a, axis, dim, tiled);
    block[static_cast<std::size_t>(dim)] *= n;
    const PartitionSpec spec = expected_spec(l.sharding.spec(), N, {axis});
    err = check_result(r, expected);
    layout_ok = layout_is(r, l.mesh, spec, tiled_shape(NamedSharding(l.mesh, spec), block));
  }
  INFO(err);
  REQUIRE(all_ok(err.empty() && layout_ok));
}

template <class T, int N>
void all_to_all_trial(std::mt19937_64& rng) {
  const Draw l = draw_layout<N>(rng);
  const std::string axis = l.mesh.axis_names()[rng() % l.mesh.axis_names().size()];
  const int64_t n = l.mesh.axis_size(axis);
  const int split = static_cast<int>(rng() % N), cat = static_cast<int>(rng() % N);
  const Shape shape = even_shape(rng, l.sharding, N, split, n);
  INFO(l.describe(shape) << " axis " << axis << " split " << split << " concat " << cat);
  const auto a = operand<T, N>(shape, l.sharding);
  const auto r = all_to_all(a, axis, split, cat);
  Shape block = l.sharding.shard_shape(shape);
  const int64_t chunk = block[static_cast<std::size_t>(split)] / n;
  if (split != cat) {
    block[static_cast<std::size_t>(split)] = chunk;
    block[static_cast<std::size_t>(cat)] *= n;
  }
  const PartitionSpec spec = expected_spec(l.sharding.spec(), N, {axis}, split, axis);
  const std::string err = check_result(r, [&](const Device& u) {
    const int64_t i = axis_index(l.mesh, axis, u);
    std::vector<HostBlock<T>> chunks;
    for (const Device& v : group_of(l.mesh, {axis}, u))
      chunks.push_back(slice(operand_block<T>(l.sharding.index(shape, v), shape), static_cast<std::size_t>(split),
                             i * chunk, chunk));
    return concat(chunks, static_cast<std::size_t>(cat));
  });
  INFO(err);
  REQUIRE(all_ok(err.empty() && layout_is(r, l.mesh, spec, tiled_shape(NamedSharding(l.mesh, spec), block))));
}

// A random permutation, a cyclic shift, or (when the operand is sharded along the axis) part of a permutation.
std::vector<std::pair<int, int>> random_perm(std::mt19937_64& rng, int n, bool partial_ok) {
  std::vector<int> order(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
  std::shuffle(order.begin(), order.end(), rng);
  const uint64_t kind = rng() % (partial_ok ? 3 : 2);
  std::vector<std::pair<int, int>> perm;
  for (int i = 0; i < n; ++i) {
    if (kind == 1)
      perm.emplace_back(i, (i + 1) % n);
    else if (kind == 0 || rng() % 3 != 0)
      perm.emplace_back(i, order[static_cast<std::size_t>(i)]);
  }
  return perm;
}

template <class T, int N>
void ppermute_trial(std::mt19937_64& rng) {
  const Draw l = draw_layout<N>(rng);
  const std::string axis = l.mesh.axis_names()[rng() % l.mesh.axis_names().size()];
  const int n = static_cast<int>(l.mesh.axis_size(axis));
  bool sharded = false;
  for (const auto& e : l.sharding.spec().entries()) sharded = sharded || std::find(e.begin(), e.end(), axis) != e.end();
  const auto perm = random_perm(rng, n, sharded);
  const Shape shape = even_shape(rng, l.sharding, N);
  INFO(l.describe(shape) << " axis " << axis << " perm of " << perm.size() << " pairs");
  const auto a = operand<T, N>(shape, l.sharding);
  const auto r = ppermute(a, axis, perm);
  const std::string err = check_result(r, [&](const Device& u) {
    const int64_t i = axis_index(l.mesh, axis, u);
    const auto members = group_of(l.mesh, {axis}, u);
    for (const auto& [from, to] : perm)
      if (to == i) return operand_block<T>(l.sharding.index(shape, members[static_cast<std::size_t>(from)]), shape);
    HostBlock<T> zeros = operand_block<T>(l.sharding.index(shape, u), shape);
    std::fill(zeros.data.begin(), zeros.data.end(), T(0));
    return zeros;
  });
  INFO(err);
  REQUIRE(all_ok(err.empty() && layout_is(r, l.mesh, l.sharding.spec(), shape)));
}

// Every element of a and b equal bit for bit (replicas included), on this process.
template <class T, int N, class M>
bool bit_equal(const DistributedArray<T, N, M>& a, const DistributedArray<T, N, M>& b) {
  if (a.shape() != b.shape() || a.sharding() != b.sharding()) return false;
  const auto& x = a.addressable_shards();
  const auto& y = b.addressable_shards();
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (x[i].data.size() != y[i].data.size()) return false;
    const auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x[i].data);  // device memory too
    const auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y[i].data);
    if (x[i].data.size() > 0 && std::memcmp(hx.data(), hy.data(), x[i].data.size() * sizeof(T)) != 0) return false;
  }
  return true;
}

// Overwrites every element of a's shards with a value no collective produces from the test operands.
template <class T, int N, class M>
void scribble(DistributedArray<T, N, M>& a) {
  for (const auto& s : a.addressable_shards()) Kokkos::deep_copy(s.data, static_cast<T>(77));
}

// The kept-output form of each collective writes exactly what the allocating form returns, over a scribbled output;
// so does its plan (collectives/plan.hpp), executed into fresh blocks and into the scribbled output.
template <class T, int N>
void kept_output_trial(std::mt19937_64& rng) {
  const Draw l = draw_layout<N>(rng);
  const std::string axis = l.mesh.axis_names()[rng() % l.mesh.axis_names().size()];
  const int64_t n = l.mesh.axis_size(axis);
  const int dim = static_cast<int>(rng() % N);
  const Shape shape = even_shape(rng, l.sharding, N, dim, n);
  INFO(l.describe(shape) << " axis " << axis << " dim " << dim);
  const auto a = operand<T, N>(shape, l.sharding);
  bool ok = true;
  {
    auto r = psum(a, axis), out = psum(a, axis);
    scribble(out);
    psum(a, axis, out);
    ok = ok && bit_equal(r, out);
    const auto plan = psum_plan(a, axis);  // the same through the call's plan, executed twice
    ok = ok && bit_equal(r, execute(plan, a));
    scribble(out);
    execute(plan, a, out);
    ok = ok && bit_equal(r, out);
  }
  {  // pmax and pmin: the call and its plan, allocating and kept
    auto r = pmax(a, axis), out = pmax(a, axis);
    scribble(out);
    execute(pmax_plan(a, axis), a, out);
    ok = ok && bit_equal(r, out) && bit_equal(r, execute(pmax_plan(a, axis), a));
    auto q = pmin(a, axis), out_min = pmin(a, axis);
    scribble(out_min);
    pmin(a, axis, out_min);
    ok = ok && bit_equal(q, out_min);
    scribble(out_min);
    execute(pmin_plan(a, axis), a, out_min);
    ok = ok && bit_equal(q, out_min) && bit_equal(q, execute(pmin_plan(a, axis), a));
  }
  {
    auto r = psum_scatter(a, axis, dim), out = psum_scatter(a, axis, dim);
    scribble(out);
    psum_scatter(a, axis, dim, out);
    ok = ok && bit_equal(r, out);
    const auto plan = psum_scatter_plan(a, axis, dim);  // the same through the call's plan, executed twice
    ok = ok && bit_equal(r, execute(plan, a));
    scribble(out);
    execute(plan, a, out);
    ok = ok && bit_equal(r, out);
  }
  {
    auto r = all_gather(a, axis, dim, tiled), out = all_gather(a, axis, dim, tiled);
    scribble(out);
    all_gather(a, axis, dim, tiled, out);
    ok = ok && bit_equal(r, out);
    const auto plan = all_gather_plan(a, axis, dim, tiled);  // the same through the call's plan, executed twice
    ok = ok && bit_equal(r, execute(plan, a));
    scribble(out);
    execute(plan, a, out);
    ok = ok && bit_equal(r, out);
  }
  {
    auto r = all_gather(a, axis, dim, stacked), out = all_gather(a, axis, dim, stacked);
    scribble(out);
    all_gather(a, axis, dim, stacked, out);
    ok = ok && bit_equal(r, out);
    const auto plan = all_gather_plan(a, axis, dim, stacked);  // the same through the call's plan, executed twice
    ok = ok && bit_equal(r, execute(plan, a));
    scribble(out);
    execute(plan, a, out);
    ok = ok && bit_equal(r, out);
  }
  {
    const int cat = static_cast<int>(rng() % N);
    auto r = all_to_all(a, axis, dim, cat), out = all_to_all(a, axis, dim, cat);
    scribble(out);
    all_to_all(a, axis, dim, cat, out);
    ok = ok && bit_equal(r, out);
    const auto plan = all_to_all_plan(a, axis, dim, cat);  // the same through the call's plan, executed twice
    ok = ok && bit_equal(r, execute(plan, a));
    scribble(out);
    execute(plan, a, out);
    ok = ok && bit_equal(r, out);
  }
  {
    bool sharded = false;
    for (const auto& e : l.sharding.spec().entries())
      sharded = sharded || std::find(e.begin(), e.end(), axis) != e.end();
    const auto perm = random_perm(rng, static_cast<int>(n), sharded);
    auto r = ppermute(a, axis, perm), out = ppermute(a, axis, perm);
    scribble(out);
    ppermute(a, axis, perm, out);  // devices no pair names get zeros again, not the scribble
    ok = ok && bit_equal(r, out);
    const auto plan = ppermute_plan(a, axis, perm);  // the same through the call's plan, executed twice
    ok = ok && bit_equal(r, execute(plan, a));
    scribble(out);
    execute(plan, a, out);
    ok = ok && bit_equal(r, out);
  }
  REQUIRE(all_ok(ok));
}

}  // namespace

TEST_CASE("kept-output forms and executed plans write bit for bit what the allocating forms return") {
  std::mt19937_64 rng(606);
  for (int trial = 0; trial < 8; ++trial) {
    kept_output_trial<double, 1>(rng);
    kept_output_trial<int32_t, 2>(rng);
    kept_output_trial<float, 3>(rng);
  }
  const darray::detail::StageAsIfOnDevice device_path;
  for (int trial = 0; trial < 4; ++trial) kept_output_trial<int64_t, 2>(rng);
}

TEST_CASE("every collective on the device-memory path (pack kernels, transport, unpack) matches the reference") {
  const darray::detail::StageAsIfOnDevice device_path;
  std::mt19937_64 rng(707);
  for (int trial = 0; trial < 4; ++trial) {
    reduction_trial<double, 2>(rng, Red::sum);
    reduction_trial<int32_t, 1>(rng, Red::max);
    psum_scatter_trial<float, 2>(rng);
    all_gather_trial<Kokkos::complex<double>, 2>(rng, false);
    all_gather_trial<int64_t, 1>(rng, true);
    all_to_all_trial<double, 3>(rng);
    ppermute_trial<int32_t, 2>(rng);
  }
}

TEST_CASE("psum, pmax, pmin over one or several axes match the reference") {
  std::mt19937_64 rng(101);
  for (int trial = 0; trial < 12; ++trial) {
    reduction_trial<float, 1>(rng, Red::sum);
    reduction_trial<double, 2>(rng, Red::sum);
    reduction_trial<int32_t, 3>(rng, Red::sum);
    reduction_trial<Kokkos::complex<double>, 2>(rng, Red::sum);
    reduction_trial<int64_t, 2>(rng, Red::max);
    reduction_trial<float, 3>(rng, Red::max);
    reduction_trial<double, 1>(rng, Red::min);
    reduction_trial<int32_t, 2>(rng, Red::min);
  }
}

TEST_CASE("psum_scatter matches the reference") {
  std::mt19937_64 rng(202);
  for (int trial = 0; trial < 10; ++trial) {
    psum_scatter_trial<float, 1>(rng);
    psum_scatter_trial<int64_t, 2>(rng);
    psum_scatter_trial<Kokkos::complex<double>, 3>(rng);
    psum_scatter_trial<double, 2>(rng);
  }
}

TEST_CASE("all_gather tiled and stacked match the reference") {
  std::mt19937_64 rng(303);
  for (int trial = 0; trial < 10; ++trial) {
    all_gather_trial<double, 1>(rng, false);
    all_gather_trial<int32_t, 2>(rng, false);
    all_gather_trial<Kokkos::complex<double>, 3>(rng, false);
    all_gather_trial<float, 1>(rng, true);
    all_gather_trial<int64_t, 2>(rng, true);
  }
}

TEST_CASE("all_to_all matches the reference") {
  std::mt19937_64 rng(404);
  for (int trial = 0; trial < 10; ++trial) {
    all_to_all_trial<float, 2>(rng);
    all_to_all_trial<int32_t, 1>(rng);
    all_to_all_trial<Kokkos::complex<double>, 3>(rng);
    all_to_all_trial<int64_t, 2>(rng);
  }
}

TEST_CASE("ppermute: permutations, shifts and partial maps match the reference") {
  std::mt19937_64 rng(505);
  for (int trial = 0; trial < 10; ++trial) {
    ppermute_trial<double, 1>(rng);
    ppermute_trial<int64_t, 2>(rng);
    ppermute_trial<Kokkos::complex<double>, 2>(rng);
    ppermute_trial<float, 3>(rng);
    ppermute_trial<int32_t, 1>(rng);
  }
}

// A collective compares its call with the plan cache's most recent key where the arguments lie (detail::PlanProbe),
// a permutation's pairs one word each: calls in turns that differ in one argument only (the last two pairs of a
// permutation, the gathered dim, tiled or stacked, the reduced axes) must each run their own plan, never the one
// before. The probe itself: it matches the key it makes, and no key that differs in one field.
TEST_CASE("collectives in turns that differ in one argument each run their own plan") {
  const int64_t n = device_count();
  const Mesh mesh = n % 2 == 0 ? make_mesh({2, n / 2}, {"i", "j"}) : make_mesh({1, n}, {"i", "j"});
  const int64_t ni = mesh.shape()[0], nj = mesh.shape()[1];
  const NamedSharding by_ij(mesh, P(axes("i", "j"), none));
  // Row r holds r + 1 and 100 (r + 1): block k (one row per device) is row k.
  const auto x = make_array_from_callback<int64_t, 2>({n, 2}, by_ij, [](const Index& box) {
    std::vector<int64_t> v;
    for (int64_t r = box[0].start; r < box[0].stop; ++r) v.insert(v.end(), {r + 1, 100 * (r + 1)});
    return v;
  });
  // Along "j" (size nj): the identity, and the identity with its last two destinations swapped.
  std::vector<std::pair<int, int>> same, swapped;
  for (int k = 0; k < static_cast<int>(nj); ++k) same.emplace_back(k, k);
  swapped = same;
  if (nj >= 2) std::swap(swapped[nj - 1].second, swapped[nj - 2].second);
  auto expected_perm = [&](const std::vector<std::pair<int, int>>& perm) {
    std::vector<int64_t> v(static_cast<std::size_t>(2 * n));
    for (int64_t bi = 0; bi < ni; ++bi)
      for (const auto& [from, to] : perm)
        for (int64_t c = 0; c < 2; ++c)
          v[static_cast<std::size_t>(2 * (bi * nj + to) + c)] = (bi * nj + from + 1) * (c == 0 ? 1 : 100);
    return v;
  };
  auto y = ppermute(x, "j", same);
  auto g = all_gather(x, "j", 0, tiled);
  auto s = psum(x, "j");
  for (int turn = 0; turn < 3; ++turn) {
    INFO("turn " << turn);
    REQUIRE(process_allgather(ppermute(x, "j", same)) == expected_perm(same));
    REQUIRE(process_allgather(ppermute(x, "j", swapped)) == expected_perm(swapped));
    ppermute(x, "j", same, y);
    REQUIRE(process_allgather(y) == expected_perm(same));
    ppermute(x, "j", swapped, y);
    REQUIRE(process_allgather(y) == expected_perm(swapped));
    // all_gather along "j" tiled on dim 0, then stacked, then tiled on dim 1: three plans of one operand and axis.
    REQUIRE(all_gather(x, "j", 0, tiled).shape() == Shape{n, 2});
    REQUIRE(volume(all_gather(x, "j", 0, stacked).shape()) == 2 * n);
    REQUIRE(all_gather(x, "j", 1, tiled).shape() == Shape{n / nj, 2 * nj});
    all_gather(x, "j", 0, tiled, g);
    REQUIRE(process_allgather(g) == process_allgather(x));
    // psum over "j", over "i", over both: each its own result shape and sum.
    psum(x, "j", s);
    REQUIRE(psum(x, "i").shape() == Shape{n / ni, 2});
    REQUIRE(process_allgather(psum(x, {"i", "j"})) == std::vector<int64_t>{n * (n + 1) / 2, 100 * n * (n + 1) / 2});
    std::vector<int64_t> by_j(static_cast<std::size_t>(2 * ni));
    for (int64_t bi = 0; bi < ni; ++bi)
      for (int64_t k = 0; k < nj; ++k)
        for (int64_t c = 0; c < 2; ++c)
          by_j[static_cast<std::size_t>(2 * bi + c)] += (bi * nj + k + 1) * (c == 0 ? 1 : 100);
    REQUIRE(process_allgather(s) == by_j);
  }

  const int64_t fixed[] = {1, 0};
  const detail::PlanProbe probe{detail::CollectiveCode::ppermute, by_ij, x.shape(), fixed, 1, &swapped};
  const detail::PlanKey key = probe.key();
  REQUIRE(probe.matches(key));
  REQUIRE(key.params.size() == 1 + swapped.size());
  auto differs = [&](auto&& change) {
    detail::PlanKey k = key;
    change(k);
    return !probe.matches(k);
  };
  REQUIRE(differs([](detail::PlanKey& k) { k.op = static_cast<int>(detail::CollectiveCode::all_gather); }));
  REQUIRE(differs([](detail::PlanKey& k) { k.shape[0] += 1; }));
  REQUIRE(differs([](detail::PlanKey& k) { k.shape.push_back(1); }));
  REQUIRE(differs([](detail::PlanKey& k) { k.params[0] = 0; }));
  REQUIRE(differs([](detail::PlanKey& k) { k.params.back() += 1; }));
  REQUIRE(differs([](detail::PlanKey& k) { k.params.push_back(0); }));
  REQUIRE(differs([&](detail::PlanKey& k) { k.sharding = NamedSharding(mesh, P("i", none)); }));
  if (nj >= 2) {
    const detail::PlanProbe other{detail::CollectiveCode::ppermute, by_ij, x.shape(), fixed, 1, &same};
    REQUIRE(!other.matches(key));
    REQUIRE(other.key().params != key.params);
  }
}

namespace {

// Row r of an (n, 4) array sharded by rows, one row per device: NaN in column 0 on the first device, in column 1 on
// the last, a negative NaN (sign bit set, as x86 produces for 0 * inf) in column 2 on the middle one, and r in
// column 3. pmax and pmin over the rows must give NaN in columns 0-2 on every device (as JAX and NumPy do),
// whichever device, process or argument position the NaN comes from, and the true extreme in column 3.
template <class T>
void nan_trial(bool max) {
  const int64_t n = device_count();
  const Mesh mesh = make_mesh({n}, {"x"});
  const NamedSharding rows(mesh, P("x"));
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const auto a = make_array_from_callback<T, 2>({n, 4}, rows, [&](const Index& box) {
    std::vector<T> v;
    for (int64_t r = box[0].start; r < box[0].stop; ++r) {
      v.push_back(r == 0 ? nan : T(1));
      v.push_back(r == n - 1 ? nan : T(-1));
      v.push_back(r == n / 2 ? -nan : T(0));
      v.push_back(static_cast<T>(r));
    }
    return v;
  });
  const auto b = max ? pmax(a, {"x"}) : pmin(a, {"x"});
  bool ok = true;
  std::ostringstream why;
  for (const auto& s : b.addressable_shards()) {
    const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s.data);  // device memory too
    for (int64_t c = 0; c < 4; ++c) {
      const T got = host(0, c);
      const bool good = c < 3 ? std::isnan(got) : got == static_cast<T>(max ? n - 1 : 0);
      if (!good) why << s.device << " column " << c << ": " << got << "; ";
      ok = ok && good;
    }
  }
  INFO((max ? "pmax " : "pmin ") << dtype_name<T>() << ": " << why.str());
  REQUIRE(all_ok(ok));
}

}  // namespace

// Issue 16, finding 6: MPI_MAX / MPI_MIN and the local combine dropped NaN (pmax of [NaN, 1] gave 1).
TEST_CASE("pmax and pmin propagate NaN like JAX and NumPy") {
  nan_trial<double>(true);
  nan_trial<double>(false);
  nan_trial<float>(true);
  nan_trial<float>(false);
}

// A reduction into a kept output that shares blocks with its operand (the operand itself, its blocks in another
// order, or some of them beside fresh ones) reads every operand block before writing one: each device's result is
// the sum over the mesh, as the allocating form computes it.
TEST_CASE("psum into an output that shares blocks with its operand sums the operand as it was") {
  const int64_t nd = device_count();
  const NamedSharding replicated(make_mesh({nd}, {"i"}), P());
  const Shape shape{5};
  using View = detail::ShardView<double, 1, Kokkos::HostSpace>;
  auto operand_of = [&] {  // device d holds 1 + 10 d + k at k
    std::vector<View> views;
    for (const Device& dev : local_devices()) {
      View v("operand", 5);
      for (int64_t k = 0; k < 5; ++k) v(k) = 1.0 + 10.0 * static_cast<double>(dev.id) + static_cast<double>(k);
      views.push_back(v);
    }
    return make_array_from_single_device_arrays<double, 1, Kokkos::HostSpace>(shape, replicated, views);
  };
  auto sums_ok = [&](const DistributedArray<double, 1, Kokkos::HostSpace>& r) {
    bool ok = true;
    for (const auto& s : r.addressable_shards())
      for (int64_t k = 0; k < 5; ++k) {
        double want = 0;
        for (int64_t d = 0; d < nd; ++d) want += 1.0 + 10.0 * static_cast<double>(d) + static_cast<double>(k);
        ok = ok && s.data(k) == want;
      }
    return ok;
  };
  {
    auto a = operand_of();
    psum(a, "i", a);
    CHECK(all_ok(sums_ok(a)));
  }
  {
    auto a = operand_of();
    std::vector<View> rotated;
    const auto& shards = a.addressable_shards();
    for (std::size_t j = 0; j < shards.size(); ++j) rotated.push_back(shards[(j + 1) % shards.size()].data);
    auto out = make_array_from_single_device_arrays<double, 1, Kokkos::HostSpace>(shape, replicated, rotated);
    psum(a, "i", out);
    CHECK(all_ok(sums_ok(out)));
  }
  {
    auto a = operand_of();
    std::vector<View> some;
    const auto& shards = a.addressable_shards();
    for (std::size_t j = 0; j < shards.size(); ++j)
      some.push_back(j == 0 ? shards[shards.size() - 1].data : View("fresh", 5));
    auto out = make_array_from_single_device_arrays<double, 1, Kokkos::HostSpace>(shape, replicated, some);
    psum(a, "i", out);
    CHECK(all_ok(sums_ok(out)));
  }
}

// The movement collectives into a kept output that shares blocks with their operand (the operand itself, its blocks
// in another order, or one of them beside fresh ones) move the operand as it was, as the allocating form does: a
// cyclic shift into the operand itself once returned the last block everywhere.
TEST_CASE("ppermute and all_to_all into an output that shares blocks with their operand move the operand as it was") {
  const int64_t nd = device_count();
  const NamedSharding by_i(make_mesh({nd}, {"i"}), P("i"));
  const Shape shape{2 * nd * nd};
  using Array = DistributedArray<double, 1, Kokkos::HostSpace>;
  using View = detail::ShardView<double, 1, Kokkos::HostSpace>;
  std::vector<std::pair<int, int>> shift;
  for (int d = 0; d < static_cast<int>(nd); ++d) shift.emplace_back(d, (d + 1) % static_cast<int>(nd));
  auto aliased = [&](const Array& a, int form) {  // 0: a itself, 1: a's blocks rotated, 2: one block, fresh others
    if (form == 0) return a;
    std::vector<View> views;
    const auto& shards = a.addressable_shards();
    for (std::size_t j = 0; j < shards.size(); ++j)
      views.push_back(form == 1 ? shards[(j + 1) % shards.size()].data
                      : j == 0  ? shards[shards.size() - 1].data
                                : View("fresh", shards[j].data.extent(0)));
    return make_array_from_single_device_arrays<double, 1, Kokkos::HostSpace>(shape, by_i, views);
  };
  std::vector<std::pair<int, int>> partial(shift.begin() + 1, shift.end());  // no source for device 1 (0 if alone)
  for (int trial = 0; trial < 6; ++trial) {
    const int form = trial % 3;
    const bool device_path = trial >= 3;
    CAPTURE(form, device_path);
    std::optional<detail::StageAsIfOnDevice> staged;
    if (device_path) staged.emplace();
    for (const auto& perm : {shift, partial}) {
      auto a = iota<double, 1, Kokkos::HostSpace>(shape, by_i);
      const std::vector<double> want = process_allgather(ppermute(a, "i", perm));
      auto out = aliased(a, form);
      ppermute(a, "i", perm, out);
      CHECK(all_ok(process_allgather(out) == want));
    }
    {
      auto a = iota<double, 1, Kokkos::HostSpace>(shape, by_i);
      const std::vector<double> want = process_allgather(all_to_all(a, "i", 0, 0));
      auto out = aliased(a, form);
      all_to_all(a, "i", 0, 0, out);
      CHECK(all_ok(process_allgather(out) == want));
    }
  }
}

// psum of 1- and 2-byte integers wraps around (as NumPy, jax.lax.psum and darray's own record reduction do) also
// where the payload goes to MPI_Allreduce (above 16 MiB, or above DARRAY_MPI_MAX_MESSAGE_BYTES when the payload is
// over 16 KiB: test_collectives_checked): Open MPI 4.1's AVX operation component adds them with saturation.
template <class T>
bool psum_wraps(int64_t value) {
  const int64_t nd = device_count();
  const NamedSharding replicated(make_mesh({nd}, {"i"}), P());
  const int64_t n = 24 * 1024 + 3;  // above 16 KiB for 1-byte elements
  auto a = full<T, 1, Kokkos::HostSpace>({n}, static_cast<T>(value), replicated);
  const auto want = static_cast<T>(static_cast<uint64_t>(value) * static_cast<uint64_t>(nd));
  const auto r = psum(a, "i");
  bool ok = true;
  for (const auto& s : r.addressable_shards())
    for (int64_t k = 0; k < n; ++k) ok = ok && s.data(k) == want;
  return ok;
}

namespace {

// Doubles of many magnitudes, so sums of three or more of them round differently in another association.
DistributedArray<double, 2> inexact_operand(const Shape& shape, const NamedSharding& s) {
  return make_array_from_callback<double, 2>(shape, s, [&](const Index& box) {
    std::vector<double> v;
    for (int64_t i = box[0].start; i < box[0].stop; ++i)
      for (int64_t j = box[1].start; j < box[1].stop; ++j) {
        const int64_t flat = i * shape[1] + j;
        v.push_back(
            std::ldexp(std::sin(0.37 * static_cast<double>(flat) + 1.0), static_cast<int>((flat * 13) % 41) - 20));
      }
    return v;
  });
}

// Every block of r equal bit for bit to every other block of the same box (its replicas), on every process: each
// device's block is hashed by its process, the hashes are summed over the processes (one owner per device) and
// compared box by box. Collective.
template <class T, int N>
std::string replicas_differ(const DistributedArray<T, N>& r) {
  const auto& devs = r.sharding().mesh().devices();
  std::vector<std::uint64_t> hash(devs.size(), 0);
  for (const auto& s : r.addressable_shards()) {
    std::uint64_t h = 1469598103934665603ull;
    const auto* bytes = reinterpret_cast<const unsigned char*>(s.data.data());
    for (std::size_t b = 0; b < s.data.size() * sizeof(T); ++b) h = (h ^ bytes[b]) * 1099511628211ull;
    for (std::size_t k = 0; k < devs.size(); ++k)
      if (devs[k].id == s.device.id) hash[k] = h;
  }
  MPI_Allreduce(MPI_IN_PLACE, hash.data(), static_cast<int>(hash.size()), MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  for (std::size_t k = 0; k < devs.size(); ++k)
    for (std::size_t j = 0; j < k; ++j)
      if (r.sharding().index(r.shape(), devs[j]) == r.sharding().index(r.shape(), devs[k]) && hash[j] != hash[k]) {
        std::ostringstream err;
        err << "blocks of " << devs[j] << " and " << devs[k] << " (box " << r.sharding().index(r.shape(), devs[k])
            << ") differ";
        return err.str();
      }
  return "";
}

}  // namespace

// Replicas of a reduction's result are equal bit for bit, however the processes hold their axis groups: with mesh
// z=2, y=3 over 3 processes of 2 devices, psum over "y" of an operand replicated along "z" combined group z=0 as
// (p0 + p0) + p1 and group z=1 as p1 + (p2 + p2), so the two replicas of each block differed in their last bits.
TEST_CASE("replicas of psum, psum_scatter and sum along an axis are equal bit for bit however processes split groups") {
  const int64_t nd = device_count();
  std::string err;
  if (nd % 2 == 0 && nd >= 6) {
    const NamedSharding s(make_mesh({2, nd / 2}, {"z", "y"}), P(none, "y"));
    const auto a = inexact_operand({4, 2 * nd}, s);
    err = replicas_differ(psum(a, "y"));
    INFO(err);
    CHECK(all_ok(err.empty()));
  }
  std::mt19937_64 rng(909);
  for (int trial = 0; trial < 40; ++trial) {
    const Draw l = draw_layout<2>(rng);
    const auto axes = random_axes(rng, l.mesh);
    const int64_t n = l.mesh.axis_size(axes[0]);
    const Shape shape = even_shape(rng, l.sharding, 2, 1, n);
    INFO(l.describe(shape) << " over " << Catch::Detail::stringify(axes));
    const auto a = inexact_operand(shape, l.sharding);
    err = replicas_differ(psum(a, axes));
    if (err.empty()) err = replicas_differ(psum_scatter(a, axes[0], 1));
    if (err.empty()) err = replicas_differ(sum(a, 1));
    INFO(err);
    REQUIRE(all_ok(err.empty()));
  }
}

TEST_CASE("psum of 8- and 16-bit integers wraps around whatever the payload's size") {
  CHECK(all_ok(psum_wraps<int8_t>(100)));
  CHECK(all_ok(psum_wraps<uint8_t>(200)));
  CHECK(all_ok(psum_wraps<int16_t>(20000)));
  CHECK(all_ok(psum_wraps<uint16_t>(40000)));
  CHECK(all_ok(psum_wraps<int16_t>(-20000)));
}
