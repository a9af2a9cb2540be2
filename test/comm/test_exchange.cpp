// exchange() on random sparse and dense patterns with random sizes (fixed seeds), through every method: each
// received byte is checked against (source, destination, message, offset), and padding between blocks must stay
// untouched. Also the collective method choice, arrival callbacks, empty and self messages, and plan errors.
#include <mpi.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "comm_test_util.hpp"
#include "darray/comm/exchange.hpp"
#include "darray/runtime/environment.hpp"
#include "mpi_test.hpp"

using darray::ExchangeMethod;
using darray::ExchangeOptions;
using darray::ExchangePlan;
using darray::InvalidArgument;
using darray_test::pattern;

namespace {

constexpr std::byte fill{0xEE};

// sizes[src][dst] = sizes of the messages src sends to dst, in order. Replicated: every process draws the same.
using Pattern = std::vector<std::vector<std::vector<std::size_t>>>;

Pattern random_pattern(int procs, std::uint64_t seed, double density, std::size_t max_size, int max_messages) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  Pattern p(static_cast<std::size_t>(procs), std::vector<std::vector<std::size_t>>(static_cast<std::size_t>(procs)));
  for (auto& row : p)
    for (auto& cell : row) {
      if (coin(rng) >= density) continue;
      const int m = 1 + static_cast<int>(rng() % static_cast<std::uint64_t>(max_messages));
      for (int k = 0; k < m; ++k) {
        const std::uint64_t kind = rng() % 8;
        cell.push_back(kind == 0 ? 0 : kind == 1 ? 1 + rng() % 8 : rng() % (max_size + 1));
      }
    }
  return p;
}

struct Buffers {
  ExchangePlan plan;
  std::vector<std::byte> send, recv;
  std::vector<char> recv_used;                       // which receive bytes belong to a message (the rest is padding)
  std::vector<std::pair<int, std::size_t>> recv_id;  // (source, message index) of each plan.recvs entry
};

// This process's plan: sends peer-major starting after itself (as real planners rotate), receives in rank order;
// `pad` bytes of padding after each peer block of the receive buffer (a gap inside a block would defeat Alltoallv).
Buffers build(const Pattern& p, int me, std::size_t pad) {
  const int procs = static_cast<int>(p.size());
  Buffers b;
  std::size_t off = 0;
  for (int j = 1; j <= procs; ++j) {
    const int dst = (me + j) % procs;
    const auto& cell = p[static_cast<std::size_t>(me)][static_cast<std::size_t>(dst)];
    for (std::size_t k = 0; k < cell.size(); ++k) {
      b.plan.sends.push_back({dst, off, cell[k]});
      for (std::size_t i = 0; i < cell[k]; ++i) b.send.push_back(pattern(me, dst, k, i));
      off += cell[k];
    }
  }
  off = 0;
  for (int src = 0; src < procs; ++src) {
    const auto& cell = p[static_cast<std::size_t>(src)][static_cast<std::size_t>(me)];
    for (std::size_t k = 0; k < cell.size(); ++k) {
      b.plan.recvs.push_back({src, off, cell[k]});
      b.recv_id.emplace_back(src, k);
      b.recv_used.resize(off + cell[k], 1);
      off += cell[k];
    }
    b.recv_used.resize(off + pad, 0);
    off += pad;
  }
  b.recv.assign(off, fill);
  return b;
}

bool piece_ok(const Buffers& b, std::size_t r, int me) {
  const auto& e = b.plan.recvs[r];
  for (std::size_t i = 0; i < e.bytes; ++i)
    if (b.recv[e.offset + i] != pattern(b.recv_id[r].first, me, b.recv_id[r].second, i)) return false;
  return true;
}

bool all_ok(const Buffers& b, int me) {
  for (std::size_t r = 0; r < b.plan.recvs.size(); ++r)
    if (!piece_ok(b, r, me)) return false;
  for (std::size_t i = 0; i < b.recv.size(); ++i)
    if (!b.recv_used[i] && b.recv[i] != fill) return false;
  return true;
}

// Whether every process's blocks fit one Alltoallv call (the layout has no gaps inside a peer block).
bool alltoallv_fits(const Pattern& p, std::size_t max) {
  for (const auto& row : p)
    for (const auto& cell : row) {
      std::size_t total = 0;
      for (std::size_t s : cell) total += s;
      if (total > max) return false;
    }
  return true;
}

