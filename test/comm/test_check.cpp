// DARRAY_CHECK consistency hook. The same cases run twice (see CMakeLists.txt): without DARRAY_CHECK, where
// mismatched descriptions must pass silently and without communication, and with DARRAY_CHECK=1, where a mismatch
// must raise the same InvalidArgument everywhere, naming the first differing process and both descriptions.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>
#include <vector>

#include "darray/comm/check.hpp"
#include "darray/comm/group.hpp"
#include "darray/runtime/environment.hpp"
#include "mpi_test.hpp"

using darray::InvalidArgument;

namespace {

// Whether this run was launched with checks on; the library must agree with the launch environment.
bool launched_with_checks() {
  const char* v = std::getenv("DARRAY_CHECK");
  return v != nullptr && std::string(v) == "1";
}

}  // namespace

TEST_CASE("check_consistent follows DARRAY_CHECK", "[check]") {
  REQUIRE(darray::testing::all_ok(darray::consistency_checks_enabled() == launched_with_checks()));
}

TEST_CASE("check_consistent passes when processes agree", "[check]") {
  darray::check_consistent(darray::detail::world_comm(), "reshard f32[64,64] P(x,y) -> P(y,x)");
  darray::check_consistent(darray::detail::world_comm(), "");
  darray::check_consistent(darray::detail::world_comm(), std::string(100000, 'x'));
  CHECK(darray::testing::all_ok(true));
}

TEST_CASE("check_consistent names the first mismatching process", "[check]") {
  const int me = darray::process_index(), procs = darray::process_count();
  if (procs < 2) return;
  // Odd processes run a different operation: process 1 is the first to differ from process 0.
  const std::string op = me % 2 == 0 ? "psum(axes=x) f32[8,8]" : "all_gather(axis=y, dim=0) f32[8,8]";
  if (!darray::consistency_checks_enabled()) {
    // Checks off: nothing is compared, nothing communicated, nothing thrown.
    darray::check_consistent(darray::detail::world_comm(), op);
    CHECK(darray::testing::all_ok(true));
    return;
  }
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, darray::check_consistent(darray::detail::world_comm(), op),
                            "process 0 runs \"psum(axes=x) f32[8,8]\"",
                            "process 1 runs \"all_gather(axis=y, dim=0) f32[8,8]\"", "DARRAY_CHECK");
  if (procs >= 3) {
    // Only the last process differs, in one character.
    const std::string op2 = me == procs - 1 ? "reshard i32[10]" : "reshard i64[10]";
    const std::string who = "process " + std::to_string(procs - 1) + " runs \"reshard i32[10]\"";
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, darray::check_consistent(darray::detail::world_comm(), op2),
                              "process 0 runs \"reshard i64[10]\"", who.c_str());
  }
}

TEST_CASE("group_comm under DARRAY_CHECK catches processes passing different colors", "[check]") {
  const int me = darray::process_index(), procs = darray::process_count();
  if (procs < 2 || !darray::consistency_checks_enabled()) return;  // without checks this would deadlock by design
  std::vector<int> colors(static_cast<std::size_t>(procs), 0);
  if (me == 1) colors[0] = 1;  // process 1 alone believes process 0 is in another group
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, darray::group_comm(colors), "group_comm(colors=[0,", "process 1 runs");
  // Agreeing processes still get their (cached) communicator under checks.
  const std::vector<int> same(static_cast<std::size_t>(procs), 0);
  CHECK(darray::testing::all_ok(darray::group_comm(same) == darray::group_comm(same)));
}

TEST_CASE("fnv1a64 is the fixed FNV-1a hash") {
  CHECK(darray::detail::fnv1a64("") == 14695981039346656037ull);
  CHECK(darray::detail::fnv1a64("a") == 0xaf63dc4c8601ec8cull);
  CHECK(darray::detail::fnv1a64("foobar") == 0x85944171f73967e8ull);
}
