// Reductions against serial references on the gathered array, on random layouts (replicated, several axes per
// dim, uneven and empty blocks): whole-array values identical on every process, per-axis results sharded like the
// input without the reduced dim; replicas counted once; NaN and inf as NumPy.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ops_test_util.hpp"

using namespace darray;
using namespace darray::testing;

namespace {

template <class T>
constexpr bool is_real_v = !detail::is_kokkos_complex<T>::value;

// Reference reduction of the gathered array along `ax`: out[o, j] = fold over k of g[o, k, j].
template <class R, class T, class F>
std::vector<R> fold_along(const std::vector<T>& g, const Shape& shape, int ax, R init, F f) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < ax; ++d) outer *= shape[static_cast<std::size_t>(d)];
  for (std::size_t d = static_cast<std::size_t>(ax) + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t len = shape[static_cast<std::size_t>(ax)];
  std::vector<R> out(static_cast<std::size_t>(outer * inner), init);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < len; ++k)
      for (int64_t j = 0; j < inner; ++j) {
        R& r = out[static_cast<std::size_t>(o * inner + j)];
        r = f(r, g[static_cast<std::size_t>((o * len + k) * inner + j)]);
      }
  return out;
}

template <class A>
PartitionSpec spec_without(const A& a, int ax) {
  auto entries = a.sharding().spec().entries();
  if (static_cast<std::size_t>(ax) < entries.size()) entries.erase(entries.begin() + ax);
  return PartitionSpec(entries);
}

template <class T, int N>
void check_reductions(std::mt19937_64& rng) {
  const Layout l = random_layout(rng, N);
  INFO("layout " << l.describe());
  const auto a = random_array<T, N>(l, 3);
  const auto b = random_array<T, N>(l, 4);
  const std::vector<T> ga = process_allgather(a), gb = process_allgather(b);
  const double rtol = tolerance<T>();
  std::string failed;
  auto check = [&](const std::string& what, bool good) {
    if (!good) failed += (failed.empty() ? "" : ", ") + what;
  };

  T s(0), d(0);
  double n2 = 0;
  for (std::size_t i = 0; i < ga.size(); ++i) {
    s += ga[i];
    d += ga[i] * gb[i];
    if constexpr (is_real_v<T>)
      n2 += static_cast<double>(ga[i]) * static_cast<double>(ga[i]);
    else
      n2 += static_cast<double>(ga[i].real() * ga[i].real() + ga[i].imag() * ga[i].imag());
  }
  const T got_sum = sum(a);
  check("sum", got_sum == s && same_everywhere(got_sum));
  const T got_dot = dot(a, b);
  check("dot", got_dot == d && same_everywhere(got_dot));
  const auto got_norm = norm(a);
  check("norm", close(static_cast<double>(got_norm), std::sqrt(n2), rtol) && same_everywhere(got_norm));
  const auto got_mean = mean(a);
  using MeanT = std::decay_t<decltype(got_mean)>;
  if (!ga.empty()) {
    MeanT want_mean;
    if constexpr (std::is_integral<T>::value)
      want_mean = static_cast<double>(s) / static_cast<double>(ga.size());
    else
      want_mean = s / T(static_cast<double>(ga.size()));
    check("mean", close(got_mean, want_mean, rtol) && same_everywhere(got_mean));
  }

  // prod over mostly ones (a few -1 and 2), so it stays exact and in range.
  const auto p = map_indexed(
      a, KOKKOS_LAMBDA(GlobalIndex<N> g, T) {
        int64_t f = 0;
        for (int k = 0; k < N; ++k) f = f * 10 + g[k];
        return f % 7 == 3 ? T(-1) : f % 97 == 5 ? T(2) : T(1);
      });
  T pr(1);
  for (const T& x : process_allgather(p)) pr *= x;
  check("prod", prod(p) == pr);

  if constexpr (is_real_v<T>) {
    if (!ga.empty()) {
      T mx = ga[0], mn = ga[0];
      for (const T& x : ga) {
        mx = x > mx ? x : mx;
        mn = x < mn ? x : mn;
      }
      check("max", max(a) == mx && same_everywhere(max(a)));
      check("min", min(a) == mn);
    }
  }

  // Along every axis, negative spellings too.
  if constexpr (N >= 1) {
    for (int ax = 0; ax < N; ++ax) {
      const std::string at = " along " + std::to_string(ax);
      Shape rshape = l.shape;
      rshape.erase(rshape.begin() + ax);
      const NamedSharding rs(l.sharding.mesh(), spec_without(a, ax));
      const auto sa = sum(a, ax - (ax % 2 ? N : 0));
      check("sum" + at + " layout", sa.shape() == rshape && sa.sharding() == rs);
      check("sum" + at, blocks_equal(sa, fold_along<T>(ga, l.shape, ax, T(0), [](T r, T x) { return r + x; })));
      const auto ma = mean(a, ax);
      using R = typename std::decay_t<decltype(ma)>::value_type;
      const double len = static_cast<double>(l.shape[static_cast<std::size_t>(ax)]);
      auto want = fold_along<R>(ga, l.shape, ax, R(0), [](R r, T x) { return r + R(x); });
      for (auto& w : want) w = w / R(len > 0 ? len : std::numeric_limits<double>::quiet_NaN());
      check("mean" + at, ma.sharding() == rs && blocks_equal(ma, want, rtol));
      if constexpr (is_real_v<T>) {
        if (len > 0) {
          const T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
          check("max" + at,
                blocks_equal(max(a, ax), fold_along<T>(ga, l.shape, ax, lo, [](T r, T x) { return x > r ? x : r; })) &&
                    max(a, ax).sharding() == rs);
          check("min" + at,
                blocks_equal(min(a, ax), fold_along<T>(ga, l.shape, ax, hi, [](T r, T x) { return x < r ? x : r; })));
        }
      }
    }
  }
  INFO("failed: " << failed);
  REQUIRE(all_ok(failed.empty()));
}

