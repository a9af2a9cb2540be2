// Element-wise operations, *_like factories, copy and astype against serial references on the gathered array, on
// random layouts (replicated, several axes per dim, uneven and empty blocks) of rank 0 to 3.
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <vector>

#include "ops_test_util.hpp"

using namespace darray;
using namespace darray::testing;

namespace {

template <class T, int N>
void check_elementwise(std::mt19937_64& rng) {
  const Layout l = random_layout(rng, N);
  INFO("layout " << l.describe());
  const auto a = random_array<T, N>(l, 1);
  const auto b = random_array<T, N>(l, 2);
  const std::vector<T> ga = process_allgather(a), gb = process_allgather(b);
  const std::size_t n = ga.size();
  auto ref = [&](auto f) {
    std::vector<T> out(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = f(ga[i], gb[i]);
    return out;
  };
  std::string failed;  // the names of the checks that failed, for the report
  auto check = [&](const char* what, bool good) {
    if (!good) failed += std::string(failed.empty() ? "" : ", ") + what;
  };
  const auto y = map(
      a, KOKKOS_LAMBDA(T x) { return T(2) * x + T(1); });
  check("layout", y.sharding() == a.sharding() && y.shape() == a.shape());
  check("2x+1", blocks_equal(y, ref([](T x, T) { return T(2) * x + T(1); })));
  check("map2", blocks_equal(map(
                                 a, b, KOKKOS_LAMBDA(T x, T z) { return x * z - z; }),
                             ref([](T x, T z) { return x * z - z; })));
  check("a+b", blocks_equal(a + b, ref([](T x, T z) { return x + z; })));
  check("a-b", blocks_equal(a - b, ref([](T x, T z) { return x - z; })));
  check("a*b", blocks_equal(a * b, ref([](T x, T z) { return x * z; })));
  check("a+3", blocks_equal(a + 3, ref([](T x, T) { return x + T(3); })));
  check("3-a", blocks_equal(3 - a, ref([](T x, T) { return T(3) - x; })));
  check("a*2", blocks_equal(a * 2, ref([](T x, T) { return x * T(2); })));
  check("2*a", blocks_equal(2 * a, ref([](T x, T) { return T(2) * x; })));
  check("-a", blocks_equal(-a, ref([](T x, T) { return -x; })));
  // Division by a divisor that is never zero; complex division may contract to FMAs differently in the kernel.
  const auto d = map(
      b, KOKKOS_LAMBDA(T z) { return z * z + T(1); });
  const std::vector<T> gd = process_allgather(d);
  std::vector<T> q(n);
  for (std::size_t i = 0; i < n; ++i) q[i] = ga[i] / gd[i];
  check("a/d", blocks_equal(a / d, q, tolerance<T>()));
  for (std::size_t i = 0; i < n; ++i) q[i] = ga[i] / T(4);
  check("a/4", blocks_equal(a / 4, q, tolerance<T>()));
  for (std::size_t i = 0; i < n; ++i) q[i] = T(60) / gd[i];
  check("60/d", blocks_equal(60 / d, q, tolerance<T>()));

  // map_indexed sees the global index: value + flat index (mixed radix over the global shape).
  const auto mi = map_indexed(
      a, KOKKOS_LAMBDA(GlobalIndex<N> g, T x) {
        int64_t flat = 0;
        for (int k = 0; k < N; ++k) flat = flat * 10 + g[k];
        return x + T(flat);
      });
  std::vector<T> want(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = unravel(static_cast<int64_t>(i), l.shape);
    int64_t flat = 0;
    for (auto v : c) flat = flat * 10 + v;
    want[i] = ga[i] + T(flat);
  }
  check("map_indexed", blocks_equal(mi, want));

  // copy is deep; plain copies share blocks.
  const auto c = copy(a);
  const auto shared = a;
  for_each(
      shared, KOKKOS_LAMBDA(T & x) { x = x + T(1); });
  check("copy, for_each", blocks_equal(c, ga) && blocks_equal(a, ref([](T x, T) { return x + T(1); })));
  for_each_indexed(
      c, KOKKOS_LAMBDA(GlobalIndex<N> g, T & x) { x = N > 0 ? T(g[N > 0 ? N - 1 : 0]) : T(7); });
  for (std::size_t i = 0; i < n; ++i) want[i] = N > 0 ? T(unravel(static_cast<int64_t>(i), l.shape).back()) : T(7);
  check("for_each_indexed", blocks_equal(c, want));

  // Factories.
  check("zeros_like", blocks_equal(zeros_like(a), std::vector<T>(n, T(0))));
  check("full_like", blocks_equal(full_like(a, 5), std::vector<T>(n, T(5))));
  const auto e = empty_like(a);
  check("empty_like", e.sharding() == a.sharding() && e.shape() == a.shape());
  const auto as_double = astype<double>(b);
  const auto as_int = astype<int32_t>(b);
  std::vector<double> wd(n);
  std::vector<int32_t> wi(n);
  for (std::size_t i = 0; i < n; ++i) {
    if constexpr (detail::is_kokkos_complex<T>::value) {
      wd[i] = static_cast<double>(gb[i].real());
      wi[i] = static_cast<int32_t>(gb[i].real());
    } else {
      wd[i] = static_cast<double>(gb[i]);
      wi[i] = static_cast<int32_t>(gb[i]);
    }
  }
  check("astype", blocks_equal(as_double, wd) && blocks_equal(as_int, wi));
  const auto zc = astype<Kokkos::complex<double>>(b);
  std::vector<Kokkos::complex<double>> wz(n);
  for (std::size_t i = 0; i < n; ++i) {
    if constexpr (detail::is_kokkos_complex<T>::value)
      wz[i] = Kokkos::complex<double>(gb[i].real(), gb[i].imag());
    else
      wz[i] = Kokkos::complex<double>(static_cast<double>(gb[i]));
  }
  check("astype complex", blocks_equal(zc, wz));
  INFO("failed: " << failed);
  REQUIRE(all_ok(failed.empty()));
}

template <class T>
void check_all_ranks(int rounds) {
  std::mt19937_64 rng(1234);
  for (int r = 0; r < rounds; ++r) {
    check_elementwise<T, 0>(rng);
    check_elementwise<T, 1>(rng);
    check_elementwise<T, 2>(rng);
    check_elementwise<T, 3>(rng);
  }
}

}  // namespace

TEMPLATE_TEST_CASE("element-wise operations match the serial reference on random layouts", "[ops]", float, double,
                   int32_t, int64_t, Kokkos::complex<float>, Kokkos::complex<double>) {
  check_all_ranks<TestType>(6);
}

TEST_CASE("map of two arrays with different layouts names both") {
  const int n = device_count();
  const Mesh mesh = make_mesh({n}, {"x"});
  const auto a = zeros<double, 2>({4, 6}, NamedSharding(mesh, P("x")));
  const auto b = zeros<double, 2>({4, 6}, NamedSharding(mesh, P(none, "x")));
  const auto c = zeros<double, 2>({4, 5}, NamedSharding(mesh, P("x")));
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument,
                            map(
                                a, b, KOKKOS_LAMBDA(double x, double y) { return x + y; }),
                            "darray::map: the operands differ", "PartitionSpec('x')", "PartitionSpec(None, 'x')",
                            "expected the same shape and sharding");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, a + c, "darray::operator+", "shape (4, 6)", "shape (4, 5)");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, dot(a, b), "darray::dot", "PartitionSpec(None, 'x')");
}

TEST_CASE("map changes the element type to what the function returns") {
  const int n = device_count();
  const Mesh mesh = make_mesh({n}, {"x"});
  const auto a = iota<int32_t, 1>({10}, NamedSharding(mesh, P("x")));
  const auto h = map(
      a, KOKKOS_LAMBDA(int32_t x) { return 0.5 * x; });
  static_assert(std::is_same<decltype(h)::value_type, double>::value, "map returns double here");
  std::vector<double> want;
  for (int i = 0; i < 10; ++i) want.push_back(0.5 * i);
  REQUIRE(all_ok(blocks_equal(h, want)));
}