int min_peers(const Pattern& p) {
  const int procs = static_cast<int>(p.size());
  int least = procs;
  for (int me = 0; me < procs; ++me) {
    int n = 0;
    for (int q = 0; q < procs; ++q) {
      if (q == me) continue;
      std::size_t out = 0, in = 0;
      for (std::size_t s : p[static_cast<std::size_t>(me)][static_cast<std::size_t>(q)]) out += s;
      for (std::size_t s : p[static_cast<std::size_t>(q)][static_cast<std::size_t>(me)]) in += s;
      n += (out + in) > 0 ? 1 : 0;
    }
    least = std::min(least, n);
  }
  return least;
}

std::byte* data_or_null(std::vector<std::byte>& v) { return v.empty() ? nullptr : v.data(); }

}  // namespace

TEST_CASE("random exchanges move every byte with every method") {
  const MPI_Comm comm = darray::detail::world_comm();
  const int me = darray::process_index(), procs = darray::process_count();
  const std::size_t max = darray::max_message_bytes();
  int runs = 0, alltoallv_runs = 0;
  for (std::uint64_t seed : {11u, 12u, 13u, 14u})
    for (double density : {0.25, 0.6, 1.0}) {
      const Pattern p =
          random_pattern(procs, seed * 7919 + static_cast<std::uint64_t>(density * 100), density, 1500, 3);
      const bool fits = alltoallv_fits(p, max);
      for (ExchangeMethod m : {ExchangeMethod::automatic, ExchangeMethod::point_to_point, ExchangeMethod::alltoallv}) {
        if (m == ExchangeMethod::alltoallv && !fits) continue;
        Buffers b = build(p, me, 3);
        ExchangeOptions opt;
        opt.method = m;
        darray::exchange(comm, b.plan, data_or_null(b.send), data_or_null(b.recv), opt);
        INFO("seed " << seed << " density " << density << " method " << darray::to_string(m));
        REQUIRE(darray::testing::all_ok(all_ok(b, me)));
        ++runs;
        alltoallv_runs += m == ExchangeMethod::alltoallv;
      }
    }
  CHECK(runs >= 24);
  if (max >= 4500) CHECK(alltoallv_runs == 12);  // the largest block is 3 x 1500 bytes
}

TEST_CASE("the automatic method is agreed from the sparsest process") {
  const MPI_Comm comm = darray::detail::world_comm();
  const int me = darray::process_index(), procs = darray::process_count();
  const std::size_t max = darray::max_message_bytes();
  Pattern dense(static_cast<std::size_t>(procs),
                std::vector<std::vector<std::size_t>>(static_cast<std::size_t>(procs)));
  Pattern pairs = dense;
  for (int a = 0; a < procs; ++a)
    for (int c = 0; c < procs; ++c) {
      dense[static_cast<std::size_t>(a)][static_cast<std::size_t>(c)] = {100};
      if ((a ^ 1) == c || a == c) pairs[static_cast<std::size_t>(a)][static_cast<std::size_t>(c)] = {100};
    }
  for (const Pattern* p : {&dense, &pairs})
    for (double fraction : {0.0, 0.5, 1.0}) {
      Buffers b = build(*p, me, 0);
      ExchangeOptions opt;
      opt.dense_peer_fraction = fraction;
      const ExchangeMethod got = darray::choose_exchange_method(comm, b.plan, opt);
      const int needed = std::max(1, static_cast<int>(std::ceil(fraction * (procs - 1))));
      const bool expect_dense = procs > 1 && alltoallv_fits(*p, max) && min_peers(*p) >= needed;
      INFO("pattern " << (p == &dense ? "dense" : "pairs") << " fraction " << fraction << " got "
                      << darray::to_string(got));
      CHECK(got == (expect_dense ? ExchangeMethod::alltoallv : ExchangeMethod::point_to_point));
      darray::exchange(comm, b.plan, data_or_null(b.send), data_or_null(b.recv), opt);
      REQUIRE(darray::testing::all_ok(all_ok(b, me)));
    }
  // An explicit method is returned without communication.
  ExchangeOptions forced;
  forced.method = ExchangeMethod::point_to_point;
  CHECK(darray::choose_exchange_method(comm, ExchangePlan{}, forced) == ExchangeMethod::point_to_point);
}

