// scatter_from_root: only the root holds the array; every block lands on its devices; non-root processes never
// stage more than their own blocks, receive one message holding each distinct block once; errors agree.
#include <catch2/catch.hpp>
#include <set>

#include "array_test_util.hpp"

using namespace darray;
using darray::testing::all_ok;

namespace {

// Elements of this process's distinct non-empty blocks: what it must receive, once each.
int64_t own_distinct_volume(const NamedSharding& s, const Shape& shape) {
  std::set<std::string> seen;
  int64_t total = 0;
  for (const auto& [device, index] : s.addressable_devices_indices_map(shape))
    if (volume(index) > 0 && seen.insert(to_string(index)).second) total += volume(index);
  return total;
}

template <class T>
std::vector<T> salted_source(const Shape& shape, int64_t seed) {
  std::vector<T> data(static_cast<std::size_t>(volume(shape)));
  for (std::size_t i = 0; i < data.size(); ++i)
    data[i] = darray::testing::salted_value<T>(static_cast<int64_t>(i), seed);
  return data;
}

template <class T, int N>
void check_scatter_at_rank(int random_count, uint64_t seed) {
  int k = 0;
  for (const auto& layout : darray::testing::test_layouts<N>(random_count, seed)) {
    const int root = k++ % process_count();
    INFO(layout.describe() << " dtype " << dtype_name<T>() << " root " << root);
    const NamedSharding s = layout.sharding();
    // Only the root builds the source; the others pass an empty vector.
    const std::vector<T> source = process_index() == root ? salted_source<T>(layout.shape, seed) : std::vector<T>{};
    reset_array_transfer_stats();
    const auto a = scatter_from_root<T, N>(root, source, layout.shape, s);
    const ArrayTransferStats st = array_transfer_stats();
    std::string err = darray::testing::check_shards(
        a, [&](int64_t f) { return darray::testing::salted_value<T>(f, static_cast<int64_t>(seed)); });
    if (err.empty() && process_index() != root) {
      const int64_t own = own_distinct_volume(s, layout.shape);
      const std::size_t own_bytes = static_cast<std::size_t>(own) * sizeof(T);
      // One message with exactly the distinct blocks, and staging no larger than that message.
      if (st.messages_received != (own > 0 ? 1u : 0u) || st.bytes_received != own_bytes)
        err = "received " + std::to_string(st.messages_received) + " messages / " + std::to_string(st.bytes_received) +
              " bytes, expected " + std::to_string(own > 0 ? 1 : 0) + " / " + std::to_string(own_bytes);
      else if (st.largest_staging_bytes > own_bytes)
        err = "staged " + std::to_string(st.largest_staging_bytes) + " bytes for " + std::to_string(own_bytes) +
              " bytes of blocks";
      else if (st.messages_sent != 0)
        err = "a non-root process sent a message";
    }
    if (err.empty() && process_index() == root) {
      int receivers = 0;
      for (int p = 0; p < process_count(); ++p) {
        if (p == root) continue;
        bool any = false;
        for (const auto& [device, index] : s.addressable_devices_indices_map(layout.shape, p))
          any = any || volume(index) > 0;
        receivers += any ? 1 : 0;
      }
      if (st.messages_sent != static_cast<std::size_t>(receivers))
        err = "root sent " + std::to_string(st.messages_sent) + " messages for " + std::to_string(receivers) +
              " receiving processes";
    }
    if (err.empty()) err = darray::testing::replicas_agree(a);
    INFO(err);
    REQUIRE(all_ok(err.empty()));
  }
}

}  // namespace

TEST_CASE("scatter_from_root delivers every block from every root, ranks 1-4") {
  check_scatter_at_rank<float, 1>(12, 41);
  check_scatter_at_rank<double, 2>(12, 42);
  check_scatter_at_rank<int32_t, 3>(8, 43);
  check_scatter_at_rank<int64_t, 4>(6, 44);
}

TEST_CASE("scatter_from_root with complex elements") {
  const int64_t n = device_count();
  const NamedSharding s(make_mesh({n}, {"x"}), P{none, "x"});
  const Shape shape{5, 2 * n + 1};
  std::vector<Kokkos::complex<double>> source;
  if (process_index() == 0)
    for (int64_t f = 0; f < volume(shape); ++f) source.emplace_back(static_cast<double>(f), -static_cast<double>(f));
  const auto a = scatter_from_root<Kokkos::complex<double>, 2>(0, source, shape, s);
  const std::string err = darray::testing::check_shards(
      a, [](int64_t f) { return Kokkos::complex<double>(static_cast<double>(f), -static_cast<double>(f)); });
  INFO(err);
  REQUIRE(all_ok(err.empty()));
}

TEST_CASE("replicated scatter: each process receives a block once however many replicas it holds") {
  const int64_t n = device_count();
  if (local_device_count() < 2) return;  // replicas on one process need two local devices
  // Fully replicated: every device holds the whole array; each non-root process receives it exactly once.
  const NamedSharding s(make_mesh({n}, {"x"}), P{});
  const Shape shape{7, 3};
  const std::vector<double> source = process_index() == 0 ? salted_source<double>(shape, 8) : std::vector<double>{};
  reset_array_transfer_stats();
  const auto a = scatter_from_root<double, 2>(0, source, shape, s);
  const auto st = array_transfer_stats();
  bool ok = process_index() == 0 || (st.messages_received == 1 && st.bytes_received == 21 * sizeof(double));
  std::string err =
      darray::testing::check_shards(a, [](int64_t f) { return darray::testing::salted_value<double>(f, 8); });
  if (err.empty()) err = darray::testing::replicas_agree(a);
  INFO(err);
  REQUIRE(all_ok(ok && err.empty()));
}

