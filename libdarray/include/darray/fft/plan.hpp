// fft::Plan (complex-to-complex) and fft::RealPlan (real-to-complex forward, complex-to-real backward): distributed
// 3-D FFTs of DistributedArrays on a slab (1-D mesh) or pencil (2-D mesh) decomposition. Built once per (shape,
// input sharding, options): the stage sequence, one cached ReshardPlan per transpose and one FFTW (CPU) or cuFFT
// (GPU) plan per distinct local block, then executed many times.
#pragma once

#include <Kokkos_Core.hpp>
#include <memory>
#include <string>
#include <vector>

#include "darray/array/distributed_array.hpp"
#include "darray/fft/detail/pipeline.hpp"
#include "darray/fft/options.hpp"
#include "darray/fft/stages.hpp"

namespace darray {
namespace fft {

// Whether this build can transform arrays in memory space M: FFTW serves host memory, cuFFT CUDA memory. A plan for
// a space without a backend does not compile (the error names what to install); generic code tests this first,
// `if constexpr (fft::has_backend_v<M>)`.
template <class M = DefaultMemorySpace>
inline constexpr bool has_backend_v = detail::backend_for<M>() != detail::Backend::none;

// Complex-to-complex 3-D FFT of DistributedArray<Kokkos::complex<R>, 3, M> arrays, R = double or float.
//   fft::Plan<double> plan(shape, NamedSharding(mesh, P("x", none, none)));
//   auto spectrum = plan.forward(a);     // sharded as plan.output_sharding()
//   auto back = plan.backward(spectrum); // sharded as plan.input_sharding(); equals a to rounding
// Uneven shapes work (blocks differ by one). Building the plan is collective; forward() and backward() are
// collective and never modify their argument. One plan object must not run two transforms at once.
template <class R, class M = DefaultMemorySpace>
class Plan {
 public:
  using complex_type = Kokkos::complex<R>;
  using array_type = DistributedArray<complex_type, 3, M>;

  Plan(const Shape& shape, const NamedSharding& input, const Options& options = {})
      : m_core(std::make_shared<detail::PlanCore<R, M>>("fft::Plan", shape, input, options, false)) {}

  // Sign -1: X[k] = sum_j x[j] exp(-2 pi i j.k / n), times the forward factor of options().normalization. Takes
  // input_sharding(), returns output_sharding().
  array_type forward(const array_type& a) const {
    array_type out = allocate_output();
    m_core->forward_c2c(a, out);
    return out;
  }
  // Sign +1, times the backward factor; takes output_sharding(), returns input_sharding().
  array_type backward(const array_type& a) const {
    array_type out = allocate_input();
    m_core->backward_c2c(a, out);
    return out;
  }
  // The same into arrays the caller keeps (from allocate_output() / allocate_input()), as FFTW plans are executed
  // on fixed buffers: no allocation per transform. out may be `in` itself.
  void forward(const array_type& in, const array_type& out) const { m_core->forward_c2c(in, out); }
  void backward(const array_type& in, const array_type& out) const { m_core->backward_c2c(in, out); }
  // Uninitialised arrays of the plan's input and output shardings.
  array_type allocate_input() const { return m_core->allocate_complex_input(); }
  array_type allocate_output() const { return m_core->allocate_output(); }

  const Shape& shape() const { return m_core->shape(); }
  const NamedSharding& input_sharding() const { return m_core->input_sharding(); }
  const NamedSharding& output_sharding() const { return m_core->output_sharding(); }
  const std::vector<Stage>& stages() const { return m_core->stages(); }
  const Options& options() const { return m_core->options(); }
  int transposes() const { return m_core->transposes(); }
  const char* backend() const { return m_core->backend(); }  // "fftw" or "cufft"
  // The plan in words: stages, each stage's local strategy per direction and whether it came from a heuristic
  // (planner estimate), a measurement or wisdom, and what became of Options::wisdom_file. Multi-line.
  std::string describe() const { return m_core->describe(); }

 private:
  std::shared_ptr<detail::PlanCore<R, M>> m_core;
};

// Real-to-complex forward / complex-to-real backward 3-D FFT, as numpy's rfftn / irfftn: a real array of shape
// (n0, n1, n2) maps to the complex half spectrum of shape (n0, n1, n2 / 2 + 1) (the last dim halved). The input
// sharding must hold dim 2 whole (e.g. P("x", none, none) or P("r", "c", none)). N in the normalisation is
// n0 * n1 * n2. The imaginary parts of the k2 = 0 (and, for even n2, k2 = n2 / 2) planes of a backward input are
// taken as Hermitian-symmetric, as FFTW's and numpy's c2r do.
template <class R, class M = DefaultMemorySpace>
class RealPlan {
 public:
  using complex_type = Kokkos::complex<R>;
  using real_array = DistributedArray<R, 3, M>;
  using complex_array = DistributedArray<complex_type, 3, M>;

  RealPlan(const Shape& real_shape, const NamedSharding& input, const Options& options = {})
      : m_core(std::make_shared<detail::PlanCore<R, M>>("fft::RealPlan", real_shape, input, options, true)) {}

  complex_array forward(const real_array& a) const {
    complex_array out = allocate_output();
    m_core->forward_r2c(a, out);
    return out;
  }
  real_array backward(const complex_array& a) const {
    real_array out = allocate_input();
    m_core->backward_c2r(a, out);
    return out;
  }
  void forward(const real_array& in, const complex_array& out) const { m_core->forward_r2c(in, out); }
  void backward(const complex_array& in, const real_array& out) const { m_core->backward_c2r(in, out); }
  real_array allocate_input() const { return m_core->allocate_real_input(); }
  complex_array allocate_output() const { return m_core->allocate_output(); }

  const Shape& shape() const { return m_core->shape(); }                              // real
  const Shape& complex_shape() const { return m_core->complex_shape(); }              // (n0, n1, n2 / 2 + 1)
  const NamedSharding& input_sharding() const { return m_core->input_sharding(); }    // of the real array
  const NamedSharding& output_sharding() const { return m_core->output_sharding(); }  // of the half spectrum
  const std::vector<Stage>& stages() const { return m_core->stages(); }
  const Options& options() const { return m_core->options(); }
  int transposes() const { return m_core->transposes(); }
  const char* backend() const { return m_core->backend(); }
  std::string describe() const { return m_core->describe(); }  // as Plan::describe()

 private:
  std::shared_ptr<detail::PlanCore<R, M>> m_core;
};

}  // namespace fft
}  // namespace darray
