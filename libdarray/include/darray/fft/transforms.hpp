// numpy-style one-call transforms: fft::fftn, ifftn, rfftn, irfftn on 3-D DistributedArrays. Each builds (once) and
// caches the Plan for the argument's shape, sharding and normalisation, and returns the result in the argument's
// sharding; build a Plan yourself for the transposed output layout or FFTW_MEASURE planning.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstddef>
#include <memory>
#include <unordered_map>
#include <utility>

#include "darray/array/distributed_array.hpp"
#include "darray/core/index.hpp"
#include "darray/fft/options.hpp"
#include "darray/fft/plan.hpp"
#include "darray/runtime/detail/plan_cache.hpp"
#include "darray/runtime/detail/state.hpp"

namespace darray {
namespace fft {
namespace detail {

struct PlanKey {
  Shape shape;
  NamedSharding sharding;
  Normalization norm;
  friend bool operator==(const PlanKey& a, const PlanKey& b) {
    return a.norm == b.norm && a.shape == b.shape && a.sharding == b.sharding;
  }
};
struct PlanKeyHash {
  std::size_t operator()(const PlanKey& k) const {
    std::size_t h = std::hash<NamedSharding>{}(k.sharding);
    for (int64_t n : k.shape) darray::detail::hash_combine(h, std::hash<int64_t>{}(n));
    darray::detail::hash_combine(h, static_cast<std::size_t>(k.norm));
    return h;
  }
};

// One cache per plan type; each plan keeps two work buffers of the array's size, hence the small capacity.
template <class PlanType>
const PlanType& cached_plan(const Shape& shape, const NamedSharding& sharding, Normalization norm) {
  static darray::detail::PlanCache<PlanKey, PlanType, PlanKeyHash> cache(16);
  return *cache.get(PlanKey{shape, sharding, norm}, [&] {
    Options options;
    options.normalization = norm;
    return std::make_shared<PlanType>(shape, sharding, options);
  });
}

}  // namespace detail

// Forward complex FFT (numpy.fft.fftn over all three dims). Collective.
template <class R, class M>
DistributedArray<Kokkos::complex<R>, 3, M> fftn(const DistributedArray<Kokkos::complex<R>, 3, M>& a,
                                                Normalization norm = Normalization::backward) {
  return detail::cached_plan<Plan<R, M>>(a.shape(), a.sharding(), norm).forward(a);
}

// Backward complex FFT (numpy.fft.ifftn): ifftn(fftn(a)) == a to rounding under the same norm. Collective.
template <class R, class M>
DistributedArray<Kokkos::complex<R>, 3, M> ifftn(const DistributedArray<Kokkos::complex<R>, 3, M>& a,
                                                 Normalization norm = Normalization::backward) {
  return detail::cached_plan<Plan<R, M>>(a.shape(), a.sharding(), norm).backward(a);
}

// Real-to-complex FFT (numpy.fft.rfftn): shape (n0, n1, n2) -> (n0, n1, n2 / 2 + 1), same sharding spec. Collective.
template <class R, class M>
DistributedArray<Kokkos::complex<R>, 3, M> rfftn(const DistributedArray<R, 3, M>& a,
                                                 Normalization norm = Normalization::backward) {
  return detail::cached_plan<RealPlan<R, M>>(a.shape(), a.sharding(), norm).forward(a);
}

// Complex-to-real FFT (numpy.fft.irfftn): the half spectrum back to a real array of real_shape, by default
// (n0, n1, 2 * (m - 1)) for an input of shape (n0, n1, m), as numpy. Collective.
template <class R, class M>
DistributedArray<R, 3, M> irfftn(const DistributedArray<Kokkos::complex<R>, 3, M>& a, Shape real_shape = {},
                                 Normalization norm = Normalization::backward) {
  if (real_shape.empty() && a.shape().size() == 3) real_shape = {a.shape()[0], a.shape()[1], 2 * (a.shape()[2] - 1)};
  DARRAY_THROW_IF(real_shape.size() != 3 || real_shape[0] != a.shape()[0] || real_shape[1] != a.shape()[1] ||
                      real_shape[2] / 2 + 1 != a.shape()[2],
                  InvalidArgument, "fft::irfftn",
                  "real shape " << shape_to_string(real_shape) << " does not match the half spectrum of shape "
                                << shape_to_string(a.shape())
                                << "; expected (n0, n1, n2) with n2 / 2 + 1 == " << a.shape()[2]);
  return detail::cached_plan<RealPlan<R, M>>(real_shape, a.sharding(), norm).backward(a);
}

}  // namespace fft
}  // namespace darray
