// The shard lists of arrays that went, kept per thread for the next result of the same type: a new array's shape and
// shard indices are then copied into storage already there instead of allocated (a list of n shards holds n + 2
// heap blocks: its vector, its shape, one index per shard), so small allocating calls (`y = ppermute(x, ...)`)
// make no heap allocation once warm.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "darray/array/shard.hpp"
#include "darray/core/index.hpp"

namespace darray {
namespace detail {

template <class Shard>
struct ShardList {
  Shape shape;
  std::vector<Shard> shards;
};

template <class Shard>
class ShardListPool {
 public:
  static constexpr std::size_t kept_lists = 4;   // per thread and shard type: results alive at once in a loop
  static constexpr std::size_t max_shards = 64;  // longer lists are freed (few processes have more devices)

  // A list of `count` shards to fill: a kept one (its shape, devices, indices and replica ids hold what its last
  // array had: the caller assigns every field) or a new one.
  static ShardList<Shard> take(std::size_t count) {
    ShardList<Shard> list;
    if (ShardListPool* pool = instance(); pool != nullptr && !pool->m_lists.empty()) {
      list = std::move(pool->m_lists.back());
      pool->m_lists.pop_back();
    }
    list.shards.resize(count);
    return list;
  }

  // An array's shape and shards as it goes: the shards' views are released now (their blocks go back to the block
  // cache as before), the storage kept for take() while the pool has room. Leaves both empty.
  static void give(Shape& shape, std::vector<Shard>& shards) noexcept {
    if (shards.empty()) return;
    for (Shard& s : shards) s.data = typename Shard::view_type();
    ShardListPool* pool = instance();
    if (pool == nullptr || pool->m_lists.size() == kept_lists || shards.size() > max_shards) return;
    pool->m_lists.push_back(ShardList<Shard>{std::move(shape), std::move(shards)});  // reserved: does not throw
    shape.clear();
    shards.clear();
  }

 private:
  ShardListPool() { m_lists.reserve(kept_lists); }
  ~ShardListPool() { gone() = true; }

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
};

}  // namespace detail
}  // namespace darray
