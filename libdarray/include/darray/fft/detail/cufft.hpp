// The cuFFT backend of the local FFTs (GPU builds: included only where Kokkos has CUDA). cuFFT's advanced layout
// has one batch dim and one stride for a contiguous run of transformed dims, so a problem is split into runs of
// consecutive dims, each a 64-bit plan (cufftMakePlanMany64) looped over the dims outside it when both sides of
// the run hold loops. Plain pointers and a stream in, so this file needs only cuda_runtime.h and cufft.h.
#pragma once

#include <cuda_runtime.h>
#include <cufft.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "darray/core/error.hpp"
#include "darray/fft/detail/local_problem.hpp"
#include "darray/runtime/detail/cuda.hpp"

namespace darray {
namespace detail {

// The name of a cufftResult value, as cufft.h spells it.
inline const char* cufft_result_name(cufftResult rc) {
  switch (rc) {
    case CUFFT_SUCCESS:
      return "CUFFT_SUCCESS";
    case CUFFT_INVALID_PLAN:
      return "CUFFT_INVALID_PLAN";
    case CUFFT_ALLOC_FAILED:
      return "CUFFT_ALLOC_FAILED";
    case CUFFT_INVALID_TYPE:
      return "CUFFT_INVALID_TYPE";
    case CUFFT_INVALID_VALUE:
      return "CUFFT_INVALID_VALUE";
    case CUFFT_INTERNAL_ERROR:
      return "CUFFT_INTERNAL_ERROR";
    case CUFFT_EXEC_FAILED:
      return "CUFFT_EXEC_FAILED";
    case CUFFT_SETUP_FAILED:
      return "CUFFT_SETUP_FAILED";
    case CUFFT_INVALID_SIZE:
      return "CUFFT_INVALID_SIZE";
    case CUFFT_UNALIGNED_DATA:
      return "CUFFT_UNALIGNED_DATA";
    case CUFFT_INVALID_DEVICE:
      return "CUFFT_INVALID_DEVICE";
    case CUFFT_NO_WORKSPACE:
      return "CUFFT_NO_WORKSPACE";
    case CUFFT_NOT_IMPLEMENTED:
      return "CUFFT_NOT_IMPLEMENTED";
    case CUFFT_NOT_SUPPORTED:
      return "CUFFT_NOT_SUPPORTED";
    default:
      return "unknown cufftResult";
  }
}

}  // namespace detail
}  // namespace darray

