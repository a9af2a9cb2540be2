// Timing shared by the benchmarks that compare a call with a baseline in the same run: per-call time, max over
// processes, min and median over repetitions.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <functional>
#include <vector>

namespace darray_bench {

struct Stats {
  double min = 0, median = 0;
};

// The same for several functions in turns: each repetition times every function once, one after the other, so a
// shared machine's drifts (seconds to minutes long) hit them alike, where timing one after the other's repetitions
// compared the two at different moments. One Stats per function, in order.
inline std::vector<Stats> time_calls_in_turns(int reps, int calls, const std::vector<std::function<void()>>& fns) {
  for (const auto& fn : fns) fn();
  std::vector<std::vector<double>> t(fns.size());
  for (int r = 0; r < reps; ++r)
    for (std::size_t j = 0; j < fns.size(); ++j) {
      // Each repetition starts one form later, so that each form follows each other one as often: a form whose
      // predecessor wrote the blocks it reads would otherwise start warm in every repetition.
      const std::size_t f = (j + static_cast<std::size_t>(r)) % fns.size();
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      for (int c = 0; c < calls; ++c) fns[f]();
      double dt = (MPI_Wtime() - t0) / calls, tmax = 0;
      MPI_Allreduce(&dt, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      t[f].push_back(tmax);
    }
  std::vector<Stats> out;
  for (std::vector<double>& v : t) {
    std::sort(v.begin(), v.end());
    out.push_back(Stats{v.front(), v[v.size() / 2]});
  }
  return out;
}

// Per-call time of fn (max over processes), over reps repetitions of `calls` calls each, after one warm-up call
// (plans, communicators, first touch).
inline Stats time_calls(int reps, int calls, const std::function<void()>& fn) {
  return time_calls_in_turns(reps, calls, {fn}).front();
}

}  // namespace darray_bench
