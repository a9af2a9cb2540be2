// Argument errors shared by every factory: wrong shape rank, negative extents, a spec longer than the array rank
// and a mesh from another job. Each is an InvalidArgument naming the factory, raised alike on every process.
#include <algorithm>
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

// Without DARRAY_CHECK too: the calls that move whole arrays between host and devices compare their arguments
// first. Before, process_allgather of 8 elements here and 9 on the last process returned on every process, the
// last one's fifth element never written, and another root made each process wait as a root.
TEST_CASE("gathers and scatters called with other arguments on one process: the same error everywhere") {
  if (process_count() < 2) return;
  const bool last = process_index() == process_count() - 1;
  const NamedSharding s(make_mesh({device_count()}, {"x"}), P{"x"});
  const int64_t n = 4 * device_count();
  const auto a = iota<float, 1>({n + (last ? 1 : 0)}, s);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (void)process_allgather(a), "processes disagree",
                            "process_allgather<float32, 1>(shape (" + std::to_string(n) + ",)");
  const auto b = iota<float, 1>({n}, s);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (void)gather_to_root(b, last ? 1 : 0), "processes disagree", "root 0",
                            "root 1");
  std::vector<Device> devs = devices();
  if (last) std::reverse(devs.begin(), devs.end());  // the same shape and spec, the devices in another order
  const NamedSharding reversed(Mesh(devs, {device_count()}, {"x"}), P{"x"});
  const std::vector<float> host(static_cast<std::size_t>(n), 1.0f);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, ((void)scatter_from_root<float, 1>(0, host, {n}, reversed)),
                            "processes disagree");
  REQUIRE(darray::testing::all_ok(process_allgather(b).size() == static_cast<std::size_t>(n)));  // agreeing calls work
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

// Issue 16, finding 4: element counts that overflow int64 used to wrap (size() == 0 arrays that resharded and saved
// "successfully") or crash in fill_iota; every factory and NamedSharding now reject them alike on every process.
TEST_CASE("shapes whose element count overflows int64 are rejected everywhere") {
  const NamedSharding s(make_mesh({device_count()}, {"x"}), P{"x"});
  const int64_t big = int64_t(1) << 40;
  const auto cb = [](const Index& index) { return std::vector<float>(static_cast<std::size_t>(volume(index))); };
  const std::vector<float> data(16);
  const char* const too_large = "is too large: the product of its extents exceeds 9223372036854775807";
  for (const Shape& shape : {Shape{big, big}, Shape{int64_t(1) << 62, 4}, Shape{INT64_MAX, 2}}) {
    INFO("shape " << numpy_shape_string(shape));
    const std::string named = "shape " + numpy_shape_string(shape);
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (zeros<float, 2>(shape, s)), "darray::zeros:", named, too_large);
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (full<float, 2>(shape, 1.0f, s)), "darray::full:", named, too_large);
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (iota<float, 2>(shape, s)), "darray::iota:", named, too_large);
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (make_array_from_callback<float, 2>(shape, s, cb)),
                              "darray::make_array_from_callback:", too_large);
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (make_array_from_process_local_data<float, 2>(s, data, shape)),
                              "darray::make_array_from_process_local_data:", too_large);
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (scatter_from_root<float, 2>(0, data, shape, s)),
                              "darray::scatter_from_root:", too_large);
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (s.devices_indices_map(shape)), "darray::NamedSharding:", named,
                              too_large);
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (s.shard_shape(shape)), "darray::NamedSharding:", too_large);
  }
  // A zero extent makes the count 0, but the row-major strides still multiply the other extents.
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (zeros<float, 3>({0, big, big}, s)), "shape (0, 1099511627776, ",
                            too_large);
  // The largest counts that fit are fine as shapes (no allocation is asked for here).
  REQUIRE(testing::all_ok(s.shard_shape({INT64_MAX, 1}).size() == 2 &&
                          s.shard_shape({0, big, int64_t(1) << 22}).size() == 3));
}

TEST_CASE("a block too large to allocate is a darray::Error naming the bytes, on every process") {
  // 2^50 doubles per device: 2^53 bytes, more than any address space, so Kokkos' allocation fails everywhere. A
  // process's blocks are one allocation (allocate_views): the error names their sum.
  const int64_t n = int64_t(1) << 25;
  const NamedSharding replicated(make_mesh({device_count()}, {"x"}), P{});
  const std::string bytes =
      "could not allocate " + std::to_string(local_device_count() * (int64_t(1) << 53)) + " bytes";
  DARRAY_REQUIRE_THROWS_ALL(Error, (zeros<double, 2>({n, n}, replicated)), "darray::allocate:", bytes);
  DARRAY_REQUIRE_THROWS_ALL(Error, (iota<double, 2>({n, n}, replicated)), bytes);
  // 2^31 x 2^31 doubles fit an int64 element count but not a 64-bit byte count on one device: an InvalidArgument.
  const int64_t m = int64_t(1) << 31;
  const NamedSharding one(Mesh({devices()[0]}, {1}, {"x"}), P{});
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (zeros<double, 2>({m, m}, one)), "darray::allocate:",
                            "shape (2147483648, 2147483648) with 8-byte elements needs more than 2^64 bytes");
}

TEST_CASE("an allocation that fails on one process fails alike on every process") {
  // A mesh of the last process's devices only: the others hold no block and allocate nothing, yet they must not go
  // on while the last process throws; they get its error (named "process P:" when there are several).
  const int last = process_count() - 1;
  std::vector<Device> theirs;
  for (const Device& d : devices())
    if (d.process_index == last) theirs.push_back(d);
  const NamedSharding s(Mesh(theirs, {static_cast<int64_t>(theirs.size())}, {"x"}), P{});
  const int64_t n = int64_t(1) << 25;
  const std::string who = process_count() > 1 ? "process " + std::to_string(last) + ": " : "darray::allocate:";
  const std::string bytes =
      "could not allocate " + std::to_string(local_device_count() * (int64_t(1) << 53)) + " bytes";
  DARRAY_REQUIRE_THROWS_ALL(Error, (zeros<double, 2>({n, n}, s)), who, bytes);
  // The job is still usable: the next collective factory succeeds everywhere.
  auto ok = zeros<double, 1>({4}, s);
  REQUIRE(testing::all_ok(ok.shape() == Shape{4}));
}
