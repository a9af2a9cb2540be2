// make_array_from_single_device_arrays: wraps views the caller already filled, one per addressable device, as
// jax.make_array_from_single_device_arrays. The array adopts the views (no copy), so they must have exactly the
// shard type: element type T, rank N, LayoutRight, contiguous, in the array's memory space.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstddef>
#include <sstream>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "darray/array/detail/blocks.hpp"
#include "darray/array/detail/checks.hpp"
#include "darray/array/detail/view.hpp"
#include "darray/array/distributed_array.hpp"
#include "darray/runtime/detail/agree.hpp"
#include "darray/runtime/detail/state.hpp"

namespace darray {
namespace detail {

inline std::string local_mesh_devices(const std::vector<DeviceBlock>& devs) {
  std::vector<Device> ds;
  for (const DeviceBlock& db : devs) ds.push_back(db.device);
  std::ostringstream os;
  os << ds;
  return os.str();
}

// Whether View has the shard's static properties, so that it converts to the shard view type (memory traits
// such as Unmanaged may differ).
template <class T, int N, class MemorySpace, class View>
inline constexpr bool view_compatible_v =
    std::is_same<typename View::value_type, T>::value&& static_cast<int>(View::traits::rank) ==
    N&& std::is_same<typename View::array_layout,
                     Kokkos::LayoutRight>::value&& std::is_same<typename View::memory_space, MemorySpace>::value;

// Static properties of the views, checked before any communication: they are template types, alike everywhere.
template <class T, int N, class MemorySpace, class View>
void check_view_type(const char* api) {
  static_assert(Kokkos::is_view<View>::value, "make_array_from_single_device_arrays takes Kokkos views");
  check_element_type<T, typename View::non_const_value_type>(api, "the views");
  DARRAY_THROW_IF((std::is_const<typename View::value_type>::value), InvalidArgument, api,
                  "the views have const elements; the array adopts them and needs writable views");
  constexpr int rank = static_cast<int>(View::traits::rank);
  DARRAY_THROW_IF(rank != N, InvalidArgument, api, "the views have rank " << rank << " but the array has rank " << N);
  DARRAY_THROW_IF((!std::is_same<typename View::array_layout, Kokkos::LayoutRight>::value), InvalidArgument, api,
                  "the views are not LayoutRight; shards are row-major (Kokkos::LayoutRight) views");
  DARRAY_THROW_IF((!std::is_same<typename View::memory_space, MemorySpace>::value), InvalidArgument, api,
                  "the views live in " << View::memory_space::name() << " but the array's memory space is "
                                       << MemorySpace::name() << "; put each view on its device first");
}

// The views, paired with their devices, become the shards; throws (the same on every process) unless they cover
// this process's mesh devices exactly once with the right shapes.
template <class T, int N, class MemorySpace, class View>
DistributedArray<T, N, MemorySpace> adopt_views(const char* api, const Shape& shape, const NamedSharding& sharding,
                                                const std::vector<std::pair<Device, View>>& views) {
  using Array = DistributedArray<T, N, MemorySpace>;
  const auto devs = process_device_blocks(sharding, shape, process_index());
  std::vector<typename Array::shard_type> shards(devs.size());
  run_agreed(world_comm(), [&] {
    if constexpr (view_compatible_v<T, N, MemorySpace, View>) {
      std::unordered_map<int, std::size_t> slot;  // device id -> position in local-device order
      for (std::size_t i = 0; i < devs.size(); ++i) slot.emplace(devs[i].device.id, i);
      std::vector<bool> given(devs.size(), false);
      for (const auto& [device, view] : views) {
        const auto it = slot.find(device.id);
        DARRAY_THROW_IF(it == slot.end(), InvalidArgument, api,
                        "a view is given for " << device << ", which is not a device of this process (process "
                                               << process_index() << ") in the sharding's mesh; its devices here are "
                                               << local_mesh_devices(devs));
        DARRAY_THROW_IF(given[it->second], InvalidArgument, api, "two views are given for " << device);
        given[it->second] = true;
        const DeviceBlock& db = devs[it->second];
        const Shape expected = box_shape(db.index);
        const Shape got = view_shape<N>(view);
        DARRAY_THROW_IF(got != expected, InvalidArgument, api,
                        "the view for " << device << " has shape " << numpy_shape_string(got)
                                        << " but the sharding gives " << device << " the block " << db.index
                                        << " of shape " << numpy_shape_string(expected) << " of the global shape "
                                        << numpy_shape_string(shape));
        DARRAY_THROW_IF(!view.span_is_contiguous(), InvalidArgument, api,
                        "the view for " << device
                                        << " is not contiguous (a strided subview?); shards need "
                                           "contiguous views");
        shards[it->second] =
            typename Array::shard_type{db.device, db.index, db.replica_id, typename Array::view_type(view)};
      }
      for (std::size_t i = 0; i < devs.size(); ++i)
        DARRAY_THROW_IF(!given[i], InvalidArgument, api,
                        "no view is given for " << devs[i].device << "; expected one view per device of this process "
                                                << "in the sharding's mesh: " << local_mesh_devices(devs));
    }
  });
  return adopt_shards<T, N, MemorySpace>(shape, sharding, std::move(shards));
}

}  // namespace detail

// views[i] is the block of the i-th device of this process in the sharding's mesh, in local-device order (the
// order of addressable_shards()); its extents must equal that device's shard shape. Collective (to agree on errors).
template <class T, int N, class MemorySpace = DefaultMemorySpace, class View>
DistributedArray<T, N, MemorySpace> make_array_from_single_device_arrays(const Shape& shape,
                                                                         const NamedSharding& sharding,
                                                                         const std::vector<View>& views) {
  constexpr const char* api = "make_array_from_single_device_arrays";
  detail::check_array_args<N>(api, shape, sharding);
  detail::check_view_type<T, N, MemorySpace, View>(api);
  detail::check_collective<T, N>(api, shape, sharding);
  const auto devs = detail::process_device_blocks(sharding, shape, process_index());
  detail::run_agreed(detail::world_comm(), [&] {
    DARRAY_THROW_IF(views.size() != devs.size(), InvalidArgument, api,
                    "got " << views.size() << " views but this process has " << devs.size()
                           << " devices in the sharding's mesh (" << detail::local_mesh_devices(devs)
                           << "); expected one view per device, in local-device order");
  });
  std::vector<std::pair<Device, View>> paired;
  for (std::size_t i = 0; i < views.size(); ++i) paired.emplace_back(devs[i].device, views[i]);
  return detail::adopt_views<T, N, MemorySpace>(api, shape, sharding, paired);
}

// The same with each view tagged by its device, in any order; a device that is not this process's, or is given
// twice, or is missing, is an InvalidArgument.
template <class T, int N, class MemorySpace = DefaultMemorySpace, class View>
DistributedArray<T, N, MemorySpace> make_array_from_single_device_arrays(
    const Shape& shape, const NamedSharding& sharding, const std::vector<std::pair<Device, View>>& views) {
  constexpr const char* api = "make_array_from_single_device_arrays";
  detail::check_array_args<N>(api, shape, sharding);
  detail::check_view_type<T, N, MemorySpace, View>(api);
  detail::check_collective<T, N>(api, shape, sharding);
  return detail::adopt_views<T, N, MemorySpace>(api, shape, sharding, views);
}

}  // namespace darray
