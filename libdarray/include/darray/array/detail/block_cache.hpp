// The shard memory cache: per Kokkos memory space, a block freed by its last view goes back to a bin of its size
// class and is handed out again without a system allocation (no fresh pages to fault in on the host, no
// cudaMalloc/cudaFree on a GPU). Bounded by DARRAY_CACHE_BYTES (the oldest freed blocks are evicted first), emptied
// when the Environment ends and by darray::release_cached_memory(). The public face is darray/array/memory.hpp.
//
// For the library's own per-call buffers (staging, work space):
//   detail::cached_view<Kokkos::View<T*, M>>("darray::reshard send", n)   an uninitialised view from the cache
//   detail::cached_buffer<M>(bytes)                                         the same for raw bytes
// Both fall back to a plain Kokkos allocation when the cache is off (DARRAY_CACHE_BYTES=0) or no Environment is
// active. The returned views own their block like any managed view: copies keep it alive, the last one returns it.
#pragma once

#include "darray/config.hpp"

#include <unistd.h>

#include <Kokkos_Core.hpp>
#include <cstddef>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "darray/core/detail/huge_pages.hpp"
#include "darray/core/env_vars.hpp"
#include "darray/runtime/detail/gpu.hpp"
#include "darray/runtime/detail/kokkos_compat.hpp"
#include "darray/runtime/detail/state.hpp"

namespace darray {
namespace detail {

// The size class a request of `bytes` is served from: multiples of 512 B up to 4 KiB, then 8 classes per power of
// two (a block is at most 12.5% larger than asked), so shapes that differ slightly share blocks.
inline std::size_t cache_size_class(std::size_t bytes) {
  std::size_t step = 512;
  if (bytes > 4096) {
    std::size_t top = 4096;
    while (top <= bytes / 2) top *= 2;  // the largest power of two <= bytes
    step = top / 8;
  }
  return (bytes + step - 1) / step * step;
}

inline std::size_t physical_host_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  return pages > 0 ? static_cast<std::size_t>(pages) * host_page_bytes() : 0;
}

// The memory of MemorySpace this process may count on: the GPU's for device memory (one GPU per process), else the
// host's share of this process among the processes of its node.
template <class MemorySpace>
std::size_t process_memory_bytes() {
#if defined(DARRAY_HAS_CUDA_RUNTIME)
  if constexpr (!Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemorySpace>::accessible) {
    std::size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess && total_bytes > 0) return total_bytes;
  }
#endif
  const int local = state().local_size > 0 ? state().local_size : 1;
  return physical_host_memory_bytes() / static_cast<std::size_t>(local);
}

// Default bound of the cache: a quarter of the process's memory of that space (1 GiB when unknown). The cache only
// keeps blocks that were in use moments ago, so a loop needs about one iteration's allocations (b = reshard(a, s)
// of 1 GiB per process needs 1 GiB); a quarter covers that for the array sizes that fit beside their inputs, while
// the other three quarters stay free for the application's live arrays and for other libraries (MPI, FFT plans).
template <class MemorySpace>
std::size_t default_cache_limit_bytes() {
  const std::size_t memory = process_memory_bytes<MemorySpace>();
  return memory > 0 ? memory / 4 : (std::size_t(1) << 30);
}

struct CacheCounters {
  std::size_t bytes_in_use = 0;
  std::size_t bytes_cached = 0;
  std::size_t peak_bytes_in_use = 0;
  std::size_t from_cache = 0;
  std::size_t from_system = 0;
  std::size_t evictions = 0;
  std::size_t limit = 0;
};

// Every memory space's cache, for release_cached_memory().
inline std::mutex& cache_registry_mutex() {
  static std::mutex m;
  return m;
}
inline std::vector<std::function<void()>>& cache_releasers() {
  static std::vector<std::function<void()>> v;
  return v;
}

// One block: `data` is the user memory, preceded by a zeroed Kokkos allocation header in the same system
// allocation; `bytes` is its size class.
struct CachedBlock {
  void* data = nullptr;
  std::size_t bytes = 0;
};

template <class MemorySpace>
class BlockCache {
 public:
  using Header = ExternalAllocationRecord::Header;

  // Never destroyed: a view may outlive static destruction, and its block must still find its way back.
  static BlockCache& instance() {
    static BlockCache* cache = [] {
      auto* c = new BlockCache;
      std::lock_guard<std::mutex> lock(cache_registry_mutex());
      cache_releasers().push_back([c] { c->release(); });
      return c;
    }();
    return *cache;
  }

