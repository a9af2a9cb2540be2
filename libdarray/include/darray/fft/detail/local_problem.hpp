// One local FFT problem as the backends see it: a row-major block, the dims transformed, the rest looped over
// ("howmany" dims), for complex-to-complex, real-to-complex or complex-to-real. Backend-neutral, so FFTW and cuFFT
// plan from the same description.
#pragma once

#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

#include "darray/core/index.hpp"

namespace darray {
namespace fft {
namespace detail {

enum class Kind { c2c, r2c, c2r };

// How a backend splits a LocalProblem into passes (FFTW; cuFFT has one way). passes: one FFTW plan for the innermost
// dim and every strided dim whose column groups span at most 32 KiB under FFTW_ESTIMATE where the columns fall into few
// of L1's sets, else a quarter of L2 (128 to 256 KiB; 128 KiB when FFTW measures; fftw.hpp, fused_pass_min_bytes;
// r2c/c2r rows of 8 to 128 points, powers of two, two at a time as one complex row, the strided dims then in a c2c
// plan), a tiled pass (gather, batched FFT, scatter) per other strided dim, run plane by plane right after the FFTW
// plan where a plane fits in cache, over the whole block where it does not, as fixed heuristics choose under
// FFTW_ESTIMATE; guru: one FFTW plan for all dims (FFTW's own strided and multi-dim algorithms); tiled: a tiled pass
// over the whole block for every strided dim; planes: where two transformed dims or more lie inside the outermost one,
// FFTW's plan of those inner dims plane by plane, then FFTW's plan of the outermost dim over the whole block (otherwise
// guru's split); estimate: passes as the estimate planner splits and plans them (FFTW_ESTIMATE), so that a measuring
// planner, which splits `passes` by other limits and has FFTW measure every plan, has the estimate planner's plan to
// choose too (a stage's candidates are timed on their own, warm). Measuring planners time all five. An in-place problem
// run from another array (the +copy strategies) copies each plane just before its FFTs where the split runs plane by
// plane, so the plane is still in cache for them.
enum class Method { passes, guru, tiled, planes, estimate };
inline constexpr Method all_methods[] = {Method::passes, Method::guru, Method::tiled, Method::planes, Method::estimate};

inline const char* to_string(Method m) {
  switch (m) {
    case Method::passes:
      return "passes";
    case Method::guru:
      return "guru";
    case Method::tiled:
      return "tiled";
    case Method::planes:
      return "planes";
    default:
      return "estimate";
  }
}

struct LocalProblem {
  Kind kind = Kind::c2c;
  bool forward = true;    // c2c sign; r2c is always forward, c2r always backward
  Shape in_block;         // extents of the input block (real for r2c, complex otherwise)
  Shape out_block;        // extents of the output block (real for c2r); differs from in_block only in dim 2
  std::vector<int> dims;  // transformed dims, increasing; for r2c/c2r the last one is the halved dim (2)
  bool in_place = false;  // c2c only; run from another array (in != out), in's block is copied into out first
  // Blocks that lie inside larger ones (a tile of a block: fused.hpp): the extents of the larger block, whose
  // row-major strides the block then takes; empty: the block is whole. c2c under Method::guru only (FftwPlan).
  Shape in_embed, out_embed;

  const Shape& in_layout() const { return in_embed.empty() ? in_block : in_embed; }
  const Shape& out_layout() const { return out_embed.empty() ? out_block : out_embed; }

  // The real (logical) length of each transformed dim.
  int64_t logical(int d) const {
    const auto k = static_cast<std::size_t>(d);
    return kind == Kind::c2r ? out_block[k] : in_block[k];
  }
  bool transformed(int d) const {
    for (int t : dims)
      if (t == d) return true;
    return false;
  }
  // No element to transform (a device whose block is empty in a looped dim): nothing to plan or run.
  bool empty() const { return volume(in_block) == 0 || volume(out_block) == 0; }
};

inline bool operator<(const LocalProblem& a, const LocalProblem& b) {
  if (a.kind != b.kind) return a.kind < b.kind;
  if (a.forward != b.forward) return a.forward < b.forward;
  if (a.in_place != b.in_place) return a.in_place < b.in_place;
  if (a.dims != b.dims) return a.dims < b.dims;
  if (a.in_block != b.in_block) return a.in_block < b.in_block;
  if (a.out_block != b.out_block) return a.out_block < b.out_block;
  if (a.in_embed != b.in_embed) return a.in_embed < b.in_embed;
  return a.out_embed < b.out_embed;
}

// The L1 cache sets that the points of a column meet, `pitch` bytes apart: L1 data caches of 32 to 48 KiB have 64
// sets of 64-byte lines (x86 since 2011), and points a multiple of 64 bytes apart fall into 64 / gcd(pitch / 64, 64)
// of them; other pitches spread over all 64 (a point then straddles lines).
inline int l1_sets_met(std::size_t pitch) {
  if (pitch == 0 || pitch % 64 != 0) return 64;
  return static_cast<int>(64 / std::gcd(pitch / 64, std::size_t(64)));
}

// Whether the `points` of a column `pitch` bytes apart outnumber the L1 lines their sets hold at 8 ways (the fewest of
// those caches): FFTW_ESTIMATE's strided plans then evict a column's points before they are done with them. c2c 64^3
// at two processes, the fused stage's 64-point columns 8 KiB apart (one set) in the tile buffer, then 8 KiB + 64 B
// apart: a forward in 1.33-1.36 -> 0.76-0.80 ms (bench/fft; AMD EPYC, 48 KiB of L1 at 12 ways); the half spectrum's
// 33-point columns 16.5 KiB apart (8 sets, 64 lines) run in their blocks as fast as through a buffer.
inline bool column_thrashes(std::size_t pitch, int64_t points) { return int64_t(8) * l1_sets_met(pitch) < points; }

}  // namespace detail
}  // namespace fft
}  // namespace darray
