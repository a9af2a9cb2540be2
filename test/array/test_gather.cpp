// process_allgather and gather_to_root: the whole array, element by element, on every process or on the root only;
// each block moves once, from its replica 0; errors agree.
#include <catch2/catch.hpp>

#include "array_test_util.hpp"

using namespace darray;
using darray::testing::all_ok;

namespace {

// Bytes of the non-empty blocks whose replica 0 this process holds: what it contributes to a gather.
template <class T>
std::size_t replica0_bytes(const NamedSharding& s, const Shape& shape, int process) {
  int64_t total = 0;
  for (const auto& [device, index] : s.addressable_devices_indices_map(shape, process))
    if (s.replica_id(device) == 0) total += volume(index);
  return static_cast<std::size_t>(total) * sizeof(T);
}

template <class T, int N>
void check_gathers_at_rank(int random_count, uint64_t seed) {
  int k = 0;
  for (const auto& layout : darray::testing::test_layouts<N>(random_count, seed)) {
    const int root = k++ % process_count();
    INFO(layout.describe() << " dtype " << dtype_name<T>() << " root " << root);
    const NamedSharding s = layout.sharding();
    const auto a = iota<T, N>(layout.shape, s);
    const auto value_of = [](int64_t f) { return darray::testing::expected_value<T>(f); };

    reset_array_transfer_stats();
    const auto everywhere = process_allgather(a);
    ArrayTransferStats st = array_transfer_stats();
    std::string err = darray::testing::check_whole(everywhere, volume(layout.shape), value_of);
    int contributors = 0;
    for (int p = 0; p < process_count(); ++p) contributors += replica0_bytes<T>(s, layout.shape, p) > 0 ? 1 : 0;
    if (err.empty() && st.broadcasts != static_cast<std::size_t>(contributors))
      err = "took part in " + std::to_string(st.broadcasts) + " broadcasts, expected " + std::to_string(contributors);

    reset_array_transfer_stats();
    const auto at_root = gather_to_root(a, root);
    st = array_transfer_stats();
    if (err.empty()) {
      if (process_index() == root) {
        err = darray::testing::check_whole(at_root, volume(layout.shape), value_of);
      } else if (!at_root.empty()) {
        err = "a non-root process got data";
      } else {
        // Each block once: exactly the replica-0 blocks, in at most one message.
        const std::size_t mine = replica0_bytes<T>(s, layout.shape, process_index());
        if (st.bytes_sent != mine || st.messages_sent != (mine > 0 ? 1u : 0u))
          err = "sent " + std::to_string(st.messages_sent) + " messages / " + std::to_string(st.bytes_sent) +
                " bytes, expected " + std::to_string(mine) + " bytes in one";
      }
    }
    INFO(err);
    REQUIRE(all_ok(err.empty()));
  }
}

}  // namespace

TEST_CASE("process_allgather and gather_to_root return the whole array, ranks 1-4") {
  check_gathers_at_rank<double, 1>(12, 51);
  check_gathers_at_rank<float, 2>(12, 52);
  check_gathers_at_rank<int64_t, 3>(8, 53);
  check_gathers_at_rank<int32_t, 4>(6, 54);
  check_gathers_at_rank<Kokkos::complex<float>, 2>(4, 55);
  check_gathers_at_rank<Kokkos::complex<double>, 1>(4, 56);
}

TEST_CASE("scatter then gather is the identity, the tutorial's 1024x128 on 1-d and 2-d meshes") {
  const int64_t n = device_count();
  const Shape shape{1024, 128};
  std::vector<double> source;
  if (process_index() == 0)
    for (int64_t f = 0; f < volume(shape); ++f) source.push_back(static_cast<double>(f) * 0.5);
  std::vector<NamedSharding> shardings{NamedSharding(make_mesh({n}, {"a"}), P{"a"})};
  if (n % 2 == 0) shardings.emplace_back(make_mesh({n / 2, 2}, {"a", "b"}), P{"a", "b"});
  if (n % 2 == 0) shardings.emplace_back(make_mesh({n / 2, 2}, {"a", "b"}), P{"b", "a"});
  bool ok = true;
  for (const auto& s : shardings) {
    const auto a = scatter_from_root<double, 2>(0, source, shape, s);
    const auto back = gather_to_root(a, 0);
    ok = ok && (process_index() == 0 ? back == source : back.empty());
    const auto all = process_allgather(a);
    ok = ok && static_cast<int64_t>(all.size()) == volume(shape) && all[1000] == 500.0;
  }
  REQUIRE(all_ok(ok));
}

TEST_CASE("gather_to_root errors are raised on every process") {
  const NamedSharding s(make_mesh({device_count()}, {"x"}), P{"x"});
  const auto a = iota<float, 1>({5}, s);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, gather_to_root(a, process_count()), "gather_to_root",
                            "is out of range; the job has");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, gather_to_root(a, -2), "root process -2 is out of range");
}