  // A block of at least `bytes` (its size class) and storage for its allocation record, or nothing when the cache
  // is off (then the caller allocates without it). `record_storage` is null when no spare one was kept.
  struct Acquired {
    CachedBlock block;
    void* record_storage = nullptr;
  };
  bool acquire(std::size_t bytes, Acquired& out) {
    const std::size_t cls = cache_size_class(bytes);
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      open_if_needed();
      if (!m_open || m_limit == 0) return false;
      out.record_storage = take_record_storage();
      const auto bin = m_bins.find(cls);
      if (bin != m_bins.end() && bin->second.newest) {
        // The most recently freed block of the class: its pages are the likeliest to be warm.
        Node* node = bin->second.newest;
        out.block = node->block;
        unlink(node);
        m_counters.bytes_cached -= cls;
        ++m_counters.from_cache;
        note_in_use(cls);
        return true;
      }
    }
    void* base = nullptr;
    try {
      base = system_allocate(cls);
    } catch (...) {
      give_back_record_storage(out.record_storage);
      throw;
    }
    zero_header(base);
    std::lock_guard<std::mutex> lock(m_mutex);
    ++m_counters.from_system;
    note_in_use(cls);
    out.block = CachedBlock{static_cast<char*>(base) + sizeof(Header), cls};
    return true;
  }

  // Called when the last view of `block` goes, with the storage of its (destroyed) record, or null; never throws
  // (it runs inside Kokkos' reference counting).
  void give_back(const CachedBlock& block, void* record_storage = nullptr) noexcept {
    bool free_block = false;
    std::vector<CachedBlock> evicted;  // allocates only when something is evicted
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      m_counters.bytes_in_use -= block.bytes;
      keep_record_storage(record_storage);
      if (!m_open || block.bytes > m_limit || !link_newest(block)) {
        free_block = true;
      } else {
        m_counters.bytes_cached += block.bytes;
        evict_to(m_limit, evicted);
      }
    }
    if (free_block) system_free_one(block);
    system_free(evicted);
  }

  // Returns every cached block to the system (blocks in use stay with their views).
  void release() noexcept {
    std::vector<CachedBlock> freed;
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      evict_to(0, freed);
    }
    system_free(freed);
  }

  // Test hook: a different bound for the rest of this Environment (evicts down to it).
  void set_limit(std::size_t limit) {
    std::vector<CachedBlock> freed;
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      open_if_needed();
      m_limit = limit;
      evict_to(limit, freed);
    }
    system_free(freed);
  }

  CacheCounters counters() {
    std::lock_guard<std::mutex> lock(m_mutex);
    open_if_needed();
    CacheCounters c = m_counters;
    c.limit = m_open ? m_limit : 0;
    return c;
  }

  // Peak back to the bytes in use now, and the allocation counts to zero.
  void reset_counters() {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_counters.peak_bytes_in_use = m_counters.bytes_in_use;
    m_counters.from_cache = m_counters.from_system = m_counters.evictions = 0;
  }

 private:
  // A cached block in two intrusive lists: all cached blocks by the time they were freed (evict the oldest), and
  // the blocks of its size class (reuse the newest). Nodes and record storage are recycled, so a block's round trip
  // through the cache allocates nothing once the cache has warmed up.
  struct Bin;
  struct Node {
    CachedBlock block;
    Node* older = nullptr;
    Node* newer = nullptr;
    Node* bin_older = nullptr;
    Node* bin_newer = nullptr;
    Bin* bin = nullptr;
  };
  struct Bin {
    Node* oldest = nullptr;
    Node* newest = nullptr;
  };
  // Spare nodes and record storage kept at most: beyond it they are freed (a burst of frees is not kept forever).
  static constexpr std::size_t max_spares = 4096;

  BlockCache() = default;

  // With m_mutex held.
  void open_if_needed() {
    if (m_registered || !state().active) return;
    const auto configured = env_cache_bytes();
    m_limit = configured ? *configured : default_cache_limit_bytes<MemorySpace>();
    m_registered = true;
    m_open = true;
    at_finalize([this] { close(); });
  }

  // The Environment ends: from now on freed blocks go straight back to the system (Kokkos may be finalised next).
  void close() noexcept {
    std::vector<CachedBlock> freed;
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      m_open = false;
      m_registered = false;
      evict_to(0, freed);
      m_bins.clear();
      for (Node* n : m_spare_nodes) delete n;
      m_spare_nodes.clear();
      m_spare_nodes.shrink_to_fit();
      for (void* r : m_spare_records) ::operator delete(r);
      m_spare_records.clear();
      m_spare_records.shrink_to_fit();
    }
    system_free(freed);
  }

  void note_in_use(std::size_t bytes) {
    m_counters.bytes_in_use += bytes;
    if (m_counters.bytes_in_use > m_counters.peak_bytes_in_use) m_counters.peak_bytes_in_use = m_counters.bytes_in_use;
  }

  // With m_mutex held: `block` becomes the newest cached block (of all and of its class). False when no node could
  // be allocated (then the caller frees the block instead of caching it).
  bool link_newest(const CachedBlock& block) noexcept {
    Node* node = nullptr;
    if (!m_spare_nodes.empty()) {
      node = m_spare_nodes.back();
      m_spare_nodes.pop_back();
    } else {
      node = new (std::nothrow) Node;
      if (!node) return false;
    }
    Bin* bin = nullptr;
    try {
      bin = &m_bins[block.bytes];  // at most 8 classes per power of two: the map stays small
    } catch (...) {
      delete node;
      return false;
    }
    *node = Node{block, m_newest, nullptr, bin->newest, nullptr, bin};
    (m_newest ? m_newest->newer : m_oldest) = node;
    m_newest = node;
    (bin->newest ? bin->newest->bin_newer : bin->oldest) = node;
    bin->newest = node;
    return true;
  }

  // With m_mutex held: takes `node` out of both lists and keeps it as a spare.
  void unlink(Node* node) noexcept {
    (node->older ? node->older->newer : m_oldest) = node->newer;
    (node->newer ? node->newer->older : m_newest) = node->older;
    Bin* bin = node->bin;
    (node->bin_older ? node->bin_older->bin_newer : bin->oldest) = node->bin_newer;
    (node->bin_newer ? node->bin_newer->bin_older : bin->newest) = node->bin_older;
    if (!keep_spare(m_spare_nodes, node)) delete node;
  }

  template <class P>
  static bool keep_spare(std::vector<P>& spares, P p) noexcept {
    if (spares.size() >= max_spares) return false;
    try {
      spares.push_back(p);
      return true;
    } catch (...) {
      return false;
    }
  }

  // With m_mutex held: spare record storage, or null.
  void* take_record_storage() noexcept {
    if (m_spare_records.empty()) return nullptr;
    void* r = m_spare_records.back();
    m_spare_records.pop_back();
    return r;
  }
  void keep_record_storage(void* r) noexcept {
    if (r && (!m_open || !keep_spare(m_spare_records, r))) ::operator delete(r);
  }
  void give_back_record_storage(void* r) noexcept {
    std::lock_guard<std::mutex> lock(m_mutex);
    keep_record_storage(r);
  }

  // With m_mutex held: oldest freed blocks out until at most `limit` bytes stay cached.
  void evict_to(std::size_t limit, std::vector<CachedBlock>& out) noexcept {
    while (m_counters.bytes_cached > limit && m_oldest) {
      Node* node = m_oldest;  // the oldest block of the whole cache is the oldest of its class
      const CachedBlock block = node->block;
      unlink(node);
      m_counters.bytes_cached -= block.bytes;
      if (limit > 0) ++m_counters.evictions;
      try {
        out.push_back(block);
      } catch (...) {
        system_free_one(block);  // no room to defer it: free it here, under the lock
      }
    }
  }

  // A fresh block from the system. On the host, a block of 2 MiB and more is mapped from the kernel at a 2 MiB
  // boundary and advised to huge pages before anything touches it: one page fault per 2 MiB instead of 512
  // (core/detail/huge_pages.hpp). Not from malloc: memory it recycled keeps the 4 KiB pages it was touched with (the
  // FFT's measuring planner frees its scratch blocks just before the transforms' arrays are made: bench/README,
  // "Fresh blocks for the cache"). Smaller blocks, and other spaces, come from the memory space as before.
  static constexpr bool mapped(std::size_t bytes) {
    return std::is_same<MemorySpace, Kokkos::HostSpace>::value && bytes >= huge_page_bytes;
  }
  static void* allocate_fresh(std::size_t bytes) {
    if (mapped(bytes)) return map_block(bytes, huge_pages_wanted(bytes));
    return MemorySpace().allocate("darray::cache", bytes);
  }

  void* system_allocate(std::size_t bytes) {
    try {
      return allocate_fresh(bytes + sizeof(Header));
    } catch (...) {
      // Out of memory while blocks sit in the cache: give them back and try once more.
      bool had_cached = false;
      {
        std::lock_guard<std::mutex> lock(m_mutex);
        had_cached = m_counters.bytes_cached > 0;
      }
      if (!had_cached) throw;
      release();
      return allocate_fresh(bytes + sizeof(Header));
    }
  }

  static void system_free_one(const CachedBlock& b) noexcept {
    try {
      void* const base = static_cast<char*>(b.data) - sizeof(Header);
      if (mapped(b.bytes + sizeof(Header)))
        unmap_block(base, b.bytes + sizeof(Header));
      else
        MemorySpace().deallocate("darray::cache", base, b.bytes + sizeof(Header));
    } catch (...) {
      // A failed free (a GPU already torn down) loses the block; it cannot be reported from here.
    }
  }
  static void system_free(const std::vector<CachedBlock>& blocks) noexcept {
    for (const CachedBlock& b : blocks) system_free_one(b);
  }

  static void zero_header(void* base) {
    if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemorySpace>::accessible) {
      std::memset(base, 0, sizeof(Header));
    } else {
      const char zeros[sizeof(Header)] = {};
      Kokkos::View<char*, MemorySpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> dst(static_cast<char*>(base),
                                                                                    sizeof(Header));
      Kokkos::View<const char*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> src(zeros, sizeof(Header));
      Kokkos::deep_copy(dst, src);
    }
  }

  std::mutex m_mutex;
  bool m_registered = false;  // the release hook is registered with the current Environment
  bool m_open = false;        // freed blocks are kept
  std::size_t m_limit = 0;
  CacheCounters m_counters;
  Node* m_oldest = nullptr;  // all cached blocks, oldest first
  Node* m_newest = nullptr;
  std::map<std::size_t, Bin> m_bins;  // by size class
  std::vector<Node*> m_spare_nodes;
  std::vector<void*> m_spare_records;
};

