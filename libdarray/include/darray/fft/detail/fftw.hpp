// The FFTW backend of the local FFTs: guru64 plans (any strides, sizes in 64 bits, so blocks beyond 2^31 elements
// plan correctly; r2c/c2r too), and tiled passes for strided dims too large for the cache; double through fftw_,
// float through fftwf_. FFTW's planner is not thread-safe, so every planner call and plan destruction holds one mutex.
#pragma once

#include "darray/config.hpp"

#if defined(DARRAY_HAS_FFTW)

#include <fftw3.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

#include "darray/array/detail/stream_copy.hpp"
#include "darray/core/error.hpp"
#include "darray/fft/detail/local_problem.hpp"

// Inlined wherever the compiler can be told to (prefetch_run: an out-of-line prefetch is dropped as dead code).
#if defined(__GNUC__) || defined(__clang__)
#define DARRAY_FFTW_ALWAYS_INLINE __attribute__((always_inline)) inline
#else
#define DARRAY_FFTW_ALWAYS_INLINE inline
#endif

// x86-64 builds with GCC or Clang compile FftwHalfRows's pass over its rows a second time for AVX2 and run that copy
// where the CPU has it (the library itself is built for the baseline ISA).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__)
#define DARRAY_FFTW_TARGET_AVX2 1
#define DARRAY_FFTW_INLINE DARRAY_FFTW_ALWAYS_INLINE
#include <immintrin.h>
#else
#define DARRAY_FFTW_TARGET_AVX2 0
#define DARRAY_FFTW_INLINE inline
#endif

