// Local FFTs on one device's block, dispatched to the backend that can reach the memory: cuFFT where Kokkos runs
// CUDA and the memory is GPU-reachable, FFTW where the host can read it. The choice is made at compile time from
// the memory space; a space no backend serves is a compile error (PlanCore's static_assert).
#pragma once

#include "darray/config.hpp"

#include <Kokkos_Core.hpp>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "darray/array/detail/view.hpp"
#include "darray/core/error.hpp"
#include "darray/fft/detail/fftw.hpp"
#include "darray/fft/detail/local_problem.hpp"
#include "darray/runtime/detail/kokkos_compat.hpp"

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

// Stands in where no backend serves a memory space, so that PlanCore's static_assert is the only error a program
// using such a space gets. Declared, never defined: no plan of it can be built.
struct NoBackendPlan {
  NoBackendPlan(const LocalProblem&, Method, int);
  void execute(void*, void*);
};

template <Backend B, class R>
struct BackendPlan {
  using type = NoBackendPlan;
  static std::unique_ptr<type> make(const LocalProblem& p, Method m, int level) {
    return std::make_unique<type>(p, m, level);
  }
};
#if defined(DARRAY_HAS_FFTW)
template <class R>
struct BackendPlan<Backend::fftw, R> {
  using type = FftwPlan<R>;
  static std::unique_ptr<type> make(const LocalProblem& p, Method m, int level) {
    return std::make_unique<type>(p, m, fftw_flags(level));
  }
};
#endif
#if defined(DARRAY_FFT_CUFFT)
template <class R>
struct BackendPlan<Backend::cufft, R> {
  using type = CufftPlan<R>;
  // cuFFT has no planner effort nor methods; Kokkos' stream orders the transforms with the kernels around them.
  static std::unique_ptr<type> make(const LocalProblem& p, Method, int) {
    return std::make_unique<type>(p, Kokkos::Cuda().cuda_stream());
  }
};
#endif

// p[i] *= factor. A functor, not a KOKKOS_LAMBDA (nvcc's extended lambdas allocate on the host heap per launch:
// runtime/detail/kokkos_compat.hpp).
template <class T, class R>
struct ScaleItem {
  T* p;
  R factor;
  KOKKOS_INLINE_FUNCTION void operator()(const int64_t i) const { p[i] *= factor; }
};

// p[0 .. count) *= factor, a kernel in the memory space's execution space (a kernel on GPUs), not waited for.
template <class M, class T, class R>
void scale_block(T* p, int64_t count, R factor) {
  using Exec = typename M::execution_space;
  static const std::string kernel_name = "darray::fft::scale";  // kokkos_compat.hpp: built once
  Kokkos::parallel_for(kernel_name,
                       darray::detail::range_policy(darray::detail::default_instance<Exec>(), int64_t{0}, count),
                       ScaleItem<T, R>{p, factor});
}

// The local plans of one distributed FFT plan, one per distinct (local problem, method): devices with equal blocks
// share. level: the planner effort, 0 estimate, 1 measure, 2 patient.
template <class R, class M>
class LocalPlans {
  using Factory = BackendPlan<backend_for<M>(), R>;
  using Key = std::pair<LocalProblem, Method>;
  // A key to look up without copying its problem (a LocalProblem holds vectors: a copy allocates).
  struct KeyRef {
    const LocalProblem& problem;
    Method method;
  };
  // Key's order (std::pair's), between keys and key references alike.
  struct KeyLess {
    using is_transparent = void;
    static bool less(const LocalProblem& a, Method am, const LocalProblem& b, Method bm) {
      return a < b || (!(b < a) && am < bm);
    }
    bool operator()(const Key& a, const Key& b) const { return less(a.first, a.second, b.first, b.second); }
    bool operator()(const Key& a, const KeyRef& b) const { return less(a.first, a.second, b.problem, b.method); }
    bool operator()(const KeyRef& a, const Key& b) const { return less(a.problem, a.method, b.first, b.second); }
  };

 public:
  static constexpr Backend backend = backend_for<M>();

  explicit LocalPlans(int level) : m_level(level) {}

  // Plans `problem` unless an equal one exists. Not collective; may throw (the caller agrees errors).
  void prepare(const LocalProblem& problem, Method method) {
    if (problem.empty() || m_plans.count(KeyRef{problem, method}) != 0) return;
    m_plans.emplace(Key(problem, method), Factory::make(problem, method, m_level));
  }

  // Runs `problem` on blocks in and out (equal for in-place problems), the result times `factor` (a normalisation):
  // FFTW's plans scale what their last step wrote while it is in cache (FftwPlan::execute); cuFFT's plans take no
  // factor, so a kernel scales their result after them (not waited for: the caller fences). Planned on demand if
  // prepare() missed it.
  void execute(const LocalProblem& problem, Method method, void* in, void* out, R factor = R(1)) {
    if (problem.empty()) return;
    if constexpr (backend == Backend::fftw) {
      plan_of(problem, method).execute(in, out, factor);
    } else {
      plan_of(problem, method).execute(in, out);
      if (factor != R(1))
        scale_block<M>(static_cast<R*>(out), volume(problem.out_block) * (problem.kind == Kind::c2r ? 1 : 2), factor);
    }
  }

  // Runs the c2r `problem` from `in`, left as it is, through `work` (a block of in's size, overwritten) into `out`,
  // the copy FFTW's c2r would need folded into the plan's first pass (FftwPlan::execute_c2r). FFTW only (cuFFT's
  // c2r overwrites its input: the caller copies it). Planned on demand as execute() is. The result is scaled by
  // `factor` as execute() scales it.
  void execute_c2r(const LocalProblem& problem, Method method, const void* in, void* work, void* out, R factor = R(1)) {
    static_assert(backend == Backend::fftw, "execute_c2r: FFTW plans only");
    if (problem.empty()) return;
    plan_of(problem, method).execute_c2r(in, work, out, factor);
  }

  // Drops every plan whose key `keep` rejects (the candidates a measuring planner did not choose).
  template <class Pred>
  void retain(Pred keep) {
    for (auto it = m_plans.begin(); it != m_plans.end();)
      it = keep(it->first.first, it->first.second) ? std::next(it) : m_plans.erase(it);
  }

  std::size_t size() const { return m_plans.size(); }
  int level() const { return m_level; }

 private:
  // The plan of (problem, method), planned on demand if prepare() missed it.
  typename Factory::type& plan_of(const LocalProblem& problem, Method method) {
    auto it = m_plans.find(KeyRef{problem, method});
    if (it == m_plans.end()) it = m_plans.emplace(Key(problem, method), Factory::make(problem, method, m_level)).first;
    return *it->second;
  }

  int m_level;
  std::map<Key, std::unique_ptr<typename Factory::type>, KeyLess> m_plans;
};

}  // namespace detail
}  // namespace fft
}  // namespace darray
