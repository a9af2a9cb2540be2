// The collectives and reshard make no MPI call beyond their data exchange: after a warm-up call (plans,
// communicators), a movement (all_gather, all_to_all, ppermute, reshard) runs no collective MPI operation at all
// (point-to-point messages only), and a reduction (psum, pmax, psum_scatter) runs the record exchange of its
// fingerprint (comm/detail/same_reduction.hpp: what makes a mismatch an error), which carries its data up to 16 MiB,
// and beyond that one data allreduce. The
// MPI entry points are wrapped here through the profiling interface (each forwards to PMPI_*), so every call the
// library compiles into this executable is counted.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "darray/darray.hpp"
#include "mpi_test.hpp"

namespace {

bool counting = false;
std::map<std::string, int> calls;

void count(const char* name) {
  if (counting) ++calls[name];
}

}  // namespace

extern "C" {
int MPI_Allreduce(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  count("MPI_Allreduce");
  return PMPI_Allreduce(s, r, n, t, op, c);
}
// The reductions' record messages (fingerprint, and the data of small ones). The exchange engine's messages carry
// other tags (fingerprints; one could equal record_tag by a 1-in-32768 chance, which these fixed calls do not hit).
int MPI_Isend(const void* b, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c, MPI_Request* req) {
  if (tag == darray::detail::record_tag) count("record");
  return PMPI_Isend(b, n, t, dest, tag, c, req);
}
int MPI_Alltoall(const void* s, int sn, MPI_Datatype st, void* r, int rn, MPI_Datatype rt, MPI_Comm c) {
  count("MPI_Alltoall");
  return PMPI_Alltoall(s, sn, st, r, rn, rt, c);
}
int MPI_Alltoallv(const void* s, const int sc[], const int sd[], MPI_Datatype st, void* r, const int rc[],
                  const int rd[], MPI_Datatype rt, MPI_Comm c) {
  count("MPI_Alltoallv");
  return PMPI_Alltoallv(s, sc, sd, st, r, rc, rd, rt, c);
}
int MPI_Allgather(const void* s, int sn, MPI_Datatype st, void* r, int rn, MPI_Datatype rt, MPI_Comm c) {
  count("MPI_Allgather");
  return PMPI_Allgather(s, sn, st, r, rn, rt, c);
}
int MPI_Bcast(void* b, int n, MPI_Datatype t, int root, MPI_Comm c) {
  count("MPI_Bcast");
  return PMPI_Bcast(b, n, t, root, c);
}
int MPI_Barrier(MPI_Comm c) {
  count("MPI_Barrier");
  return PMPI_Barrier(c);
}
int MPI_Comm_split(MPI_Comm c, int color, int key, MPI_Comm* out) {
  count("MPI_Comm_split");
  return PMPI_Comm_split(c, color, key, out);
}
}

namespace {

using namespace darray;
using darray::testing::all_ok;

// Runs fn `times` times with counting on; returns the calls per name.
template <class Fn>
std::map<std::string, int> count_calls(int times, Fn&& fn) {
  calls.clear();
  counting = true;
  for (int k = 0; k < times; ++k) fn();
  counting = false;
  return calls;
}

std::string describe(const std::map<std::string, int>& m) {
  std::string s;
  for (const auto& [name, n] : m) s += name + " x" + std::to_string(n) + " ";
  return s.empty() ? "none" : s;
}

}  // namespace

TEST_CASE(
    "movements and reshard make no collective MPI call; reductions a record exchange, large ones a data allreduce") {
  const int64_t nd = device_count();
  const Mesh mesh = make_mesh({nd}, {"i"});
  const NamedSharding by_i(mesh, P{"i"});
  const auto x = iota<double, 1>({nd * 12}, by_i);  // blocks of 12 split evenly at up to 6 devices
  std::vector<std::pair<int, int>> shift;
  for (int i = 0; i < static_cast<int>(nd); ++i) shift.emplace_back(i, (i + 1) % static_cast<int>(nd));
  const NamedSharding replicated(mesh, P{});

  auto y0 = all_gather(x, "i", 0, tiled);  // warm-ups: plans and communicators are made here
  auto y1 = all_to_all(x, "i", 0, 0);
  auto y2 = ppermute(x, "i", shift);
  auto y3 = reshard(x, replicated);
  auto y4 = psum(x, "i");
  auto y5 = psum_scatter(x, "i", 0);

  const auto plans = std::make_pair(all_gather_plan(x, "i", 0, tiled), ppermute_plan(x, "i", shift));
  const auto moves = count_calls(3, [&] {
    y0 = all_gather(x, "i", 0, tiled);
    all_gather(x, "i", 0, tiled, y0);
    y1 = all_to_all(x, "i", 0, 0);
    all_to_all(x, "i", 0, 0, y1);
    y2 = ppermute(x, "i", shift);
    ppermute(x, "i", shift, y2);
    y3 = reshard(x, replicated);
    execute(plans.first, x, y0);  // held plans (collectives/plan.hpp) alike
    execute(plans.second, x, y2);
    y2 = execute(plans.second, x);
  });
  INFO("movements called " << describe(moves));
  REQUIRE(all_ok(moves.empty()));

  // Up to 16 MiB the data travels in the fingerprint's record messages (point to point, no MPI_Allreduce): up to
  // 16 KiB one record per doubling step, beyond a reduce-scatter then an allgather. Beyond 16 MiB: a record without
  // data, then the data's allreduce.
  const auto middle = iota<double, 1>({nd * 9216}, by_i);  // 72 KiB per device
  const auto big = iota<double, 1>({nd * 2098176}, by_i);  // 16 MiB + 8 KiB per device
  for (const auto* operand : {&middle, &big}) {            // warm-ups of the larger plans
    y4 = psum(*operand, "i");
    y5 = psum_scatter(*operand, "i", 0);
  }
  for (const auto* operand : {&x, &middle, &big}) {
    const auto plan = psum_plan(*operand, "i");
    const auto reductions = count_calls(3, [&] {
      y4 = psum(*operand, "i");
      psum(*operand, "i", y4);
      y5 = psum_scatter(*operand, "i", 0);
      execute(plan, *operand, y4);
    });
    const bool large = operand == &big;
    INFO(operand->shape()[0] / nd * 8 << " B per device: reductions called " << describe(reductions));
    int allreduce = 0, records = 0;
    for (const auto& [name, n] : reductions) {
      if (name == "MPI_Allreduce") allreduce = n;
      if (name == "record") records = n;
    }
    // When the axis spans processes: per call one data allreduce for the large ones, and from each process one or
    // two record messages (recursive doubling at 2 or 3 processes), or at most three (reduce-scatter and allgather:
    // at 3 processes one pairs up with another, which also sends it the result); nothing when it lies in one
    // process.
    const int calls = process_count() > 1 ? 12 : 0;
    const int most = operand == &middle ? 3 : 2;
    const bool records_ok = calls == 0 ? records == 0 : records >= calls && records <= most * calls;
    REQUIRE(all_ok(reductions.size() <= 2 && allreduce == (large ? calls : 0) && records_ok));
  }
}