TEST_CASE("scatter_from_root never stages the global array off the root") {
  // Rows sharded over all devices: a non-root process holds 1/process_count of the array, and that is the most it
  // may allocate as staging (the root sends each destination's rows in place, so it stages nothing either).
  const int64_t n = device_count();
  const NamedSharding s(make_mesh({n}, {"x"}), P{"x"});
  const Shape shape{64 * n, 16};
  const int root = process_count() - 1;
  const std::vector<float> source = process_index() == root ? salted_source<float>(shape, 2) : std::vector<float>{};
  reset_array_transfer_stats();
  const auto a = scatter_from_root<float, 2>(root, source, shape, s);
  const auto st = array_transfer_stats();
  const std::size_t global_bytes = static_cast<std::size_t>(volume(shape)) * sizeof(float);
  const std::size_t own_bytes = static_cast<std::size_t>(64 * 16 * local_device_count()) * sizeof(float);
  bool ok = st.largest_staging_bytes <= own_bytes;
  if (process_count() > 1) ok = ok && st.largest_staging_bytes < global_bytes;
  if (process_index() == root) ok = ok && st.staging_bytes == 0;
  std::string err =
      darray::testing::check_shards(a, [](int64_t f) { return darray::testing::salted_value<float>(f, 2); });
  INFO(err << " largest staging " << st.largest_staging_bytes << " own " << own_bytes);
  REQUIRE(all_ok(ok && err.empty()));
}

TEST_CASE("scatter_from_root errors are raised on every process") {
  const int64_t n = device_count();
  const NamedSharding s(make_mesh({n}, {"x"}), P{"x"});
  const Shape shape{2 * n, 3};
  const std::vector<float> full_data(static_cast<std::size_t>(volume(shape)));
  const int np = process_count();
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (scatter_from_root<float, 2>(np, full_data, shape, s)),
                            "scatter_from_root", "root process", "is out of range; the job has");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (scatter_from_root<float, 2>(-1, full_data, shape, s)),
                            "root process -1 is out of range");
  // The root passes too little data; only it can tell, yet every process throws.
  const int root = np - 1;
  const std::vector<float> short_data = process_index() == root ? std::vector<float>(5) : std::vector<float>{};
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (scatter_from_root<float, 2>(root, short_data, shape, s)),
                            "host_data_on_root on the root", "has 5 elements but the shape (");
  const std::vector<double> doubles(static_cast<std::size_t>(volume(shape)));
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (scatter_from_root<float, 2>(0, doubles, shape, s)),
                            "host_data_on_root has element type float64 but the array's dtype is float32");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (scatter_from_root<float, 3>(0, full_data, shape, s)),
                            "has rank 2 but the array has rank 3");
  const NamedSharding two_d(make_mesh({n, 1}, {"x", "y"}), P{"x", "y"});
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (scatter_from_root<float, 1>(0, full_data, {volume(shape)}, two_d)),
                            "sharding spec", "has 2 entries but the array has rank 1");
}

TEST_CASE("the device-memory path (staging + deep_copy) moves every block too") {
  // GPU builds cannot write views through host pointers; the hook makes host builds take that path as well.
  struct Staged {
    Staged() { darray::detail::stage_as_if_on_device() = true; }
    ~Staged() { darray::detail::stage_as_if_on_device() = false; }
  } staged;
  int k = 0;
  for (const auto& layout : darray::testing::test_layouts<2>(10, 61)) {
    const int root = k++ % process_count();
    INFO(layout.describe() << " root " << root);
    const NamedSharding s = layout.sharding();
    const auto value_of = [](int64_t f) { return darray::testing::salted_value<double>(f, 6); };
    const std::vector<double> source =
        process_index() == root ? salted_source<double>(layout.shape, 6) : std::vector<double>{};
    const auto a = scatter_from_root<double, 2>(root, source, layout.shape, s);
    std::string err = darray::testing::check_shards(a, value_of);
    const auto all = process_allgather(a);
    if (err.empty()) err = darray::testing::check_whole(all, volume(layout.shape), value_of);
    const auto at_root = gather_to_root(a, root);
    if (err.empty() && process_index() == root)
      err = darray::testing::check_whole(at_root, volume(layout.shape), value_of);
    // Host-local round trip where the layout allows it.
    bool tiles = true;
    try {
      (void)process_local_index(s, layout.shape);
    } catch (const InvalidArgument&) {
      tiles = false;
    }
    if (tiles) {
      const auto local = global_array_to_host_local(a);
      const auto b = make_array_from_process_local_data<double, 2>(s, local, layout.shape);
      if (err.empty()) err = darray::testing::check_shards(b, value_of);
    }
    INFO(err);
    REQUIRE(all_ok(err.empty()));
  }
  // A 2-d block grid is not contiguous in the source: the root must have staged blocks.
  const int64_t n = device_count();
  if (n % 2 == 0) {
    const NamedSharding grid(make_mesh({n / 2, 2}, {"x", "y"}), P{"x", "y"});
    const Shape shape{n, 4};
    const std::vector<double> source = process_index() == 0 ? salted_source<double>(shape, 1) : std::vector<double>{};
    reset_array_transfer_stats();
    const auto a = scatter_from_root<double, 2>(0, source, shape, grid);
    const bool staged_on_root = process_index() != 0 || array_transfer_stats().staging_buffers > 0;
    const std::string err =
        darray::testing::check_shards(a, [](int64_t f) { return darray::testing::salted_value<double>(f, 1); });
    INFO(err);
    REQUIRE(all_ok(staged_on_root && err.empty()));
  }
}
