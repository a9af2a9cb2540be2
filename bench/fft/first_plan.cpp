// bench-fft-first-plan: the first darray FFT plan of a new process, as a run of a program pays for it: FFTW's own
// first use (its planner and solver tables set up, its code paged in), darray's, and with --wisdom the wisdom file's
// load and FFTW's import (FFTW checksums its solver configuration on every import). bench-fft times plans inside one
// long process, where those costs are paid once; this one is launched anew for each timing. Prints the slowest
// process's time of the first plan and of a second identical one (milliseconds).
//   mpirun -n 1 bench-fft-first-plan --size 64 --planner measure --wisdom w.wisdom   # writes w.wisdom if missing
//   mpirun -n 1 bench-fft-first-plan --size 64                                       # an estimate plan
//   mpirun -n 1 bench-fft-first-plan --size 64 --planner measure --wisdom w.wisdom   # from the file
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <string>

#include "darray/darray.hpp"

namespace {

// Max over processes of one call's time, in milliseconds.
template <class F>
double timed_ms(F&& fn) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  fn();
  double t = (MPI_Wtime() - t0) * 1e3, slowest = 0;
  MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench-fft-first-plan: the first darray FFT plan of a new process"};
  int64_t n = 64;
  std::string transform = "c2c", planner = "estimate", wisdom;
  app.add_option("--size", n, "cube edge")->check(CLI::PositiveNumber);
  app.add_option("--transform", transform, "c2c or r2c")->check(CLI::IsMember({"c2c", "r2c"}));
  app.add_option("--planner", planner, "estimate, measure or patient")
      ->check(CLI::IsMember({"estimate", "measure", "patient"}));
  app.add_option("--wisdom", wisdom, "wisdom file the plan names (Options::wisdom_file)");
  CLI11_PARSE(app, argc, argv);
  darray::Environment env(argc, argv);
  const darray::Shape shape{n, n, n};
  const darray::NamedSharding sharding = darray::fft::auto_sharding(shape);
  darray::fft::Options options;
  options.planner = planner == "patient"   ? darray::fft::Planner::patient
                    : planner == "measure" ? darray::fft::Planner::measure
                                           : darray::fft::Planner::estimate;
  options.wisdom_file = wisdom;
  std::string source;
  auto plan = [&] {
    if (transform == "r2c") {
      const darray::fft::RealPlan<double> p(shape, sharding, options);
      source = p.describe();
    } else {
      const darray::fft::Plan<double> p(shape, sharding, options);
      source = p.describe();
    }
  };
  const double first = timed_ms(plan), second = timed_ms(plan);
  // Where the stage choices came from (heuristic, measured, wisdom), from the first stage's line.
  const auto at = source.find("forward ");
  const std::string choice = at == std::string::npos ? "" : source.substr(at, source.find(',', at) - at);
  if (darray::process_index() == 0)
    std::printf("%s %lld^3 %s%s: first plan %.3f ms, second %.3f ms  (%s)\n", transform.c_str(),
                static_cast<long long>(n), planner.c_str(), wisdom.empty() ? "" : " + wisdom", first, second,
                choice.c_str());
  return 0;
}
