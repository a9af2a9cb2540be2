// Which replica of a source block feeds a destination device. Sender and receiver both evaluate this rule, so
// they agree without talking; it costs O(replicas) to set up once per block and O(rank) per destination.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "darray/sharding/named_sharding.hpp"

namespace darray {
namespace detail {

class ReplicaChooser {
 public:
  ReplicaChooser(const NamedSharding& src, std::vector<int64_t> parts)
      : m_src(src), m_parts(std::move(parts)), m_replicas(src.replica_devices(m_parts)) {
    if (m_replicas.size() > 1)
      for (const Device& r : m_replicas) m_first_on_process.emplace(r.process_index, &r - m_replicas.data());
  }

  // The destination itself when it holds a replica (nothing moves); else a replica on the destination's process
  // (no message); else the replica aligned with the destination on the source's replica axes, which spreads the
  // load over replicas and keeps mesh-axis-group exchanges (pencil transposes) inside their group.
  const Device& choose(const Device& dst) const {
    if (m_replicas.size() == 1) return m_replicas.front();
    if (holds_block(dst)) return m_replicas[static_cast<std::size_t>(m_src.replica_id(dst))];
    const auto it = m_first_on_process.find(dst.process_index);
    if (it != m_first_on_process.end()) return m_replicas[static_cast<std::size_t>(it->second)];
    return m_replicas[static_cast<std::size_t>(m_src.replica_id(dst))];
  }

  const std::vector<Device>& replicas() const { return m_replicas; }

 private:
  bool holds_block(const Device& d) const {
    for (std::size_t dim = 0; dim < m_parts.size(); ++dim)
      if (m_src.part_index(d, static_cast<int>(dim)) != m_parts[dim]) return false;
    return true;
  }

  const NamedSharding& m_src;
  std::vector<int64_t> m_parts;
  std::vector<Device> m_replicas;
  std::unordered_map<int, std::ptrdiff_t> m_first_on_process;
};

}  // namespace detail
}  // namespace darray
