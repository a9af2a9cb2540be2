// CollectiveSchedule: what one process does for one collective, derived from replicated metadata alone (no
// communication): the result's sharding and shape, the result block of each local device, the reduction slots of
// this process's component, the pieces it sends and receives, and the copies that assemble each result block.
// Plans hold element counts, not bytes, so one plan serves every element type; they are cached by their inputs.
// The layer's internals live in darray::detail, like every layer's (darray.hpp); no other header declares Piece, Copy
// or Slot at that namespace's top level (the FFT's are members of its classes).
// The public CollectivePlan (collectives/plan.hpp) holds one, with what its execution needs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "darray/core/index.hpp"
#include "darray/runtime/detail/plan_cache.hpp"
#include "darray/runtime/detail/state.hpp"
#include "darray/runtime/device.hpp"
#include "darray/sharding/named_sharding.hpp"

namespace darray {
class Transport;
namespace detail {
class MoveEngine;

// The result block of one of this process's devices.
struct Target {
  Device device;
  Index out_index;         // its box in the result's global coordinates
  Shape out_shape;         // the shape of that box (its block's shape)
  bool zero_fill = false;  // ppermute: no source sends to this device, so its block is zeros
  int64_t replica_id = 0;  // of its block in the result (out_sharding.replica_id(device))
};

enum class CopySource { shard, received, slot };

// Fills a region of a target's block from a row-major source buffer: an operand shard of this process (a device id),
// a received piece (an index into recvs) or a reduction slot (an index into slots). Regions are given at the
// result's rank; a source of lower rank is viewed with size-1 dims inserted.
struct Copy {
  std::size_t target = 0;
  CopySource from = CopySource::shard;
  int64_t source = 0;
  Shape src_shape;
  Shape src_start;
  Shape dst_start;
  Shape extent;
};

// A region of one device's operand block that travels between two processes. Both sides list the same pieces for
// each pair of processes and sort them by (process, key_device, key_chunk), so packed buffers line up.
struct Piece {
  int process = 0;         // the peer process
  int64_t key_device = 0;  // the source device's id
  int64_t key_chunk = 0;   // which region of its block (0: the whole block; all_to_all: the chunk index)
  Shape src_shape;         // sends: the source block's shape (at the region's rank)
  Shape src_start;         // sends: where the region starts in it
  Shape extent;            // the region's extent; a received piece is this region, row-major
  int64_t offset = 0;      // elements into the packed send (or receive) buffer
  int64_t elements() const { return volume(extent); }
  friend bool operator<(const Piece& a, const Piece& b) {
    if (a.process != b.process) return a.process < b.process;
    if (a.key_device != b.key_device) return a.key_device < b.key_device;
    return a.key_chunk < b.key_chunk;
  }
};

// One reduction unit of this process's component (an axis group, or replica groups reduced together:
// collectives/detail/reduction_units.hpp): every process of the component holds one slot per unit, in unit order, so
// one allreduce over the concatenated slots reduces all units at once. A process without devices in the unit's
// first group contributes the reduction's identity.
struct Slot {
  int64_t group = 0;                 // the unit's first group
  Shape shape;                       // its block shape
  int64_t elements = 0;              // volume(shape), counted once for the calls
  int64_t offset = 0;                // elements into the slot buffer
  std::vector<std::size_t> members;  // this process's devices in that group (positions in targets), in member order
};

struct CollectiveSchedule {
  CollectiveSchedule(NamedSharding sharding, Shape shape)
      : out_sharding(std::move(sharding)), out_shape(std::move(shape)) {}