TEST_CASE("exchange_with_callback reports each receive once, with its bytes in place") {
  const MPI_Comm comm = darray::detail::world_comm();
  const int me = darray::process_index(), procs = darray::process_count();
  const std::size_t max = darray::max_message_bytes();
  for (std::uint64_t seed : {21u, 22u}) {
    const Pattern p = random_pattern(procs, seed, 0.7, 5000, 2);
    for (ExchangeMethod m : {ExchangeMethod::point_to_point, ExchangeMethod::alltoallv}) {
      if (m == ExchangeMethod::alltoallv && !alltoallv_fits(p, max)) continue;
      Buffers b = build(p, me, 1);
      std::vector<int> seen(b.plan.recvs.size(), 0);
      bool in_place = true;
      ExchangeOptions opt;
      opt.method = m;
      darray::exchange_with_callback(
          comm, b.plan, data_or_null(b.send), data_or_null(b.recv),
          [&](std::size_t r, const darray::PeerBytes& piece) {
            ++seen[r];
            in_place = in_place && piece.offset == b.plan.recvs[r].offset && piece_ok(b, r, me);
          },
          opt);
      const bool once = std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; });
      INFO("seed " << seed << " method " << darray::to_string(m));
      REQUIRE(darray::testing::all_ok(once && in_place && all_ok(b, me)));
    }
  }
}

TEST_CASE("empty plans, empty messages and self messages") {
  const MPI_Comm comm = darray::detail::world_comm();
  const int me = darray::process_index(), procs = darray::process_count();
  // Nothing at all, with null buffers.
  darray::exchange(comm, ExchangePlan{}, nullptr, nullptr);
  // Only zero-byte messages to everybody, null buffers too: nothing moves, every entry is still reported.
  ExchangePlan zeros;
  for (int q = 0; q < procs; ++q) {
    zeros.sends.push_back({q, 0, 0});
    zeros.recvs.push_back({q, 0, 0});
  }
  std::size_t reported = 0;
  darray::exchange_with_callback(comm, zeros, nullptr, nullptr,
                                 [&](std::size_t, const darray::PeerBytes&) { ++reported; });
  CHECK(darray::testing::all_ok(reported == zeros.recvs.size()));
  // Self messages only: a direct copy, several per process, paired in order.
  Pattern self(static_cast<std::size_t>(procs), std::vector<std::vector<std::size_t>>(static_cast<std::size_t>(procs)));
  for (int q = 0; q < procs; ++q) self[static_cast<std::size_t>(q)][static_cast<std::size_t>(q)] = {17, 0, 40000, 3};
  for (ExchangeMethod m : {ExchangeMethod::automatic, ExchangeMethod::point_to_point, ExchangeMethod::alltoallv}) {
    Buffers b = build(self, me, 2);
    ExchangeOptions opt;
    opt.method = m;
    darray::exchange(comm, b.plan, b.send.data(), b.recv.data(), opt);
    REQUIRE(darray::testing::all_ok(all_ok(b, me)));
  }
}

TEST_CASE("messages beyond the per-message limit are split, and Alltoallv refuses them") {
  const MPI_Comm comm = darray::detail::world_comm();
  const int me = darray::process_index(), procs = darray::process_count();
  const std::size_t max = darray::max_message_bytes();
  Pattern big(static_cast<std::size_t>(procs), std::vector<std::vector<std::size_t>>(static_cast<std::size_t>(procs)));
  for (auto& row : big)
    for (auto& cell : row) cell = {10007};
  Buffers b = build(big, me, 5);
  const ExchangeMethod chosen = darray::choose_exchange_method(comm, b.plan);
  darray::exchange(comm, b.plan, b.send.data(), b.recv.data());
  REQUIRE(darray::testing::all_ok(all_ok(b, me)));
  if (procs > 1 && max < 10007) {
    CHECK(chosen == ExchangeMethod::point_to_point);
    ExchangeOptions opt;
    opt.method = ExchangeMethod::alltoallv;
    Buffers c = build(big, me, 0);
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, darray::exchange(comm, c.plan, c.send.data(), c.recv.data(), opt),
                              "alltoallv requested", "exceeds the per-message limit");
  }
}

