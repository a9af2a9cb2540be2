// DistributedArray metadata and the local factories (zeros, full, iota), over ranks 1-4, every element type and
// layouts with uneven and empty shards.
#include <catch2/catch.hpp>
#include <sstream>

#include "array_test_util.hpp"

using namespace darray;
using darray::testing::all_ok;

namespace {

template <class T, int N>
void check_factories_at_rank(int random_count, uint64_t seed) {
  for (const auto& layout : darray::testing::test_layouts<N>(random_count, seed)) {
    INFO(layout.describe() << " dtype " << dtype_name<T>());
    const NamedSharding s = layout.sharding();
    const auto a = iota<T, N>(layout.shape, s);
    std::string err = darray::testing::check_shards(a, [](int64_t f) { return darray::testing::expected_value<T>(f); });
    INFO("iota: " << err);
    REQUIRE(all_ok(err.empty()));

    const auto z = zeros<T, N>(layout.shape, s);
    err = darray::testing::check_shards(z, [](int64_t) { return T(0); });
    INFO("zeros: " << err);
    REQUIRE(all_ok(err.empty()));

    const T seven = darray::testing::expected_value<T>(7);
    const auto f = full<T, N>(layout.shape, seven, s);
    err = darray::testing::check_shards(f, [&](int64_t) { return seven; });
    INFO("full: " << err);
    REQUIRE(all_ok(err.empty()));
  }
}

}  // namespace

TEST_CASE("iota, zeros and full fill every element of every shard, ranks 1-4") {
  check_factories_at_rank<float, 1>(12, 1);
  check_factories_at_rank<double, 2>(12, 2);
  check_factories_at_rank<int32_t, 3>(8, 3);
  check_factories_at_rank<int64_t, 4>(6, 4);
  check_factories_at_rank<Kokkos::complex<float>, 2>(4, 5);
  check_factories_at_rank<Kokkos::complex<double>, 3>(4, 6);
}

TEST_CASE("DistributedArray metadata: shape, sharding, dtype, shards") {
  const int64_t n = device_count();
  const NamedSharding s(make_mesh({n}, {"x"}), P{"x"});
  const Shape shape{2 * n + 1, 3};
  const auto a = iota<float, 2>(shape, s);
  bool ok = a.shape() == shape && a.sharding() == s && a.size() == (2 * n + 1) * 3 &&
            a.nbytes() == static_cast<std::size_t>(a.size()) * sizeof(float) && a.dtype() == "float32";
  ok = ok && static_cast<int>(a.addressable_shards().size()) == local_device_count();
  ok = ok && a.is_fully_addressable() == (process_count() == 1) && a.is_fully_replicated() == (n == 1);
  const auto global = a.global_shards();
  ok = ok && static_cast<int64_t>(global.size()) == n;
  int with_data = 0;
  for (std::size_t i = 0; i < global.size(); ++i) {
    const auto& g = global[i];
    ok = ok && g.device == s.mesh().devices()[i] && g.index == s.index(shape, g.device) && g.replica_id == 0;
    const bool local = g.device.process_index == process_index();
    // Remote shards carry a default-constructed view; local ones the very view of addressable_shards().
    ok = ok && (local ? g.data.use_count() > 0 : g.data.use_count() == 0 && g.data.data() == nullptr);
    if (local) {
      ++with_data;
      ok = ok && g.data.data() == a.addressable_data(static_cast<std::size_t>(g.device.local_index)).data();
    }
  }
  ok = ok && with_data == local_device_count();
  REQUIRE(all_ok(ok));
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, a.addressable_data(99), "shard 99 requested");
}

TEST_CASE("dtype names follow NumPy") {
  CHECK(dtype_name<float>() == "float32");
  CHECK(dtype_name<double>() == "float64");
  CHECK(dtype_name<int32_t>() == "int32");
  CHECK(dtype_name<int64_t>() == "int64");
  CHECK(dtype_name<uint8_t>() == "uint8");
  CHECK(dtype_name<Kokkos::complex<float>>() == "complex64");
  CHECK(dtype_name<Kokkos::complex<double>>() == "complex128");
  CHECK(dtype_name<const double>() == "float64");
  CHECK(iota_value<Kokkos::complex<double>>(5) == Kokkos::complex<double>(5.0, 0.0));
}

TEST_CASE("shards print like JAX's global_shards") {
  const int64_t n = device_count();
  const NamedSharding s(make_mesh({n}, {"x"}), P{"x"});
  const auto a = zeros<double, 2>({4 * n, 2}, s);
  bool ok = true;
  for (const auto& g : a.global_shards()) {
    std::ostringstream os;
    os << g;
    std::ostringstream want;
    want << "Shard(device=" << g.device << ", index=(" << 4 * g.device.id << ":" << 4 * g.device.id + 4
         << ", 0:2), replica_id=0, data=" << (g.device.process_index == process_index() ? "float64[4, 2])" : "None)");
    ok = ok && os.str() == want.str();
    INFO(os.str() << " vs " << want.str());
  }
  REQUIRE(all_ok(ok));
}

TEST_CASE("rank-0 arrays hold one element on every device") {
  const NamedSharding s(make_mesh({device_count()}, {"x"}), P{});
  const auto a = full<int32_t, 0>({}, 42, s);
  bool ok = static_cast<int>(a.addressable_shards().size()) == local_device_count();
  for (const auto& sh : a.addressable_shards())
    ok = ok && darray::testing::shard_to_host(sh.data) == std::vector<int32_t>{42};
  REQUIRE(all_ok(ok));
  const auto g = process_allgather(iota<double, 0>({}, s));
  REQUIRE(all_ok(g.size() == 1 && g[0] == 0.0));
}