  NamedSharding out_sharding;
  Shape out_shape;
  // The operand it was planned for (set from the cache key by cached_plan).
  NamedSharding in_sharding = out_sharding;
  Shape in_shape;
  std::vector<Target> targets;  // this process's devices of the mesh, in local-device order
  bool any_zero_fill = false;   // some target's block is zero-filled (kept-output calls then fill it first)
  std::vector<Copy> copies;
  std::vector<Slot> slots;
  int64_t slot_elements = 0;
  std::vector<Piece> sends, recvs;  // sorted; offsets assigned
  int64_t send_elements = 0, recv_elements = 0;
  // One color per process when some axis group spans processes (the sub-communicators of comm/group.hpp), else
  // empty; group_ranks[p] is process p's rank in its component's communicator.
  std::vector<int> colors;
  std::vector<int> group_ranks;
  int component_size = 1;
  // Reductions whose every result block is one whole slot (psum, pmax, pmin): the target whose block each slot is
  // combined in (the first it is copied to); empty when the plan is not of that form (see reduce_in_result_blocks).
  std::vector<std::size_t> slot_block;
  // Reductions: max_message_bytes() when the plan was built (the largest record reduce_with_fingerprint may send),
  // read once per plan as the exchange engine does.
  std::size_t max_message_bytes = 0;
  // A hash of the call that planned it (its cache key: operation, operand sharding and shape, parameters), the
  // same on every process making the same call: the engine's MoveList::operation.
  std::uint64_t operation = 0;
  // Movement plans: the exchange engine per element size, built on first use (collectives/detail/execute.hpp).
  mutable std::map<std::size_t, std::shared_ptr<const MoveEngine>> engines;
  // Reductions: the component's transport per backend (MPI, NCCL), kept per Environment.
  mutable PerEnvironment<Transport*> reduce_group[2];
};

// Packed-buffer offsets of sorted pieces; returns the total element count.
inline int64_t assign_piece_offsets(std::vector<Piece>& pieces) {
  int64_t at = 0;
  for (Piece& p : pieces) {
    p.offset = at;
    at += p.elements();
  }
  return at;
}

// Each collective's code in its plans' cache keys.
enum class CollectiveCode : int {
  psum = 1,
  pmax,
  pmin,
  psum_scatter,
  all_gather,
  all_gather_stacked,
  all_to_all,
  ppermute
};

// Plans cached by everything they depend on: operation, operand sharding and shape, and the integer parameters
// (axis positions, dims, permutation pairs).
struct PlanKey {
  int op = 0;
  NamedSharding sharding;
  Shape shape;
  std::vector<int64_t> params;
  friend bool operator==(const PlanKey& a, const PlanKey& b) {
    return a.op == b.op && a.shape == b.shape && a.params == b.params && a.sharding == b.sharding;
  }
};

struct PlanKeyHasher {
  std::size_t operator()(const PlanKey& k) const {
    std::size_t h = std::hash<NamedSharding>{}(k.sharding);
    hash_combine(h, static_cast<std::size_t>(k.op));
    for (int64_t n : k.shape) hash_combine(h, std::hash<int64_t>{}(n));
    hash_combine(h, k.params.size());
    for (int64_t p : k.params) hash_combine(h, std::hash<int64_t>{}(p));
    return h;
  }
};

inline PlanCache<PlanKey, const CollectiveSchedule, PlanKeyHasher>& collective_plan_cache() {
  static PlanCache<PlanKey, const CollectiveSchedule, PlanKeyHasher> cache(256);
  return cache;
}

// A collective call's plan lookup: its operation, operand and integer parameters (axis positions, dims), and for
// ppermute the permutation's pairs, which the key holds after the parameters, a pair per word (pair_word). A call
// repeated in a loop finds its plan as the cache's front one, compared where the arguments lie (no key is written:
// a permutation of n pairs would be n stores and a memcmp); key() fills the per-thread key, whose vectors keep
// their capacity, for the full lookup. The probe refers to its arguments: use it within the call.
struct PlanProbe {
  CollectiveCode code;
  const NamedSharding& sharding;
  const Shape& shape;
  const int64_t* params = nullptr;
  std::size_t count = 0;
  const std::vector<std::pair<int, int>>* pairs = nullptr;

  // A (source, dest) pair's two ints as one key word: one load and one comparison per pair.
  static int64_t pair_word(const std::pair<int, int>& pair) {
    static_assert(sizeof(std::pair<int, int>) == sizeof(int64_t), "a pair of ints fills one 64-bit word");
    int64_t word;
    std::memcpy(&word, &pair, sizeof word);
    return word;
  }

  bool matches(const PlanKey& key) const {
    const std::size_t n = count + (pairs != nullptr ? pairs->size() : 0);
    if (key.op != static_cast<int>(code) || key.params.size() != n || key.shape.size() != shape.size()) return false;
    for (std::size_t d = 0; d < shape.size(); ++d)
      if (key.shape[d] != shape[d]) return false;
    const int64_t* p = key.params.data();
    for (std::size_t k = 0; k < count; ++k)
      if (p[k] != params[k]) return false;
    if (pairs != nullptr) {
      p += count;
      for (const auto& pair : *pairs)
        if (*p++ != pair_word(pair)) return false;
    }
    return key.sharding == sharding;
  }

  // Valid until the next key() on this thread (the cache copies it on a miss).
  const PlanKey& key() const {
    static thread_local PlanKey scratch{0, sharding, {}, {}};
    scratch.op = static_cast<int>(code);
    scratch.sharding = sharding;
    scratch.shape.assign(shape.begin(), shape.end());
    scratch.params.assign(params, params + count);
    if (pairs != nullptr)
      for (const auto& pair : *pairs) scratch.params.push_back(pair_word(pair));
    return scratch;
  }
};

// The cached plan of the probed call, built by build() on a miss: the cache's pointer, valid until the next lookup.
template <class Build>
const std::shared_ptr<const CollectiveSchedule>& cached_plan(const PlanProbe& probe, Build&& build) {
  return collective_plan_cache().get_ref_by(probe, [&] {
    auto plan = std::make_shared<CollectiveSchedule>(build());
    plan->in_sharding = probe.sharding;
    plan->in_shape = probe.shape;
    plan->operation = PlanKeyHasher{}(probe.key());
    return std::shared_ptr<const CollectiveSchedule>(std::move(plan));
  });
}

}  // namespace detail
}  // namespace darray
