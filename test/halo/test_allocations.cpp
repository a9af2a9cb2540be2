// What a halo exchange and a halo accumulation allocate on the host heap once the HaloExchange is built, counted
// through a replaced global operator new: nothing, on host memory and on the device-memory path of the staged test
// hook, so that a time loop's ghost-cell refresh costs no allocation per step.
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "counting_new.hpp"
#include "darray/darray.hpp"
#include "darray/halo/exchange.hpp"
#include "mpi_test.hpp"

namespace {

using namespace darray;
using darray::testing::all_ok;
using darray_testing::count_news;

// A 2-D grid over every device (as a 2 x n/2 mesh where the count is even), periodic along dim 0 and open along
// dim 1, widths 2 and 1; per_device rows of 64 cells each a device.
void require_halo_calls_allocate_nothing(int64_t per_device) {
  const int64_t nd = device_count();
  const Mesh mesh = nd % 2 == 0 ? make_mesh({2, nd / 2}, {"x", "y"}) : make_mesh({nd, 1}, {"x", "y"});
  const NamedSharding sharding(mesh, P{"x", "y"});
  const Shape shape{per_device * mesh.shape()[0], 64 * mesh.shape()[1]};
  const HaloExchange<double, 2> halo(shape, sharding, {2, 1}, {Boundary::periodic, Boundary::open}, -1.0);
  const auto a = iota<double, 2>(shape, sharding);
  const auto padded = halo.pad(a);
  halo.exchange(padded);  // warm-up: buffers and reverse engines made here
  halo.accumulate(padded);
  const long news = count_news(3, [&] {
    halo.exchange(padded);
    halo.accumulate(padded);
  });
  INFO(shape[0] << "x" << shape[1] << " on " << mesh.to_string() << ": " << news
                << " operator new calls in 3 rounds of exchange and accumulate");
  REQUIRE(all_ok(news == 0));
  // They ran: accumulate leaves every halo cell at 0, the first cell of each padded block among them.
  bool zeroed = true;
  for (const auto& shard : padded) {
    const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), shard.data);
    zeroed = zeroed && host(0, 0) == 0.0;
  }
  REQUIRE(all_ok(zeroed));
}

}  // namespace

TEST_CASE("halo exchange and accumulate allocate nothing once the exchange is built") {
  DARRAY_RETURN_UNLESS_NEW_COUNTED();
  for (const int64_t rows : {int64_t(2), int64_t(96)}) require_halo_calls_allocate_nothing(rows);
  const darray::detail::StageAsIfOnDevice device_path;
  for (const int64_t rows : {int64_t(2), int64_t(96)}) require_halo_calls_allocate_nothing(rows);
}
