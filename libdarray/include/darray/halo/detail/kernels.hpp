// Kernels of the halo exchange that run where the memory is: filling a region of a padded block with one value, and
// the subview of a padded block that holds the block itself.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <string>
#include <utility>

#include "darray/array/detail/host_loop.hpp"
#include "darray/array/detail/strided_copy.hpp"
#include "darray/core/index.hpp"
#include "darray/runtime/detail/kokkos_compat.hpp"

namespace darray {
namespace detail {

// One cell of a region (the destination side of a geometry) set to value. A functor, not a KOKKOS_LAMBDA (nvcc's
// extended lambdas allocate on the host heap per launch: runtime/detail/kokkos_compat.hpp).
template <class T>
struct FillRegionItem {
  T* data;
  CopyGeometry g;
  T value;
  KOKKOS_INLINE_FUNCTION void operator()(const int64_t i) const {
    int64_t rest = i, t = g.dst_offset;
    for (int d = g.rank - 1; d >= 0; --d) {
      t += (rest % g.extent[d]) * g.dst_stride[d];
      rest /= g.extent[d];
    }
    data[t] = value;
  }
};

// The cells of `g` (its destination side: dst_offset, dst_stride, extent) in `data` set to value: a loop here on host
// spaces where loop_inline says so, a kernel where the memory is otherwise. Not fenced.
template <class T, class ExecSpace>
void fill_region(const ExecSpace& space, T* data, const CopyGeometry& g, const T& value) {
  const int64_t n = g.elements();
  if (n == 0) return;
  if (loop_inline<T, ExecSpace>(n)) {
    const int inner = g.rank - 1;
    int64_t counter[max_copy_rank] = {};
    T* t = data + g.dst_offset;
    while (true) {
      for (int64_t k = 0; k < g.extent[inner]; ++k) t[k * g.dst_stride[inner]] = value;
      int d = inner;
      while (true) {
        if (d == 0) return;
        --d;
        t += g.dst_stride[d];
        if (++counter[d] < g.extent[d]) break;
        t -= g.dst_stride[d] * g.extent[d];
        counter[d] = 0;
      }
    }
  }
  static const std::string kernel_name = "darray::halo::fill";  // kokkos_compat.hpp: built once
  Kokkos::parallel_for(kernel_name, darray::detail::range_policy(space, int64_t{0}, n),
                       FillRegionItem<T>{data, g, value});
}

template <class View, std::size_t... I>
auto interior_impl(const View& v, const Index& index, const Index& padded, std::index_sequence<I...>) {
  return Kokkos::subview(v, std::make_pair(index[I].start - padded[I].start, index[I].stop - padded[I].start)...);
}

}  // namespace detail
}  // namespace darray
