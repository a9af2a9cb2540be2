// Chunk arithmetic, count guards and the size-limit environment variables, without allocating large buffers.
#include <catch2/catch.hpp>
#include <climits>
#include <cstdint>
#include <limits>

#include "comm_test_util.hpp"
#include "darray/comm/detail/chunking.hpp"
#include "darray/comm/detail/exchange_layout.hpp"
#include "darray/comm/limits.hpp"

using darray::InvalidArgument;
using namespace darray::detail;
using darray_test::ScopedEnv;

TEST_CASE("default max message size is INT_MAX rounded down to 64 bytes") {
  CHECK(darray::default_max_message_bytes == 2147483584u);
  CHECK(darray::default_max_message_bytes % 64 == 0);
  CHECK(darray::default_max_message_bytes <= static_cast<std::size_t>(INT_MAX));
  CHECK(static_cast<std::size_t>(INT_MAX) - darray::default_max_message_bytes < 64);
}

TEST_CASE("a 5 GiB message at the default limit is three chunks") {
  const std::size_t total = std::size_t(5) << 30;
  const std::size_t max = darray::default_max_message_bytes;
  REQUIRE(chunk_count(total, max) == 3);
  const Chunk c0 = chunk_at(total, max, 0), c1 = chunk_at(total, max, 1), c2 = chunk_at(total, max, 2);
  CHECK(c0.offset == 0);
  CHECK(c0.bytes == max);
  CHECK(c1.offset == max);
  CHECK(c1.bytes == max);
  CHECK(c2.offset == 2 * max);
  CHECK(c2.bytes == total - 2 * max);
  CHECK(c2.bytes == 1073741952u);
  CHECK(c2.offset + c2.bytes == total);
  for (int i = 0; i < 3; ++i) CHECK(to_mpi_count(chunk_at(total, max, static_cast<std::size_t>(i)).bytes, "t") > 0);
  CHECK_THROWS_AS(chunk_at(total, max, 3), InvalidArgument);
}

TEST_CASE("chunk edges: empty, exact multiples, odd limits") {
  CHECK(chunk_count(0, 7) == 0);
  CHECK(chunk_count(1, 7) == 1);
  CHECK(chunk_count(7, 7) == 1);
  CHECK(chunk_count(8, 7) == 2);
  CHECK(chunk_count(14, 7) == 2);
  CHECK(chunk_count(15, 7) == 3);
  CHECK(chunk_at(15, 7, 2).offset == 14);
  CHECK(chunk_at(15, 7, 2).bytes == 1);
  CHECK(chunk_count(4096 * 3, 4096) == 3);
  // Chunks tile the message exactly, for many sizes and limits.
  for (std::size_t total : {1u, 2u, 63u, 64u, 65u, 1000u, 4097u})
    for (std::size_t max : {1u, 2u, 7u, 64u, 4096u}) {
      std::size_t expect = 0;
      for (std::size_t i = 0; i < chunk_count(total, max); ++i) {
        const Chunk c = chunk_at(total, max, i);
        CHECK(c.offset == expect);
        CHECK(c.bytes >= 1);
        CHECK(c.bytes <= max);
        expect += c.bytes;
      }
      CHECK(expect == total);
    }
  CHECK_THROWS_AS(chunk_count(10, 0), InvalidArgument);
  CHECK_THROWS_AS(chunk_at(0, 7, 0), InvalidArgument);
  // The largest size_t message still chunks without overflow.
  const std::size_t huge = std::numeric_limits<std::size_t>::max();
  const std::size_t n = chunk_count(huge, darray::default_max_message_bytes);
  const Chunk last = chunk_at(huge, darray::default_max_message_bytes, n - 1);
  CHECK(last.offset + last.bytes == huge);
}

TEST_CASE("counts above INT_MAX never reach MPI") {
  CHECK(to_mpi_count(0, "t") == 0);
  CHECK(to_mpi_count(static_cast<std::size_t>(INT_MAX), "t") == INT_MAX);
  CHECK_THROWS_WITH(to_mpi_count(static_cast<std::size_t>(INT_MAX) + 1, "send"),
                    Catch::Contains("send") && Catch::Contains("2147483648") && Catch::Contains("INT_MAX"));
  // 4 GiB + 16 would wrap to 16 if cast to int: it must throw instead.
  CHECK_THROWS_AS(to_mpi_count((std::size_t(4) << 30) + 16, "t"), InvalidArgument);
  CHECK(checked_end(5, 7, "t") == 12);
  CHECK_THROWS_WITH(checked_end(std::numeric_limits<std::size_t>::max() - 3, 4, "exchange"),
                    Catch::Contains("overflows"));
}

TEST_CASE("byte_count rejects negative and overflowing sizes") {
  CHECK(darray::byte_count(0, 8, "t") == 0);
  CHECK(darray::byte_count(1000, 8, "t") == 8000);
  CHECK(darray::byte_count(int64_t(5) << 30, 1, "t") == std::size_t(5) << 30);
  CHECK_THROWS_WITH(darray::byte_count(-3, 8, "zeros"),
                    Catch::Contains("zeros") && Catch::Contains("negative element count -3"));
  CHECK_THROWS_WITH(darray::byte_count(std::numeric_limits<int64_t>::max(), 16, "reshard"),
                    Catch::Contains("reshard") && Catch::Contains("overflow"));
}

