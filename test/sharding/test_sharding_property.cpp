// Randomized properties of NamedSharding over random meshes, specs and shapes (uneven and empty dims included),
// checked against an independent count of every element rather than against the formulas it uses.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "darray/core/partition.hpp"
#include "darray/runtime/device.hpp"
#include "darray/sharding/named_sharding.hpp"

using darray::Device;
using darray::Index;
using darray::Mesh;
using darray::NamedSharding;
using darray::PartitionSpec;
using darray::Shape;

namespace {

struct Case {
  Mesh mesh;
  PartitionSpec spec;
  Shape shape;
};

Case random_case(std::mt19937_64& rng) {
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  // Mesh: 1-3 axes of size 1-4, devices in a random order over a random number of processes.
  const int mesh_ndim = static_cast<int>(pick(1, 3));
  Shape mesh_shape;
  std::vector<std::string> names;
  int64_t mesh_size = 1;
  for (int a = 0; a < mesh_ndim; ++a) {
    mesh_shape.push_back(pick(1, 4));
    mesh_size *= mesh_shape.back();
    names.push_back(std::string(1, static_cast<char>('a' + a)));
  }
  std::vector<int> counts;
  for (int64_t left = mesh_size; left > 0;) {
    counts.push_back(static_cast<int>(pick(1, left)));
    left -= counts.back();
  }
  auto devices = darray::make_device_table(counts);
  std::shuffle(devices.begin(), devices.end(), rng);

  // Array of rank 0-4, dims 0-9: small enough to count every element.
  const int rank = static_cast<int>(pick(0, 4));
  Shape shape;
  for (int d = 0; d < rank; ++d) shape.push_back(pick(0, 9));

  // Each mesh axis goes to a random dim or stays unused; axes of one dim come in a random order.
  std::vector<PartitionSpec::Entry> entries(static_cast<std::size_t>(rank));
  std::vector<int> order(static_cast<std::size_t>(mesh_ndim));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  int used_dims = 0;
  for (int a : order) {
    const int64_t dim = pick(-1, rank - 1);
    if (dim < 0) continue;
    entries[static_cast<std::size_t>(dim)].push_back(names[static_cast<std::size_t>(a)]);
    used_dims = std::max(used_dims, static_cast<int>(dim) + 1);
  }
  entries.resize(static_cast<std::size_t>(pick(used_dims, rank)));
  return Case{Mesh(devices, mesh_shape, names), PartitionSpec(entries), shape};
}

}  // namespace

TEST_CASE("NamedSharding property: replica 0 tiles the array once, replicas agree (randomized)") {
  std::mt19937_64 rng(20240611);
  for (int trial = 0; trial < 3000; ++trial) {
    const Case c = random_case(rng);
    const NamedSharding s(c.mesh, c.spec);
    INFO("trial " << trial << ": " << s << " shape " << darray::shape_to_string(c.shape));
    const std::size_t rank = c.shape.size();
    const Shape strides = darray::row_major_strides(c.shape);
    std::vector<int> covered(static_cast<std::size_t>(darray::volume(c.shape)), 0);

    int64_t blocks = 1;
    for (std::size_t d = 0; d < rank; ++d) blocks *= s.num_parts(static_cast<int>(d));
    std::map<std::vector<int64_t>, std::vector<std::pair<int64_t, Device>>> holders;  // parts -> (replica, device)
    std::map<std::vector<int64_t>, Index> box_of;
    const auto map = s.devices_indices_map(c.shape);
    REQUIRE(static_cast<int64_t>(map.size()) == c.mesh.size());
    for (std::size_t k = 0; k < map.size(); ++k) {
      const auto& [device, index] = map[k];
      REQUIRE(device == c.mesh.devices()[k]);
      REQUIRE(index.size() == rank);
      REQUIRE(s.index(c.shape, device) == index);
      REQUIRE(s.shard_shape(c.shape, device) == darray::box_shape(index));
      // The part index is the mixed-radix number of the mesh coords along the dim's axes.
      const auto coords = c.mesh.coords(device);
      std::vector<int64_t> parts(rank, 0);
      for (std::size_t d = 0; d < rank; ++d) {
        int64_t p = 0;
        if (d < c.spec.size())
          for (const auto& axis : c.spec[d])
            p = p * c.mesh.axis_size(axis) + coords[static_cast<std::size_t>(c.mesh.axis_position(axis))];
        REQUIRE(s.part_index(device, static_cast<int>(d)) == p);
        parts[d] = p;
        // Balanced blocks: sizes n/k or n/k + 1, never larger than the first block (JAX's shard_shape).
        const int64_t n = c.shape[d], parts_of_dim = s.num_parts(static_cast<int>(d));
        REQUIRE(index[d].start >= 0);
        REQUIRE(index[d].stop <= n);
        REQUIRE(index[d].start <= index[d].stop);
        REQUIRE(index[d].size() >= n / parts_of_dim);
        REQUIRE(index[d].size() <= s.shard_shape(c.shape)[d]);
      }
      const int64_t replica = s.replica_id(device);
      REQUIRE(replica >= 0);
      REQUIRE(replica < s.num_replicas());
      holders[parts].emplace_back(replica, device);
      const auto seen = box_of.emplace(parts, index);
      REQUIRE(seen.first->second == index);  // every replica of a block has the same box
      if (replica != 0) continue;
      // Count each element of replica 0's box.
      const Shape box = darray::box_shape(index);
      const int64_t n = darray::volume(index);
      for (int64_t flat = 0; flat < n; ++flat) {
        int64_t offset = 0, rest = flat;
        for (std::size_t d = rank; d-- > 0;) {
          offset += (index[d].start + rest % box[d]) * strides[d];
          rest /= box[d];
        }
        ++covered[static_cast<std::size_t>(offset)];
      }
    }
    REQUIRE(std::all_of(covered.begin(), covered.end(), [](int n) { return n == 1; }));
    REQUIRE(static_cast<int64_t>(holders.size()) == blocks);
    REQUIRE(blocks * s.num_replicas() == c.mesh.size());
    REQUIRE(s.is_fully_replicated() == (blocks == 1));
    for (auto& [parts, group] : holders) {
      REQUIRE(static_cast<int64_t>(group.size()) == s.num_replicas());
      std::sort(group.begin(), group.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
      std::vector<Device> expected;
      for (std::size_t r = 0; r < group.size(); ++r) {
        REQUIRE(group[r].first == static_cast<int64_t>(r));  // replica ids 0..num_replicas-1, once each
        expected.push_back(group[r].second);
      }
      REQUIRE(s.replica_devices(parts) == expected);
      // Extra trailing part indices of 0 name the same block.
      auto longer = parts;
      longer.push_back(0);
      REQUIRE(s.replica_devices(longer) == expected);
    }
  }
}
