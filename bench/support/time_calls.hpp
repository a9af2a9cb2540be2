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

// Per-call time of fn (max over processes), over reps repetitions of `calls` calls each, after one warm-up call
// (plans, communicators, first touch).
inline Stats time_calls(int reps, int calls, const std::function<void()>& fn) {
  fn();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int c = 0; c < calls; ++c) fn();
    double dt = (MPI_Wtime() - t0) / calls, tmax = 0;
    MPI_Allreduce(&dt, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    t.push_back(tmax);
  }
  std::sort(t.begin(), t.end());
  return Stats{t.front(), t[t.size() / 2]};
}

}  // namespace darray_bench
