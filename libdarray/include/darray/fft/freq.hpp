// The sample frequencies of a discrete Fourier transform, as numpy.fft.fftfreq and rfftfreq: host vectors, so a
// spectrum's wavenumbers come from the library (e.g. k = 2 * pi * fftfreq(n, dx) along each dim of fft::rfftn).
#pragma once

#include <cstdint>
#include <vector>

#include "darray/core/error.hpp"

namespace darray {
namespace fft {

// [0, 1, ..., n/2 - 1 (rounded up), -n/2 (rounded down), ..., -1] / (d * n): numpy.fft.fftfreq(n, d).
inline std::vector<double> fftfreq(int64_t n, double d = 1.0) {
  DARRAY_THROW_IF(n <= 0, InvalidArgument, "fft::fftfreq", "n = " << n << "; expected a positive length");
  DARRAY_THROW_IF(!(d != 0.0), InvalidArgument, "fft::fftfreq", "d = " << d << "; expected a non-zero sample spacing");
  std::vector<double> f(static_cast<std::size_t>(n));
  const double scale = 1.0 / (static_cast<double>(n) * d);
  const int64_t positive = (n - 1) / 2 + 1;  // 0 .. (n-1)/2
  for (int64_t i = 0; i < n; ++i)
    f[static_cast<std::size_t>(i)] = static_cast<double>(i < positive ? i : i - n) * scale;
  return f;
}

// [0, 1, ..., n/2] / (d * n): the frequencies of rfft's n/2 + 1 outputs, numpy.fft.rfftfreq(n, d).
inline std::vector<double> rfftfreq(int64_t n, double d = 1.0) {
  DARRAY_THROW_IF(n <= 0, InvalidArgument, "fft::rfftfreq", "n = " << n << "; expected a positive length");
  DARRAY_THROW_IF(!(d != 0.0), InvalidArgument, "fft::rfftfreq", "d = " << d << "; expected a non-zero sample spacing");
  std::vector<double> f(static_cast<std::size_t>(n / 2 + 1));
  const double scale = 1.0 / (static_cast<double>(n) * d);
  for (std::size_t i = 0; i < f.size(); ++i) f[i] = static_cast<double>(i) * scale;
  return f;
}

}  // namespace fft
}  // namespace darray
