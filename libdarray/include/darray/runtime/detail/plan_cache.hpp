// The one cache facility of the library's plans (reshard, collectives, FFT, halo): a bounded LRU map from a plan's
// key to the shared plan, built on first use. Plans describe this process under this Environment and may hold
// communicators, MPI datatypes or FFTW plans, so every cache is emptied when the Environment ends, before
// MPI_Finalize. A lookup compares the key with the front plan's, else costs one hash of the key; a hit moves the plan
// to the front, and a miss beyond the capacity evicts the least recently used plan (callers holding its shared_ptr
// keep it alive).
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <unordered_map>
#include <utility>

#include "darray/runtime/detail/state.hpp"

namespace darray {
namespace detail {

template <class Key, class Plan, class Hash = std::hash<Key>>
class PlanCache {
 public:
  explicit PlanCache(std::size_t capacity) : m_capacity(capacity > 0 ? capacity : 1) {}
  PlanCache(const PlanCache&) = delete;
  PlanCache& operator=(const PlanCache&) = delete;

  // The plan for `key`, from the cache or from build() (which returns std::shared_ptr<Plan>).
  template <class Build>
  std::shared_ptr<Plan> get(const Key& key, Build&& build) {
    return get_ref(key, std::forward<Build>(build));
  }

  // The same as the cache's own pointer, valid until the next get or get_ref on this cache: a caller that runs the
  // plan at once counts no reference.
  template <class Build>
  const std::shared_ptr<Plan>& get_ref(const Key& key, Build&& build) {
    // A call repeated in a loop asks for the plan it asked for last: the front one, found by one comparison
    // instead of a hash of the key and a bucket walk (and already where a hit moves it).
    if (!m_order.empty() && m_order.front().first == key) {
      ++m_hits;
      return m_order.front().second;
    }
    return find_or_build(key, std::forward<Build>(build));
  }

  // The same for a probe of the key: probe.matches(key) compares it with the front plan's key in place, and only
  // when that fails does probe.key() make the key for the hash lookup. A call repeated in a loop then writes no
  // key at all (a collective's permutation, say, is compared where it lies).
  template <class Probe, class Build>
  const std::shared_ptr<Plan>& get_ref_by(const Probe& probe, Build&& build) {
    if (!m_order.empty() && probe.matches(m_order.front().first)) {
      ++m_hits;
      return m_order.front().second;
    }
    return find_or_build(probe.key(), std::forward<Build>(build));
  }

  void clear() {
    m_index.clear();
    m_order.clear();
    m_cleanup_registered = false;
  }

  std::size_t size() const { return m_order.size(); }
  std::size_t capacity() const { return m_capacity; }
  std::size_t hits() const { return m_hits; }
  std::size_t misses() const { return m_misses; }

 private:
  // Past the front plan (get_ref and get_ref_by have compared it): the hash lookup, or build() on a miss.
  template <class Build>
  const std::shared_ptr<Plan>& find_or_build(const Key& key, Build&& build) {
    const auto it = m_index.find(key);
    if (it != m_index.end()) {
      ++m_hits;
      m_order.splice(m_order.begin(), m_order, it->second);
      return it->second->second;
    }
    ++m_misses;
    Key owned(key);  // `key` may be a caller's scratch key that build() reuses
    std::shared_ptr<Plan> plan = build();
    if (!m_cleanup_registered) {
      at_finalize([this] { clear(); });
      m_cleanup_registered = true;
    }
    m_order.emplace_front(std::move(owned), std::move(plan));
    m_index.emplace(m_order.front().first, m_order.begin());
    while (m_order.size() > m_capacity) {  // the new plan is at the front: capacity >= 1 keeps it
      m_index.erase(m_order.back().first);
      m_order.pop_back();
    }
    return m_order.front().second;
  }

  using Entry = std::pair<Key, std::shared_ptr<Plan>>;
  std::size_t m_capacity;
  std::list<Entry> m_order;  // most recently used first
  std::unordered_map<Key, typename std::list<Entry>::iterator, Hash> m_index;
  std::size_t m_hits = 0, m_misses = 0;
  bool m_cleanup_registered = false;
};

}  // namespace detail
}  // namespace darray
