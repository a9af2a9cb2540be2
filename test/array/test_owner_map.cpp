// OwnerMap: for random meshes (shuffled device orders too), specs and uneven shapes, every element maps to the
// device whose block holds it with replica id 0, on the host and inside a kernel; bad elements are named.
#include <Kokkos_Core.hpp>
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <vector>

#include "darray/array/owner_map.hpp"
#include "darray/runtime/device.hpp"
#include "darray/sharding/named_sharding.hpp"
#include "mpi_test.hpp"
#include "random_layouts.hpp"

using darray::Device;
using darray::Index;
using darray::Mesh;
using darray::NamedSharding;
using darray::OwnerMap;
using darray::Shape;

namespace {

// The device a brute-force search finds: the one whose box holds e and whose replica id is 0.
int brute_owner(const NamedSharding& s, const Shape& shape, const std::vector<int64_t>& e) {
  for (const auto& [dev, box] : s.devices_indices_map(shape)) {
    bool in = s.replica_id(dev) == 0;
    for (std::size_t d = 0; in && d < e.size(); ++d) in = box[d].start <= e[d] && e[d] < box[d].stop;
    if (in) return dev.id;
  }
  return -1;
}

}  // namespace

TEST_CASE("OwnerMap: every element of random 3-D layouts, host and kernel") {
  std::mt19937_64 rng(20);
  for (int trial = 0; trial < 40; ++trial) {
    const int ndev = 1 + static_cast<int>(rng() % 8);
    const Mesh mesh = darray::testing::random_mesh(rng, darray::make_device_table({ndev}));
    const NamedSharding s(mesh, darray::testing::random_spec(rng, mesh.axis_names(), 3));
    const Shape shape{1 + static_cast<int64_t>(rng() % 9), 1 + static_cast<int64_t>(rng() % 7),
                      static_cast<int64_t>(rng() % 6)};  // dim 2 may be empty: then there is no element
    const OwnerMap<3> owner(shape, s);
    const int64_t n = shape[0] * shape[1] * shape[2];
    std::vector<int> expected;
    for (int64_t i = 0; i < shape[0]; ++i)
      for (int64_t j = 0; j < shape[1]; ++j)
        for (int64_t k = 0; k < shape[2]; ++k) {
          const std::vector<int64_t> e{i, j, k};
          expected.push_back(brute_owner(s, shape, e));
          REQUIRE(owner.device_id(e) == expected.back());
        }
    Kokkos::View<int*> got("got", static_cast<std::size_t>(n));
    const int64_t n1 = shape[1], n2 = shape[2];
    Kokkos::parallel_for(
        "owner", n, KOKKOS_LAMBDA(int64_t f) {
          const int64_t e[3] = {f / (n1 * n2), f / n2 % n1, f % n2};
          got(f) = owner(e);
        });
    auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), got);
    for (int64_t f = 0; f < n; ++f) REQUIRE(host(f) == expected[static_cast<std::size_t>(f)]);
  }
}

TEST_CASE("OwnerMap: a slab of 8 devices and the (4,2) pencil, by hand") {
  const auto devices = darray::make_device_table({8});
  const NamedSharding slab(Mesh(devices, {8}, {"x"}), darray::P("x", darray::none, darray::none));
  const OwnerMap<3> a(Shape{20, 4, 4}, slab);  // blocks of 3 rows, then 2: rows 0-2, 3-5, 6-8, 9-11, 12-13, ...
  CHECK(a.device_id({0, 3, 3}) == 0);
  CHECK(a.device_id({11, 0, 0}) == 3);
  CHECK(a.device_id({12, 0, 0}) == 4);
  CHECK(a.device_id({19, 1, 2}) == 7);
  const NamedSharding pencil(Mesh(devices, {4, 2}, {"r", "c"}), darray::P("r", "c", darray::none));
  const OwnerMap<3> b(Shape{8, 8, 3}, pencil);
  CHECK(b.device_id({0, 0, 0}) == 0);
  CHECK(b.device_id({0, 4, 0}) == 1);
  CHECK(b.device_id({2, 7, 2}) == 3);
  CHECK(b.device_id({7, 3, 1}) == 6);
  // Replicated along "c": replica 0 is the device with c = 0.
  const NamedSharding rows(Mesh(devices, {4, 2}, {"r", "c"}), darray::P("r"));
  const OwnerMap<2> c(Shape{8, 5}, rows);
  CHECK(c.device_id({5, 4}) == 4);
}

TEST_CASE("OwnerMap: bad shapes and elements are named") {
  const auto devices = darray::make_device_table({2});
  const NamedSharding s(Mesh(devices, {2}, {"x"}), darray::P("x"));
  CHECK_THROWS_WITH(OwnerMap<3>(Shape{4, 4}, s), Catch::Contains("shape (4, 4) has rank 2; expected rank 3"));
  const OwnerMap<2> m(Shape{4, 3}, s);
  CHECK_THROWS_WITH(m.device_id({4, 0}),
                    Catch::Contains("element (4, 0) is outside the array: coordinate 0 is 4; expected 0 <= it < 4"));
  CHECK_THROWS_WITH(m.device_id({0, -1}), Catch::Contains("coordinate 1 is -1"));
  CHECK_THROWS_WITH(m.device_id({1}), Catch::Contains("has 1 coordinates; expected 2"));
}