// The Kokkos allocation record of a block handed out by the cache: the last view's release returns the block, and
// the record's storage with it (records are built in recycled storage, see BlockCache::Acquired).
template <class MemorySpace>
class CachedBlockRecord final : public ExternalAllocationRecord {
 public:
  static CachedBlockRecord* create(const CachedBlock& block, void* storage, std::string_view label) {
    if (!storage) storage = ::operator new(sizeof(CachedBlockRecord));
    try {
      return new (storage) CachedBlockRecord(block, label);
    } catch (...) {
      ::operator delete(storage);
      throw;
    }
  }

 private:
  CachedBlockRecord(const CachedBlock& block, std::string_view label)
      : ExternalAllocationRecord(block.data, block.bytes, &release, label), m_block(block) {}

  static void release(Kokkos::Impl::SharedAllocationRecord<void, void>* record) {
    auto* self = static_cast<CachedBlockRecord*>(record);
    const CachedBlock block = self->m_block;
    self->~CachedBlockRecord();
    BlockCache<MemorySpace>::instance().give_back(block, self);
  }

  CachedBlock m_block;
};

// A block of at least `bytes` from the cache of MemorySpace and the allocation record that owns it (use count 0:
// hand it to a view at once, place_view), or false when the cache is off or no Environment is active.
template <class MemorySpace>
bool try_cached_record(std::size_t bytes, std::string_view label, CachedBlock& block,
                       CachedBlockRecord<MemorySpace>*& record) {
  auto& cache = BlockCache<MemorySpace>::instance();
  typename BlockCache<MemorySpace>::Acquired got;
  if (!cache.acquire(bytes, got)) return false;
  try {
    record = CachedBlockRecord<MemorySpace>::create(got.block, got.record_storage, label);
  } catch (...) {
    cache.give_back(got.block);
    throw;
  }
  block = got.block;
  return true;
}

