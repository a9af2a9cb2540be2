// Shard memory: every shard and per-call buffer the library allocates comes from a bounded cache per Kokkos memory
// space, so `b = reshard(a, s)` in a loop reuses the blocks of the previous iteration's freed `b` instead of asking
// the system for fresh memory (which on the host means page faults on first touch, on a GPU cudaMalloc/cudaFree).
//
// - A block stays alive as long as any Kokkos::View of it does: copy a shard's view, drop the array, and the view
//   still owns valid memory. An array's shards on one process share one block (one allocation per array, not per
//   device), so a view kept from one shard keeps the process's other shards' memory too. When the last view goes, the
//   block returns to the cache (binned by size: 8 classes per power of two, so a block is at most 12.5% larger than
//   asked). A small array's block (16 KiB or less per process) that no view outside the array holds may instead
//   wait with its shard list for the next result of the same block shapes (`y = psum(x, "i")` in a loop takes
//   the blocks of the y it replaces); memory_stats(), reset_memory_stats(), release_cached_memory() and the
//   Environment's end return such blocks to the cache first.
// - DARRAY_CACHE_BYTES bounds the bytes kept per memory space (plain bytes or with a K/M/G/T binary suffix; the
//   oldest freed blocks are evicted first). Default: a quarter of the process's memory of that space (the GPU's
//   memory; on the host the node's memory divided by the processes on the node): enough for a loop whose
//   iteration allocates arrays of up to that size, while three quarters stay free for live arrays and other
//   libraries. 0 turns the cache off: every allocation is a plain Kokkos one, as without this facility.
// - The cache is emptied when the Environment ends (before Kokkos is finalised) and by release_cached_memory();
//   blocks freed after that go straight back to the system. A system allocation that fails while the cache holds
//   blocks releases them and tries once more.
// - A host block taken from the system is advised to transparent huge pages before it is first touched (its whole
//   2 MiB pages; a hint the kernel may ignore): one page fault and one TLB entry per 2 MiB instead of 512.
//   DARRAY_HUGE_PAGES=0 turns this off. Blocks of 2 MiB and more are mapped fresh from the kernel (mmap), not taken
//   from malloc, so Kokkos' profiling tools do not see them as allocations.
// - NUMA hosts: a reused block keeps the pages where they were first touched, i.e. where the array that held them
//   before was first written. Processes bound to one NUMA domain (mpirun --bind-to core|numa) are unaffected; an
//   application that places pages by a parallel first touch from several domains in one process should set
//   DARRAY_CACHE_BYTES=0 or release_cached_memory() before allocating arrays whose placement matters.
#pragma once

#include <cstddef>
#include <functional>
#include <mutex>
#include <vector>

#include "darray/array/detail/block_cache.hpp"
#include "darray/array/detail/shard_lists.hpp"
#include "darray/array/shard.hpp"

namespace darray {

// This process's figures for one memory space.
struct MemoryStats {
  std::size_t bytes_in_use = 0;             // cached-allocator blocks held by live views
  std::size_t bytes_cached = 0;             // freed blocks kept for reuse
  std::size_t peak_bytes_in_use = 0;        // highest bytes_in_use since start-up or reset_memory_stats()
  std::size_t allocations_from_cache = 0;   // served by a cached block
  std::size_t allocations_from_system = 0;  // served by a new system allocation (MemorySpace::allocate)
  std::size_t evictions = 0;                // cached blocks given back to the system to honour the limit
  std::size_t cache_limit_bytes = 0;        // the bound in force (0: the cache is off or no Environment is active)
};

template <class MemorySpace = DefaultMemorySpace>
MemoryStats memory_stats() {
  detail::drop_kept_views();  // the views of small arrays that went, kept for the next result: nobody's
  const detail::CacheCounters c = detail::BlockCache<MemorySpace>::instance().counters();
  return MemoryStats{c.bytes_in_use, c.bytes_cached, c.peak_bytes_in_use, c.from_cache, c.from_system,
                     c.evictions,    c.limit};
}

// Peak back to the bytes in use now; allocation and eviction counts to zero.
template <class MemorySpace = DefaultMemorySpace>
void reset_memory_stats() {
  detail::drop_kept_views();
  detail::BlockCache<MemorySpace>::instance().reset_counters();
}

// Returns every cached block of every memory space to the system (blocks in use stay with their views).
inline void release_cached_memory() {
  detail::drop_kept_views();
  std::vector<std::function<void()>> releasers;
  {
    std::lock_guard<std::mutex> lock(detail::cache_registry_mutex());
    releasers = detail::cache_releasers();
  }
  for (const auto& release : releasers) release();
}

}  // namespace darray
