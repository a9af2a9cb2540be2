// Reductions of distributed arrays as NumPy's: of the whole array to one host value (sum, prod, min, max, mean,
// dot, norm) and along one axis to an array of rank N-1 (sum, min, max, mean). Every global element counts once
// whatever the replication (only replica-0 blocks are read; lax.psum, by contrast, adds replicas). All are
// collective over every process of the job and give every process the same result, bit for bit.
// NumPy's semantics: min and max propagate NaN and have no identity (an empty reduction is an error); integer
// sums and products stay in the element type (and wrap as it does); mean of integers is double.
#pragma once

#include <Kokkos_Core.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "darray/array/distributed_array.hpp"
#include "darray/array/dtype.hpp"
#include "darray/collectives/reductions.hpp"
#include "darray/core/error.hpp"
#include "darray/ops/detail/kernels.hpp"
#include "darray/ops/detail/reduce.hpp"
#include "darray/ops/elementwise.hpp"
#include "darray/runtime/detail/kokkos_compat.hpp"

namespace darray {
namespace detail {

// What mean returns: double for integers (as NumPy), the element type otherwise.
template <class T>
using mean_type = std::conditional_t<std::is_integral<T>::value, double, T>;

// What norm returns: the real type of float and complex elements, double for integers.
template <class T>
struct norm_type_of {
  using type = std::conditional_t<std::is_integral<T>::value, double, T>;
};
template <class R>
struct norm_type_of<Kokkos::complex<R>> {
  using type = R;
};

template <class T, int N, class M>
void check_nonempty(const char* api, const DistributedArray<T, N, M>& a) {
  DARRAY_THROW_IF(a.size() == 0, InvalidArgument, api,
                  "zero-size array of shape " << numpy_shape_string(a.shape()) << " has no " << api
                                              << " (the reduction has no identity); expected "
                                              << "at least one element");
}

template <ArrayOp op, class Acc, class T, int N, class M>
Acc reduce_all_as(const DistributedArray<T, N, M>& a) {
  return reduce_all<op, Acc>(a, [&](std::size_t k) { return LoadAs<Acc, T>{a.addressable_shards()[k].data.data()}; });
}

// |x|^2 in Acc.
template <class Acc, class T>
struct LoadAbs2 {
  const T* data;
  KOKKOS_INLINE_FUNCTION Acc operator()(int64_t i) const {
    if constexpr (is_kokkos_complex<T>::value)
      return static_cast<Acc>(data[i].real()) * static_cast<Acc>(data[i].real()) +
             static_cast<Acc>(data[i].imag()) * static_cast<Acc>(data[i].imag());
    else
      return static_cast<Acc>(data[i]) * static_cast<Acc>(data[i]);
  }
};

template <class T>
struct LoadProduct {
  const T* x;
  const T* y;
  KOKKOS_INLINE_FUNCTION T operator()(int64_t i) const { return x[i] * y[i]; }
};

// The reduction of each block along `axis` (a rank N-1 array sharded like a without that dim, whose replicas
// along the mesh axes of that dim hold partial results), then psum/pmax/pmin over those mesh axes.
template <ArrayOp op, class Acc, class T, int N, class M>
DistributedArray<Acc, N - 1, M> reduce_along(const char* api, const DistributedArray<T, N, M>& a, int axis) {
  static_assert(N >= 1, "a reduction along an axis needs an array of rank 1 or more");
  const int ax = normalize_axis(api, axis, N);
  const auto d = static_cast<std::size_t>(ax);
  std::vector<PartitionSpec::Entry> entries = a.sharding().spec().entries();
  std::vector<std::string> mesh_axes;
  if (d < entries.size()) {
    mesh_axes = entries[d];
    entries.erase(entries.begin() + ax);
  }
  const NamedSharding rs(a.sharding().mesh(), PartitionSpec(entries));
  Shape rshape = a.shape();
  rshape.erase(rshape.begin() + ax);

  using Exec = typename Shard<T, N, M>::view_type::execution_space;
  const Acc ident = identity<op, Acc>();
  std::vector<Shard<Acc, N - 1, M>> shards;
  for (const auto& s : a.addressable_shards()) {
    Index index = s.index;
    index.erase(index.begin() + ax);
    const Shape in = box_shape(s.index);
    int64_t outer = 1, inner = 1;
    for (std::size_t k = 0; k < d; ++k) outer *= in[k];
    for (std::size_t k = d + 1; k < in.size(); ++k) inner *= in[k];
    auto view = allocate_view<Acc, N - 1, M>(api, box_shape(index), false);
    reduce_block_along<op, Acc, Exec>(s.data.data(), view.data(), outer, in[d], inner, ident);
    shards.push_back(Shard<Acc, N - 1, M>{s.device, std::move(index), rs.replica_id(s.device), view});
  }
  detail::fence_writers_of<M>();
  DistributedArray<Acc, N - 1, M> partial = detail::adopt_shards<Acc, N - 1, M>(rshape, rs, std::move(shards));
  if (mesh_axes.empty()) return partial;
  if constexpr (op == ArrayOp::sum) {
    return psum(partial, mesh_axes);
  } else {
    auto result = op == ArrayOp::max ? pmax(partial, mesh_axes) : pmin(partial, mesh_axes);
    if constexpr (std::is_floating_point<Acc>::value) {
      // MPI's and the collectives' max and min drop NaN; NumPy's keep it. Only when a partial holds one (decided
      // by all processes together) do the NaN positions travel by a second psum.
      int mine = 0;
      for (const auto& s : partial.addressable_shards()) {
        const Acc* p = s.data.data();
        mine += reduce_range<ArrayOp::sum, int, Exec>(
            static_cast<int64_t>(s.data.size()), KOKKOS_LAMBDA(int64_t i) { return p[i] != p[i] ? 1 : 0; });
      }
      const std::uint64_t nan_flag = mix_fingerprint(static_cast<std::uint64_t>(op) + 1, 0x4e614eull);
      if (combine_processes<ArrayOp::max>(mine > 0 ? 1 : 0, nan_flag, [&] {
            return std::string("whether a partial ") + to_string(op) + " holds NaN";
          }) > 0) {
        const auto nan_count = psum(map(
                                        partial, KOKKOS_LAMBDA(Acc x) { return x != x ? 1 : 0; }),
                                    mesh_axes);
        const Acc nan = std::numeric_limits<Acc>::quiet_NaN();
        result = map(
            result, nan_count, KOKKOS_LAMBDA(Acc x, int c) { return c > 0 ? nan : x; });
      }
    }
    return result;
  }
}

}  // namespace detail

// The sum of all elements, in the element type (integers wrap as they do). NaN and inf as IEEE addition.
template <class T, int N, class M>
T sum(const DistributedArray<T, N, M>& a) {
  return detail::reduce_all_as<detail::ArrayOp::sum, T>(a);
}

// The product of all elements, in the element type.
template <class T, int N, class M>
T prod(const DistributedArray<T, N, M>& a) {
  return detail::reduce_all_as<detail::ArrayOp::prod, T>(a);
}

// The largest element; NaN when any element is NaN. InvalidArgument for an empty array. Real element types.
template <class T, int N, class M>
T max(const DistributedArray<T, N, M>& a) {
  static_assert(!detail::is_kokkos_complex<T>::value, "max: complex numbers have no order; use a real element type");
  detail::check_nonempty("max", a);
  return detail::reduce_all_as<detail::ArrayOp::max, T>(a);
}

// The smallest element; NaN when any element is NaN. InvalidArgument for an empty array. Real element types.
template <class T, int N, class M>
T min(const DistributedArray<T, N, M>& a) {
  static_assert(!detail::is_kokkos_complex<T>::value, "min: complex numbers have no order; use a real element type");
  detail::check_nonempty("min", a);
  return detail::reduce_all_as<detail::ArrayOp::min, T>(a);
}

// The arithmetic mean: sum / size, summed in double for integer elements (then double), in T otherwise. NaN for
// an empty array, as NumPy's (which also warns).
template <class T, int N, class M>
detail::mean_type<T> mean(const DistributedArray<T, N, M>& a) {
  using R = detail::mean_type<T>;
  const R s = detail::reduce_all_as<detail::ArrayOp::sum, R>(a);
  if (a.size() == 0) return s / R(std::numeric_limits<double>::quiet_NaN());
  return s / R(static_cast<double>(a.size()));
}

// The sum of a * b over all elements, without conjugation: numpy.dot of two 1-D arrays (and of arrays of any
// rank, flattened). a and b must have the same shape and sharding (InvalidArgument naming both otherwise).
template <class T, int N, class M>
T dot(const DistributedArray<T, N, M>& a, const DistributedArray<T, N, M>& b) {
  detail::check_same_layout("dot", a, b);
  return detail::reduce_all<detail::ArrayOp::sum, T>(a, [&](std::size_t k) {
    return detail::LoadProduct<T>{a.addressable_shards()[k].data.data(), b.addressable_shards()[k].data.data()};
  });
}

// The 2-norm sqrt(sum |x|^2) of all elements (numpy.linalg.norm of the flattened array): real for complex
// elements, double for integers.
template <class T, int N, class M>
typename detail::norm_type_of<T>::type norm(const DistributedArray<T, N, M>& a) {
  using R = typename detail::norm_type_of<T>::type;
  const R s = detail::reduce_all<detail::ArrayOp::sum, R>(
      a, [&](std::size_t k) { return detail::LoadAbs2<R, T>{a.addressable_shards()[k].data.data()}; });
  return std::sqrt(s);
}

// The sum along `axis` (negative counts from the end): shape without that dim, sharded like a without that dim's
// PartitionSpec entry (numpy.sum(a, axis)). Blocks are reduced where they are, then added up over the mesh axes
// the dim was sharded on (psum).
template <class T, int N, class M>
DistributedArray<T, N - 1, M> sum(const DistributedArray<T, N, M>& a, int axis) {
  return detail::reduce_along<detail::ArrayOp::sum, T>("sum", a, axis);
}

namespace detail {

// max / min along an axis: a real element type and a non-empty axis.
template <ArrayOp O, class T, int N, class M>
DistributedArray<T, N - 1, M> extreme_along(const char* api, const DistributedArray<T, N, M>& a, int axis) {
  static_assert(!is_kokkos_complex<T>::value, "max, min: complex numbers have no order; use a real element type");
  const int ax = normalize_axis(api, axis, N);
  DARRAY_THROW_IF(a.shape()[static_cast<std::size_t>(ax)] == 0, InvalidArgument, api,
                  "axis " << axis << " of shape " << numpy_shape_string(a.shape()) << " has length 0, so the "
                          << (O == ArrayOp::max ? "maximum" : "minimum") << " has no value; expected a non-empty axis");
  return reduce_along<O, T>(api, a, ax);
}

}  // namespace detail

// The maximum along `axis`, NaN where a NaN is reduced. InvalidArgument when the axis has length 0.
template <class T, int N, class M>
DistributedArray<T, N - 1, M> max(const DistributedArray<T, N, M>& a, int axis) {
  return detail::extreme_along<detail::ArrayOp::max>("max", a, axis);
}

// The minimum along `axis`, as max.
template <class T, int N, class M>
DistributedArray<T, N - 1, M> min(const DistributedArray<T, N, M>& a, int axis) {
  return detail::extreme_along<detail::ArrayOp::min>("min", a, axis);
}

// The mean along `axis`: the sum (in double for integer elements) divided by the axis length; NaN for length 0.
template <class T, int N, class M>
DistributedArray<detail::mean_type<T>, N - 1, M> mean(const DistributedArray<T, N, M>& a, int axis) {
  using R = detail::mean_type<T>;
  const int ax = detail::normalize_axis("mean", axis, N);
  const auto s = detail::reduce_along<detail::ArrayOp::sum, R>("mean", a, ax);
  const auto len = static_cast<double>(a.shape()[static_cast<std::size_t>(ax)]);
  const R divisor = len > 0 ? R(len) : R(std::numeric_limits<double>::quiet_NaN());
  return map(
      s, KOKKOS_LAMBDA(R x) { return x / divisor; });
}

}  // namespace darray
