// Argument errors shared by every factory: wrong shape rank, negative extents, a spec longer than the array rank
// and a mesh from another job. Each is an InvalidArgument naming the factory, raised alike on every process.
#include <catch2/catch.hpp>

#include "array_test_util.hpp"

using namespace darray;

namespace {

const char* const rank_msg = "has rank 3 but the array has rank 2";
const char* const spec_msg = "has 3 entries but the array has rank 2";

}  // namespace

TEST_CASE("every factory rejects a shape of the wrong rank") {
  const NamedSharding s(make_mesh({device_count()}, {"x"}), P{"x"});
  const Shape bad{4, 4, 4};
  const std::vector<float> data(64);
  const auto cb = [](const Index& index) { return std::vector<float>(static_cast<std::size_t>(volume(index))); };
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (zeros<float, 2>(bad, s)), "darray::zeros: shape (4, 4, 4)", rank_msg);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (full<float, 2>(bad, 1.0f, s)), "darray::full:", rank_msg);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (iota<float, 2>(bad, s)), "darray::iota:", rank_msg);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (make_array_from_callback<float, 2>(bad, s, cb)),
                            "darray::make_array_from_callback:", rank_msg);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (make_array_from_process_local_data<float, 2>(s, data, bad)),
                            "darray::make_array_from_process_local_data:", rank_msg);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument,
                            (make_array_from_single_device_arrays<float, 2>(
                                bad, s, std::vector<Kokkos::View<float**, Kokkos::LayoutRight, DefaultMemorySpace>>{})),
                            "darray::make_array_from_single_device_arrays:", rank_msg);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (scatter_from_root<float, 2>(0, data, bad, s)),
                            "darray::scatter_from_root:", rank_msg);
}

TEST_CASE("every factory rejects a spec longer than the array rank") {
  const int64_t n = device_count();
  const NamedSharding s(make_mesh({n, 1, 1}, {"x", "y", "z"}), P{"x", "y", "z"});
  const Shape shape{4, 4};
  const std::vector<float> data(16);
  const auto cb = [](const Index& index) { return std::vector<float>(static_cast<std::size_t>(volume(index))); };
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (zeros<float, 2>(shape, s)), "darray::zeros: sharding spec", spec_msg);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (full<float, 2>(shape, 0.0f, s)), "darray::full:", spec_msg);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (iota<float, 2>(shape, s)), "darray::iota:", spec_msg);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (make_array_from_callback<float, 2>(shape, s, cb)), spec_msg);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (make_array_from_process_local_data<float, 2>(s, data, shape)), spec_msg);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (scatter_from_root<float, 2>(0, data, shape, s)), spec_msg);
}

TEST_CASE("negative extents and meshes of another job are rejected") {
  const NamedSharding s(make_mesh({device_count()}, {"x"}), P{"x"});
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (iota<double, 2>({4, -1}, s)), "darray::iota: shape (4, -1)",
                            "negative extent -1 in dim 1");
  // A mesh over a device table of one more process than the job has (an offline planner's mesh).
  std::vector<int> counts(static_cast<std::size_t>(process_count() + 1), 1);
  const auto table = make_device_table(counts);
  const NamedSharding foreign(Mesh(table, {static_cast<int64_t>(table.size())}, {"x"}), P{"x"});
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (zeros<double, 1>({8}, foreign)),
                            "darray::zeros:", "the sharding's mesh has devices of process", "but the job has");
}

// Hidden: runs only in the DARRAY_CHECK=1 registration (see CMakeLists.txt), since without the check the diverging
// calls below would deadlock or mix up data.
TEST_CASE("DARRAY_CHECK: processes that diverge on a collective all fail", "[.darray_check]") {
  REQUIRE(consistency_checks_enabled());
  if (process_count() < 2) return;
  const NamedSharding s(make_mesh({device_count()}, {"x"}), P{"x"});
  const Shape shape{4 * device_count(), 2};
  const auto a = iota<float, 2>(shape, s);
  // Process 0 gathers to itself, the others to process 1.
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, gather_to_root(a, process_index() == 0 ? 0 : 1),
                            "processes disagree on the collective operation", "root 0", "root 1");
  // Element types differ across processes: float32 on process 0, float64 elsewhere.
  const std::vector<float> floats(static_cast<std::size_t>(volume(shape)));
  const std::vector<double> doubles(static_cast<std::size_t>(volume(shape)));
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument,
                            (process_index() == 0 ? (void)scatter_from_root<float, 2>(0, floats, shape, s)
                                                  : (void)scatter_from_root<double, 2>(0, doubles, shape, s)),
                            "processes disagree", "scatter_from_root<float32, 2>", "scatter_from_root<float64, 2>");
  // Agreeing calls still work with the check on.
  const auto back = process_allgather(a);
  REQUIRE(darray::testing::all_ok(back.size() == static_cast<std::size_t>(volume(shape)) && back[5] == 5.0f));
}
