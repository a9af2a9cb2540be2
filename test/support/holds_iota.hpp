// holds_iota(a): every addressable shard of `a` is the block its sharding assigns to its device, and every element
// equals its flat (row-major) global index, as iota() made it: how reshard-style tests check a moved array.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>

#include "darray/darray.hpp"

namespace darray {
namespace testing {

template <class T, int N, class M>
bool holds_iota(const DistributedArray<T, N, M>& a) {
  const Shape strides = row_major_strides(a.shape());
  for (const auto& s : a.addressable_shards()) {
    if (s.index != a.sharding().index(a.shape(), s.device)) return false;
    const Shape bshape = box_shape(s.index);
    const int64_t n = volume(s.index);
    const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s.data);  // device memory too
    const T* p = host.data();
    for (int64_t e = 0; e < n; ++e) {
      int64_t rest = e, flat = 0;
      for (std::size_t d = bshape.size(); d-- > 0;) {
        const int64_t c = rest % bshape[d];
        rest /= bshape[d];
        flat += (s.index[d].start + c) * strides[d];
      }
      if (!(p[e] == static_cast<T>(flat))) return false;
    }
  }
  return true;
}

}  // namespace testing
}  // namespace darray
