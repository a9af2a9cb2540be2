// Options of the distributed FFT: output layout, normalisation and FFTW planner effort, each with a documented
// default (as heFFTe's plan_options), so a plan is fully described by (shape, input sharding, Options).
#pragma once

#include <ostream>
#include <string>

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

// How hard the plan searches for fast local transforms. measure and patient build FFTW's plans with FFTW_MEASURE /
// FFTW_PATIENT and also time darray's own candidates for each stage (FFTW's strided plans, tiled passes, in place
// or out of place, and the estimate planner's own plan; see Plan::describe()): seconds for large blocks, unless wisdom
// (Options::wisdom_file) already holds the answers. Every process takes the same choice per stage (the fastest on the
// slowest process, each stage's candidates timed on their own: a whole transform may rank close ones otherwise).
// cuFFT ignores it.
enum class Planner {
  estimate,  // FFTW_ESTIMATE and fixed heuristics: planning is instant
  measure,   // FFTW_MEASURE
  patient,   // FFTW_PATIENT: a wider FFTW search, several times longer than measure
};

struct Options {
  OutputLayout output = OutputLayout::same;
  Normalization normalization = Normalization::backward;
  Planner planner = Planner::estimate;
  // A wisdom file (empty: none), as fft::load_wisdom / fft::save_wisdom read and write it: before planning, process
  // 0 reads it and every process imports it (a missing file is fine: planned as without; a corrupt one, or one from
  // another FFTW build, is ignored with a warning, the same on every process). After a measure or patient plan learnt
  // something new, the wisdom of every process is merged and written back (a temporary renamed over the file). So
  // a second run of a measured plan is built about as fast as an estimate plan, and computes bit for bit the same.
  std::string wisdom_file;
};

inline const char* to_string(OutputLayout v) { return v == OutputLayout::same ? "same" : "transposed"; }
inline const char* to_string(Planner v) {
  return v == Planner::estimate ? "estimate" : v == Planner::measure ? "measure" : "patient";
}
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
