// The FFTW backend of the local FFTs: one guru64 plan per local problem (any set of transformed dims with any
// strides, sizes in 64 bits, so blocks beyond 2^31 elements plan correctly), double through fftw_ and float through
// fftwf_. FFTW's planner is not thread-safe, so every planner call and plan destruction holds one mutex.
#pragma once

#if defined(DARRAY_HAS_FFTW)

#include <fftw3.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "darray/core/error.hpp"
#include "darray/fft/detail/local_problem.hpp"

namespace darray {
namespace fft {
namespace detail {

// Guards fftw_plan_* and fftw_destroy_plan (execution is thread-safe and runs unguarded).
inline std::mutex& fftw_planner_mutex() {
  static std::mutex m;
  return m;
}

template <class R>
struct FftwApi;

#define DARRAY_FFTW_API(R, X)                                                                                       \
  template <>                                                                                                       \
  struct FftwApi<R> {                                                                                               \
    using plan_type = X##plan;                                                                                      \
    using complex_type = X##complex;                                                                                \
    using iodim = X##iodim64;                                                                                       \
    static plan_type dft(int rank, const iodim* dims, int hrank, const iodim* hdims, void* in, void* out, int sign, \
                         unsigned flags) {                                                                          \
      return X##plan_guru64_dft(rank, dims, hrank, hdims, static_cast<complex_type*>(in),                           \
                                static_cast<complex_type*>(out), sign, flags);                                      \
    }                                                                                                               \
    static plan_type r2c(int rank, const iodim* dims, int hrank, const iodim* hdims, void* in, void* out,           \
                         unsigned flags) {                                                                          \
      return X##plan_guru64_dft_r2c(rank, dims, hrank, hdims, static_cast<R*>(in), static_cast<complex_type*>(out), \
                                    flags);                                                                         \
    }                                                                                                               \
    static plan_type c2r(int rank, const iodim* dims, int hrank, const iodim* hdims, void* in, void* out,           \
                         unsigned flags) {                                                                          \
      return X##plan_guru64_dft_c2r(rank, dims, hrank, hdims, static_cast<complex_type*>(in), static_cast<R*>(out), \
                                    flags);                                                                         \
    }                                                                                                               \
    static void execute_dft(plan_type p, void* in, void* out) {                                                     \
      X##execute_dft(p, static_cast<complex_type*>(in), static_cast<complex_type*>(out));                           \
    }                                                                                                               \
    static void execute_r2c(plan_type p, void* in, void* out) {                                                     \
      X##execute_dft_r2c(p, static_cast<R*>(in), static_cast<complex_type*>(out));                                  \
    }                                                                                                               \
    static void execute_c2r(plan_type p, void* in, void* out) {                                                     \
      X##execute_dft_c2r(p, static_cast<complex_type*>(in), static_cast<R*>(out));                                  \
    }                                                                                                               \
    static void destroy(plan_type p) { X##destroy_plan(p); }                                                        \
    static int alignment_of(const void* p) { return X##alignment_of(static_cast<R*>(const_cast<void*>(p))); }       \
  };

DARRAY_FFTW_API(double, fftw_)
DARRAY_FFTW_API(float, fftwf_)
#undef DARRAY_FFTW_API

// One FFTW plan for one LocalProblem. Planned on scratch arrays of 64-byte alignment (FFTW_MEASURE overwrites what
// it plans on); execute() runs on any arrays of that SIMD alignment, and on others through a second plan made with
// FFTW_UNALIGNED the first time one shows up (user-made shards may start anywhere).
template <class R>
class FftwPlan {
  using Api = FftwApi<R>;

 public:
  FftwPlan(const LocalProblem& problem, bool measure) : m_problem(problem), m_measure(measure) { m_aligned = make(0u); }
  FftwPlan(const FftwPlan&) = delete;
  FftwPlan& operator=(const FftwPlan&) = delete;
  ~FftwPlan() {
    std::lock_guard<std::mutex> lock(fftw_planner_mutex());
    if (m_aligned != nullptr) Api::destroy(m_aligned);
    if (m_unaligned != nullptr) Api::destroy(m_unaligned);
  }

  // in and out hold the blocks of the problem (the same pointer for in-place problems).
  void execute(void* in, void* out) {
    typename Api::plan_type p = m_aligned;
    if (Api::alignment_of(in) != 0 || Api::alignment_of(out) != 0) {
      if (m_unaligned == nullptr) m_unaligned = make(FFTW_UNALIGNED);
      p = m_unaligned;
    }
    switch (m_problem.kind) {
      case Kind::c2c:
        Api::execute_dft(p, in, out);
        break;
      case Kind::r2c:
        Api::execute_r2c(p, in, out);
        break;
      case Kind::c2r:
        Api::execute_c2r(p, in, out);
        break;
    }
  }

 private:
  typename Api::plan_type make(unsigned extra_flags) {
    const LocalProblem& pb = m_problem;
    const std::size_t in_elem = pb.kind == Kind::r2c ? sizeof(R) : 2 * sizeof(R);
    const std::size_t out_elem = pb.kind == Kind::c2r ? sizeof(R) : 2 * sizeof(R);
    const Shape in_strides = row_major_strides(pb.in_block), out_strides = row_major_strides(pb.out_block);
    std::vector<typename Api::iodim> dims, loops;
    for (std::size_t k = 0; k < pb.in_block.size(); ++k) {
      const int d = static_cast<int>(k);
      if (pb.transformed(d))
        dims.push_back({static_cast<std::ptrdiff_t>(pb.logical(d)), static_cast<std::ptrdiff_t>(in_strides[k]),
                        static_cast<std::ptrdiff_t>(out_strides[k])});
      else if (pb.in_block[k] != 1)  // a loop of one is no loop; FFTW plans fewer loops faster
        loops.push_back({static_cast<std::ptrdiff_t>(pb.in_block[k]), static_cast<std::ptrdiff_t>(in_strides[k]),
                         static_cast<std::ptrdiff_t>(out_strides[k])});
    }
    // Scratch the planner may overwrite; never touched under FFTW_ESTIMATE, so the pages are never faulted in.
    const std::size_t in_bytes = static_cast<std::size_t>(volume(pb.in_block)) * in_elem;
    const std::size_t out_bytes = static_cast<std::size_t>(volume(pb.out_block)) * out_elem;
    std::unique_ptr<std::byte[]> scratch;  // default-initialised: no page is written here
    void* in = nullptr;
    void* out = nullptr;
    {
      // FFTW_UNALIGNED plans must not assume the scratch's alignment either, so they plan at an odd offset.
      const std::size_t skew = (extra_flags & FFTW_UNALIGNED) != 0 ? sizeof(R) : 0;
      const std::size_t total = in_bytes + (pb.in_place ? 0 : out_bytes) + 2 * 64 + 2 * skew;
      scratch.reset(new std::byte[total]);
      auto align = [](std::byte* p) {
        const auto a = reinterpret_cast<std::uintptr_t>(p);
        return p + ((64 - a % 64) % 64);
      };
      std::byte* base = align(scratch.get()) + skew;
      in = base;
      out = pb.in_place ? in : static_cast<void*>(align(base + in_bytes) + skew);
    }
    const unsigned flags = (m_measure ? FFTW_MEASURE : FFTW_ESTIMATE) | extra_flags;
    const int rank = static_cast<int>(dims.size()), hrank = static_cast<int>(loops.size());
    typename Api::plan_type p = nullptr;
    {
      std::lock_guard<std::mutex> lock(fftw_planner_mutex());
      switch (pb.kind) {
        case Kind::c2c:
          p = Api::dft(rank, dims.data(), hrank, loops.data(), in, out, pb.forward ? FFTW_FORWARD : FFTW_BACKWARD,
                       flags);
          break;
        case Kind::r2c:
          p = Api::r2c(rank, dims.data(), hrank, loops.data(), in, out, flags);
          break;
        case Kind::c2r:
          p = Api::c2r(rank, dims.data(), hrank, loops.data(), in, out, flags);
          break;
      }
    }
    DARRAY_THROW_IF(p == nullptr, NotSupported, "fft::Plan",
                    "FFTW could not plan a " << (pb.kind == Kind::c2c   ? "c2c"
                                                 : pb.kind == Kind::r2c ? "r2c"
                                                                        : "c2r")
                                             << " transform of a " << shape_to_string(pb.in_block) << " block");
    return p;
  }

  LocalProblem m_problem;
  bool m_measure;
  typename Api::plan_type m_aligned = nullptr;
  typename Api::plan_type m_unaligned = nullptr;
};

}  // namespace detail
}  // namespace fft
}  // namespace darray

#endif  // DARRAY_HAS_FFTW
