// DARRAY_CHECK consistency hook: silent when disabled, silent when processes agree, and on a mismatch the same
// InvalidArgument everywhere naming the first differing process and both descriptions.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "comm_test_util.hpp"
#include "darray/comm/check.hpp"
#include "darray/comm/group.hpp"
#include "darray/runtime/environment.hpp"
#include "mpi_test.hpp"

using darray::InvalidArgument;
using darray_test::ScopedEnv;

TEST_CASE("check_consistent is a no-op unless DARRAY_CHECK is on") {
  const int me = darray::process_index();
  ScopedEnv off("DARRAY_CHECK", nullptr);
  CHECK_FALSE(darray::consistency_checks_enabled());
  // Different descriptions, but checks are off: nothing is compared, nothing communicated.
  darray::check_consistent(darray::detail::world_comm(), "op " + std::to_string(me));
  ScopedEnv zero("DARRAY_CHECK", "0");
  darray::check_consistent(darray::detail::world_comm(), "op " + std::to_string(me));
  CHECK(darray::testing::all_ok(true));
}

TEST_CASE("check_consistent passes when processes agree") {
  ScopedEnv on("DARRAY_CHECK", "1");
  CHECK(darray::consistency_checks_enabled());
  darray::check_consistent(darray::detail::world_comm(), "reshard f32[64,64] P(x,y) -> P(y,x)");
  darray::check_consistent(darray::detail::world_comm(), "");
  CHECK(darray::testing::all_ok(true));
}

TEST_CASE("check_consistent names the first mismatching process") {
  const int me = darray::process_index(), procs = darray::process_count();
  if (procs < 2) return;
  ScopedEnv on("DARRAY_CHECK", "true");
  // Odd processes run a different operation: process 1 is the first to differ from process 0.
  const std::string op = me % 2 == 0 ? "psum(axes=x) f32[8,8]" : "all_gather(axis=y, dim=0) f32[8,8]";
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

TEST_CASE("group_comm under DARRAY_CHECK catches processes passing different colors") {
  const int me = darray::process_index(), procs = darray::process_count();
  if (procs < 2) return;
  ScopedEnv on("DARRAY_CHECK", "1");
  std::vector<int> colors(static_cast<std::size_t>(procs), 0);
  if (me == 1) colors[0] = 1;  // process 1 alone believes process 0 is in another group
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, darray::group_comm(colors), "group_comm(colors=[0,", "process 1 runs");
}

TEST_CASE("a malformed DARRAY_CHECK is an error") {
  ScopedEnv bad("DARRAY_CHECK", "maybe");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, darray::check_consistent(darray::detail::world_comm(), "x"),
                            "DARRAY_CHECK", "\"maybe\"");
}
