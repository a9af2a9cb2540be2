// The shard lists of arrays that went, kept per thread for the next result of the same type: a new array's shape and
// shard indices are then copied into storage already there instead of allocated (a list of n shards holds n + 2
// heap blocks: its vector, its shape, one index per shard), so small allocating calls (`y = ppermute(x, ...)`)
// make no heap allocation once warm. A small array's list keeps its views too, when nothing else holds them: the
// next result of the same block shapes (`y = psum(x, "i")` in a loop) takes them as they are, without a block from
// the cache or a view to make (take_with_views).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <thread>
#include <typeinfo>
#include <utility>
#include <vector>

#include "darray/array/detail/block_cache.hpp"
#include "darray/array/detail/view.hpp"
#include "darray/array/shard.hpp"
#include "darray/core/index.hpp"
#include "darray/runtime/detail/state.hpp"
#include "darray/sharding/named_sharding.hpp"

namespace darray {
namespace detail {

template <class Shard>
struct ShardList {
  Shape shape;
  std::vector<Shard> shards;
  bool views_kept = false;  // the shards' views still hold their blocks (given by a small array: see keeps_views)
  // With kept views, the sharding of the array that gave them: a result of the same sharding takes it over instead
  // of copying its own (a reference count increment, and a decrement when the old array's copy goes).
  std::optional<NamedSharding> sharding;
};

// This thread's pools, each able to let go of the views it keeps: memory_stats() and release_cached_memory() call
// them first (kept views are nobody's), and so does the Environment's end (before Kokkos is finalised).
inline std::vector<void (*)() noexcept>& kept_view_droppers() {
  static thread_local std::vector<void (*)() noexcept> droppers;
  return droppers;
}
inline void drop_kept_views() noexcept {
  for (auto drop : kept_view_droppers()) drop();
}

// Whether this thread's pools may keep views, asked once per thread and Environment: only on the Environment's own
// thread, whose end lets go of them (the finalizer registered here runs there). Another thread's pools are out of
// its reach: a worker still running when the Environment ends would hold its kept blocks past the end (and past
// Kokkos' finalisation, where the Environment does it). False too when the finalizer could not be registered.
inline bool may_keep_views() noexcept {
  static thread_local unsigned long asked = 0;  // the generation last asked in, plus one
  static thread_local bool keeps = false;
  const unsigned long now = environment_generation() + 1;
  if (asked == now) return keeps;
  keeps = false;
  if (state().thread == std::this_thread::get_id()) {
    try {
      at_finalize([] { drop_kept_views(); });
    } catch (...) {
      return false;
    }
    keeps = true;
  }
  asked = now;
  return keeps;
}

// The sharding of a result made from `list` (take_with_views): the one its last array had where that is `sharding`
// (then taken over: no reference count touched), else a copy of `sharding`.
template <class Shard>
NamedSharding adopt_sharding(ShardList<Shard>& list, const NamedSharding& sharding) {
  if (list.sharding && *list.sharding == sharding) return std::move(*list.sharding);
  return sharding;
}

template <class Shard>
class ShardListPool {
 public:
  static constexpr std::size_t kept_lists = 4;   // per thread and shard type: results alive at once in a loop
  static constexpr std::size_t max_shards = 64;  // longer lists are freed (few processes have more devices)
  static constexpr std::size_t kept_view_bytes = std::size_t(16) << 10;  // a list keeps its views up to this

  // A list of `count` shards to fill: a kept one (its shape, devices, indices and replica ids hold what its last
  // array had: the caller assigns every field, views included) or a new one. Lists without views are taken first,
  // the most recently given of them; otherwise the oldest list with views lets them go.
  static ShardList<Shard> take(std::size_t count) {
    ShardList<Shard> list = pop();
    if (list.views_kept) release_views(list);
    list.shards.resize(count);
    return list;
  }

  // The same with every view made as allocate_views_each makes them (shape_of(k) the shape of view k, zero-filled
  // when `initialize`). A kept list whose views have these shapes serves as it is, the most recently given first
  // (uninitialised, its views hold the last array's values: the caller writes every element, as in a fresh block);
  // otherwise a list is taken as take() takes it and its views are made.
  template <class T, int N, class ShapeOf>
  static ShardList<Shard> take_with_views(const std::string& label, std::size_t count, ShapeOf&& shape_of,
                                          bool initialize) {
    if (ShardListPool* pool = instance(); pool != nullptr) {
      std::vector<ShardList<Shard>>& lists = pool->m_lists;
      for (std::size_t i = lists.size(); i-- > 0;) {
        if (!lists[i].views_kept || !fits<N>(lists[i].shards, count, shape_of)) continue;
        ShardList<Shard> list = std::move(lists[i]);
        lists.erase(lists.begin() + static_cast<std::ptrdiff_t>(i));
        list.views_kept = false;  // the sharding stays for the caller to take over (adopt_sharding)
        if (initialize)
          for (Shard& s : list.shards) Kokkos::deep_copy(s.data, T());
        return list;
      }
    }
    ShardList<Shard> list = take(count);
    allocate_views_each<T, N, Memory>(label, count, shape_of, initialize,
                                      [&](std::size_t k) -> View& { return list.shards[k].data; });
    return list;
  }

