// Local FFTs on one device's block, dispatched to the backend that can reach the memory: cuFFT where Kokkos runs
// CUDA and the memory is GPU-reachable, FFTW where the host can read it. The choice is made at compile time from
// the memory space; a space no backend serves is a NotSupported error when the plan is built.
#pragma once

#include <Kokkos_Core.hpp>
#include <map>
#include <memory>
#include <type_traits>

#include "darray/array/detail/view.hpp"
#include "darray/core/error.hpp"
#include "darray/fft/detail/fftw.hpp"
#include "darray/fft/detail/local_problem.hpp"

#if defined(DARRAY_HAS_CUFFT) && defined(KOKKOS_ENABLE_CUDA)
#include "darray/fft/detail/cufft.hpp"
#define DARRAY_FFT_CUFFT 1
#endif

namespace darray {
namespace fft {
namespace detail {

enum class Backend { none, fftw, cufft };

template <class M>
constexpr Backend backend_for() {
#if defined(DARRAY_FFT_CUFFT)
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::Cuda, M>::accessible) return Backend::cufft;
#endif
#if defined(DARRAY_HAS_FFTW)
  if constexpr (darray::detail::host_accessible_v<M>) return Backend::fftw;
#endif
  return Backend::none;
}

inline const char* to_string(Backend b) { return b == Backend::fftw ? "fftw" : b == Backend::cufft ? "cufft" : "none"; }

// Stands in where no backend serves a memory space; plans refuse such spaces before any local problem is made.
struct NoBackendPlan {
  NoBackendPlan(const LocalProblem&, bool) {
    DARRAY_THROW(NotSupported, "fft::Plan", "no FFT backend for this memory space in this build");
  }
  void execute(void*, void*) {}
};

template <Backend B, class R>
struct BackendPlan {
  using type = NoBackendPlan;
  static std::unique_ptr<type> make(const LocalProblem& p, bool measure) { return std::make_unique<type>(p, measure); }
};
#if defined(DARRAY_HAS_FFTW)
template <class R>
struct BackendPlan<Backend::fftw, R> {
  using type = FftwPlan<R>;
  static std::unique_ptr<type> make(const LocalProblem& p, bool measure) { return std::make_unique<type>(p, measure); }
};
#endif
#if defined(DARRAY_FFT_CUFFT)
template <class R>
struct BackendPlan<Backend::cufft, R> {
  using type = CufftPlan<R>;
  // cuFFT has no planner effort; Kokkos' stream orders the transforms with the kernels around them.
  static std::unique_ptr<type> make(const LocalProblem& p, bool) {
    return std::make_unique<type>(p, Kokkos::Cuda().cuda_stream());
  }
};
#endif

// The local plans of one distributed FFT plan, one per distinct local problem (devices with equal blocks share).
template <class R, class M>
class LocalPlans {
  using Factory = BackendPlan<backend_for<M>(), R>;

 public:
  static constexpr Backend backend = backend_for<M>();

  explicit LocalPlans(bool measure) : m_measure(measure) {}

  // Plans `problem` unless an equal one exists. Not collective; may throw (the caller agrees errors).
  void prepare(const LocalProblem& problem) {
    if (problem.empty() || m_plans.count(problem) != 0) return;
    m_plans.emplace(problem, Factory::make(problem, m_measure));
  }

  // Runs `problem` on blocks in and out (equal for in-place problems). Planned on demand if prepare() missed it.
  void execute(const LocalProblem& problem, void* in, void* out) {
    if (problem.empty()) return;
    auto it = m_plans.find(problem);
    if (it == m_plans.end()) it = m_plans.emplace(problem, Factory::make(problem, m_measure)).first;
    it->second->execute(in, out);
  }

  std::size_t size() const { return m_plans.size(); }

 private:
  bool m_measure;
  std::map<LocalProblem, std::unique_ptr<typename Factory::type>> m_plans;
};

}  // namespace detail
}  // namespace fft
}  // namespace darray
