// make_array_from_callback: blocks filled from the callback's host data, the callback asked once per distinct
// local block and never for remote or empty ones, and its mistakes turned into the same error everywhere.
#include <array>
#include <catch2/catch.hpp>
#include <map>

#include "array_test_util.hpp"

using namespace darray;
using darray::testing::all_ok;

namespace {

// The callback of the tests: the block of a row-major "file" whose element f is salted_value(f, seed).
template <class T>
struct BlockLoader {
  Shape shape;
  int64_t seed;
  std::map<std::string, int>* calls;
  std::vector<T> operator()(const Index& index) const {
    ++(*calls)[to_string(index)];
    std::vector<T> out;
    for (int64_t f : darray::testing::global_flat_indices(index, shape))
      out.push_back(darray::testing::salted_value<T>(f, seed));
    return out;
  }
};

template <class T, int N>
void check_callback_at_rank(int random_count, uint64_t seed) {
  for (const auto& layout : darray::testing::test_layouts<N>(random_count, seed)) {
    INFO(layout.describe() << " dtype " << dtype_name<T>());
    const NamedSharding s = layout.sharding();
    std::map<std::string, int> calls;
    const auto a = make_array_from_callback<T, N>(layout.shape, s, BlockLoader<T>{layout.shape, 5, &calls});
    std::string err =
        darray::testing::check_shards(a, [](int64_t f) { return darray::testing::salted_value<T>(f, 5); });
    // Exactly the distinct non-empty blocks of this process were asked for, once each.
    std::map<std::string, int> expected;
    for (const auto& [device, index] : s.addressable_devices_indices_map(layout.shape))
      if (volume(index) > 0) expected[to_string(index)] = 1;
    if (err.empty() && calls != expected)
      err =
          "callback asked for " + std::to_string(calls.size()) + " blocks, expected " + std::to_string(expected.size());
    INFO(err);
    REQUIRE(all_ok(err.empty()));
  }
}

}  // namespace

TEST_CASE("make_array_from_callback fills every shard from its block, ranks 1-4") {
  check_callback_at_rank<double, 1>(10, 11);
  check_callback_at_rank<float, 2>(10, 12);
  check_callback_at_rank<int64_t, 3>(6, 13);
  check_callback_at_rank<Kokkos::complex<double>, 4>(4, 14);
}

TEST_CASE("make_array_from_callback accepts std::array and host views as block data") {
  const int64_t n = device_count();
  const NamedSharding s(make_mesh({n}, {"x"}), P{"x"});
  const Shape shape{2 * n, 2};
  const auto a = make_array_from_callback<int32_t, 2>(shape, s, [&](const Index& index) {
    std::array<int32_t, 4> block{};
    const auto flat = darray::testing::global_flat_indices(index, shape);
    for (std::size_t i = 0; i < 4; ++i) block[i] = static_cast<int32_t>(flat[i]);
    return block;
  });
  std::string err = darray::testing::check_shards(a, [](int64_t f) { return static_cast<int32_t>(f); });
  const auto b = make_array_from_callback<float, 2>(shape, s, [&](const Index& index) {
    Kokkos::View<float**, Kokkos::LayoutRight, Kokkos::HostSpace> block("block", 2, 2);
    const auto flat = darray::testing::global_flat_indices(index, shape);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) block(i, j) = static_cast<float>(flat[static_cast<std::size_t>(2 * i + j)]);
    return block;
  });
  if (err.empty()) err = darray::testing::check_shards(b, [](int64_t f) { return static_cast<float>(f); });
  INFO(err);
  REQUIRE(all_ok(err.empty()));
}

TEST_CASE("replicated blocks are loaded once per process and every replica agrees") {
  // Mesh ("x", "y") with the array sharded along "x" only: the devices along "y" hold replicas.
  const int64_t n = device_count();
  if (n < 2 || n % 2 != 0) return;  // needs a replica axis of size 2
  const NamedSharding s(make_mesh({n / 2, 2}, {"x", "y"}), P{"x"});
  const Shape shape{3 * n / 2 + 1, 3};
  std::map<std::string, int> calls;
  const auto a = make_array_from_callback<double, 2>(shape, s, BlockLoader<double>{shape, 9, &calls});
  bool ok = true;
  for (const auto& kv : calls) ok = ok && kv.second == 1;
  const std::string err = darray::testing::replicas_agree(a);
  INFO(err);
  ok = ok && err.empty() && a.sharding().num_replicas() == 2;
  REQUIRE(all_ok(ok));
}

TEST_CASE("make_array_from_callback errors are raised on every process") {
  const int64_t n = device_count();
  const NamedSharding s(make_mesh({n}, {"x"}), P{"x"});
  const Shape shape{2 * n, 3};
  // Wrong block size on every process.
  DARRAY_REQUIRE_THROWS_ALL(
      InvalidArgument,
      (make_array_from_callback<float, 2>(shape, s, [](const Index&) { return std::vector<float>(5); })),
      "make_array_from_callback", "returned 5 elements for block", "expected 6");
  // Wrong block size on the last process only: the others must throw too (naming the process when there are several).
  const int last = process_count() - 1;
  DARRAY_REQUIRE_THROWS_ALL(
      InvalidArgument,
      (make_array_from_callback<float, 2>(shape, s,
                                          [&](const Index& index) {
                                            return std::vector<float>(
                                                process_index() == last ? 1 : static_cast<std::size_t>(volume(index)));
                                          })),
      "returned 1 elements", process_count() > 1 ? "process " : "");
  // Element type mismatch.
  DARRAY_REQUIRE_THROWS_ALL(
      InvalidArgument,
      (make_array_from_callback<float, 2>(
          shape, s, [](const Index& index) { return std::vector<double>(static_cast<std::size_t>(volume(index))); })),
      "the callback's result has element type float64", "dtype is float32");
  // A callback that throws on process 0 only.
  DARRAY_REQUIRE_THROWS_ALL(
      Error,
      (make_array_from_callback<float, 2>(shape, s,
                                          [&](const Index& index) {
                                            if (process_index() == 0) throw std::runtime_error("cannot open data.bin");
                                            return std::vector<float>(static_cast<std::size_t>(volume(index)));
                                          })),
      "cannot open data.bin");
}
