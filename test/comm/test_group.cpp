// Process-group communicators: built once per partition and cached (same vector -> same handle), ranks ordered
// by world rank, usable for exchanges, and strict about malformed color vectors.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <vector>

#include "comm_test_util.hpp"
#include "darray/comm/exchange.hpp"
#include "darray/comm/group.hpp"
#include "darray/runtime/environment.hpp"
#include "mpi_test.hpp"

using darray::InvalidArgument;

TEST_CASE("group_comm is cached per partition") {
  const int me = darray::process_index(), procs = darray::process_count();
  const std::vector<int> all(static_cast<std::size_t>(procs), 0);
  std::vector<int> parity(static_cast<std::size_t>(procs)), halves(static_cast<std::size_t>(procs));
  for (int p = 0; p < procs; ++p) {
    parity[static_cast<std::size_t>(p)] = p % 2;
    halves[static_cast<std::size_t>(p)] = p < procs / 2 ? 0 : 1;
  }
  const MPI_Comm c_all = darray::group_comm(all);
  const MPI_Comm c_parity = darray::group_comm(parity);
  bool ok = c_all != MPI_COMM_NULL && c_parity != MPI_COMM_NULL;
  ok = ok && darray::group_comm(all) == c_all && darray::group_comm(parity) == c_parity;
  // Handles are equal exactly when the partitions are (at 1 process every vector is one group; at 2, halves and
  // parity coincide).
  ok = ok && (c_all == c_parity) == (procs == 1) && c_all != darray::detail::world_comm();
  // Relabelled colors describe the same partition and share the communicator.
  std::vector<int> relabelled(all.size(), 42);
  ok = ok && darray::group_comm(relabelled) == c_all;
  std::vector<int> parity_relabelled(parity);
  for (int& c : parity_relabelled) c = c == 0 ? 9 : 3;
  ok = ok && darray::group_comm(parity_relabelled) == c_parity;
  const MPI_Comm c_halves = darray::group_comm(halves);
  ok = ok && (c_halves == c_all) == (procs == 1) && (c_halves == c_parity) == (procs <= 2);
  // The group really is what the colors say: size, rank order by world rank, world-rank translation.
  int size = 0, rank = -1;
  DARRAY_MPI_CHECK(MPI_Comm_size(c_parity, &size));
  DARRAY_MPI_CHECK(MPI_Comm_rank(c_parity, &rank));
  const int expect_size = procs / 2 + (procs % 2 != 0 && me % 2 == 0 ? 1 : 0);
  ok = ok && size == expect_size && rank == me / 2 && rank == darray::group_rank(parity, me);
  const darray::ProcessGroup& g = darray::process_group(parity);
  ok = ok && g.comm() == c_parity && g.rank() == rank && g.size() == size && g.color() == me % 2;
  for (int r = 0; r < g.size(); ++r) ok = ok && g.world_ranks()[static_cast<std::size_t>(r)] == 2 * r + me % 2;
  for (int p = 0; p < procs; ++p) ok = ok && g.group_rank_of(p) == (p % 2 == me % 2 ? p / 2 : -1);
  // The cached communicator is compared against one split by hand.
  MPI_Comm manual = MPI_COMM_NULL;
  DARRAY_MPI_CHECK(MPI_Comm_split(darray::detail::world_comm(), me % 2, me, &manual));
  int cmp = MPI_UNEQUAL;
  DARRAY_MPI_CHECK(MPI_Comm_compare(manual, c_parity, &cmp));
  DARRAY_MPI_CHECK(MPI_Comm_free(&manual));
  ok = ok && cmp == MPI_CONGRUENT;
  REQUIRE(darray::testing::all_ok(ok));
}

TEST_CASE("group_rank is pure index math") {
  const std::vector<int> colors = {3, 1, 3, 3, 1, 7};
  CHECK(darray::group_rank(colors, 0) == 0);
  CHECK(darray::group_rank(colors, 1) == 0);
  CHECK(darray::group_rank(colors, 2) == 1);
  CHECK(darray::group_rank(colors, 3) == 2);
  CHECK(darray::group_rank(colors, 4) == 1);
  CHECK(darray::group_rank(colors, 5) == 0);
  CHECK_THROWS_AS(darray::group_rank(colors, 6), InvalidArgument);
  CHECK_THROWS_AS(darray::group_rank(colors, -1), InvalidArgument);
}

TEST_CASE("exchange inside a group uses group ranks") {
  const int me = darray::process_index(), procs = darray::process_count();
  std::vector<int> parity(static_cast<std::size_t>(procs));
  for (int p = 0; p < procs; ++p) parity[static_cast<std::size_t>(p)] = p % 2;
  const darray::ProcessGroup& g = darray::process_group(parity);
  // Everyone sends its world rank's pattern to every member of its group, itself included.
  darray::ExchangePlan plan;
  std::vector<std::byte> send, recv;
  const std::size_t n = 333;
  for (int q = 0; q < g.size(); ++q) {
    plan.sends.push_back({q, send.size(), n});
    plan.recvs.push_back({q, static_cast<std::size_t>(q) * n, n});
    for (std::size_t i = 0; i < n; ++i)
      send.push_back(darray_test::pattern(me, g.world_ranks()[static_cast<std::size_t>(q)], 0, i));
  }
  recv.assign(static_cast<std::size_t>(g.size()) * n, std::byte{0});
  darray::exchange(g.comm(), plan, send.data(), recv.data());
  bool ok = true;
  for (int q = 0; q < g.size(); ++q)
    for (std::size_t i = 0; i < n; ++i)
      ok = ok && recv[static_cast<std::size_t>(q) * n + i] ==
                     darray_test::pattern(g.world_ranks()[static_cast<std::size_t>(q)], me, 0, i);
  REQUIRE(darray::testing::all_ok(ok));
}

TEST_CASE("malformed color vectors") {
  const int procs = darray::process_count();
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument,
                            darray::group_comm(std::vector<int>(static_cast<std::size_t>(procs) + 1, 0)), "group_comm",
                            "expected one per process");
  std::vector<int> negative(static_cast<std::size_t>(procs), 0);
  negative.back() = -2;
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, darray::group_comm(negative), "color -2", "expected 0 or more");
}
