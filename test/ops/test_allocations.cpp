// What the element-wise calls allocate on the host heap, counted through a replaced global operator new: the in-place
// ones (for_each, for_each_indexed) nothing at all, whatever the block size, so that a time loop of user kernels costs
// no allocation per step (Kokkos 4 allocates in a policy left to choose its chunk size on OpenMP:
// runtime/detail/kokkos_compat.hpp). The functions are functors, not KOKKOS_LAMBDAs: under nvcc those are type-erased
// wrappers that allocate themselves.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <vector>

#include "counting_new.hpp"
#include "darray/darray.hpp"
#include "mpi_test.hpp"

namespace {

using namespace darray;
using darray::testing::all_ok;

using darray_testing::count_news;

struct Twice {
  KOKKOS_INLINE_FUNCTION void operator()(double& x) const { x *= 2; }
};

struct AddIndex {
  KOKKOS_INLINE_FUNCTION void operator()(GlobalIndex<1> i, double& x) const { x += static_cast<double>(i[0]); }
};

}  // namespace

// One element per device (the small calls of a time loop) and 9216 (72 KiB of doubles a block: Kokkos' parallel
// policies above the sizes a host loop takes).
TEST_CASE("in-place element-wise calls allocate nothing") {
  DARRAY_RETURN_UNLESS_NEW_COUNTED();
  const int64_t nd = device_count();
  const NamedSharding by_i(make_mesh({nd}, {"i"}), P{"i"});
  for (const int64_t per_device : {int64_t(1), int64_t(9216)}) {
    const int64_t n = nd * per_device;
    auto a = zeros<double, 1>({n}, by_i);
    for_each(a, Twice{});  // warm-up
    for_each_indexed(a, AddIndex{});
    const long news = count_news(3, [&] {
      for_each(a, Twice{});
      for_each_indexed(a, AddIndex{});
    });
    INFO(per_device << " elements per device: " << news << " operator new calls in 3 rounds of for_each and "
                    << "for_each_indexed");
    REQUIRE(all_ok(news == 0));
    // The calls ran: after i, then 2i + i three times over, every element is 15 i.
    const std::vector<double> got = process_allgather(a);
    bool right = static_cast<int64_t>(got.size()) == n;
    for (int64_t i = 0; right && i < n; ++i) right = got[static_cast<std::size_t>(i)] == 15.0 * static_cast<double>(i);
    REQUIRE(all_ok(right));
  }
}

// The whole-array reductions a time loop's diagnostics call every step (an energy, a residual's norm): the local
// kernel and one reduction across processes, no allocation once warm.
TEST_CASE("whole-array reductions allocate nothing once warm") {
  DARRAY_RETURN_UNLESS_NEW_COUNTED();
  if (!darray::detail::host_accessible_v<DefaultMemorySpace>) {
    // Device memory reduces with Kokkos' parallel_reduce, which in Kokkos 4 makes its fence label a std::string per
    // call (runtime/detail/kokkos_compat.hpp); host memory reduces without it.
    WARN("SKIP: device-memory reductions allocate Kokkos' fence label");
    return;
  }
  const int64_t nd = device_count();
  const NamedSharding by_i(make_mesh({nd}, {"i"}), P{"i"});
  for (const int64_t per_device : {int64_t(1), int64_t(9216)}) {
    const int64_t n = nd * per_device;
    const auto a = iota<double, 1>({n}, by_i);
    double s = 0, m = 0, d = 0, r = 0;
    const auto run = [&] {
      s = sum(a);
      m = max(a);
      d = dot(a, a);
      r = norm(a);
    };
    run();  // warm-up
    const long news = count_news(3, run);
    INFO(per_device << " elements per device: " << news << " operator new calls in 3 rounds of sum, max, dot, norm");
    CHECK(all_ok(news == 0));
    // Sums of integers below 2^53: exact in any order.
    const double last = static_cast<double>(n - 1), squares = last * static_cast<double>(n) * (2 * last + 1) / 6;
    REQUIRE(all_ok(s == last * static_cast<double>(n) / 2 && m == last && d == squares && r == std::sqrt(squares)));
  }
}