namespace darray {
namespace fft {
namespace detail {

// Whether this CPU runs AVX2 code (false where the build has no AVX2 copy of the loops).
inline bool cpu_has_avx2() {
#if DARRAY_FFTW_TARGET_AVX2
  __builtin_cpu_init();  // idempotent; needed should this run before libgcc's own constructor
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

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
    static void* allocate(std::size_t bytes) { return X##malloc(bytes); }                                           \
    static void release(void* p) { X##free(p); }                                                                    \
    static int alignment_of(const void* p) { return X##alignment_of(static_cast<R*>(const_cast<void*>(p))); }       \
  };

DARRAY_FFTW_API(double, fftw_)
DARRAY_FFTW_API(float, fftwf_)
#undef DARRAY_FFTW_API

// An FFTW plan that destroys itself, under the planner mutex (FFTW's planner and plan destruction share its tables).
template <class R>
struct FftwPlanDestroy {
  void operator()(typename FftwApi<R>::plan_type p) const {
    std::lock_guard<std::mutex> lock(fftw_planner_mutex());
    FftwApi<R>::destroy(p);
  }
};
template <class R>
using FftwPlanHandle = std::unique_ptr<std::remove_pointer_t<typename FftwApi<R>::plan_type>, FftwPlanDestroy<R>>;

// `count` elements of T from FFTW's allocator (SIMD-aligned), given back to it.
template <class R>
struct FftwFree {
  void operator()(void* p) const { FftwApi<R>::release(p); }
};
template <class R, class T>
using FftwBuffer = std::unique_ptr<T, FftwFree<R>>;
template <class R, class T>
FftwBuffer<R, T> fftw_buffer(std::size_t count) {
  FftwBuffer<R, T> buffer(static_cast<T*>(FftwApi<R>::allocate(count * sizeof(T))));
  DARRAY_THROW_IF(!buffer, Error, "fft::Plan", "cannot allocate an FFT buffer of " << count * sizeof(T) << " bytes");
  return buffer;
}

// FFTW's c2c plan of loop.n FFTs of dim.n points from `in` to `out` (one dim, one loop), under the planner mutex.
template <class R>
FftwPlanHandle<R> fftw_plan_ffts(const typename FftwApi<R>::iodim& dim, const typename FftwApi<R>::iodim& loop,
                                 void* in, void* out, int sign, unsigned flags) {
  typename FftwApi<R>::plan_type p = nullptr;
  {
    std::lock_guard<std::mutex> lock(fftw_planner_mutex());
    p = FftwApi<R>::dft(1, &dim, 1, &loop, in, out, sign, flags);
  }
  DARRAY_THROW_IF(p == nullptr, NotSupported, "fft::Plan", "FFTW could not plan " << loop.n << " FFTs of " << dim.n);
  return FftwPlanHandle<R>(p);
}

// The bytes of one element of a problem's input and output block: real on r2c's input and c2r's output.
template <class R>
std::size_t in_element_bytes(Kind kind) {
  return kind == Kind::r2c ? sizeof(R) : 2 * sizeof(R);
}
template <class R>
std::size_t out_element_bytes(Kind kind) {
  return kind == Kind::c2r ? sizeof(R) : 2 * sizeof(R);
}

// One guru64 plan for a LocalProblem restricted to `positions` (the other dims become loops) and to `kind`.
// Planned on scratch arrays of 64-byte alignment (FFTW_MEASURE overwrites what it plans on); execute() runs on any
// arrays of that SIMD alignment, and on others through a second plan made with FFTW_UNALIGNED the first time one
// shows up (user-made shards may start anywhere).
template <class R>
class FftwGuruPlan {
  using Api = FftwApi<R>;

 public:
  // flags: the planner effort, FFTW_ESTIMATE, FFTW_MEASURE or FFTW_PATIENT.
  FftwGuruPlan(const LocalProblem& problem, std::vector<int> positions, unsigned flags)
      : m_problem(problem), m_positions(std::move(positions)), m_flags(flags), m_aligned(make(0u)) {}

  // in and out hold the blocks of the problem (the same pointer for in-place problems).
  void execute(void* in, void* out) {
    typename Api::plan_type p = m_aligned.get();
    if (Api::alignment_of(in) != 0 || Api::alignment_of(out) != 0) {
      if (!m_unaligned) m_unaligned = make(FFTW_UNALIGNED);
      p = m_unaligned.get();
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
  FftwPlanHandle<R> make(unsigned extra_flags) {
    const LocalProblem& pb = m_problem;
    const std::size_t in_elem = in_element_bytes<R>(pb.kind), out_elem = out_element_bytes<R>(pb.kind);
    const Shape in_strides = row_major_strides(pb.in_layout()), out_strides = row_major_strides(pb.out_layout());
    std::vector<typename Api::iodim> dims, loops;
    for (std::size_t k = 0; k < pb.in_block.size(); ++k) {
      const int d = static_cast<int>(k);
      const bool transformed = std::find(m_positions.begin(), m_positions.end(), d) != m_positions.end();
      if (transformed)
        dims.push_back({static_cast<std::ptrdiff_t>(pb.logical(d)), static_cast<std::ptrdiff_t>(in_strides[k]),
                        static_cast<std::ptrdiff_t>(out_strides[k])});
      else if (pb.in_block[k] != 1)  // a loop of one is no loop; FFTW plans fewer loops faster
        loops.push_back({static_cast<std::ptrdiff_t>(pb.in_block[k]), static_cast<std::ptrdiff_t>(in_strides[k]),
                         static_cast<std::ptrdiff_t>(out_strides[k])});
    }
    // Scratch the planner may overwrite; never touched under FFTW_ESTIMATE, so the pages are never faulted in.
    const std::size_t in_bytes = static_cast<std::size_t>(volume(pb.in_layout())) * in_elem;
    const std::size_t out_bytes = static_cast<std::size_t>(volume(pb.out_layout())) * out_elem;
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
    const unsigned flags = m_flags | extra_flags;
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
    return FftwPlanHandle<R>(p);
  }

  LocalProblem m_problem;
  std::vector<int> m_positions;
  unsigned m_flags;
  FftwPlanHandle<R> m_aligned, m_unaligned;
};

// Prefetches the cache lines of `bytes` bytes from p (for writing when Write; Keep: into every cache level, else
// non-temporal, for data used once). A prefetch never faults, so a run may end anywhere. Always inlined: GCC sees no
// side effect in a prefetch, so it drops calls to an out-of-line copy as dead code (it did, once two callers
// shared one instantiation: the row pairs lost their input prefetch without a trace).
template <bool Write, bool Keep>
DARRAY_FFTW_ALWAYS_INLINE void prefetch_run(const void* p, std::size_t bytes) {
#if defined(__GNUC__) || defined(__clang__)
  const char* c = static_cast<const char*>(p);
  for (std::size_t b = 0; b < bytes; b += 64) __builtin_prefetch(c + b, Write ? 1 : 0, Keep ? 3 : 0);
  __builtin_prefetch(c + bytes - 1, Write ? 1 : 0, Keep ? 3 : 0);  // the last line, where the run is not aligned
#else
  (void)p, (void)bytes;
#endif
}

// A transform's normalisation applied by the last local pass of stage 0's FFTs (PlanCore::fft), to what it just
// wrote and still in cache (a tile as it is scattered, a group after its plan), instead of a pass of its own over the
// whole result afterwards. dst[i] = src[i] * factor for `count` reals (dst == src: in place), as AVX2 code where the
// CPU has it (as SSE2 code, scaling the 64 KiB planes of a 2 x 64^3 backward after their plans saved nothing against
// the pass of its own: 1.04-1.09 against 1.04-1.06 times the unnormalised transform; as AVX2 code 1.03).
template <class R>
DARRAY_FFTW_ALWAYS_INLINE void copy_scaled_loop(R* dst, const R* src, std::size_t count, R factor) {
  for (std::size_t i = 0; i < count; ++i) dst[i] = src[i] * factor;
}
#if DARRAY_FFTW_TARGET_AVX2
template <class R>
__attribute__((target("avx2"))) void copy_scaled_avx2(R* dst, const R* src, std::size_t count, R factor) {
  copy_scaled_loop(dst, src, count, factor);
}
#endif
template <class R>
void copy_scaled(void* dst, const void* src, std::size_t count, R factor) {
#if DARRAY_FFTW_TARGET_AVX2
  static const bool avx2 = cpu_has_avx2();
  if (avx2) return copy_scaled_avx2(static_cast<R*>(dst), static_cast<const R*>(src), count, factor);
#endif
  copy_scaled_loop(static_cast<R*>(dst), static_cast<const R*>(src), count, factor);
}
// x[i] *= factor for `count` reals from p.
template <class R>
void scale_reals(void* p, std::size_t count, R factor) {
  copy_scaled(p, p, count, factor);
}

// A scratch tile and FFTW's in-place c2c plans on it: `full` FFTs of n points, and `tail` of them (0: none) for a
// last tile that holds fewer. FFT k's element i lies at i * count + k (interleaved) or at k * pitch() + i: a column
// tile's columns lie n points apart, or one cache line more where a gather's or scatter's points of one row (one of
// every column in turn) would meet too few L1 sets (column_thrashes: 16 columns of 256 complex128, 4 KiB apart).
template <class R>
class FftwTile {
  using Api = FftwApi<R>;

 public:
  struct Cx {
    R re, im;
  };
  // An interleaved tile's size: L1's 32 KiB (measured, see FftwTiledPass, whose column tiles of complex128 take 64
  // KiB; FftwHalfRows's tiles take half of it).
  static constexpr std::size_t l1_bytes = std::size_t(32) << 10;

  FftwTile(int64_t n, int64_t full, int64_t tail, bool interleaved, bool forward, unsigned flags)
      : m_n(n),
        m_pitch(!interleaved && column_thrashes(static_cast<std::size_t>(n) * sizeof(Cx), full)
                    ? n + static_cast<int64_t>(64 / sizeof(Cx))
                    : n),
        m_full_count(full),
        m_interleaved(interleaved),
        m_scratch(fftw_buffer<R, Cx>(static_cast<std::size_t>(m_pitch * full))) {
    m_full = make(full, forward, flags);
    if (tail != 0) m_tail = make(tail, forward, flags);
  }

  Cx* data() const { return m_scratch.get(); }
  int64_t pitch() const { return m_pitch; }
  // The FFTs of a tile of `count` columns: the full count or the tail's.
  void execute(int64_t count) {
    Api::execute_dft((count == m_full_count ? m_full : m_tail).get(), m_scratch.get(), m_scratch.get());
  }

 private:
  FftwPlanHandle<R> make(int64_t count, bool forward, unsigned flags) {
    const auto stride = static_cast<std::ptrdiff_t>(m_interleaved ? count : 1);
    const auto distance = static_cast<std::ptrdiff_t>(m_interleaved ? 1 : m_pitch);
    return fftw_plan_ffts<R>({static_cast<std::ptrdiff_t>(m_n), stride, stride},
                             {static_cast<std::ptrdiff_t>(count), distance, distance}, m_scratch.get(), m_scratch.get(),
                             forward ? FFTW_FORWARD : FFTW_BACKWARD, flags);
  }

  int64_t m_n = 1, m_pitch = 1, m_full_count = 1;
  bool m_interleaved = false;
  FftwBuffer<R, Cx> m_scratch;
  FftwPlanHandle<R> m_full, m_tail;
};

// A c2c pass along one strided dim of a complex block (extents in memory order), in tiles: `chunk` columns of the
// dims inside it are gathered into a small contiguous buffer, transformed as `chunk` FFTs, and scattered back.
// FFTW_ESTIMATE plans a strided dim under a long contiguous loop poorly (power-of-two strides thrash the cache;
// over twice slower than this at 256^3), while the tile stays in L1. Short dims (n <= 128) keep the tile
// interleaved, row i of the tile being one run of `chunk` columns, so gather and scatter are memcpy runs of up to
// 1 KiB and FFTW transforms the columns at stride `chunk`; longer dims store each column contiguously (measured on
// a (n, n/2, n) block: interleaved 6.3 ms against 8.9 ms at n = 128, but slower from n = 192 on).
template <class R>
class FftwTiledPass {
  using Cx = typename FftwTile<R>::Cx;

 public:
  FftwTiledPass(const Shape& extents, int position, bool forward, unsigned flags) {
    const auto p = static_cast<std::size_t>(position);
    m_n = extents[p];
    for (std::size_t k = 0; k < p; ++k) m_outer *= extents[k];
    for (std::size_t k = p + 1; k < extents.size(); ++k) m_inner *= extents[k];
    m_interleaved = m_n <= interleaved_max_n;
    // Interleaved: as many columns as fill 32 KiB (L1), at most 64 (runs of up to 1 KiB). Column tiles:
    // column_tile_elements, at most 16 columns. At least 1 column.
    const int64_t n = std::max<int64_t>(m_n, 1);
    const int64_t fit =
        m_interleaved ? static_cast<int64_t>(FftwTile<R>::l1_bytes / sizeof(Cx)) / n : column_tile_elements / n;
    m_chunk = std::max<int64_t>(1, std::min<int64_t>({m_interleaved ? 64 : 16, m_inner, fit}));
    m_tile = std::make_unique<FftwTile<R>>(m_n, m_chunk, m_inner % m_chunk, m_interleaved, forward, flags);
    const auto bytes = static_cast<std::size_t>(m_outer * m_n * m_inner) * sizeof(Cx);
    m_ahead = bytes >= darray::detail::streaming_min_total_bytes ? prefetch_rows : 0;
  }

  // dst = this dim's FFT of src (the same pointer: in place), times `factor`.
  void execute(const void* src_ptr, void* dst_ptr, R factor = R(1)) {
    const Cx* src = static_cast<const Cx*>(src_ptr);
    Cx* dst = static_cast<Cx*>(dst_ptr);
    const int64_t n = m_n, inner = m_inner;
    Cx* const tile = m_tile->data();
    const int64_t ahead = m_ahead;
    const bool interleaved = m_interleaved;
    const int64_t pitch = m_tile->pitch();
    for (int64_t o = 0; o < m_outer; ++o) {
      const Cx* s = src + o * n * inner;
      Cx* t = dst + o * n * inner;
      for (int64_t q = 0; q < inner; q += m_chunk) {
        const int64_t c = std::min(m_chunk, inner - q);
        const auto run = static_cast<std::size_t>(c) * sizeof(Cx);
        // Without the streaming prefetch, the gather fetches the next tile's runs (it hid their latency behind this
        // tile's FFTs: c2c 64^3, dim 0 of a block just written, median 0.89 -> 0.68 ms, evicted before 1.33 -> 1.11).
        const int64_t next = q + m_chunk;
        const auto next_run = ahead == 0 && next < inner
                                  ? static_cast<std::size_t>(std::min(m_chunk, inner - next)) * sizeof(Cx)
                                  : std::size_t(0);
        for (int64_t i = 0; i < n; ++i) {
          if (ahead != 0 && i + ahead < n) prefetch_run<false, false>(s + (i + ahead) * inner + q, run);
          if (next_run != 0) prefetch_run<false, true>(s + i * inner + next, next_run);
          if (interleaved)
            std::memcpy(tile + i * c, s + i * inner + q, run);
          else
            for (int64_t k = 0; k < c; ++k) tile[k * pitch + i] = s[i * inner + q + k];
        }
        m_tile->execute(c);
        for (int64_t i = 0; i < n; ++i) {
          if (ahead != 0 && i + ahead < n) prefetch_run<true, false>(t + (i + ahead) * inner + q, run);
          if (interleaved && factor == R(1))
            std::memcpy(t + i * inner + q, tile + i * c, run);
          else if (interleaved)
            copy_scaled(t + i * inner + q, tile + i * c, static_cast<std::size_t>(2 * c), factor);
          else if (factor == R(1))
            for (int64_t k = 0; k < c; ++k) t[i * inner + q + k] = tile[k * pitch + i];
          else
            for (int64_t k = 0; k < c; ++k)
              t[i * inner + q + k] = Cx{tile[k * pitch + i].re * factor, tile[k * pitch + i].im * factor};
        }
      }
    }
  }

 private:
  static constexpr int64_t interleaved_max_n = 128;
  // A column tile's elements: 64 KiB of complex128, 16 KiB of complex64. Measured, one pass (FFTW_ESTIMATE, ms,
  // complex128, old 32 KiB tiles without the longer pitch -> these): (256, 256, 256) along dim 0 105-109 -> 73-82,
  // along dim 1 86-91 -> 70-73; (192, 192, 192) 49-50 -> 41-43 and 44-52 -> 39-46; (256, 256, 129) along dim 0
  // 42 -> 36-38; c2c 256^3 at one process 230-243 -> 207-218 a forward, r2c 103-106 -> 93-101 (AMD EPYC Zen 3 with 512
  // KiB of L2, 2026-12-07).
  // complex64 in 32 KiB tiles: (256, 256, 256) along dim 0 63-67 -> 56-58 but along dim 1 44-46 -> 46-50 and (256,
  // 256, 129) along dim 0 22 -> 24.5, so it keeps 16 KiB (where 32 KiB tiles of columns 2 KiB apart once took 71
  // against 36 ms along dim 1 of 256^3).
  static constexpr int64_t column_tile_elements = sizeof(R) == sizeof(double) ? 4096 : 2048;
  // An interleaved tile's size, FftwTile::l1_bytes. Measured on (n, n, n) complex128 blocks, the pass along dim 0
  // (FFTW_ESTIMATE): at n = 64, 0.43 ms in 32 KiB tiles against 0.67 ms in the 64-column (64 KiB) tiles used
  // before; at n = 96, 3.4 against 7.3 ms (96 KiB); at n = 128, 6.3 against 8.7 ms (128 KiB); 8 KiB tiles are
  // slower again (0.53 ms at 64). complex64 at n = 64 and 128: 32 KiB as fast as 64 columns, 16 KiB 10-20 % slower.

  // Whole-block passes over more than streaming_min_total_bytes (a share of the last-level cache) prefetch the
  // row `prefetch_rows` ahead in their gathers and scatters: the rows lie a page or more apart, where the hardware
  // prefetchers do not follow, so each row's lines were demand misses. Measured, one pass along dim 0 (FFTW_ESTIMATE,
  // ms): (128, 128, 128) 7.8-8.3 -> 6.8-7.1 (interleaved); column tiles (256, 256, 129) 45.4-46.9 -> 35.7-38.2,
  // (256, 256, 256) 98-100 -> 78-80; 8 rows ahead about as good. Blocks in cache got slower with it ((64, 64, 64)
  // 0.40 -> 0.48), so passes below the threshold and the fused passes (one group, in cache) do not prefetch rows
  // ahead; they fetch the next tile's runs while gathering this one's (execute()).
  static constexpr int64_t prefetch_rows = 16;

  int64_t m_n = 1, m_outer = 1, m_inner = 1, m_chunk = 1, m_ahead = 0;
  bool m_interleaved = false;
  std::unique_ptr<FftwTile<R>> m_tile;  // m_chunk columns, m_tile->pitch() apart
};

#if DARRAY_FFTW_TARGET_AVX2
// FftwHalfRows's pass over a row as AVX2 code (see there), written once over three vector types: a vector holds L
// complex points (HalfRowsPd: 2 complex128, HalfRowsPs: 4 complex64, HalfRowsPs2: 2 complex64). Each has load, store,
// add, sub, mul, bxor, pairs(re, im) (every point (re, im)), mirror (its points in reverse order) and swap (each
// point's re and im swapped).
struct HalfRowsPd {
  using V = __m256d;
  static constexpr int64_t L = 2;
  static __attribute__((target("avx2"))) V load(const double* p) { return _mm256_loadu_pd(p); }
  static __attribute__((target("avx2"))) void store(double* p, V v) { _mm256_storeu_pd(p, v); }
  static __attribute__((target("avx2"))) V add(V a, V b) { return _mm256_add_pd(a, b); }
  static __attribute__((target("avx2"))) V sub(V a, V b) { return _mm256_sub_pd(a, b); }
  static __attribute__((target("avx2"))) V mul(V a, V b) { return _mm256_mul_pd(a, b); }
  static __attribute__((target("avx2"))) V bxor(V a, V b) { return _mm256_xor_pd(a, b); }
  static __attribute__((target("avx2"))) V pairs(double re, double im) { return _mm256_setr_pd(re, im, re, im); }
  static __attribute__((target("avx2"))) V mirror(V v) { return _mm256_permute4x64_pd(v, 0x4E); }
  static __attribute__((target("avx2"))) V swap(V v) { return _mm256_permute_pd(v, 0x5); }
};
struct HalfRowsPs {
  using V = __m256;
  static constexpr int64_t L = 4;
  static __attribute__((target("avx2"))) V load(const float* p) { return _mm256_loadu_ps(p); }
  static __attribute__((target("avx2"))) void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static __attribute__((target("avx2"))) V add(V a, V b) { return _mm256_add_ps(a, b); }
  static __attribute__((target("avx2"))) V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static __attribute__((target("avx2"))) V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static __attribute__((target("avx2"))) V bxor(V a, V b) { return _mm256_xor_ps(a, b); }
  static __attribute__((target("avx2"))) V pairs(float re, float im) {
    return _mm256_setr_ps(re, im, re, im, re, im, re, im);
  }
  static __attribute__((target("avx2"))) V mirror(V v) {
    return _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(6, 7, 4, 5, 2, 3, 0, 1));
  }
  static __attribute__((target("avx2"))) V swap(V v) { return _mm256_permute_ps(v, 0xB1); }
};
struct HalfRowsPs2 {
  using V = __m128;
  static constexpr int64_t L = 2;
  static __attribute__((target("avx2"))) V load(const float* p) { return _mm_loadu_ps(p); }
  static __attribute__((target("avx2"))) void store(float* p, V v) { _mm_storeu_ps(p, v); }
  static __attribute__((target("avx2"))) V add(V a, V b) { return _mm_add_ps(a, b); }
  static __attribute__((target("avx2"))) V sub(V a, V b) { return _mm_sub_ps(a, b); }
  static __attribute__((target("avx2"))) V mul(V a, V b) { return _mm_mul_ps(a, b); }
  static __attribute__((target("avx2"))) V bxor(V a, V b) { return _mm_xor_ps(a, b); }
  static __attribute__((target("avx2"))) V pairs(float re, float im) { return _mm_setr_ps(re, im, re, im); }
  static __attribute__((target("avx2"))) V mirror(V v) { return _mm_shuffle_ps(v, v, 0x4E); }
  static __attribute__((target("avx2"))) V swap(V v) { return _mm_shuffle_ps(v, v, 0xB1); }
};

// Points k .. k + L - 1 of the row and their mirrors m - k .. m - k - L + 1 in one vector each, from k while the two
// runs do not meet; returns the first point left. x: the half spectrum (m + 1 points), z: the tile row (m), p and q:
// the twiddle tables. The operations are the scalar code's (split_point, combine_point), in its order: the same bits,
// where the build's target has no FMA (x86-64's default). Under one with FMA (-march=native on most x86 CPUs) the
// compiler may fuse a product and a sum into one FMA in either pass, not alike: they then agree to rounding.
template <class S, class R>
__attribute__((target("avx2"))) int64_t half_rows_split(R* x, const R* z, const R* p, const R* q, int64_t m,
                                                        int64_t k) {
  using V = typename S::V;
  const V neg_im = S::pairs(R(0), R(-0.0)), half = S::pairs(R(0.5), R(0.5));
  for (; k + S::L - 1 < m - k - (S::L - 1); k += S::L) {
    const int64_t j = m - k - (S::L - 1);
    const V a = S::load(z + 2 * k);
    const V bc = S::bxor(S::mirror(S::load(z + 2 * j)), neg_im);  // conj Z[m-k], ...
    const V s = S::add(a, bc), d = S::sub(a, bc);
    const V t = S::add(S::mul(S::load(p + 2 * k), S::swap(d)), S::mul(S::load(q + 2 * k), d));
    S::store(x + 2 * k, S::mul(S::add(s, t), half));
    S::store(x + 2 * j, S::mirror(S::bxor(S::mul(S::sub(s, t), half), neg_im)));
  }
  return k;
}
template <class S, class R>
__attribute__((target("avx2"))) int64_t half_rows_combine(R* z, const R* x, const R* p, const R* q, int64_t m,
                                                          int64_t k) {
  using V = typename S::V;
  const V neg_im = S::pairs(R(0), R(-0.0)), neg_re = S::pairs(R(-0.0), R(0));
  for (; k + S::L - 1 < m - k - (S::L - 1); k += S::L) {
    const int64_t j = m - k - (S::L - 1);
    const V a = S::load(x + 2 * k);
    const V bc = S::bxor(S::mirror(S::load(x + 2 * j)), neg_im);  // conj X[m-k], ...
    const V s = S::add(a, bc), d = S::sub(a, bc);
    const V o = S::swap(S::add(S::mul(S::load(p + 2 * k), d), S::mul(S::load(q + 2 * k), S::swap(d))));
    S::store(z + 2 * k, S::add(s, S::bxor(o, neg_re)));
    S::store(z + 2 * j, S::mirror(S::add(S::bxor(s, neg_im), o)));
  }
  return k;
}

// The pass's vector loops from point 1: complex128 in 2-point vectors; complex64 in 4-point vectors, then 2-point
// ones where 4 no longer fit (rows of 16 reals take no 4-point vector at all).
template <class R>
struct HalfRowsAvx2;
template <>
struct HalfRowsAvx2<double> {
  static __attribute__((target("avx2"))) int64_t split(double* x, const double* z, const double* p, const double* q,
                                                       int64_t m) {
    return half_rows_split<HalfRowsPd>(x, z, p, q, m, 1);
  }
  static __attribute__((target("avx2"))) int64_t combine(double* z, const double* x, const double* p, const double* q,
                                                         int64_t m) {
    return half_rows_combine<HalfRowsPd>(z, x, p, q, m, 1);
  }
};
template <>
struct HalfRowsAvx2<float> {
  static __attribute__((target("avx2"))) int64_t split(float* x, const float* z, const float* p, const float* q,
                                                       int64_t m) {
    return half_rows_split<HalfRowsPs2>(x, z, p, q, m, half_rows_split<HalfRowsPs>(x, z, p, q, m, 1));
  }
  static __attribute__((target("avx2"))) int64_t combine(float* z, const float* x, const float* p, const float* q,
                                                         int64_t m) {
    return half_rows_combine<HalfRowsPs2>(z, x, p, q, m, half_rows_combine<HalfRowsPs>(z, x, p, q, m, 1));
  }
};
#endif

// r2c (or c2r) along the contiguous innermost dim, each row of n reals (n even) as a complex row of m = n / 2
// points: z[j] = x[2j] + i x[2j+1] is the real row itself, read in place by FFTW's c2c plan of m points (a tile of
// rows at a time, FftwTile::l1_bytes / 2), and the half spectrum follows from Z = FFT(z) in one pass over the tile:
// X[k] = (S + W^k D / i) / 2, X[m-k] = conj(S - W^k D / i) / 2 with S = Z[k] + conj Z[m-k], D = Z[k] - conj Z[m-k],
// W = exp(-2 pi i / n); X[0] and X[m] from Z[0]. c2r runs it backwards: Z[k] = S + i conj(W^k) D from the half
// spectrum (S, D of X[k] and X[m-k] now; the imaginary parts of X[0] and X[m] dropped, as c2r drops them), a backward
// c2c from the tile into the real row. Half the points of an r2c per complex FFT, and no pass that packs rows: FFTW's
// c2c codelets are SIMD where FFTW_ESTIMATE gives r2c scalar ones ("rdft2-r2hc-direct-64"), and its measured r2c
// plans are slower still (see half_rows()). The pass over the tile runs as AVX2 code where the CPU has it
// (DARRAY_FFTW_TARGET_AVX2), with the baseline code's operations in its order: the same bits (but under a target
// with FMA, see half_rows_split).
template <class R>
class FftwHalfRows {
  using Api = FftwApi<R>;
  using Cx = typename FftwTile<R>::Cx;

 public:
  // rows rows of n reals (r2c's input, c2r's output) and of n / 2 + 1 complex (the other side); n even.
  FftwHalfRows(int64_t rows, int64_t n, bool r2c, unsigned flags)
      : m_rows(rows), m_n(n), m_m(n / 2), m_nc(n / 2 + 1), m_r2c(r2c), m_flags(flags) {
    DARRAY_THROW_IF(n < 2 || n % 2 != 0, Error, "fft::Plan", "internal: half-length rows of " << n << " reals");
    m_in_row_bytes = r2c ? static_cast<std::size_t>(n) * sizeof(R) : static_cast<std::size_t>(m_nc) * sizeof(Cx);
    m_out_row_bytes = r2c ? static_cast<std::size_t>(m_nc) * sizeof(Cx) : static_cast<std::size_t>(n) * sizeof(R);
    m_chunk = std::max<int64_t>(
        1, std::min<int64_t>(rows, static_cast<int64_t>(FftwTile<R>::l1_bytes / 2 / sizeof(Cx)) / m_m));
    // Twiddles W^k for k = 0 .. m / 2, as the pass reads them: P = (wr, -wr) and Q = (wi, wi) per point (r2c), or
    // (wr, wr) and (wi, -wi) (c2r). The vector loops read them up to point m / 2 - 1 (their runs stop short of the
    // middle); the middle point (m even, W^(m/2) = -i) is conj Z[m/2] (r2c), 2 conj X[m/2] (c2r), without them.
    const auto half = static_cast<std::size_t>(m_m / 2 + 1);
    m_p.resize(2 * half);
    m_q.resize(2 * half);
    for (std::size_t k = 0; k < half; ++k) {
      const long double angle =
          -2.0L * 3.141592653589793238462643383279502884L * static_cast<long double>(k) / static_cast<long double>(n);
      const R wr = static_cast<R>(std::cos(angle)), wi = static_cast<R>(std::sin(angle));
      m_p[2 * k] = wr;
      m_p[2 * k + 1] = r2c ? -wr : wr;
      m_q[2 * k] = wi;
      m_q[2 * k + 1] = r2c ? wi : -wi;
    }
    m_tile = fftw_buffer<R, Cx>(static_cast<std::size_t>(m_chunk * m_m));
    m_plans[0][0] = make(m_chunk, 0u);
    if (rows % m_chunk != 0) m_plans[1][0] = make(rows % m_chunk, 0u);
  }

  // Whether the AVX2 copy of the pass runs: where the CPU has AVX2, unless turned off (tests compare the two).
  bool avx2() const { return m_avx2; }
  void set_avx2(bool on) { m_avx2 = on && cpu_has_avx2(); }

  // r2c: in holds the real rows, out the half spectra; c2r the other way round. in is only read. more: the rows
  // right after these in both arrays (another group's) are transformed next.
  //
  // While a tile is split (r2c) or combined (c2r), the next tile's rows are prefetched, row by row, so that they
  // arrive while FFTW transforms: the hardware prefetchers lose the row streams at every tile, and a block evicted
  // since its last use (by the user's work between transforms, or by FFTW-MPI's in bench/fft) was read by demand
  // misses (the row pairs this replaced, 64^3 r2c evicted before each transform: 1.37-1.47 -> 1.14-1.22 ms).
  void execute(const void* in, void* out, bool more = false) {
    m_prefetch_rows = more ? 2 * m_rows : m_rows;
    const auto* src = static_cast<const std::byte*>(in);
    auto* dst = static_cast<std::byte*>(out);
    m_prefetch_in = src;
    m_prefetch_out = dst;
    for (int64_t r0 = 0; r0 < m_rows; r0 += m_chunk) {
      const int64_t c = std::min(m_chunk, m_rows - r0);
      const std::byte* rows_in = src + static_cast<std::size_t>(r0) * m_in_row_bytes;
      std::byte* rows_out = dst + static_cast<std::size_t>(r0) * m_out_row_bytes;
      if (m_r2c) {
        // FFTW's plans read; they take a const-less pointer, as FFTW's API does for out-of-place inputs.
        run_fft(c, const_cast<std::byte*>(rows_in), m_tile.get());
        split_rows(rows_out, r0, c);
      } else {
        combine_rows(rows_in, r0, c);
        run_fft(c, m_tile.get(), rows_out);
      }
    }
  }

 private:
  // FFTW's c2c of `count` rows from `from` to `to` (the tile on one side), with the plan of the rows' alignment.
  void run_fft(int64_t count, void* from, void* to) {
    const int unaligned = Api::alignment_of(m_r2c ? from : to) == 0 ? 0 : 1;
    FftwPlanHandle<R>& p = m_plans[count == m_chunk ? 0 : 1][unaligned];
    if (!p) p = make(count, FFTW_UNALIGNED);
    Api::execute_dft(p.get(), from, to);
  }

  // r2c: the tile's c2c results of rows r0 .. r0 + c - 1 into their half spectra at `rows` (the output's rows).
  void split_rows(void* rows, int64_t r0, int64_t c) {
#if DARRAY_FFTW_TARGET_AVX2
    if (m_avx2) return split_avx2(rows, r0, c);
#endif
    split(rows, r0, c);
  }
  // c2r: the half spectra of rows r0 .. r0 + c - 1 at `rows` (the input's rows) into the tile.
  void combine_rows(const void* rows, int64_t r0, int64_t c) {
#if DARRAY_FFTW_TARGET_AVX2
    if (m_avx2) return combine_avx2(rows, r0, c);
#endif
    combine(rows, r0, c);
  }

  // One point pair (k, m - k) of the r2c split, from a = Z[k], b = Z[m-k] (scalar; the AVX2 loop's operations).
  DARRAY_FFTW_ALWAYS_INLINE void split_point(Cx* x, const Cx* z, int64_t k) const {
    const Cx a = z[k], b = z[m_m - k];
    const R sr = a.re + b.re, si = a.im - b.im, dr = a.re - b.re, di = a.im + b.im;
    const R tr = m_p[2 * k] * di + m_q[2 * k] * dr, ti = m_p[2 * k + 1] * dr + m_q[2 * k + 1] * di;
    x[k] = Cx{(sr + tr) * R(0.5), (si + ti) * R(0.5)};
    x[m_m - k] = Cx{(sr - tr) * R(0.5), -((si - ti) * R(0.5))};
  }
  // One point pair of the c2r combination into the tile row z, from a = X[k], b = X[m-k].
  DARRAY_FFTW_ALWAYS_INLINE void combine_point(Cx* z, const Cx* x, int64_t k) const {
    const Cx a = x[k], b = x[m_m - k];
    const R sr = a.re + b.re, si = a.im - b.im, dr = a.re - b.re, di = a.im + b.im;
    const R orr = m_p[2 * k] * dr + m_q[2 * k] * di, oi = m_p[2 * k + 1] * di + m_q[2 * k + 1] * dr;
    z[k] = Cx{sr + -oi, si + orr};
    z[m_m - k] = Cx{sr + oi, -si + orr};
  }

  // The ends and the middle of a row; the points 1 .. k0 - 1 (and their mirrors) are done.
  DARRAY_FFTW_ALWAYS_INLINE void split_rest(Cx* x, const Cx* z, int64_t k0) const {
    const int64_t m = m_m;
    for (int64_t k = k0; k < m - k; ++k) split_point(x, z, k);
    if (m % 2 == 0) x[m / 2] = Cx{z[m / 2].re, -z[m / 2].im};
    const Cx z0 = z[0];
    x[0] = Cx{z0.re + z0.im, R(0)};
    x[m] = Cx{z0.re - z0.im, R(0)};
  }
  DARRAY_FFTW_ALWAYS_INLINE void combine_rest(Cx* z, const Cx* x, int64_t k0) const {
    const int64_t m = m_m;
    for (int64_t k = k0; k < m - k; ++k) combine_point(z, x, k);
    if (m % 2 == 0) z[m / 2] = Cx{x[m / 2].re + x[m / 2].re, -(x[m / 2].im + x[m / 2].im)};
    z[0] = Cx{x[0].re + x[m].re, x[0].re - x[m].re};
  }

  DARRAY_FFTW_INLINE void split(void* rows, int64_t r0, int64_t c) {
    for (int64_t r = 0; r < c; ++r) {
      prefetch_ahead(r0 + r);
      split_rest(static_cast<Cx*>(rows) + r * m_nc, m_tile.get() + r * m_m, 1);
    }
  }
  DARRAY_FFTW_INLINE void combine(const void* rows, int64_t r0, int64_t c) {
    for (int64_t r = 0; r < c; ++r) {
      prefetch_ahead(r0 + r);
      combine_rest(m_tile.get() + r * m_m, static_cast<const Cx*>(rows) + r * m_nc, 1);
    }
  }

  // Row r + chunk of the input and of the output, where it is transformed in this call or the next.
  DARRAY_FFTW_ALWAYS_INLINE void prefetch_ahead(int64_t r) const {
    const int64_t a = r + m_chunk;
    if (a >= m_prefetch_rows) return;
    prefetch_run<false, true>(m_prefetch_in + static_cast<std::size_t>(a) * m_in_row_bytes, m_in_row_bytes);
    prefetch_run<true, true>(m_prefetch_out + static_cast<std::size_t>(a) * m_out_row_bytes, m_out_row_bytes);
  }

#if DARRAY_FFTW_TARGET_AVX2
  // The pass as AVX2 code: the points k and k + 1 (double) or k .. k + 3, then k and k + 1 (float: HalfRowsAvx2) with
  // their mirrors in one vector each, the baseline's operations in its order (see half_rows_split); the rest of a row
  // as the baseline does it.
  __attribute__((target("avx2"))) void split_avx2(void* rows, int64_t r0, int64_t c) {
    for (int64_t r = 0; r < c; ++r) {
      prefetch_ahead(r0 + r);
      Cx* x = static_cast<Cx*>(rows) + r * m_nc;
      const Cx* z = m_tile.get() + r * m_m;
      split_rest(x, z, Vec::split(&x->re, &z->re, m_p.data(), m_q.data(), m_m));
    }
  }
  __attribute__((target("avx2"))) void combine_avx2(const void* rows, int64_t r0, int64_t c) {
    for (int64_t r = 0; r < c; ++r) {
      prefetch_ahead(r0 + r);
      Cx* z = m_tile.get() + r * m_m;
      const Cx* x = static_cast<const Cx*>(rows) + r * m_nc;
      combine_rest(z, x, Vec::combine(&z->re, &x->re, m_p.data(), m_q.data(), m_m));
    }
  }
  using Vec = HalfRowsAvx2<R>;
#endif

  FftwPlanHandle<R> make(int64_t count, unsigned extra_flags) {
    // The rows' side is planned on scratch (FFTW_MEASURE overwrites what it plans on); unaligned plans at an odd
    // offset, so that they assume no alignment either.
    const std::size_t skew = (extra_flags & FFTW_UNALIGNED) != 0 ? sizeof(R) : 0;
    const auto scratch = fftw_buffer<R, std::byte>(static_cast<std::size_t>(count * m_m) * sizeof(Cx) + skew);
    void* rows = scratch.get() + skew;
    const auto m = static_cast<std::ptrdiff_t>(m_m);
    return fftw_plan_ffts<R>({m, 1, 1}, {static_cast<std::ptrdiff_t>(count), m, m}, m_r2c ? rows : m_tile.get(),
                             m_r2c ? m_tile.get() : rows, m_r2c ? FFTW_FORWARD : FFTW_BACKWARD, m_flags | extra_flags);
  }

  bool m_avx2 = cpu_has_avx2();
  int64_t m_rows = 0, m_n = 2, m_m = 1, m_nc = 2, m_chunk = 1;
  int64_t m_prefetch_rows = 0;  // rows below this index are prefetched (execute's rows, and the next call's)
  // Bytes of an input row and of an output row: n reals and nc complex, the other way round for c2r.
  std::size_t m_in_row_bytes = 0, m_out_row_bytes = 0;
  const std::byte* m_prefetch_in = nullptr;
  std::byte* m_prefetch_out = nullptr;
  bool m_r2c = true;
  unsigned m_flags = 0;
  std::vector<R> m_p, m_q;   // the twiddles, see the constructor
  FftwBuffer<R, Cx> m_tile;  // m_chunk rows of m complex
  // FFTW's c2c plans: [full tile, last tile][rows aligned, not] (the unaligned ones made on first use).
  FftwPlanHandle<R> m_plans[2][2];
};

// A strided dim goes to a tiled pass over the whole block when one group of its columns (the dim times everything
// inside it) spans more than tiled_pass_min_bytes. Below it the FFTW plan of the dims inside the group runs on one
// group (a plane) at a time, and the dim is tiled on that group right after, while the group is still in cache, once
// the group spans more than fused_pass_min_bytes(); up to that FFTW's own plan of the group is as fast (bench/README,
// "bench/fft after plane-by-plane tiled passes").
// Measured (FFTW_ESTIMATE, local blocks, one plan per block): group by group against whole-block passes, c2c
// (128, 256, 256) dims 1-2 62 against 90 ms, (16, 384, 384) 23 against 27 ms, (8, 512, 512) 16.5-17.5 both,
// (4, 1024, 1024) 62-64 both; 256^3 c2c 268 against 320-329 ms, r2c 121-127 against 147-155 ms; against FFTW's
// strided plan inside the group: 128^3 c2c 18.6 against 21.2 ms, 96^3 8.9 against 10.2 ms.
inline constexpr std::size_t tiled_pass_min_bytes = std::size_t(4) << 20;
// Under FFTW_ESTIMATE, how large a group FFTW's strided plan runs in cache without thrashing it depends on where its
// columns' points fall in the L1 cache: a pitch between them that meets at most 8 of L1's 64 sets (l1_sets_met: a
// multiple of 512 bytes), 64 lines at 8 ways (a power-of-two pitch: 32 KiB / pitch lines, fewer than a column of a
// group over 32 KiB has points): there the limit is few_sets_pass_min_bytes (L1's 32 KiB), and tiles, whose gathers lay
// each column out contiguously, beat FFTW's plan of any larger group. Other pitches (the half spectrum's odd rows, c2c
// rows of 100 or 120 complex128) meet 16 sets or more, and FFTW's plan of a group up to a quarter of L2 is as fast or
// faster (within fused_pass_floor_bytes to 256 KiB; the floor where the system does not say). A c2r group (FFTW's c2r
// of several dims, or its c2c of the dims before half-length rows) keeps an eighth of L2 (c2r 160^3, planes of 207 KB
// before half-length rows: 19.3-19.4 ms against 23.8-24.1 at a quarter of L2, 128^3 and 256^3 as fast or faster). Under
// the measuring planners the floor: FFTW's plans of whole planes are candidates of their own there (guru, planes), and
// `passes` stays the tiled alternative to them (with the L2 limit its warm timings won at one process on the Intel Xeon
// below, r2c 128^3, where it ran slower than planes or guru in bench-fft's alternation: 1.21-1.37 against 1.04-1.30 of
// FFTW-MPI's). Measured, local `passes` plans at FFTW_ESTIMATE, 128 against 256 KiB on an Intel Xeon with 2 MiB of L2
// (ms, three rounds): r2c 128^3 (planes of 133 KB) 9.7-10.1 against 7.2-7.4, r2c 160^3 (207 KB) 26.1-28.5 against
// 24.7-27.8, c2c 112^3 (200 KB) 18.8-19.0 against 15.2-17.1, c2c 96^3 (147 KB, pitch 1536) 8.9-9.7 against 9.2-10.1. On
// an AMD EPYC with 1 MiB of L2 (two rounds each, 128 against 256 KiB): r2c 128^3 8.9-9.5 against 7.8-8.0, 144^3 (168
// KB) 16.5-16.8 against 15.8-16.0, 160^3 19.0-19.3 against 17.6, 176^3 (250 KB) 31.6 against 30.0, c2c 100^3 (156 KB)
// 7.9 against 7.4-7.6, 104^3 9.6-10.4 against 9.0-9.5, 112^3 12.2-12.4 against 11.6-11.9, 120^3 (225 KB) 15.8-15.9
// against 14.1-14.4, complex64 r2c 192^3 (149 KB) 23.4-24.0 against 22.8-22.9 (224^3, 202 KB: 48.0-49.0 against
// 49.9-50.0); few sets: c2c 96^3 7.0-7.5 against 7.4-8.0, 128^3 (256 KiB, pitch 2048) 18.4-18.6 against 20.1-21.0, and
// 64^3 (64 KiB, pitch 1024) 1.04-1.08 at 128 KiB against 1.00-1.04 at 32 KiB (six rounds; complex64 128^3, 128 KiB
// planes, 7.7-8.3 either way); c2r 144^3 20.9-21.5 against 22.2-22.6, 160^3 26.7 against 33.2-33.5, but c2r 128^3
// (pairs, then FFTW's c2c of the plane) 10.5-11.0 against 10.0-10.1. Spread columns lose below 128 KiB: 32 KiB, c2c
// 48^3 0.60 against 0.68 ms; 16 KiB, r2c 64^3, c2c 48^3 and 80^3; few sets lose below 32 KiB (c2c 32^3, 16 KiB planes:
// 0.085-0.087 ms against 0.098-0.100 at 8 KiB).
inline constexpr std::size_t fused_pass_floor_bytes = std::size_t(128) << 10;
inline constexpr std::size_t few_sets_pass_min_bytes = std::size_t(32) << 10;
// pitch: bytes between the points of a column; c2r: the group is a c2r group.
inline std::size_t fused_pass_min_bytes(unsigned flags, std::size_t pitch, bool c2r) {
  static const std::size_t l2 = [] {
#ifdef _SC_LEVEL2_CACHE_SIZE
    const long bytes = ::sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (bytes > 0) return static_cast<std::size_t>(bytes);
#endif
    return std::size_t(0);
  }();
  if ((flags & FFTW_ESTIMATE) == 0) return fused_pass_floor_bytes;
  const std::size_t top = std::size_t(256) << 10;
  if (c2r) return std::clamp(l2 / 8, fused_pass_floor_bytes, top);
  if (l1_sets_met(pitch) <= 8) return few_sets_pass_min_bytes;
  return std::clamp(l2 / 4, fused_pass_floor_bytes, top);
}

// The FFTW planner flags of an effort level: 0 estimate, 1 measure, 2 patient.
inline unsigned fftw_flags(int level) { return level >= 2 ? FFTW_PATIENT : level == 1 ? FFTW_MEASURE : FFTW_ESTIMATE; }

// Whether FftwPlan's passes run r2c/c2r rows of length n as half-length rows (FftwHalfRows): even lengths from 16 to
// 512 under FFTW_ESTIMATE, to 128 when FFTW measures its plans. Measured on this AMD EPYC (256 Ki reals in rows
// of n, r2c and c2r of every row, against FFTW's r2c and c2r plans of the same rows, complex128, us): estimate, n = 16
// 153 / 208, 32 140 / 218, 64 151 / 340, 128 171 / 484, 24 to 100 0.37-0.92 of FFTW's, 256 and 512 0.83-0.87 (c2r
// 0.45-0.51); measure, n = 16 to 128 0.62-0.92 (64: 147 / 196), from 160 on as fast as FFTW's within 3 %; n = 8 and
// 12 1.03-1.5 of FFTW's both ways. They replace rows in pairs (two real rows as one complex row, packed and split:
// 64 186, 128 215 us estimate; measure 184 and 229), which ran to 128 points under FFTW_ESTIMATE and to 64 measured.
// complex64 (us, estimate): n = 16 127 / 200 (pairs 129), 32 106 / 218 (117), 64 100 / 332 (115); c2r 0.40-0.69.
inline bool half_rows(int64_t n, unsigned flags) {
  const int64_t top = (flags & FFTW_ESTIMATE) != 0 ? 512 : 128;
  return n >= 16 && n <= top && n % 2 == 0;
}

// The FFTW plan of one LocalProblem, split as `method` says (see Method): one guru plan for the innermost dim
// (r2c/c2r included, unless it runs half-length rows: then FftwHalfRows, and a c2c guru plan in place on the complex
// side) and the strided dims the method leaves to FFTW; tiled passes along the strided dims whose
// column groups fit in cache ("fused"), run group by group right after the guru plan on that group; then a tiled
// pass over the whole block per remaining strided dim. With no fused dim the guru plan still runs group by group
// from its outermost strided dim (e.g. plane by plane, the half-length rows' output still in cache for FFTW's c2c):
// local passes at FFTW_ESTIMATE, r2c 64^3 0.64-0.66 -> 0.61-0.62 ms, c2c 64^3 1.22 -> 1.18-1.19 ms, r2c (32, 64, 64)
// dims 1-2 0.20 -> 0.19 ms.
template <class R>
class FftwPlan {
 public:
  FftwPlan(const LocalProblem& problem, Method chosen, unsigned planner_flags) : m_problem(problem) {
    const Method method = split_method(chosen);
    const unsigned flags = planned_flags(chosen, planner_flags);
    const Shape& complex = problem.kind == Kind::r2c ? problem.out_block : problem.in_block;
    std::vector<int> guru, fused, tiled;
    int outer = -1;
    const bool halved = split(problem, method, flags, &guru, &fused, &tiled, &outer);
    // A block inside a larger one is one guru plan over it: groups and passes walk whole blocks.
    const bool embedded = !problem.in_embed.empty() || !problem.out_embed.empty();
    DARRAY_THROW_IF(embedded && (method != Method::guru || problem.kind != Kind::c2c), Error, "fft::Plan",
                    "a block inside a larger one is planned as one c2c guru plan, not by " << to_string(chosen));
    // Groups start at the outermost fused dim, else inside the planes split's outer dim, else at the outermost
    // strided guru dim when dims outside it hold several groups: the guru plan (and r2c/c2r's half-length rows) then
    // run group by group, each group still in cache for the next plan.
    int start = -1;
    if (!fused.empty()) {
      start = fused.front();
    } else if (outer >= 0) {
      start = outer + 1;
    } else if (!embedded) {
      const int last = static_cast<int>(complex.size()) - 1;
      for (int d : guru)
        if (d != last && complex[static_cast<std::size_t>(d)] > 1) {
          if (groups_outside(complex, d) > 1) start = d;
          break;
        }
    }
    // What one group holds: the whole block when there are no groups.
    LocalProblem group = problem;
    Shape group_complex = complex;
    if (start >= 0) {
      // Groups: the sub-blocks from the start dim inwards, one per index of the dims outside it.
      const auto f = static_cast<std::size_t>(start);
      group.in_block.assign(problem.in_block.begin() + static_cast<std::ptrdiff_t>(f), problem.in_block.end());
      group.out_block.assign(problem.out_block.begin() + static_cast<std::ptrdiff_t>(f), problem.out_block.end());
      group.dims.clear();
      for (int d : problem.dims)
        if (d >= start) group.dims.push_back(d - start);
      // Guru dims lie inside the group (their spans are smaller), but for dims of extent 1 outside it: FFTs of
      // length 1, which change nothing.
      std::vector<int> inside;
      for (int d : guru)
        if (d >= start) inside.push_back(d - start);
      guru = std::move(inside);
      m_groups = groups_outside(complex, start);
      group_complex.assign(complex.begin() + static_cast<std::ptrdiff_t>(f), complex.end());
    }
    m_in_group_bytes = static_cast<std::size_t>(volume(group.in_block)) * in_element_bytes<R>(problem.kind);
    m_out_group_bytes = static_cast<std::size_t>(volume(group.out_block)) * out_element_bytes<R>(problem.kind);
    if (halved) {
      // The halved dim as half-length rows, then FFTW's c2c plan of the other guru dims in place on the complex side.
      const int64_t n = problem.logical(problem.dims.back());
      const Shape& real = problem.kind == Kind::r2c ? group.in_block : group.out_block;
      m_rows = std::make_unique<FftwHalfRows<R>>(volume(real) / n, n, problem.kind == Kind::r2c, flags);
      if (!guru.empty()) {
        LocalProblem rest = group;
        rest.kind = Kind::c2c;
        rest.forward = problem.kind == Kind::r2c;
        rest.in_block = rest.out_block = group_complex;
        rest.dims = guru;
        rest.in_place = true;
        m_main = std::make_unique<FftwGuruPlan<R>>(rest, guru, flags);
      }
    } else if (!guru.empty()) {
      // r2c and c2r need their halved (innermost) dim in the guru plan; a c2c problem may be all tiled.
      m_main = std::make_unique<FftwGuruPlan<R>>(group, guru, flags);
    }
    if (outer >= 0) {
      // The outer dim over the whole block, in place on the complex side.
      LocalProblem whole = problem;
      whole.kind = Kind::c2c;
      whole.forward = problem.kind == Kind::c2c ? problem.forward : problem.kind == Kind::r2c;
      whole.in_block = whole.out_block = complex;
      whole.dims = {outer};
      whole.in_place = true;
      m_outer = std::make_unique<FftwGuruPlan<R>>(whole, std::vector<int>{outer}, flags);
    }
    for (int d : fused)
      m_fused.push_back(std::make_unique<FftwTiledPass<R>>(group_complex, d - start, problem.forward, flags));
    for (int d : tiled) m_passes.push_back(std::make_unique<FftwTiledPass<R>>(complex, d, problem.forward, flags));
  }

  // How `chosen` splits a problem, and the FFTW planner flags its plans take under the planner's `planner_flags`:
  // Method::estimate is `passes` under FFTW_ESTIMATE whatever the planner (the estimate planner's own split and FFTW
  // plans: fused_pass_min_bytes and half_rows read the flags); every other method as it is, under the planner's flags.
  static Method split_method(Method chosen) { return chosen == Method::estimate ? Method::passes : chosen; }
  static unsigned planned_flags(Method chosen, unsigned planner_flags) {
    return chosen == Method::estimate ? (planner_flags & ~unsigned(FFTW_PATIENT | FFTW_EXHAUSTIVE)) | FFTW_ESTIMATE
                                      : planner_flags;
  }

  // The groups a split at dim d makes: one per index of the dims outside it (their volume).
  static int64_t groups_outside(const Shape& extents, int d) {
    return volume(Shape(extents.begin(), extents.begin() + d));
  }

  // The dims `chosen` leaves to the guru plan, those it tiles group by group and those it tiles over the whole
  // block, and the planes split's outer dim (-1: none); true where r2c/c2r's halved dim goes to half-length rows
  // instead of the guru plan (equal splits under equal planned_flags mean equal plans).
  static bool split(const LocalProblem& problem, Method chosen, unsigned planner_flags, std::vector<int>* guru,
                    std::vector<int>* fused, std::vector<int>* tiled, int* outer) {
    const Method method = split_method(chosen);
    const unsigned flags = planned_flags(chosen, planner_flags);
    const int last = static_cast<int>(problem.in_block.size()) - 1;
    // The complex side's extents: what the tiled passes walk.
    const Shape& complex = problem.kind == Kind::r2c ? problem.out_block : problem.in_block;
    *outer = -1;
    if (method == Method::planes && problem.dims.size() >= 3) {
      const int d = problem.dims.front();
      if (d != last && complex[static_cast<std::size_t>(d)] > 1) *outer = d;
    }
    const bool halved =
        method == Method::passes && problem.kind != Kind::c2c && half_rows(problem.logical(last), flags);

    for (int d : problem.dims) {
      if (d == *outer) continue;
      std::size_t pitch = 2 * sizeof(R);  // between the points of a column of d
      for (std::size_t k = static_cast<std::size_t>(d) + 1; k < complex.size(); ++k)
        pitch *= static_cast<std::size_t>(complex[k]);
      const std::size_t span = pitch * static_cast<std::size_t>(complex[static_cast<std::size_t>(d)]);
      const bool strided = d != last && complex[static_cast<std::size_t>(d)] > 1;
      // A fused dim with nothing outside it would make one group, the whole block: a whole-block pass instead.
      const bool alone = groups_outside(complex, d) == 1;
      if (method == Method::tiled && strided)
        tiled->push_back(d);
      else if (method == Method::passes && strided && span > tiled_pass_min_bytes)
        tiled->push_back(d);
      else if (method == Method::passes && strided &&
               span > fused_pass_min_bytes(flags, pitch, problem.kind == Kind::c2r))
        (alone ? tiled : fused)->push_back(d);
      else
        guru->push_back(d);
    }
    if (halved) guru->pop_back();
    return halved;
  }

  // out = the problem's transform of in, times `factor` (a normalisation: the last step that writes `out` scales
  // what it wrote while that is still in cache, a tile or a group; an outer dim over the whole block is scaled
  // after it). Blocks inside larger ones (fused tiles) take no factor: they are not contiguous.
  void execute(void* in, void* out, R factor = R(1)) {
    const bool scaling = factor != R(1);
    DARRAY_THROW_IF(scaling && (!m_problem.in_embed.empty() || !m_problem.out_embed.empty()), Error, "fft::Plan",
                    "internal: a scaled transform of a block inside a larger one");
    // Nothing after the groups writes `out`: each group is scaled as it is done.
    const bool groups_last = !m_outer && m_passes.empty();
    const std::size_t out_bytes = m_out_group_bytes * static_cast<std::size_t>(m_groups);
    switch (m_problem.kind) {
      case Kind::c2c: {
        // An in-place problem run from another array (+copy): each group is copied right before its FFTs, still in
        // cache for them, or the whole block first where nothing runs group by group.
        const bool copy = m_problem.in_place && in != out;
        const bool grouped = m_main || !m_fused.empty();
        if (copy && !grouped) {
          darray::detail::copy_bytes(out, in, m_in_group_bytes);
          in = out;
        }
        const void* src = in;
        if (grouped) {
          for_each_group(in, out, [&](void* i, void* o, bool) {
            if (copy) {
              darray::detail::copy_bytes(o, i, m_in_group_bytes);
              i = o;
            }
            const void* s = i;
            if (m_main) {
              m_main->execute(i, o);
              s = o;
            }
            for (auto& pass : m_fused) {
              pass->execute(s, o);
              s = o;
            }
            if (scaling && groups_last) scale_reals(o, m_out_group_bytes / sizeof(R), factor);
          });
          src = out;
        }
        if (m_outer) m_outer->execute(out, out);
        for (std::size_t k = 0; k < m_passes.size(); ++k) {
          m_passes[k]->execute(src, out, k + 1 == m_passes.size() ? factor : R(1));
          src = out;
        }
        if (scaling && m_passes.empty() && !(grouped && groups_last)) scale_reals(out, out_bytes / sizeof(R), factor);
        break;
      }
      case Kind::r2c:
        for_each_group(in, out, [&](void* i, void* o, bool more) {
          if (m_rows) {
            m_rows->execute(i, o, more);
            if (m_main) m_main->execute(o, o);
          } else {
            m_main->execute(i, o);
          }
          for (auto& pass : m_fused) pass->execute(o, o);
          if (scaling && groups_last) scale_reals(o, m_out_group_bytes / sizeof(R), factor);
        });
        if (m_outer) m_outer->execute(out, out);
        for (std::size_t k = 0; k < m_passes.size(); ++k)
          m_passes[k]->execute(out, out, k + 1 == m_passes.size() ? factor : R(1));
        if (scaling && m_outer && m_passes.empty()) scale_reals(out, out_bytes / sizeof(R), factor);
        break;
      case Kind::c2r:  // the c2c passes first, in place on the input (c2r may overwrite it anyway)
        run_c2r(in, in, out, factor);
        break;
    }
  }

  // The c2r problem from `in`, left as it is, through `work` (a block of in's size, overwritten): the first pass
  // that writes reads `in` and writes `work` (a tiled pass, or the half-length rows, which only read), so the copy
  // FFTW's c2r and in-place plans would need is folded into it; where an FFTW plan comes first, `in` is copied into
  // `work` right before it, group by group where it runs group by group (still in cache for it). A whole-block pass
  // over streaming_min_total_bytes or more reads `work` after a copy instead: its scattered writes into lines not
  // in cache cost more than the copy (c2r 128^3 under `passes`, ms: 10.6 with the copy against 12.3 folded; 64^3
  // 0.92 against 0.80, 96^3 and 160^3 alike).
  void execute_c2r(const void* in, void* work, void* out, R factor = R(1)) {
    DARRAY_THROW_IF(m_problem.kind != Kind::c2r, Error, "fft::Plan", "internal: execute_c2r on a plan of no c2r");
    run_c2r(in, work, out, factor);
  }

 private:
  // c2r: the c2c passes first, then group by group the fused passes and the halved dim; every step after the first
  // that writes runs in place on `work` (the same block as `in` when the input may be overwritten). Each group's
  // reals are scaled by `factor` as they are written.
  void run_c2r(const void* in, void* work, void* out, R factor) {
    const void* src = in;  // where the next step reads: `in` until a step has written `work`
    const std::size_t block_bytes = m_in_group_bytes * static_cast<std::size_t>(m_groups);
    if (src != work && (m_outer || (!m_passes.empty() && block_bytes >= darray::detail::streaming_min_total_bytes))) {
      darray::detail::copy_bytes(work, src, block_bytes);
      src = work;
    }
    if (m_outer) m_outer->execute(work, work);
    for (auto& pass : m_passes) {
      pass->execute(src, work);
      src = work;
    }
    // Group by group on work and out; a group's source lies at the same offset from src as its block from work.
    for_each_group(work, out, [&](void* w, void* o, bool more) {
      const void* from =
          static_cast<const std::byte*>(src) + (static_cast<std::byte*>(w) - static_cast<std::byte*>(work));
      for (auto& pass : m_fused) {
        pass->execute(from, w);
        from = w;
      }
      // FFTW's plans overwrite what they read: from `work` only.
      if ((m_main || !m_rows) && from != w) {
        darray::detail::copy_bytes(w, from, m_in_group_bytes);
        from = w;
      }
      if (m_rows) {
        if (m_main) m_main->execute(w, w);
        m_rows->execute(from, o, more);
      } else {
        m_main->execute(w, o);
      }
      if (factor != R(1)) scale_reals(o, m_out_group_bytes / sizeof(R), factor);
    });
  }

  // f(in, out, more) on every group's blocks (the whole blocks when no dim is fused); more: another group follows.
  template <class F>
  void for_each_group(void* in, void* out, F&& f) {
    auto* i = static_cast<std::byte*>(in);
    auto* o = static_cast<std::byte*>(out);
    for (int64_t g = 0; g < m_groups; ++g, i += m_in_group_bytes, o += m_out_group_bytes) f(i, o, g + 1 < m_groups);
  }

  LocalProblem m_problem;
  std::unique_ptr<FftwHalfRows<R>> m_rows;                 // r2c/c2r's halved dim, as half-length rows
  std::unique_ptr<FftwGuruPlan<R>> m_main;                 // on one group when dims are fused, else the block
  std::unique_ptr<FftwGuruPlan<R>> m_outer;                // planes: the outer dim over the whole block, in place
  std::vector<std::unique_ptr<FftwTiledPass<R>>> m_fused;  // on one group, after m_main
  std::vector<std::unique_ptr<FftwTiledPass<R>>> m_passes;
  int64_t m_groups = 1;
  std::size_t m_in_group_bytes = 0, m_out_group_bytes = 0;
};

}  // namespace detail
}  // namespace fft
}  // namespace darray

#endif  // DARRAY_HAS_FFTW
