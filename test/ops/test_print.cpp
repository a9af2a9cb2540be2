// to_string / operator<< against NumPy's str() of the same arrays (expected texts printed by NumPy 1.24), on
// sharded and replicated layouts; print_in_process_order.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "ops_test_util.hpp"

using namespace darray;
using namespace darray::testing;

namespace {

template <class T, int N>
DistributedArray<T, N> from_host(const std::vector<T>& g, const Shape& shape, const NamedSharding& s) {
  return make_array_from_callback<T, N>(shape, s, [&](const Index& box) {
    std::vector<T> out;
    const int64_t n = volume(box);
    for (int64_t k = 0; k < n; ++k) {
      const auto c = unravel(k, box_shape(box));
      int64_t flat = 0;
      for (std::size_t d = 0; d < c.size(); ++d) flat = flat * shape[d] + box[d].start + c[d];
      out.push_back(g[static_cast<std::size_t>(flat)]);
    }
    return out;
  });
}

std::vector<NamedSharding> layouts(int rank) {
  const int n = device_count();
  int r = 1;
  for (int k = 1; k * k <= n; ++k)
    if (n % k == 0) r = k;
  const Mesh m1 = make_mesh({n}, {"x"}), m2 = make_mesh({r, n / r}, {"a", "b"});
  std::vector<NamedSharding> out{NamedSharding(m1, P()), NamedSharding(m2, P())};
  if (rank == 1) out.push_back(NamedSharding(m2, P(axes("b", "a"))));
  if (rank >= 1) out.push_back(NamedSharding(m1, P("x")));
  if (rank >= 2) out.push_back(NamedSharding(m2, P("b", "a")));
  if (rank >= 2) out.push_back(NamedSharding(m2, P(none, axes("a", "b"))));
  return out;
}

template <class T, int N>
void check_text(const std::vector<T>& g, const Shape& shape, const std::string& want) {
  for (const auto& s : layouts(N)) {
    const auto a = from_host<T, N>(g, shape, s);
    const std::string got = to_string(a);
    std::ostringstream os;
    os << a;
    INFO("layout " << s.spec().to_string() << "\ngot:\n" << got << "\nwant:\n" << want);
    REQUIRE(all_ok(got == want && os.str() == want));
  }
}

template <class T>
std::vector<T> arange(int64_t n, double scale = 1.0, double offset = 0.0) {
  std::vector<T> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<T>(static_cast<double>(i) * scale + offset));
  return v;
}

}  // namespace

TEST_CASE("to_string prints as NumPy's str(): whole arrays") {
  check_text<double, 2>(arange<double>(12), {3, 4}, "[[ 0.  1.  2.  3.]\n [ 4.  5.  6.  7.]\n [ 8.  9. 10. 11.]]");
  check_text<double, 1>(arange<double>(30), {30},
                        "[ 0.  1.  2.  3.  4.  5.  6.  7.  8.  9. 10. 11. 12. 13. 14. 15. 16. 17.\n 18. 19. 20. 21. "
                        "22. 23. 24. 25. 26. 27. 28. 29.]");
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  check_text<double, 1>({0.5, nan, -inf, 2.25}, {4}, "[0.5   nan -inf 2.25]");
  check_text<double, 1>({1e-5, 1.0, 123.5}, {3}, "[1.000e-05 1.000e+00 1.235e+02]");
  check_text<double, 2>({1e9, -2.5, 3.0, 0.0}, {2, 2}, "[[ 1.0e+09 -2.5e+00]\n [ 3.0e+00  0.0e+00]]");
  check_text<float, 1>({0.0f, 1.0f / 3, 2.0f / 3, 1.0f, 4.0f / 3}, {5},
                       "[0.         0.33333334 0.6666667  1.         1.3333334 ]");
  using C = Kokkos::complex<double>;
  check_text<C, 1>({C(1, 2), C(-0.5, -1), C(3, 0.25)}, {3}, "[ 1. +2.j   -0.5-1.j    3. +0.25j]");
  check_text<double, 0>({2.0}, {}, "2.0");
  check_text<double, 0>({1e-5}, {}, "1e-05");
  check_text<C, 0>({C(1, 2)}, {}, "(1+2j)");
  check_text<int64_t, 0>({7}, {}, "7");
  check_text<double, 2>({}, {0, 3}, "[]");
}

TEST_CASE("to_string summarises above 1000 elements as NumPy does") {
  check_text<int64_t, 2>(arange<int64_t>(2000), {40, 50},
                         "[[   0    1    2 ...   47   48   49]\n [  50   51   52 ...   97   98   99]\n [ 100  101  "
                         "102 ...  147  148  149]\n ...\n [1850 1851 1852 ... 1897 1898 1899]\n [1900 1901 1902 ... "
                         "1947 1948 1949]\n [1950 1951 1952 ... 1997 1998 1999]]");
  check_text<int32_t, 1>(arange<int32_t>(1001, 1.0, -500), {1001}, "[-500 -499 -498 ...  498  499  500]");
  // 3-D: blank lines between the 2-D blocks, "..." rows and blocks, wrapped rows (first and last lines checked
  // against NumPy's print of np.arange(3000.).reshape(10, 15, 20) / 7).
  const std::vector<double> g = arange<double>(3000, 1.0 / 7);
  for (const auto& s : layouts(3)) {
    const std::string got = to_string(from_host<double, 3>(g, {10, 15, 20}, s));
    const std::string head =
        "[[[0.00000000e+00 1.42857143e-01 2.85714286e-01 ... 2.42857143e+00\n   2.57142857e+00 2.71428571e+00]\n  "
        "[2.85714286e+00 3.00000000e+00 3.14285714e+00 ... 5.28571429e+00\n";
    const std::string tail =
        "  [4.25714286e+02 4.25857143e+02 4.26000000e+02 ... 4.28142857e+02\n   4.28285714e+02 4.28428571e+02]]]";
    const bool ok = got.size() == 3689 && got.compare(0, head.size(), head) == 0 &&
                    got.compare(got.size() - tail.size(), tail.size(), tail) == 0 &&
                    got.find("]]\n\n ...\n\n [[3.00000000e+02") != std::string::npos;
    INFO(got);
    REQUIRE(all_ok(ok));
  }
}

TEST_CASE("print_in_process_order writes every process's text on process 0, in order") {
  std::ostringstream os;
  print_in_process_order("process " + std::to_string(process_index()) + "\n", os);
  std::string want;
  for (int p = 0; p < process_count(); ++p) want += "process " + std::to_string(p) + "\n";
  REQUIRE(all_ok(process_index() == 0 ? os.str() == want : os.str().empty()));
  int same = 0;
  MPI_Comm_compare(mpi_comm(), MPI_COMM_WORLD, &same);
  REQUIRE(all_ok(same == MPI_CONGRUENT));
}