template <class T>
void check_all_ranks(int rounds) {
  std::mt19937_64 rng(99);
  for (int r = 0; r < rounds; ++r) {
    check_reductions<T, 0>(rng);
    check_reductions<T, 1>(rng);
    check_reductions<T, 2>(rng);
    check_reductions<T, 3>(rng);
  }
}

// A 2-D mesh of every device, as close to square as the count allows.
Mesh mesh_2d() {
  const int n = device_count();
  int r = 1;
  for (int k = 1; k * k <= n; ++k)
    if (n % k == 0) r = k;
  return make_mesh({r, n / r}, {"x", "y"});
}

}  // namespace

TEMPLATE_TEST_CASE("reductions match the serial reference on random layouts", "[ops]", float, double, int32_t, int64_t,
                   Kokkos::complex<float>, Kokkos::complex<double>) {
  check_all_ranks<TestType>(6);
}

TEST_CASE("replicated blocks count once: the sum of ones P('x', None) is the element count") {
  const Mesh mesh = mesh_2d();
  const auto ones = full<float, 2>({8, 12}, 1.0f, NamedSharding(mesh, P("x", none)));
  const auto rep = full<int64_t, 3>({3, 5, 2}, 2, NamedSharding(mesh, P()));
  REQUIRE(all_ok(sum(ones) == 96.0f && mean(ones) == 1.0f && sum(rep) == 60 && prod(rep) == (int64_t{1} << 30)));
  const auto col = sum(ones, 0);  // shape (12,), replicated: every device holds all twelve 8s
  REQUIRE(all_ok(col.shape() == Shape{12} && blocks_equal(col, std::vector<float>(12, 8.0f))));
}

TEST_CASE("integer sums stay in the element type; integer means are double") {
  const Mesh mesh = mesh_2d();
  const auto a = iota<int32_t, 2>({7, 9}, NamedSharding(mesh, P("y", "x")));
  const int32_t s = sum(a);
  const double m = mean(a);
  const auto ma = mean(a, 1);
  static_assert(std::is_same<decltype(ma)::value_type, double>::value, "mean of int32 along an axis is double");
  std::vector<double> want;
  for (int i = 0; i < 7; ++i) want.push_back(9.0 * i + 4.0);
  REQUIRE(all_ok(s == 62 * 63 / 2 && m == 31.0 && blocks_equal(ma, want)));
}

