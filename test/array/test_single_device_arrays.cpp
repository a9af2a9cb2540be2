// make_array_from_single_device_arrays: adopts one view per local device (no copy), in local-device order or tagged
// by device, and rejects wrong counts, devices, shapes, element types and strided views on every process.
#include <catch2/catch.hpp>

#include "array_test_util.hpp"

using namespace darray;
using darray::testing::all_ok;

namespace {

using View2 = Kokkos::View<double**, Kokkos::LayoutRight, DefaultMemorySpace>;

// One view per addressable device, filled with the iota values of its block (the JAX docs' inp_data[index]).
std::vector<std::pair<Device, View2>> iota_views(const NamedSharding& s, const Shape& shape) {
  std::vector<std::pair<Device, View2>> out;
  for (const auto& [device, index] : s.addressable_devices_indices_map(shape)) {
    View2 v("v", static_cast<std::size_t>(index[0].size()), static_cast<std::size_t>(index[1].size()));
    auto h = Kokkos::create_mirror_view(v);
    const auto flat = darray::testing::global_flat_indices(index, shape);
    for (std::size_t i = 0; i < flat.size(); ++i) h.data()[i] = static_cast<double>(flat[i]);
    Kokkos::deep_copy(v, h);
    out.emplace_back(device, v);
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.first.local_index < b.first.local_index; });
  return out;
}

std::vector<View2> views_only(const std::vector<std::pair<Device, View2>>& tagged) {
  std::vector<View2> out;
  for (const auto& dv : tagged) out.push_back(dv.second);
  return out;
}

}  // namespace

TEST_CASE("make_array_from_single_device_arrays adopts the views") {
  std::mt19937_64 rng(31);
  const auto meshes = darray::testing::all_meshes();
  for (int k = 0; k < 12; ++k) {
    const auto layout = darray::testing::random_layout(rng, meshes[rng() % meshes.size()], 2, 9);
    INFO(layout.describe());
    const NamedSharding s = layout.sharding();
    const auto tagged = iota_views(s, layout.shape);
    const auto a = make_array_from_single_device_arrays<double, 2>(layout.shape, s, views_only(tagged));
    std::string err = darray::testing::check_shards(a, [](int64_t f) { return static_cast<double>(f); });
    // No copy: the shards are the caller's views.
    for (std::size_t i = 0; err.empty() && i < tagged.size(); ++i)
      if (a.addressable_shards()[i].data.data() != tagged[i].second.data()) err = "the view was copied";
    // Tagged by device, in reverse order: the same array.
    auto reversed = tagged;
    std::reverse(reversed.begin(), reversed.end());
    const auto b = make_array_from_single_device_arrays<double, 2>(layout.shape, s, reversed);
    if (err.empty()) err = darray::testing::check_shards(b, [](int64_t f) { return static_cast<double>(f); });
    INFO(err);
    REQUIRE(all_ok(err.empty()));
  }
}

TEST_CASE("make_array_from_single_device_arrays errors are raised on every process") {
  const int64_t n = device_count();
  const NamedSharding s(make_mesh({n}, {"x"}), P{"x"});
  const Shape shape{3 * n, 2};
  const auto tagged = iota_views(s, shape);
  const auto views = views_only(tagged);
  constexpr const char* api = "make_array_from_single_device_arrays";

  // One view too few on process 0.
  auto fewer = views;
  if (process_index() == 0) fewer.pop_back();
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (make_array_from_single_device_arrays<double, 2>(shape, s, fewer)), api,
                            "views but this process has", "devices in the sharding's mesh");
  // Wrong shape on the last process.
  auto misshaped = views;
  if (process_index() == process_count() - 1) misshaped.back() = View2("bad", 2, 3);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (make_array_from_single_device_arrays<double, 2>(shape, s, misshaped)),
                            "has shape (2, 3) but the sharding gives", "of shape (3, 2)");
  // A device of another process, or with one process a device given twice.
  auto wrong_device = tagged;
  if (process_count() > 1) {
    for (const Device& d : devices())
      if (d.process_index != process_index()) wrong_device.back().first = d;
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument,
                              (make_array_from_single_device_arrays<double, 2>(shape, s, wrong_device)),
                              "a view is given for", "which is not a device of this process");
  } else if (tagged.size() > 1) {
    wrong_device.back().first = tagged.front().first;
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument,
                              (make_array_from_single_device_arrays<double, 2>(shape, s, wrong_device)),
                              "two views are given for");
  }
  // A device missing from the tagged list.
  auto missing = tagged;
  if (process_index() == 0) missing.pop_back();
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (make_array_from_single_device_arrays<double, 2>(shape, s, missing)),
                            "no view is given for");
  // Static mismatches: element type, rank, layout.
  std::vector<Kokkos::View<float**, Kokkos::LayoutRight, DefaultMemorySpace>> floats;
  for (const auto& v : views) floats.emplace_back("f", v.extent(0), v.extent(1));
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (make_array_from_single_device_arrays<double, 2>(shape, s, floats)),
                            "the views has element type float32", "dtype is float64");
  std::vector<Kokkos::View<double*, Kokkos::LayoutRight, DefaultMemorySpace>> rank1(views.size());
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (make_array_from_single_device_arrays<double, 2>(shape, s, rank1)),
                            "the views have rank 1 but the array has rank 2");
  std::vector<Kokkos::View<double**, Kokkos::LayoutLeft, DefaultMemorySpace>> left(views.size());
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (make_array_from_single_device_arrays<double, 2>(shape, s, left)),
                            "not LayoutRight");
  // A strided LayoutRight subview of the right shape: columns 0..1 of a 3-column view, on the last process.
  auto strided = views;
  if (process_index() == process_count() - 1) {
    View2 wide("wide", 3, 3);
    strided.back() = Kokkos::subview(wide, Kokkos::ALL, std::make_pair(0, 2));
  }
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (make_array_from_single_device_arrays<double, 2>(shape, s, strided)),
                            "is not contiguous");
}