// An uninitialised managed view of type View (contiguous layout) with `extents`, its memory from the cache of its
// memory space; nothing when the cache is off, no Environment is active, the view is empty or its elements are not
// trivially destructible (elements are never destroyed when a block returns).
template <class View, class... Extents>
bool try_cached_view(View& out, std::string_view label, Extents... extents) {
  using T = typename View::non_const_value_type;
  using M = typename View::memory_space;
  static_assert(std::is_same<typename View::array_layout, Kokkos::LayoutRight>::value ||
                    std::is_same<typename View::array_layout, Kokkos::LayoutLeft>::value,
                "cached_view: the span of the layout must be the product of the extents");
  const std::size_t count = (std::size_t(1) * ... * static_cast<std::size_t>(extents));
  if (!std::is_trivially_destructible<T>::value || count == 0) return false;
  CachedBlock block;
  CachedBlockRecord<M>* record = nullptr;
  if (!try_cached_record<M>(count * sizeof(T), label, block, record)) return false;
  place_view(out, tracker_on_record(record), static_cast<T*>(block.data), extents...);
  return true;
}

// The same, falling back to a plain Kokkos allocation (uninitialised) where the cache does not serve it.
template <class View, class... Extents>
View cached_view(std::string_view label, Extents... extents) {
  View view;
  if (try_cached_view(view, label, extents...)) return view;
  return View(Kokkos::view_alloc(std::string(label), Kokkos::WithoutInitializing), extents...);
}

// `bytes` uninitialised bytes of MemorySpace from its cache (staging and work buffers).
template <class MemorySpace>
Kokkos::View<char*, MemorySpace> cached_buffer(std::size_t bytes, std::string_view label = "darray::buffer") {
  return cached_view<Kokkos::View<char*, MemorySpace>>(label, bytes);
}

}  // namespace detail
}  // namespace darray
