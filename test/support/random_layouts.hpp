// Random meshes and PartitionSpecs for property tests. Deterministic for a given generator state, so every process
// seeded alike draws the same layouts.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "darray/runtime/device.hpp"
#include "darray/sharding/mesh.hpp"
#include "darray/sharding/partition_spec.hpp"

namespace darray {
namespace testing {

// A spec over `names` for an array of `rank` dims: each axis goes to a random dim (several may share one, major
// first in random order) or stays unused (replicated). With `trim`, trailing empty entries are sometimes dropped.
inline PartitionSpec random_spec(std::mt19937_64& rng, const std::vector<std::string>& names, std::size_t rank,
                                 bool trim = false) {
  std::vector<PartitionSpec::Entry> entries(rank);
  std::vector<std::string> order = names;
  std::shuffle(order.begin(), order.end(), rng);
  for (const auto& a : order) {
    const std::size_t slot = rng() % (rank + 1);  // rank: the axis stays unused
    if (slot < rank) entries[slot].push_back(a);
  }
  while (trim && !entries.empty() && entries.back().empty() && rng() % 2) entries.pop_back();
  return PartitionSpec(entries);
}

// A mesh over `devices` whose shape factors the device count into `axes` axes (0: a random 1 to 3), named from
// `first_name` on; with `maybe_shuffle`, half the time over a shuffled device order.
inline Mesh random_mesh(std::mt19937_64& rng, std::vector<Device> devices, int axes = 0, bool maybe_shuffle = true,
                        char first_name = 'a') {
  if (axes == 0) axes = 1 + static_cast<int>(rng() % 3);
  int64_t n = static_cast<int64_t>(devices.size());
  std::vector<int64_t> shape;
  for (int a = 0; a < axes - 1; ++a) {
    std::vector<int64_t> divisors;
    for (int64_t k = 1; k <= n; ++k)
      if (n % k == 0) divisors.push_back(k);
    const int64_t k = divisors[rng() % divisors.size()];
    shape.push_back(k);
    n /= k;
  }
  shape.push_back(n);
  std::vector<std::string> names;
  for (std::size_t a = 0; a < shape.size(); ++a) names.push_back(std::string(1, static_cast<char>(first_name + a)));
  if (maybe_shuffle && rng() % 2) std::shuffle(devices.begin(), devices.end(), rng);
  return Mesh(devices, shape, names);
}

}  // namespace testing
}  // namespace darray