  // Swaps into `out` (a new list) the kept list with views that an array of `sharding` and `shape` gave, the most
  // recently given first; false where there is none. Its shards' devices, indices, replica ids and view extents are
  // those of every array of that sharding and shape (an array's shards follow from the two), so the caller writes
  // none of them, only every element, and takes the sharding over (adopt_sharding). Found by the sharding's identity
  // in the common case (a result of the plan that made the last one), without a look at the views.
  static bool take_laid_out(const NamedSharding& sharding, const Shape& shape, ShardList<Shard>& out) {
    ShardListPool* pool = instance();
    if (pool == nullptr) return false;
    std::vector<ShardList<Shard>>& lists = pool->m_lists;
    for (std::size_t i = lists.size(); i-- > 0;) {
      ShardList<Shard>& l = lists[i];
      if (!l.views_kept || !l.sharding || *l.sharding != sharding || l.shape != shape) continue;
      out.shape.swap(l.shape);
      out.shards.swap(l.shards);
      out.sharding.swap(l.sharding);
      out.views_kept = false;
      lists.erase(lists.begin() + static_cast<std::ptrdiff_t>(i));
      return true;
    }
    return false;
  }

  // An array's shape and shards as it goes, leaving both empty. The storage is kept for take() while the pool has
  // room. The views are kept with it when they are a small array's blocks that nothing else holds (keeps_views),
  // and then so is the array's `sharding` (moved from, where given); otherwise the views are released now (their
  // blocks go back to the block cache as before) and the sharding stays with the array.
  static void give(Shape& shape, std::vector<Shard>& shards, NamedSharding* sharding = nullptr) noexcept {
    if (shards.empty()) return;
    ShardListPool* pool = instance();
    if (pool == nullptr || pool->m_lists.size() == kept_lists || shards.size() > max_shards) {
      for (Shard& s : shards) s.data = typename Shard::view_type();
      return;
    }
    const bool keep = keeps_views(*pool, shards);
    if (!keep)
      for (Shard& s : shards) s.data = typename Shard::view_type();
    ShardList<Shard>& list = pool->m_lists.emplace_back();  // reserved: does not throw
    list.shape = std::move(shape);
    list.shards = std::move(shards);
    list.views_kept = keep;
    if (keep && sharding != nullptr) list.sharding.emplace(std::move(*sharding));
    shape.clear();
    shards.clear();
  }

  // Lets go of every view this thread's pool keeps (their blocks go back to the cache); the lists stay.
  static void drop_views() noexcept {
    ShardListPool* pool = instance();
    if (pool == nullptr) return;
    for (ShardList<Shard>& list : pool->m_lists)
      if (list.views_kept) release_views(list);
  }

 private:
  using View = typename Shard::view_type;
  using Memory = typename View::memory_space;

  ShardListPool() {
    m_lists.reserve(kept_lists);
    try {
      kept_view_droppers().push_back(&drop_views);
      m_droppable = true;
    } catch (...) {
    }
  }
  ~ShardListPool() { gone() = true; }

  // The most recently given list without views, else the oldest list (whose views the caller lets go), else a new
  // one.
  static ShardList<Shard> pop() {
    ShardList<Shard> list;
    ShardListPool* pool = instance();
    if (pool == nullptr || pool->m_lists.empty()) return list;
    std::vector<ShardList<Shard>>& lists = pool->m_lists;
    std::size_t i = lists.size();
    while (i > 0 && lists[i - 1].views_kept) --i;
    i = i > 0 ? i - 1 : 0;
    list = std::move(lists[i]);
    lists.erase(lists.begin() + static_cast<std::ptrdiff_t>(i));
    return list;
  }

  static void release_views(ShardList<Shard>& list) noexcept {
    for (Shard& s : list.shards) s.data = View();
    list.views_kept = false;
    list.sharding.reset();
  }

  template <std::size_t... I>
  static bool has_shape(const View& v, const Shape& shape, std::index_sequence<I...>) {
    return ((v.extent(I) == static_cast<std::size_t>(shape[I])) && ...);
  }
  // `count` views of the shapes shape_of(k).
  template <int N, class ShapeOf>
  static bool fits(const std::vector<Shard>& shards, std::size_t count, ShapeOf& shape_of) {
    if (shards.size() != count) return false;
    for (std::size_t k = 0; k < count; ++k)
      if (!has_shape(shards[k].data, shape_of(k), std::make_index_sequence<N>{})) return false;
    return true;
  }

  // The shards' views may wait in the pool for the next result: while an Environment is active, they are the blocks
  // of one cached allocation (a CachedBlockRecord, never a user's or a plain Kokkos allocation) that only they hold
  // (no copy of a view elsewhere), laid out one after another without overlap, at most kept_view_bytes in all.
  static bool keeps_views(const ShardListPool& pool, const std::vector<Shard>& shards) noexcept {
    if (!state().active) return false;
    const auto* record = shards.front().data.impl_track().template get_record<void>();
    if (record == nullptr || record->use_count() != static_cast<int>(shards.size())) return false;
    std::size_t bytes = 0;
    const char* end = nullptr;
    for (const Shard& s : shards) {
      const View& v = s.data;
      if (v.impl_track().template get_record<void>() != record || v.span() == 0) return false;
      const char* begin = reinterpret_cast<const char*>(v.data());
      if (begin < end) return false;
      end = begin + v.span() * sizeof(typename View::value_type);
      bytes += v.span() * sizeof(typename View::value_type);
    }
    return bytes <= kept_view_bytes && typeid(*record) == typeid(CachedBlockRecord<Memory>) && pool.m_droppable &&
           may_keep_views();
  }

  // Arrays may outlive the thread's pool (a static array destroyed after the thread-local objects): null then.
  static ShardListPool* instance() {
    if (gone()) return nullptr;
    static thread_local ShardListPool pool;
    return &pool;
  }
  static bool& gone() {
    static thread_local bool flag = false;  // trivially destructible: readable after the pool's destruction
    return flag;
  }

  std::vector<ShardList<Shard>> m_lists;
  bool m_droppable = false;  // drop_kept_views() reaches this pool: it may keep views
};

}  // namespace detail
}  // namespace darray
