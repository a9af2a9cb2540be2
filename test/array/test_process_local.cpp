// Host-local data <-> global arrays: make_array_from_process_local_data and global_array_to_host_local round trip
// on every layout whose process boxes are contiguous, and layouts whose are not fail alike everywhere.
#include <catch2/catch.hpp>

#include "array_test_util.hpp"

using namespace darray;
using darray::testing::all_ok;

namespace {

template <class T, int N>
void check_round_trip_at_rank(int random_count, uint64_t seed) {
  int tried = 0;
  for (const auto& layout : darray::testing::test_layouts<N>(random_count, seed)) {
    INFO(layout.describe() << " dtype " << dtype_name<T>());
    const NamedSharding s = layout.sharding();
    // Whether this layout gives every process one box is the library's own verdict; it must agree everywhere, and
    // the factory must then succeed or fail with it.
    std::string box_error;
    Index box;
    try {
      box = process_local_index(s, layout.shape);
    } catch (const InvalidArgument& e) {
      box_error = e.what();
    }
    const bool none_failed = all_ok(box_error.empty());
    const bool all_failed = all_ok(!box_error.empty());
    REQUIRE((none_failed || all_failed));
    std::vector<T> local;
    for (int64_t f : darray::testing::global_flat_indices(box, layout.shape))
      local.push_back(darray::testing::salted_value<T>(f, 3));
    if (!box_error.empty()) {
      DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (make_array_from_process_local_data<T, N>(s, local, layout.shape)),
                                "do not tile one box");
      continue;
    }
    ++tried;
    // The box is what this process's blocks span.
    bool ok = true;
    for (const auto& [device, index] : s.addressable_devices_indices_map(layout.shape))
      ok = ok && (volume(index) == 0 || contains(box, index));
    const auto a = make_array_from_process_local_data<T, N>(s, local, layout.shape);
    std::string err =
        darray::testing::check_shards(a, [](int64_t f) { return darray::testing::salted_value<T>(f, 3); });
    if (err.empty() && global_array_to_host_local(a) != local)
      err = "global_array_to_host_local differs from the input";
    // iota's host-local view is the global indices of the box.
    if (err.empty()) {
      const auto host = global_array_to_host_local(iota<T, N>(layout.shape, s));
      const auto flat = darray::testing::global_flat_indices(box, layout.shape);
      for (std::size_t i = 0; err.empty() && i < flat.size(); ++i)
        if (!(host[i] == darray::testing::expected_value<T>(flat[i]))) err = "iota's host-local data is wrong";
      if (host.size() != flat.size()) err = "iota's host-local data has the wrong size";
    }
    INFO(err);
    REQUIRE(all_ok(ok && err.empty()));
  }
  REQUIRE(tried > 0);
}

}  // namespace

TEST_CASE("process-local data round trips through a global array, ranks 1-4") {
  check_round_trip_at_rank<float, 1>(10, 21);
  check_round_trip_at_rank<double, 2>(12, 22);
  check_round_trip_at_rank<int32_t, 3>(8, 23);
  check_round_trip_at_rank<Kokkos::complex<float>, 4>(4, 24);
}

TEST_CASE("the tutorial's host_local_array_to_global_array: P('x') and a 2-d mesh") {
  const int64_t n = device_count();
  const Shape shape{8 * n, 6};
  const NamedSharding rows(make_mesh({n}, {"x"}), P{"x"});
  // This process's rows: 8 per local device, in process order.
  const int64_t first = 8 * static_cast<int64_t>(local_devices()[0].id);
  const Index box = process_local_index(rows, shape);
  bool ok = box == Index{Slice{first, first + 8 * local_device_count()}, Slice{0, 6}};
  // A host view of the box's shape works as well as a vector.
  Kokkos::View<int64_t**, Kokkos::LayoutRight, Kokkos::HostSpace> local("local", 8 * local_device_count(), 6);
  for (int64_t i = 0; i < static_cast<int64_t>(local.extent(0)); ++i)
    for (int64_t j = 0; j < 6; ++j) local(i, j) = (first + i) * 6 + j;
  const auto a = make_array_from_process_local_data<int64_t, 2>(rows, local, shape);
  std::string err = darray::testing::check_shards(a, [](int64_t f) { return f; });
  INFO(err);
  REQUIRE(all_ok(ok && err.empty()));
}

TEST_CASE("process-local data errors are raised on every process") {
  const int64_t n = device_count();
  const Shape shape{4 * n, 3};
  const NamedSharding rows(make_mesh({n}, {"x"}), P{"x"});
  const Index box = process_local_index(rows, shape);
  const auto right = std::vector<float>(static_cast<std::size_t>(volume(box)));
  // One element too many on the last process only.
  auto data = right;
  if (process_index() == process_count() - 1) data.push_back(0);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (make_array_from_process_local_data<float, 2>(rows, data, shape)),
                            "make_array_from_process_local_data", "local_data has",
                            "elements but this process's devices hold the box");
  // A view whose shape does not fit the box, though its size does.
  Kokkos::View<float**, Kokkos::LayoutRight, Kokkos::HostSpace> wrong("wrong", 3, 4 * local_device_count());
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (make_array_from_process_local_data<float, 2>(rows, wrong, shape)),
                            "local_data has shape (3, ", "of the global shape (");
  // Element type mismatch.
  const std::vector<double> doubles(static_cast<std::size_t>(volume(box)));
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (make_array_from_process_local_data<float, 2>(rows, doubles, shape)),
                            "local_data has element type float64");
  // Wrong global rank.
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (make_array_from_process_local_data<float, 2>(rows, right, {4 * n})),
                            "shape (", "has rank 1 but the array has rank 2");
}

TEST_CASE("interleaved devices give a process blocks that do not tile a box") {
  if (process_count() < 2) return;  // one process always holds every block
  // Mesh order: devices of alternating processes, so process 0 holds blocks 0, 2, ... of P("x").
  std::vector<std::vector<Device>> per(static_cast<std::size_t>(process_count()));
  for (const Device& d : devices()) per[static_cast<std::size_t>(d.process_index)].push_back(d);
  std::vector<Device> order;
  for (std::size_t k = 0; order.size() < devices().size(); ++k)
    for (const auto& list : per)
      if (k < list.size()) order.push_back(list[k]);
  if (per[0].size() < 2) return;  // one device per process: interleaving changes nothing
  const NamedSharding s(Mesh(order, {static_cast<int64_t>(order.size())}, {"x"}), P{"x"});
  const Shape shape{2 * static_cast<int64_t>(order.size()), 2};
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, process_local_index(s, shape), "process 0's devices hold the blocks",
                            "do not tile one box");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, global_array_to_host_local(iota<float, 2>(shape, s)),
                            "global_array_to_host_local", "do not tile one box");
}