TEST_CASE("DARRAY_MPI_MAX_MESSAGE_BYTES is parsed strictly") {
  {
    ScopedEnv unset("DARRAY_MPI_MAX_MESSAGE_BYTES", nullptr);
    CHECK(darray::max_message_bytes() == darray::default_max_message_bytes);
  }
  {
    ScopedEnv odd("DARRAY_MPI_MAX_MESSAGE_BYTES", "4099");
    CHECK(darray::max_message_bytes() == 4099);
  }
  {
    ScopedEnv min("DARRAY_MPI_MAX_MESSAGE_BYTES", "4096");
    CHECK(darray::max_message_bytes() == darray::min_max_message_bytes);
  }
  {
    ScopedEnv max("DARRAY_MPI_MAX_MESSAGE_BYTES", "2147483584");
    CHECK(darray::max_message_bytes() == darray::default_max_message_bytes);
  }
  // Below 4096 bytes (1 is the regression case: it made a 512x512 reshard take 11.5 s) is refused too.
  for (const char* bad : {"0", "1", "7", "4095", "-1", "abc", "", "7x", "1.5", "2147483585", "99999999999999999999"}) {
    INFO("value " << bad);
    ScopedEnv env("DARRAY_MPI_MAX_MESSAGE_BYTES", bad);
    CHECK_THROWS_AS(darray::max_message_bytes(), InvalidArgument);
    CHECK_THROWS_WITH(darray::max_message_bytes(), Catch::Contains("DARRAY_MPI_MAX_MESSAGE_BYTES") &&
                                                       Catch::Contains(std::string("\"") + bad + "\"") &&
                                                       Catch::Contains("from 4096 (the minimum) to 2147483584"));
  }
}

TEST_CASE("DARRAY_NCCL_TIMEOUT_S is parsed strictly") {
  {
    ScopedEnv unset("DARRAY_NCCL_TIMEOUT_S", nullptr);
    CHECK(darray::nccl_timeout_seconds() == 600);
  }
  {
    ScopedEnv v("DARRAY_NCCL_TIMEOUT_S", "30");
    CHECK(darray::nccl_timeout_seconds() == 30);
  }
  for (const char* bad : {"0", "-5", "ten", "1e3"}) {
    ScopedEnv env("DARRAY_NCCL_TIMEOUT_S", bad);
    CHECK_THROWS_WITH(darray::nccl_timeout_seconds(),
                      Catch::Contains("DARRAY_NCCL_TIMEOUT_S") && Catch::Contains(std::string("\"") + bad + "\""));
  }
}

TEST_CASE("plan validation and the Alltoallv layout") {
  using darray::ExchangePlan;
  ExchangePlan ok;
  ok.sends = {{1, 0, 10}, {1, 10, 5}, {2, 20, 3}, {0, 15, 4}};
  ok.recvs = {{0, 0, 4}, {2, 8, 6}, {1, 100, 0}};
  CHECK_NOTHROW(validate_plan(ok, 0, 3));
  CHECK(remote_peer_count(ok, 0, 3) == 2);
  const DenseLayout d = dense_layout(ok, 0, 3, 1000);
  REQUIRE(d.fits);
  CHECK(d.send.base == 0);
  CHECK(d.send.counts == std::vector<int>{0, 15, 3});
  CHECK(d.send.displs == std::vector<int>{0, 0, 20});
  CHECK(d.recv.base == 8);
  CHECK(d.recv.counts == std::vector<int>{0, 0, 6});
  CHECK(d.recv.displs == std::vector<int>{0, 0, 0});
  // The same plan with a per-message limit below the largest block falls back to point to point.
  const DenseLayout small = dense_layout(ok, 0, 3, 14);
  CHECK_FALSE(small.fits);
  CHECK_THAT(small.why_not, Catch::Contains("peer 1") && Catch::Contains("15 bytes"));

  ExchangePlan gap = ok;
  gap.sends[1].offset = 11;  // the two messages to peer 1 are no longer back to back
  CHECK_FALSE(dense_layout(gap, 0, 3, 1000).fits);
  CHECK_THAT(dense_layout(gap, 0, 3, 1000).why_not, Catch::Contains("not contiguous"));

  ExchangePlan far = ok;
  far.sends[2].offset = std::size_t(3) << 30;  // displacement beyond INT_MAX
  CHECK_FALSE(dense_layout(far, 0, 3, darray::default_max_message_bytes).fits);

  ExchangePlan bad_peer = ok;
  bad_peer.recvs[1].peer = 3;
  CHECK_THROWS_WITH(validate_plan(bad_peer, 0, 3),
                    Catch::Contains("plan.recvs[1]") && Catch::Contains("peer 3") && Catch::Contains("0 to 2"));
  bad_peer.recvs[1].peer = -1;
  CHECK_THROWS_AS(validate_plan(bad_peer, 0, 3), InvalidArgument);

  ExchangePlan wrap = ok;
  wrap.sends[0].offset = std::numeric_limits<std::size_t>::max() - 2;
  CHECK_THROWS_WITH(validate_plan(wrap, 0, 3), Catch::Contains("overflows"));

  ExchangePlan self_mismatch = ok;
  self_mismatch.recvs[0].bytes = 5;
  CHECK_THROWS_WITH(validate_plan(self_mismatch, 0, 3),
                    Catch::Contains("sends 4 bytes") && Catch::Contains("receives 5"));
  ExchangePlan self_count = ok;
  self_count.recvs.push_back({0, 50, 0});
  CHECK_THROWS_WITH(validate_plan(self_count, 0, 3), Catch::Contains("1 message(s) to itself but receives 2"));
}
