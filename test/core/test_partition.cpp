#include <catch2/catch.hpp>
#include <random>

#include "darray/core/partition.hpp"

TEST_CASE("block partition: remainder goes to the first parts") {
  // 10 into 4: 3,3,2,2
  CHECK(darray::block_size(10, 4, 0) == 3);
  CHECK(darray::block_size(10, 4, 3) == 2);
  CHECK(darray::block_start(10, 4, 2) == 6);
  CHECK(darray::block_start(10, 4, 4) == 10);
  CHECK(darray::block_slice(128, 4, 1) == darray::Slice{32, 64});  // divisible: JAX's blocks
  // fewer elements than parts: empty tail parts
  CHECK(darray::block_size(2, 4, 2) == 0);
  CHECK(darray::block_slice(2, 4, 3).empty());
}

TEST_CASE("block_owner and blocks_overlapping agree with the slices (randomized)") {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 2000; ++trial) {
    const int64_t n = static_cast<int64_t>(rng() % 50);
    const int64_t k = 1 + static_cast<int64_t>(rng() % 12);
    int64_t covered = 0;
    for (int64_t i = 0; i < k; ++i) {
      const auto s = darray::block_slice(n, k, i);
      REQUIRE(s.start == covered);
      covered = s.stop;
      REQUIRE(s.size() >= n / k);
      REQUIRE(s.size() <= n / k + 1);
      for (int64_t x = s.start; x < s.stop; ++x) REQUIRE(darray::block_owner(n, k, x) == i);
    }
    REQUIRE(covered == n);
    if (n > 0) {
      const int64_t a = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
      const int64_t b = a + 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(n - a));
      const auto parts = darray::blocks_overlapping(n, k, {a, b});
      for (int64_t i = 0; i < k; ++i) {
        const bool overlaps = darray::intersect(darray::block_slice(n, k, i), darray::Slice{a, b}).size() > 0;
        REQUIRE(overlaps == (i >= parts.start && i < parts.stop));
      }
    }
  }
}