TEST_CASE("NaN propagates through sum, min and max (whole and along an axis); inf as IEEE") {
  const Mesh mesh = mesh_2d();
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (const auto& spec : {P("x", "y"), P(none, axes("y", "x")), P(), P("y")}) {
    INFO("spec " << spec.to_string());
    const NamedSharding s(mesh, spec);
    // NaN at (4, 2), +inf at (1, 3), -inf at (5, 0) of a 6 x 5 array of small numbers.
    const auto a = map_indexed(
        zeros<double, 2>({6, 5}, s), KOKKOS_LAMBDA(GlobalIndex<2> g, double) {
          if (g[0] == 4 && g[1] == 2) return nan;
          if (g[0] == 1 && g[1] == 3) return inf;
          if (g[0] == 5 && g[1] == 0) return -inf;
          return double(g[0] - g[1]);
        });
    bool ok = std::isnan(sum(a)) && std::isnan(max(a)) && std::isnan(min(a)) && std::isnan(mean(a));
    const auto mx = process_allgather(max(a, 0));  // per column: NaN in column 2, inf in column 3
    const auto mn = process_allgather(min(a, 0));
    const auto sx = process_allgather(sum(a, 1));  // per row
    ok = ok && mx.size() == 5 && mx[0] == 4 && mx[1] == 4 && std::isnan(mx[2]) && mx[3] == inf && mx[4] == 1;
    ok = ok && mn.size() == 5 && mn[0] == -inf && mn[1] == -1 && std::isnan(mn[2]) && mn[3] == -3 && mn[4] == -4;
    ok = ok && sx.size() == 6 && sx[0] == -10 && sx[1] == inf && std::isnan(sx[4]) && sx[5] == -inf;
    // Without the NaN: only infinities.
    const auto b = map(
        a, KOKKOS_LAMBDA(double x) { return x != x ? 0.0 : x; });
    ok = ok && max(b) == inf && min(b) == -inf && std::isnan(sum(b));  // inf + -inf
    REQUIRE(all_ok(ok));
  }
}

TEST_CASE("reductions of empty arrays: sum 0, mean NaN, min and max are errors naming the shape") {
  const Mesh mesh = mesh_2d();
  const auto e = zeros<double, 2>({0, 4}, NamedSharding(mesh, P("x", "y")));
  REQUIRE(all_ok(sum(e) == 0.0 && prod(e) == 1.0 && std::isnan(mean(e)) && norm(e) == 0.0));
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, max(e), "darray::max", "zero-size array of shape (0, 4)");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, min(e, 0), "darray::min", "axis 0 of shape (0, 4) has length 0");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, sum(e, 2), "darray::sum", "axis 2 is out of bounds", "-2 .. 1");
  const auto s1 = sum(e, 1);                      // shape (0,)
  const auto m0 = process_allgather(mean(e, 0));  // four NaNs
  bool ok = s1.shape() == Shape{0} && m0.size() == 4;
  for (double v : m0) ok = ok && std::isnan(v);
  REQUIRE(all_ok(ok));
}

TEST_CASE("complex reductions: sum, prod, mean and dot without conjugation, norm real") {
  using C = Kokkos::complex<double>;
  const int n = device_count();
  const Mesh mesh = make_mesh({n}, {"x"});
  const auto z = map_indexed(
      zeros<C, 1>({4}, NamedSharding(mesh, P("x"))),
      KOKKOS_LAMBDA(GlobalIndex<1> g, C) { return C(double(g[0]), 1.0); });
  // z = [i, 1+i, 2+i, 3+i]
  const C s = sum(z), p = prod(z), d = dot(z, z), m = mean(z);
  const double nz = norm(z);
  bool ok = s == C(6, 4) && m == C(1.5, 1) && nz == std::sqrt(14.0 + 4.0);
  ok = ok && p == C(0, 1) * C(1, 1) * C(2, 1) * C(3, 1);
  ok = ok && d == C(-1, 0) + C(0, 2) + C(3, 4) + C(8, 6);  // sum z^2, no conjugate (numpy.dot)
  REQUIRE(all_ok(ok));
}
