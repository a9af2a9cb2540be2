// The sharding calls that ask the running Environment: make_mesh over all devices, and the NamedSharding queries
// that default to this process. Kept apart from the pure index math so offline planners need no MPI_Init.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "darray/runtime/environment.hpp"
#include "darray/sharding/mesh.hpp"
#include "darray/sharding/named_sharding.hpp"

namespace darray {

// A mesh over every device of the job (darray::devices()), in id order: process-major, so a mesh's last axes span
// the devices of one process first, as jax.make_mesh does on one host.
inline Mesh make_mesh(std::vector<int64_t> shape, std::vector<std::string> axis_names) {
  std::shared_ptr<const std::vector<Device>> table = detail::shared_device_table("make_mesh");
  const std::vector<Device>& all = *table;
  int64_t positions = 1;
  bool positive = true;
  for (int64_t n : shape) {
    positive = positive && n >= 1;
    if (__builtin_mul_overflow(positions, n, &positions)) positions = INT64_MAX;
  }
  // Mesh reports bad axis sizes and names itself; here the likely mistake is a shape for another job size.
  DARRAY_THROW_IF(positive && positions != static_cast<int64_t>(all.size()), InvalidArgument, "make_mesh",
                  "mesh shape " << shape_to_string(shape) << " needs "
                                << (positions == INT64_MAX ? std::string("over 2^63") : std::to_string(positions))
                                << " devices but the job has " << all.size() << " (" << process_count()
                                << " processes); expected a shape whose sizes multiply to " << all.size());
  return detail::MeshAccess::over(std::move(table), std::move(shape), std::move(axis_names));
}

inline std::vector<std::pair<Device, Index>> NamedSharding::addressable_devices_indices_map(
    const std::vector<int64_t>& shape) const {
  return addressable_devices_indices_map(shape, process_index());
}

inline bool NamedSharding::is_fully_addressable() const { return is_fully_addressable(process_index()); }

}  // namespace darray
