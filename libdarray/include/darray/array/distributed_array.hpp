// DistributedArray<T, N, MemorySpace>: a global shape, a NamedSharding and one Shard per addressable device, as
// jax.Array in a multi-controller program. Build one with the factories (zeros, iota, scatter_from_root, ...).
// Value semantics are those of Kokkos::View, not of jax.Array: `auto b = a;` copies the handles, so b shares a's
// blocks and a write through either (for_each, a kernel on a shard's view) shows in both. Operations that return
// an array (map, a + b, reshard, psum, ...) return new blocks; darray::copy(a) makes a deep copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "darray/array/detail/shard_lists.hpp"
#include "darray/array/dtype.hpp"
#include "darray/array/shard.hpp"
#include "darray/core/error.hpp"
#include "darray/core/index.hpp"
#include "darray/sharding/make_mesh.hpp"
#include "darray/sharding/named_sharding.hpp"

namespace darray {

template <class T, int N, class MemorySpace>
class DistributedArray;

namespace detail {
// Adopts shards that match the sharding (one per addressable device, in local-device order): how factories and
// operations build their results after their checks.
template <class T, int N, class M>
DistributedArray<T, N, M> adopt_shards(Shape shape, NamedSharding sharding, std::vector<Shard<T, N, M>> shards);
}  // namespace detail

template <class T, int N, class MemorySpace = DefaultMemorySpace>
class DistributedArray {
  static_assert(detail::is_element_type_v<T>,
                "DistributedArray elements are integers (not bool: gathers return std::vector<T>), float, double, "
                "Kokkos::complex<float> or "
                "Kokkos::complex<double>");
  static_assert(N >= 0 && N <= 8, "DistributedArray rank N must be 0..8 (Kokkos views have at most 8 dims)");

 public:
  using value_type = T;
  using memory_space = MemorySpace;
  using shard_type = Shard<T, N, MemorySpace>;
  using view_type = typename shard_type::view_type;
  static constexpr int rank = N;

  DistributedArray(const DistributedArray&) = default;
  DistributedArray(DistributedArray&&) = default;
  DistributedArray& operator=(const DistributedArray&) = default;
  DistributedArray& operator=(DistributedArray&& other) noexcept {
    if (this != &other) {
      release();
      m_shape = std::move(other.m_shape);
      m_sharding = std::move(other.m_sharding);
      m_shards = std::move(other.m_shards);
    }
    return *this;
  }
  ~DistributedArray() { release(); }

  const Shape& shape() const { return m_shape; }
  const NamedSharding& sharding() const { return m_sharding; }
  int64_t size() const { return volume(m_shape); }
  std::size_t nbytes() const { return static_cast<std::size_t>(size()) * sizeof(T); }
  static std::string dtype() { return dtype_name<T>(); }

  // This process's shards, one per addressable device of the mesh, in local-device order.
  const std::vector<shard_type>& addressable_shards() const { return m_shards; }
  // The data of addressable shard i (jax.Array.addressable_data).
  const view_type& addressable_data(std::size_t i) const {
    DARRAY_THROW_IF(i >= m_shards.size(), InvalidArgument, "DistributedArray::addressable_data",
                    "shard " << i << " requested but this process has " << m_shards.size() << " addressable shards");
    return m_shards[i].data;
  }

  // One shard per mesh device in mesh order; those of other processes carry no data (default-constructed view).
  std::vector<shard_type> global_shards() const {
    std::unordered_map<int, const shard_type*> local;
    for (const shard_type& s : m_shards) local.emplace(s.device.id, &s);
    std::vector<shard_type> out;
    for (auto& [device, index] : m_sharding.devices_indices_map(m_shape)) {
      const auto it = local.find(device.id);
      if (it != local.end())
        out.push_back(*it->second);
      else
        out.push_back(shard_type{device, std::move(index), m_sharding.replica_id(device), view_type()});
    }
    return out;
  }

  // Every mesh device belongs to this process: the whole array is on hand without communication.
  bool is_fully_addressable() const { return m_sharding.is_fully_addressable(); }
  bool is_fully_replicated() const { return m_sharding.is_fully_replicated(); }

 private:
  template <class U, int R, class M>
  friend DistributedArray<U, R, M> detail::adopt_shards(Shape, NamedSharding, std::vector<Shard<U, R, M>>);

  DistributedArray(Shape shape, NamedSharding sharding, std::vector<shard_type> shards)
      : m_shape(std::move(shape)), m_sharding(std::move(sharding)), m_shards(std::move(shards)) {}

  // The shard list goes to the pool the next result's comes from (array/detail/shard_lists.hpp).
  void release() noexcept { detail::ShardListPool<shard_type>::give(m_shape, m_shards, &m_sharding); }

  Shape m_shape;
  NamedSharding m_sharding;
  std::vector<shard_type> m_shards;
};

namespace detail {
template <class T, int N, class M>
DistributedArray<T, N, M> adopt_shards(Shape shape, NamedSharding sharding, std::vector<Shard<T, N, M>> shards) {
  return DistributedArray<T, N, M>(std::move(shape), std::move(sharding), std::move(shards));
}
}  // namespace detail

}  // namespace darray
