// Kernels of the halo exchange that run where the memory is: filling a box of a padded block with one value, and
// the subview of a padded block that holds the block itself.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <utility>

#include "darray/core/index.hpp"
#include "darray/array/detail/strided_copy.hpp"

namespace darray {
namespace detail {

inline constexpr int halo_tag = 0x4841;

// view(region) = value, region given in the view's own coordinates. A kernel, so it runs where the memory is.
template <class T, class ExecSpace>
void fill_box_kernel(const ExecSpace& space, T* data, const Shape& extents, const Index& region, const T& value) {
  const int64_t n = volume(region);
  if (n == 0) return;
  const CopyGeometry g = box_copy_geometry(full_index(extents), full_index(extents), region);
  Kokkos::parallel_for(
      "darray::halo::fill", Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<int64_t>>(space, 0, n),
      KOKKOS_LAMBDA(const int64_t i) {
        int64_t rest = i, t = g.dst_offset;
        for (int d = g.rank - 1; d >= 0; --d) {
          t += (rest % g.extent[d]) * g.dst_stride[d];
          rest /= g.extent[d];
        }
        data[t] = value;
      });
}

template <class View, std::size_t... I>
auto interior_impl(const View& v, const Index& index, const Index& padded, std::index_sequence<I...>) {
  return Kokkos::subview(v, std::make_pair(index[I].start - padded[I].start, index[I].stop - padded[I].start)...);
}

}  // namespace detail
}  // namespace darray