TEST_CASE("exchange errors are clear, and agreed when the method is automatic") {
  const MPI_Comm comm = darray::detail::world_comm();
  const int me = darray::process_index(), procs = darray::process_count();
  std::vector<std::byte> buf(64);
  // Only the last process has a bad peer; with the automatic method every process throws its error.
  ExchangePlan bad;
  if (me == procs - 1) bad.sends.push_back({procs, 0, 4});
  if (procs > 1)
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, darray::exchange(comm, bad, buf.data(), buf.data() + 32), "peer",
                              ("process " + std::to_string(procs - 1)).c_str());
  else
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, darray::exchange(comm, bad, buf.data(), buf.data() + 32), "peer 1");

  ExchangePlan self_mismatch;
  self_mismatch.sends.push_back({me, 0, 8});
  self_mismatch.recvs.push_back({me, 0, 9});
  ExchangeOptions p2p;
  p2p.method = ExchangeMethod::point_to_point;
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, darray::exchange(comm, self_mismatch, buf.data(), buf.data() + 32, p2p),
                            "sends 8 bytes", "receives 9");

  ExchangePlan null_buffers;
  null_buffers.sends.push_back({me, 0, 8});
  null_buffers.recvs.push_back({me, 0, 8});
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, darray::exchange(comm, null_buffers, nullptr, buf.data(), p2p),
                            "null send buffer");

  ExchangeOptions fraction;
  fraction.dense_peer_fraction = 1.5;
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, darray::exchange(comm, ExchangePlan{}, nullptr, nullptr, fraction),
                            "dense_peer_fraction = 1.5");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, darray::exchange(MPI_COMM_NULL, ExchangePlan{}, nullptr, nullptr),
                            "MPI_COMM_NULL");

  if (procs > 1) {
    // Two messages to the next process with a gap between them cannot be one Alltoallv block.
    const int next = (me + 1) % procs, prev = (me + procs - 1) % procs;
    ExchangePlan gap;
    gap.sends = {{next, 0, 4}, {next, 8, 4}};
    gap.recvs = {{prev, 0, 4}, {prev, 4, 4}};
    ExchangeOptions a2a;
    a2a.method = ExchangeMethod::alltoallv;
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, darray::exchange(comm, gap, buf.data(), buf.data() + 32, a2a),
                              "not contiguous");
    // The same plan is fine point to point, and automatic falls back to it.
    std::fill(buf.begin(), buf.end(), std::byte{0});
    std::fill(buf.begin(), buf.begin() + 16, std::byte{7});
    darray::exchange(comm, gap, buf.data(), buf.data() + 32);
    CHECK(darray::testing::all_ok(
        std::all_of(buf.begin() + 32, buf.begin() + 40, [](std::byte x) { return x == std::byte{7}; })));
  }
}

TEST_CASE("per-peer tags: matching tags deliver, another tag is an error naming the sender, bad tags are refused") {
  const MPI_Comm comm = darray::detail::world_comm();
  const int me = darray::process_index(), procs = darray::process_count();
  ExchangeOptions p2p;
  p2p.method = ExchangeMethod::point_to_point;
  const int next = (me + 1) % procs, prev = (me + procs - 1) % procs;
  // A ring: 8 bytes to the next process, tagged by the sender; the receiver expects that same tag.
  auto ring = [&](int send_tag, int recv_tag) {
    ExchangePlan plan;
    plan.sends.push_back({next, 0, 8, send_tag});
    plan.recvs.push_back({prev, 0, 8, recv_tag});
    return plan;
  };
  std::vector<std::byte> send(8, std::byte(me + 1)), recv(8, fill);
  darray::exchange(comm, ring(1234, 1234), send.data(), recv.data(), p2p);
  REQUIRE(darray::testing::all_ok(recv[0] == std::byte(prev + 1) && recv[7] == std::byte(prev + 1)));
  if (procs > 1) {
    // The last process sends with another tag: its receiver (process 0) throws, naming it. Everyone else gets its
    // bytes; the error is what a mismatched operation looks like, so only process 0 is asked to see it.
    const int tag = me == procs - 1 ? 999 : 1234;
    std::string msg;
    try {
      darray::exchange(comm, ring(tag, 1234), send.data(), recv.data(), p2p);
    } catch (const InvalidArgument& e) {
      msg = e.what();
    }
    INFO("message: " << msg);
    const bool expected = me == 0
                              ? msg.find("process " + std::to_string(procs - 1) + " sent data of another operation") !=
                                        std::string::npos &&
                                    msg.find("message tag 999, expected 1234") != std::string::npos
                              : msg.empty();
    REQUIRE(darray::testing::all_ok(expected));
  }
  std::vector<std::byte> buf(16);
  for (const int bad : {-2, 32768}) {
    ExchangePlan plan;
    plan.sends.push_back({me, 0, 8, bad});
    plan.recvs.push_back({me, 0, 8});
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, darray::exchange(comm, plan, buf.data(), buf.data() + 8, p2p),
                              ("has tag " + std::to_string(bad)).c_str(), "0 to 32767");
  }
}
