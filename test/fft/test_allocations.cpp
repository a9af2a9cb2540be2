// What a distributed FFT into arrays the caller keeps allocates on the host heap once its plan is built, counted
// through a replaced global operator new: nothing (plan.hpp: "no allocation per transform"), c2c and r2c, both
// directions, both output layouts, on slabs and pencils, so that a time loop's transforms cost no allocation per
// step.
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "counting_new.hpp"
#include "darray/darray.hpp"
#include "mpi_test.hpp"

namespace {

using namespace darray;
using darray::testing::all_ok;
using darray_testing::count_news;

// The meshes of the transforms: a slab over every device, and a 2 x n/2 pencil where the count is even.
std::vector<NamedSharding> input_shardings() {
  const int64_t nd = device_count();
  std::vector<NamedSharding> out{NamedSharding(make_mesh({nd}, {"x"}), P{"x", none, none})};
  if (nd % 2 == 0 && nd > 2) out.emplace_back(make_mesh({2, nd / 2}, {"r", "c"}), P{"r", "c", none});
  return out;
}

}  // namespace

TEST_CASE("transforms into kept arrays allocate nothing once the plan is built") {
  DARRAY_RETURN_UNLESS_NEW_COUNTED();
  const int64_t nd = device_count();
  for (const NamedSharding& sharding : input_shardings())
    for (const fft::OutputLayout layout : {fft::OutputLayout::same, fft::OutputLayout::transposed}) {
      fft::Options options;
      options.output = layout;
      const Shape shape{4 * nd, 2 * nd + 3, 10};  // uneven blocks along the transposed dims
      const fft::Plan<double> c2c(shape, sharding, options);
      const fft::RealPlan<double> r2c(shape, sharding, options);
      const auto x = c2c.allocate_input(), xk = c2c.allocate_output();
      const auto r = r2c.allocate_input();
      const auto rk = r2c.allocate_output();
      for_each_indexed(
          x, KOKKOS_LAMBDA(GlobalIndex<3> i, Kokkos::complex<double> & v) {
            v = Kokkos::complex<double>(static_cast<double>(i[0] + i[1]), static_cast<double>(i[2]));
          });
      for_each_indexed(
          r, KOKKOS_LAMBDA(GlobalIndex<3> i, double& v) { v = static_cast<double>(i[0] * i[1] + i[2]); });
      const auto run = [&] {
        c2c.forward(x, xk);
        c2c.backward(xk, x);
        r2c.forward(r, rk);
        r2c.backward(rk, r);
      };
      run();  // warm-up
      const long news = count_news(3, run);
      INFO(shape_to_string(shape) << " " << sharding.spec().to_string() << " on " << sharding.mesh().to_string() << ", "
                                  << fft::to_string(layout) << " output: " << news
                                  << " operator new calls in 3 rounds of c2c and r2c forward and backward");
      REQUIRE(all_ok(news == 0));
      // They ran: the round trips bring the inputs back (backward normalised).
      const std::vector<Kokkos::complex<double>> gx = process_allgather(x);
      const std::vector<double> gr = process_allgather(r);
      double worst = 0;
      for (int64_t i = 0; i < shape[0]; ++i)
        for (int64_t j = 0; j < shape[1]; ++j)
          for (int64_t k = 0; k < shape[2]; ++k) {
            const auto f = static_cast<std::size_t>((i * shape[1] + j) * shape[2] + k);
            worst = std::max(worst, Kokkos::abs(gx[f] - Kokkos::complex<double>(double(i + j), double(k))));
            worst = std::max(worst, std::abs(gr[f] - double(i * j + k)));
          }
      INFO("worst round-trip error " << worst);
      REQUIRE(all_ok(worst < 1e-9));
    }
}
