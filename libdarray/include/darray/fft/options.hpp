// Options of the distributed FFT: output layout, normalisation and FFTW planner effort, each with a documented
// default (as heFFTe's plan_options), so a plan is fully described by (shape, input sharding, Options).
#pragma once

#include <ostream>

namespace darray {
namespace fft {

// Where the result of a forward transform lives.
enum class OutputLayout {
  // The input's sharding. Costs one transpose more than `transposed`; backward() takes and returns that sharding.
  same,
  // The sharding of the last transform stage (the slab or pencil the last local FFT ran on), as
  // FFTW_MPI_TRANSPOSED_OUT and cuDecomp do: saves one transpose. backward() then takes that sharding
  // (FFTW_MPI_TRANSPOSED_IN) and returns the input's. The global index order is unchanged: element (k0, k1, k2)
  // of the result is still frequency (k0, k1, k2); only which device holds it differs.
  transposed,
};

// Which direction is scaled, with N = n0 * n1 * n2 (the real shape for real transforms). Forward is
// X[k] = sum_j x[j] exp(-2 pi i j.k / n) times the forward factor; backward uses exp(+2 pi i ...) and its factor.
enum class Normalization {
  backward,  // forward unscaled, backward scaled by 1/N (numpy's default): backward(forward(x)) == x
  ortho,     // both scaled by 1/sqrt(N): the transform is unitary, backward(forward(x)) == x
  forward,   // forward scaled by 1/N, backward unscaled: backward(forward(x)) == x
  none,      // neither (FFTW's and cuFFT's raw transforms): backward(forward(x)) == N x
};

// How hard FFTW searches for fast local plans. measure runs and times candidates while the Plan is built (seconds
// for large blocks, and different processes may pick different algorithms); cuFFT ignores it.
enum class Planner {
  estimate,  // FFTW_ESTIMATE: planning is instant
  measure,   // FFTW_MEASURE
};

struct Options {
  OutputLayout output = OutputLayout::same;
  Normalization normalization = Normalization::backward;
  Planner planner = Planner::estimate;
};

inline const char* to_string(OutputLayout v) { return v == OutputLayout::same ? "same" : "transposed"; }
inline const char* to_string(Planner v) { return v == Planner::estimate ? "estimate" : "measure"; }
inline const char* to_string(Normalization v) {
  switch (v) {
    case Normalization::backward:
      return "backward";
    case Normalization::ortho:
      return "ortho";
    case Normalization::forward:
      return "forward";
    default:
      return "none";
  }
}
inline std::ostream& operator<<(std::ostream& os, OutputLayout v) { return os << to_string(v); }
inline std::ostream& operator<<(std::ostream& os, Normalization v) { return os << to_string(v); }
inline std::ostream& operator<<(std::ostream& os, Planner v) { return os << to_string(v); }

}  // namespace fft
}  // namespace darray
