// Shared helpers of the FFT tests: reproducible random arrays (values from the global index, so every layout and
// process count sees the same data) and the serial FFTW transforms of gathered arrays that serve as the oracle.
#pragma once

#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "darray/darray.hpp"
#include "darray/fft/layout.hpp"
#include "darray/fft/plan.hpp"
#include "darray/fft/transforms.hpp"

namespace fft_test {

using darray::Index;
using darray::Shape;

// A value in [-1, 1) from (seed, flat global index): splitmix64.
inline double noise(uint64_t seed, int64_t flat) {
  uint64_t z = seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(flat) + 0x632be59bd9b4e019ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

template <class T>
T random_value(uint64_t seed, int64_t flat) {
  if constexpr (darray::detail::is_kokkos_complex<T>::value) {
    using R = typename T::value_type;
    return T(static_cast<R>(noise(seed, 2 * flat)), static_cast<R>(noise(seed, 2 * flat + 1)));
  } else {
    return static_cast<T>(noise(seed, flat));
  }
}

// An array whose element at flat global index f is random_value<T>(seed, f).
template <class T, class Space = darray::DefaultMemorySpace>
darray::DistributedArray<T, 3, Space> random_array(const Shape& shape, const darray::NamedSharding& sharding,
                                                   uint64_t seed) {
  return darray::make_array_from_callback<T, 3, Space>(shape, sharding, [&](const Index& box) {
    std::vector<T> v;
    v.reserve(static_cast<std::size_t>(darray::volume(box)));
    for (int64_t i = box[0].start; i < box[0].stop; ++i)
      for (int64_t j = box[1].start; j < box[1].stop; ++j)
        for (int64_t k = box[2].start; k < box[2].stop; ++k)
          v.push_back(random_value<T>(seed, (i * shape[1] + j) * shape[2] + k));
    return v;
  });
}

template <class T>
double magnitude(const T& v) {
  if constexpr (darray::detail::is_kokkos_complex<T>::value)
    return std::hypot(static_cast<double>(v.real()), static_cast<double>(v.imag()));
  else
    return std::abs(static_cast<double>(v));
}

// max |a - b| / max |b| (0 when both are all zero).
template <class T>
double relative_error(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return 1e300;
  double diff = 0, ref = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, magnitude(T(a[i] - b[i])));
    ref = std::max(ref, magnitude(b[i]));
  }
  return ref == 0 ? diff : diff / ref;
}

template <class R>
struct Serial;

template <>
struct Serial<double> {
  using C = Kokkos::complex<double>;
  static std::vector<C> c2c(std::vector<C> in, const Shape& s, int sign) {
    std::vector<C> out(in.size());
    auto* i = reinterpret_cast<fftw_complex*>(in.data());
    auto* o = reinterpret_cast<fftw_complex*>(out.data());
    fftw_plan p = fftw_plan_dft_3d(int(s[0]), int(s[1]), int(s[2]), i, o, sign, FFTW_ESTIMATE);
    fftw_execute(p);
    fftw_destroy_plan(p);
    return out;
  }
  static std::vector<C> r2c(std::vector<double> in, const Shape& s) {
    std::vector<C> out(static_cast<std::size_t>(s[0] * s[1] * (s[2] / 2 + 1)));
    fftw_plan p = fftw_plan_dft_r2c_3d(int(s[0]), int(s[1]), int(s[2]), in.data(),
                                       reinterpret_cast<fftw_complex*>(out.data()), FFTW_ESTIMATE);
    fftw_execute(p);
    fftw_destroy_plan(p);
    return out;
  }
};

template <>
struct Serial<float> {
  using C = Kokkos::complex<float>;
  static std::vector<C> c2c(std::vector<C> in, const Shape& s, int sign) {
    std::vector<C> out(in.size());
    auto* i = reinterpret_cast<fftwf_complex*>(in.data());
    auto* o = reinterpret_cast<fftwf_complex*>(out.data());
    fftwf_plan p = fftwf_plan_dft_3d(int(s[0]), int(s[1]), int(s[2]), i, o, sign, FFTW_ESTIMATE);
    fftwf_execute(p);
    fftwf_destroy_plan(p);
    return out;
  }
  static std::vector<C> r2c(std::vector<float> in, const Shape& s) {
    std::vector<C> out(static_cast<std::size_t>(s[0] * s[1] * (s[2] / 2 + 1)));
    fftwf_plan p = fftwf_plan_dft_r2c_3d(int(s[0]), int(s[1]), int(s[2]), in.data(),
                                         reinterpret_cast<fftwf_complex*>(out.data()), FFTW_ESTIMATE);
    fftwf_execute(p);
    fftwf_destroy_plan(p);
    return out;
  }
};

template <class T>
std::vector<T> scaled(std::vector<T> v, double factor) {
  using R = std::conditional_t<darray::detail::is_kokkos_complex<T>::value, typename T::value_type, T>;
  for (T& x : v) x *= static_cast<R>(factor);
  return v;
}

// Every mesh worth testing over all devices: the 1-D mesh ("x") and each 2-D factorisation ("r", "c").
inline std::vector<darray::Mesh> test_meshes() {
  const int64_t n = darray::device_count();
  std::vector<darray::Mesh> meshes{darray::make_mesh({n}, {"x"})};
  for (int64_t r = 1; r <= n; ++r)
    if (n % r == 0 && r != 1 && r != n) meshes.push_back(darray::make_mesh({r, n / r}, {"r", "c"}));
  if (n > 1) meshes.push_back(darray::make_mesh({1, n}, {"r", "c"}));  // a size-1 axis in the spec
  return meshes;
}

}  // namespace fft_test
