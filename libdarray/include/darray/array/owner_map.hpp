// OwnerMap: which device holds a given element of an array, as a small value that kernels can call: the point ->
// device lookup of particle codes, where every particle goes to the device whose block holds its cell. Built once
// from (shape, sharding); each lookup is one block_owner per dim and one table read, with no search.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "darray/array/shard.hpp"
#include "darray/core/error.hpp"
#include "darray/core/index.hpp"
#include "darray/core/partition.hpp"
#include "darray/sharding/named_sharding.hpp"

namespace darray {

// Maps an element (i0, ..., iN-1) of an array of `shape` sharded by `sharding` to the global id of the device that
// holds replica 0 of its block (the device a gather reads it from). Cheap to copy into kernels:
//   const OwnerMap<3> owner(shape, sharding);
//   Kokkos::parallel_for(n, KOKKOS_LAMBDA(int64_t p) { int64_t cell[3] = {...}; dest(p) = owner(cell); });
// The table has one entry per distinct block (at most the mesh size), in memory space M.
template <int N, class M = DefaultMemorySpace>
class OwnerMap {
 public:
  static_assert(N >= 1, "OwnerMap needs a rank of at least 1");

  OwnerMap(const Shape& shape, const NamedSharding& sharding) {
    DARRAY_THROW_IF(shape.size() != static_cast<std::size_t>(N), InvalidArgument, "OwnerMap",
                    "shape " << numpy_shape_string(shape) << " has rank " << shape.size() << "; expected rank " << N);
    sharding.check_shape(shape);
    int64_t blocks = 1;
    for (int d = 0; d < N; ++d) {
      m_extent[d] = shape[static_cast<std::size_t>(d)];
      m_parts[d] = sharding.num_parts(d);
      blocks *= m_parts[d];
    }
    // Block b (row-major over the per-dim part indices) -> the device of its replica 0.
    m_table = Kokkos::View<int*, M>("darray::OwnerMap", static_cast<std::size_t>(blocks));
    m_host = Kokkos::create_mirror_view(m_table);
    std::vector<int64_t> parts(static_cast<std::size_t>(N));
    for (int64_t b = 0; b < blocks; ++b) {
      int64_t rest = b;
      for (int d = N; d-- > 0;) {
        parts[static_cast<std::size_t>(d)] = rest % m_parts[d];
        rest /= m_parts[d];
      }
      m_host(b) = sharding.replica_devices(parts).front().id;
    }
    Kokkos::deep_copy(m_table, m_host);
  }

  // The owner of element[0..N), each coordinate in [0, shape[d]). Unchecked: for kernels (memory space M).
  KOKKOS_INLINE_FUNCTION int operator()(const int64_t* element) const { return m_table(block_of(element)); }

  // The same on the host, checked: an element outside the shape is an InvalidArgument naming it.
  int device_id(const std::vector<int64_t>& element) const {
    DARRAY_THROW_IF(
        element.size() != static_cast<std::size_t>(N), InvalidArgument, "OwnerMap::device_id",
        "element " << numpy_shape_string(element) << " has " << element.size() << " coordinates; expected " << N);
    for (int d = 0; d < N; ++d)
      DARRAY_THROW_IF(element[static_cast<std::size_t>(d)] < 0 || element[static_cast<std::size_t>(d)] >= m_extent[d],
                      InvalidArgument, "OwnerMap::device_id",
                      "element " << numpy_shape_string(element) << " is outside the array: coordinate " << d << " is "
                                 << element[static_cast<std::size_t>(d)] << "; expected 0 <= it < " << m_extent[d]);
    return m_host(block_of(element.data()));
  }

  int64_t extent(int d) const { return m_extent[d]; }

 private:
  KOKKOS_INLINE_FUNCTION int64_t block_of(const int64_t* element) const {
    int64_t b = 0;
    for (int d = 0; d < N; ++d) b = b * m_parts[d] + block_owner(m_extent[d], m_parts[d], element[d]);
    return b;
  }

  int64_t m_extent[N] = {};
  int64_t m_parts[N] = {};
  Kokkos::View<int*, M> m_table;
  typename Kokkos::View<int*, M>::HostMirror m_host;  // the same table on the host, for device_id()
};

}  // namespace darray