// DARRAY_CUFFT_CHECK(cufftExecZ2Z(...)): throws darray::CufftError naming the call and the cufftResult.
#define DARRAY_CUFFT_CHECK(call)                                                                    \
  do {                                                                                              \
    const cufftResult darray_cufft_rc_ = (call);                                                    \
    if (darray_cufft_rc_ != CUFFT_SUCCESS)                                                          \
      throw ::darray::CufftError("cuFFT",                                                           \
                                 std::string(#call) + " returned " +                                \
                                     ::darray::detail::cufft_result_name(darray_cufft_rc_) + " (" + \
                                     std::to_string(static_cast<int>(darray_cufft_rc_)) + ")",      \
                                 static_cast<int>(darray_cufft_rc_), __FILE__, __LINE__);           \
  } while (false)

namespace darray {
namespace fft {
namespace detail {

template <class R>
struct CufftApi;

template <>
struct CufftApi<double> {
  using complex_type = cufftDoubleComplex;
  static constexpr cufftType c2c = CUFFT_Z2Z, r2c = CUFFT_D2Z, c2r = CUFFT_Z2D;
  static void exec_c2c(cufftHandle h, void* in, void* out, int dir) {
    DARRAY_CUFFT_CHECK(cufftExecZ2Z(h, static_cast<complex_type*>(in), static_cast<complex_type*>(out), dir));
  }
  static void exec_r2c(cufftHandle h, void* in, void* out) {
    DARRAY_CUFFT_CHECK(cufftExecD2Z(h, static_cast<double*>(in), static_cast<complex_type*>(out)));
  }
  static void exec_c2r(cufftHandle h, void* in, void* out) {
    DARRAY_CUFFT_CHECK(cufftExecZ2D(h, static_cast<complex_type*>(in), static_cast<double*>(out)));
  }
};

template <>
struct CufftApi<float> {
  using complex_type = cufftComplex;
  static constexpr cufftType c2c = CUFFT_C2C, r2c = CUFFT_R2C, c2r = CUFFT_C2R;
  static void exec_c2c(cufftHandle h, void* in, void* out, int dir) {
    DARRAY_CUFFT_CHECK(cufftExecC2C(h, static_cast<complex_type*>(in), static_cast<complex_type*>(out), dir));
  }
  static void exec_r2c(cufftHandle h, void* in, void* out) {
    DARRAY_CUFFT_CHECK(cufftExecR2C(h, static_cast<float*>(in), static_cast<complex_type*>(out)));
  }
  static void exec_c2r(cufftHandle h, void* in, void* out) {
    DARRAY_CUFFT_CHECK(cufftExecC2R(h, static_cast<complex_type*>(in), static_cast<float*>(out)));
  }
};

template <class R>
class CufftPlan {
  using Api = CufftApi<R>;

  // One run of consecutive transformed dims [lo, hi]: a batched plan, executed `outer` times `outer_step` apart.
  struct Run {
    Kind kind = Kind::c2c;
    cufftHandle handle = 0;
    int64_t outer = 1;
    int64_t in_outer_step = 0, out_outer_step = 0;  // elements
  };

 public:
  // Kokkos' stream, so the transforms queue behind the kernels that wrote the data and before those that read it.
  CufftPlan(const LocalProblem& problem, cudaStream_t stream) : m_problem(problem), m_stream(stream) {
    const LocalProblem& pb = problem;
    DARRAY_THROW_IF(!pb.in_embed.empty() || !pb.out_embed.empty(), Error, "fft::Plan",
                    "internal: cuFFT plans whole blocks (only FFTW's plans run fused tiles inside blocks)");
    std::vector<std::vector<int>> runs;
    for (int d : pb.dims) {
      if (runs.empty() || runs.back().back() + 1 != d) runs.emplace_back();
      runs.back().push_back(d);
    }
    // r2c transforms the run holding the halved dim first; c2r last; the c2c runs go in place on the complex side.
    if (pb.kind == Kind::r2c) std::rotate(runs.begin(), runs.end() - 1, runs.end());
    try {
      for (std::size_t k = 0; k < runs.size(); ++k) {
        const bool halved = pb.kind != Kind::c2c && runs[k].back() == 2;
        make_run(runs[k], halved ? pb.kind : Kind::c2c, stream);
      }
    } catch (...) {
      destroy();
      throw;
    }
  }
  CufftPlan(const CufftPlan&) = delete;
  CufftPlan& operator=(const CufftPlan&) = delete;
  ~CufftPlan() { destroy(); }

  // in and out hold the problem's blocks; for c2r, `in` is overwritten (as by cuFFT's own multi-dim c2r).
  // cuFFT refuses complex data that is not aligned to its element (CUFFT_INVALID_VALUE for a complex<double> block
  // 8 bytes past an aligned address, which a user's view may be): such a block goes through an aligned scratch
  // block of the plan, copied in before and out after on the same stream.
  void execute(void* in, void* out) {
    const LocalProblem& pb = m_problem;
    const bool in_bad = misaligned(in, pb.kind != Kind::r2c), out_bad = misaligned(out, pb.kind != Kind::c2r);
    if (!in_bad && !out_bad) return run(in, out);
    const std::size_t in_bytes = block_bytes(pb.in_block, pb.kind != Kind::r2c);
    const std::size_t out_bytes = block_bytes(pb.out_block, pb.kind != Kind::c2r);
    std::byte* scratch = this->scratch(in_bytes + out_bytes);
    void* ain = in;
    if (in_bad) {
      ain = scratch;
      DARRAY_CUDA_CHECK(cudaMemcpyAsync(ain, in, in_bytes, cudaMemcpyDeviceToDevice, m_stream));
    }
    void* aout = !out_bad ? out : in == out ? ain : static_cast<void*>(scratch + in_bytes);
    run(ain, aout);
    if (out_bad) DARRAY_CUDA_CHECK(cudaMemcpyAsync(out, aout, out_bytes, cudaMemcpyDeviceToDevice, m_stream));
  }

 private:
  static std::size_t block_bytes(const Shape& block, bool complex) {
    std::size_t n = complex ? 2 * sizeof(R) : sizeof(R);
    for (int64_t e : block) n *= static_cast<std::size_t>(e);
    return n;
  }
  // cuFFT's alignment: its complex type's (two R), or R's for real data.
  static bool misaligned(const void* p, bool complex) {
    return reinterpret_cast<std::uintptr_t>(p) % (complex ? 2 * sizeof(R) : sizeof(R)) != 0;
  }
  // The plan's scratch block (cudaMalloc's alignment), allocated when first needed; a plan's problem, and so the
  // bytes asked for, never change.
  std::byte* scratch(std::size_t bytes) {
    if (m_scratch == nullptr) {
      void* p = nullptr;
      DARRAY_CUDA_CHECK(cudaMalloc(&p, bytes));
      m_scratch = static_cast<std::byte*>(p);
    }
    return m_scratch;
  }

  void run(void* in, void* out) {
    const LocalProblem& pb = m_problem;
    void* src = in;
    for (const Run& r : m_runs) {
      // c2c and r2c problems end in `out` (later runs in place there); a c2r problem runs its c2c runs in place on
      // `in` and only its last (c2r) run writes `out`.
      void* dst = pb.kind == Kind::c2r && r.kind == Kind::c2c ? in : out;
      const std::size_t is = r.kind == Kind::r2c ? sizeof(R) : 2 * sizeof(R);
      const std::size_t os = r.kind == Kind::c2r ? sizeof(R) : 2 * sizeof(R);
      for (int64_t o = 0; o < r.outer; ++o) {
        void* i = static_cast<std::byte*>(src) + static_cast<std::size_t>(o * r.in_outer_step) * is;
        void* t = static_cast<std::byte*>(dst) + static_cast<std::size_t>(o * r.out_outer_step) * os;
        switch (r.kind) {
          case Kind::c2c:
            Api::exec_c2c(r.handle, i, t, pb.forward ? CUFFT_FORWARD : CUFFT_INVERSE);
            break;
          case Kind::r2c:
            Api::exec_r2c(r.handle, i, t);
            break;
          case Kind::c2r:
            Api::exec_c2r(r.handle, i, t);
            break;
        }
      }
      src = dst;
    }
  }

  void make_run(const std::vector<int>& run_dims, Kind kind, cudaStream_t stream) {
    const LocalProblem& pb = m_problem;
    // c2c runs inside an r2c or c2r problem work on the complex block in place.
    const Shape& in_ext = kind == Kind::c2c && pb.kind == Kind::r2c ? pb.out_block : pb.in_block;
    const Shape& out_ext = kind == Kind::c2c && pb.kind == Kind::c2r ? pb.in_block : pb.out_block;
    const int lo = run_dims.front(), hi = run_dims.back();
    const int rank = static_cast<int>(run_dims.size());
    std::vector<long long> n, inembed, onembed;
    for (int d = lo; d <= hi; ++d) {
      n.push_back(pb.logical(d));
      inembed.push_back(in_ext[static_cast<std::size_t>(d)]);
      onembed.push_back(out_ext[static_cast<std::size_t>(d)]);
    }
    int64_t outer = 1, inner = 1, in_run = 1, out_run = 1;
    for (int d = 0; d < lo; ++d) outer *= in_ext[static_cast<std::size_t>(d)];
    for (int d = hi + 1; d < static_cast<int>(in_ext.size()); ++d) inner *= in_ext[static_cast<std::size_t>(d)];
    for (int d = lo; d <= hi; ++d) {
      in_run *= in_ext[static_cast<std::size_t>(d)];
      out_run *= out_ext[static_cast<std::size_t>(d)];
    }
    Run r;
    r.kind = kind;
    long long istride = 1, ostride = 1, idist = in_run, odist = out_run, batch = outer;
    r.outer = 1;
    if (inner > 1) {  // transformed dims are strided by `inner`; batch over the inner loop, loop over the outer one
      istride = ostride = inner;
      idist = odist = 1;
      batch = inner;
      r.outer = outer;
      r.in_outer_step = in_run * inner;
      r.out_outer_step = out_run * inner;
    }
    const cufftType type = kind == Kind::c2c ? Api::c2c : kind == Kind::r2c ? Api::r2c : Api::c2r;
    DARRAY_CUFFT_CHECK(cufftCreate(&r.handle));
    m_runs.push_back(r);  // owned from here on, so destroy() frees it if planning fails
    std::size_t work = 0;
    DARRAY_CUFFT_CHECK(cufftMakePlanMany64(r.handle, rank, n.data(), inembed.data(), istride, idist, onembed.data(),
                                           ostride, odist, type, batch, &work));
    DARRAY_CUFFT_CHECK(cufftSetStream(r.handle, stream));
  }

  void destroy() noexcept {
    for (Run& r : m_runs)
      if (r.handle != 0) cufftDestroy(r.handle);
    m_runs.clear();
    if (m_scratch != nullptr) {
      cudaStreamSynchronize(m_stream);  // best effort in a destructor: transforms queued on it may still use it
      cudaFree(m_scratch);
      m_scratch = nullptr;
    }
  }

  LocalProblem m_problem;
  cudaStream_t m_stream;
  std::vector<Run> m_runs;
  std::byte* m_scratch = nullptr;
};

}  // namespace detail
}  // namespace fft
}  // namespace darray
