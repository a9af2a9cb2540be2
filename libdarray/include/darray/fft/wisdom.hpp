// Wisdom for distributed FFT plans: FFTW's own wisdom plus darray's measured choice of local strategy per plan
// stage, saved to and loaded from one text file so a measured plan is measured once, not in every run. Plans do
// this themselves through Options::wisdom_file; these functions serve programs that manage wisdom by hand.
//   fft::load_wisdom("fft.wisdom");            // before building plans (a missing file is fine)
//   fft::Plan<double> plan(shape, sharding, options_with_planner_measure);
//   fft::save_wisdom("fft.wisdom");            // after
#pragma once

#include <string>

#include "darray/fft/detail/wisdom.hpp"
#include "darray/runtime/detail/state.hpp"

namespace darray {
namespace fft {

// Collective. Process 0 reads `path`, every process imports what it read, and all return the same report: loaded;
// missing (nothing imported); rejected (corrupt, truncated or from another FFTW version: nothing of darray's is
// imported, process 0 logs a warning). FFTW wisdom that this FFTW version wrote under another solver configuration
// (FFTW-MPI or threads set up in one program and not the other, another CPU) is not imported but kept, and saved
// again beside this process's own, so programs of both kinds can share one file; the report says so. Throws IoError
// everywhere when the path exists but cannot be read (a directory, no permission). Text already imported since the last
// forget_wisdom is not imported again (FFTW's import has a fixed cost of about 0.2 ms), and a file whose stamp (inode,
// size, modification and change times) is the one process 0 read it at is not read again: naming the file in every
// plan's options costs a stat.
inline WisdomReport load_wisdom(const std::string& path) {
  return detail::load_wisdom_file("fft::load_wisdom", path, darray::detail::world_comm()).report;
}

// Collective. Merges the wisdom of every process on process 0, which writes it to `path` crash-safe (a temporary
// beside it, renamed over it). Throws IoError everywhere when writing fails.
inline void save_wisdom(const std::string& path) {
  detail::save_wisdom_file("fft::save_wisdom", path, nullptr, darray::detail::world_comm());
}

// This process forgets all wisdom, FFTW's and darray's: later plans measure again (plans already built keep
// working), and a later load imports its file again. Not collective. Forget through this function, not FFTW's
// fftw_forget_wisdom: after that one, loading a file this process had loaded imports nothing (plans measure again).
inline void forget_wisdom() { detail::forget_all_wisdom(); }

}  // namespace fft
}  // namespace darray
