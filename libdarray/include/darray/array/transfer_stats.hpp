// Counters of what the array layer's data movement cost this process: host staging memory and point-to-point
// traffic. They make memory promises testable, e.g. that scatter_from_root never stages the global array
// anywhere but on the root, and that a process receives each of its blocks once however many replicas it holds.
#pragma once

#include <algorithm>
#include <cstddef>

namespace darray {

struct ArrayTransferStats {
  std::size_t largest_staging_bytes = 0;  // largest single host staging buffer the array layer allocated
  std::size_t staging_bytes = 0;          // all host staging allocated, summed
  std::size_t staging_buffers = 0;        // number of staging allocations
  std::size_t messages_sent = 0;          // point-to-point messages (one per peer and operation, before chunking)
  std::size_t bytes_sent = 0;
  std::size_t messages_received = 0;
  std::size_t bytes_received = 0;
  std::size_t broadcasts = 0;  // broadcasts this process took part in (process_allgather)
};

namespace detail {
inline ArrayTransferStats& transfer_stats_ref() {
  static ArrayTransferStats stats;
  return stats;
}
inline void note_staging(std::size_t bytes) {
  auto& s = transfer_stats_ref();
  s.largest_staging_bytes = std::max(s.largest_staging_bytes, bytes);
  s.staging_bytes += bytes;
  ++s.staging_buffers;
}
}  // namespace detail

// This process's counters since start-up or the last reset.
inline ArrayTransferStats array_transfer_stats() { return detail::transfer_stats_ref(); }
inline void reset_array_transfer_stats() { detail::transfer_stats_ref() = ArrayTransferStats{}; }

}  // namespace darray
