// DARRAY_CHECK=1: processes that call different collectives (another target sharding, shape or element type) get
// the same clear error on every process, naming the operation and the first process that differs, instead of a
// deadlock or silently wrong data.
#include <catch2/catch.hpp>

#include "darray/darray.hpp"
#include "mpi_test.hpp"

using namespace darray;
using darray::testing::all_ok;

namespace {
int last() { return process_count() - 1; }
}  // namespace

TEST_CASE("DARRAY_CHECK is agreed at start-up") { REQUIRE(all_ok(consistency_checks_enabled())); }

TEST_CASE("reshard to a different sharding on one process") {
  Mesh mesh = make_mesh({device_count()}, {"x"});
  auto a = iota<double, 2>({8, 6}, NamedSharding(mesh, P{"x"}));
  const NamedSharding target(mesh, process_index() == last() ? P{none, "x"} : P{});
  const std::string who = "process " + std::to_string(last());
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, reshard(a, target), "DARRAY_CHECK", "reshard", who.c_str(),
                            "PartitionSpec(None, 'x')");
  // The library is still usable afterwards: a matching call succeeds everywhere.
  auto b = reshard(a, NamedSharding(mesh, P{}));
  REQUIRE(all_ok(b.addressable_shards().size() == static_cast<std::size_t>(local_device_count())));
}

TEST_CASE("reshard of a different shape or element type on one process") {
  Mesh mesh = make_mesh({device_count()}, {"x"});
  NamedSharding rows(mesh, P{"x"}), rep(mesh, P{});
  const std::string who = "process " + std::to_string(last());
  {
    auto a = iota<double, 2>({8, process_index() == last() ? 7 : 6}, rows);
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, reshard(a, rep), who.c_str(), "shape 8x7");
  }
  if (process_index() == last()) {
    auto a = iota<float, 2>({8, 6}, rows);
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, reshard(a, rep), who.c_str(), "float32", "float64");
  } else {
    auto a = iota<double, 2>({8, 6}, rows);
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, reshard(a, rep), who.c_str(), "float32", "float64");
  }
}

TEST_CASE("a sharding invalid on one process only fails everywhere, not just there") {
  Mesh mesh = make_mesh({device_count()}, {"x"});
  auto a = iota<double, 2>({8, 6}, NamedSharding(mesh, P{"x"}));
  // On the last process the target has three entries for a rank-2 array: planning would throw there alone.
  const NamedSharding target(mesh, process_index() == last() ? P{none, none, "x"} : P{none, "x"});
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, reshard(a, target), "DARRAY_CHECK");
}

TEST_CASE("a process that skips barrier while the others call it gets an error, not a hang") {
  Mesh mesh = make_mesh({device_count()}, {"x"});
  auto a = iota<double, 2>({8, 6}, NamedSharding(mesh, P{"x"}));
  const std::string who = "process " + std::to_string(last());
  if (process_index() == last()) {
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, reshard(a, NamedSharding(mesh, P{})), "DARRAY_CHECK",
                              "process 0 runs \"barrier()\"", who.c_str(), "reshard");
  } else {
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, barrier(), "DARRAY_CHECK", "process 0 runs \"barrier()\"", who.c_str(),
                              "reshard");
  }
  barrier();  // and matching barriers still work
}

// A whole-array reduction (sum, max, dot, norm...) is checked like every collective: the last process sums while
// the others call psum, reshard or process_allgather. Its 16-byte record once met the check's 8-byte hash, so one
// process failed in MPI (MPI_ERR_TRUNCATE) and the other waited forever for a second allgather.
TEST_CASE("a whole-array reduction on one process while the others call another collective fails everywhere") {
  Mesh mesh = make_mesh({device_count()}, {"x"});
  auto a = iota<double, 1>({8}, NamedSharding(mesh, P{"x"}));
  const std::string who = "process " + std::to_string(last());
  for (int other = 0; other < 3; ++other) {
    CAPTURE(other);
    auto run = [&] {
      if (process_index() == last()) return sum(a);
      if (other == 0) return psum(a, "x").addressable_shards()[0].data(0);
      if (other == 1) return reshard(a, NamedSharding(mesh, P{})).addressable_shards()[0].data(0);
      return process_allgather(a)[0];
    };
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, run(), "DARRAY_CHECK", who.c_str(), "sum of 8 x float64");
  }
  REQUIRE(all_ok(sum(a) == 28.0));  // and matching calls still work
}
