// The result side of a collective: the result's PartitionSpec (the operand's, with the collective's axes removed
// where the blocks become equal along them and added where they come to differ), the result's global shape, which
// follows from the per-device result blocks, the check that those blocks tile it, and this process's targets.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "darray/collectives/detail/axis_groups.hpp"
#include "darray/collectives/detail/block_checks.hpp"
#include "darray/collectives/detail/plan.hpp"
#include "darray/core/error.hpp"
#include "darray/core/index.hpp"
#include "darray/core/partition.hpp"
#include "darray/runtime/environment.hpp"
#include "darray/sharding/detail/names.hpp"
#include "darray/sharding/named_sharding.hpp"

namespace darray {
namespace detail {

// The operand's spec entries, padded with replicated entries to `rank`.
inline std::vector<PartitionSpec::Entry> spec_entries(const NamedSharding& s, std::size_t rank) {
  std::vector<PartitionSpec::Entry> entries = s.spec().entries();
  if (entries.size() < rank) entries.resize(rank);
  return entries;
}

// Removes the named axes from whichever entries hold them.
inline void remove_axes(std::vector<PartitionSpec::Entry>& entries, const std::vector<std::string>& names) {
  for (auto& entry : entries)
    for (const std::string& n : names) entry.erase(std::remove(entry.begin(), entry.end(), n), entry.end());
}

// The spec of a result: the operand's entries after the transformation, no longer than the operand's spec unless
// a transformation named a later dim.
inline PartitionSpec trimmed_spec(std::vector<PartitionSpec::Entry> entries, std::size_t keep) {
  while (entries.size() > keep && entries.back().empty()) entries.pop_back();
  return PartitionSpec(std::move(entries));
}

// The result's global shape from the shape of each device's result block (block_shape(pos), rank `rank`): along
// each dim the blocks of the result's parts, added up. Throws unless they tile that shape as the result sharding
// lays it out (equal blocks, or uneven ones exactly as the block partition makes them).
template <class BlockShape>
Shape derive_result_shape(const char* api, const NamedSharding& out, std::size_t rank, BlockShape&& block_shape,
                          const Shape& operand_shape, const NamedSharding& operand) {
  const Mesh& mesh = out.mesh();
  std::vector<std::vector<int64_t>> sizes(rank);
  for (std::size_t d = 0; d < rank; ++d)
    sizes[d].assign(static_cast<std::size_t>(out.num_parts(static_cast<int>(d))), -1);
  auto fail = [&](std::size_t d, const std::string& detail_text) {
    DARRAY_THROW(InvalidArgument, api,
                 "the per-device results cannot form one array sharded "
                     << out.spec() << ": along result dim " << d << " " << detail_text << " ("
                     << describe_operand(operand_shape, operand)
                     << "); this comes from uneven blocks, so make each sharded dim a multiple of its number of parts");
  };
  for (int64_t pos = 0; pos < mesh.size(); ++pos) {
    const Device& dev = mesh.devices()[static_cast<std::size_t>(pos)];
    const Shape b = block_shape(pos);
    for (std::size_t d = 0; d < rank; ++d) {
      int64_t& slot = sizes[d][static_cast<std::size_t>(out.part_index(dev, static_cast<int>(d)))];
      if (slot < 0) slot = b[d];
      if (slot != b[d]) {
        std::ostringstream os;
        os << "devices of one part hold blocks of sizes " << slot << " and " << b[d];
        fail(d, os.str());
      }
    }
  }
  Shape result(rank, 0);
  for (std::size_t d = 0; d < rank; ++d) {
    for (int64_t n : sizes[d]) result[d] += n;
    const auto k = static_cast<int64_t>(sizes[d].size());
    for (int64_t p = 0; p < k; ++p) {
      if (sizes[d][static_cast<std::size_t>(p)] == block_size(result[d], k, p)) continue;
      std::ostringstream os;
      os << "the " << k << " parts hold blocks of sizes [";
      for (int64_t q = 0; q < k; ++q) os << (q ? ", " : "") << sizes[d][static_cast<std::size_t>(q)];
      os << "], which is not how " << result[d] << " elements split into " << k << " parts";
      fail(d, os.str());
    }
  }
  return result;
}

// One target per device of this process in the mesh, in local-device order (the order of a DistributedArray's
// shards). Returns the position of each target's device in the mesh.
inline std::vector<int64_t> add_targets(CollectiveSchedule& plan) {
  std::vector<int64_t> positions;
  const Mesh& mesh = plan.out_sharding.mesh();
  for (const Device& d : local_devices()) {
    if (!mesh.contains(d)) continue;
    Index index = plan.out_sharding.index(plan.out_shape, d);
    Shape shape = box_shape(index);
    plan.targets.push_back(Target{d, std::move(index), std::move(shape), false, plan.out_sharding.replica_id(d)});
    positions.push_back(mesh.position(d));
  }
  return positions;
}

// Colors of the process components and each process's rank in its component's communicator.
inline void set_components(CollectiveSchedule& plan, const ProcessComponents& comps) {
  plan.colors = comps.colors;
  plan.component_size = comps.component_size;
  if (plan.colors.empty()) return;
  plan.group_ranks.assign(plan.colors.size(), 0);
  std::unordered_map<int, int> next;
  for (std::size_t p = 0; p < plan.colors.size(); ++p) plan.group_ranks[p] = next[plan.colors[p]]++;
}

}  // namespace detail
}  // namespace darray
