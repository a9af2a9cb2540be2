// bench/fft: darray's distributed 3-D FFT against FFTW-MPI's (fftw_mpi_plan_dft_3d, fftw_mpi_plan_dft_r2c_3d) in the
// same run, on the same processes, with the same planner flags and the same output layout. One table: per transform
// (c2c, r2c), layout (same, transposed) and size, the time per forward transform of each (max over processes, best
// of --reps, the two libraries in turns so load spikes hit both), their ratio (darray / FFTW-MPI: below 1 means
// darray is faster) and the ratio of their medians (med), the same for the backward transform of the forward's output
// (FFTW-MPI's with FFTW_MPI_TRANSPOSED_IN for the transposed layout, its input restored before each call as c2r
// destroys it), GFlop/s (5 N log2 N for c2c, half that for r2c), the largest difference between the two results, and
// darray's plan construction times: the benchmarked plan, an estimate plan, and (measure / patient) the same plan
// rebuilt from its saved wisdom file, with that time's ratio to the estimate plan's. Under measure / patient, darray's
// estimate plan is timed in the same turns too (est_s), and the measured plan's forward time over it (m/est):
// what measuring bought.
//   mpirun -n 2 bench-fft                                      # sizes 64,128,256, c2c and r2c, both layouts
//   mpirun -n 2 bench-fft --sizes 128 --planner measure --transforms r2c --layouts transposed
#include <fftw3-mpi.h>
#include <mpi.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "darray/darray.hpp"
#include "time_calls.hpp"

namespace {

using C = Kokkos::complex<double>;
using darray::Shape;

double value(int64_t flat, int part) {
  uint64_t z = static_cast<uint64_t>(2 * flat + part) * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<double>((z ^ (z >> 31)) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

// Max over processes of one call's time.
double timed(const std::function<void()>& fn) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  fn();
  double t = MPI_Wtime() - t0, slowest = 0;
  MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

struct Config {
  int reps = 5;
  unsigned flags = FFTW_ESTIMATE;
  darray::fft::Planner planner = darray::fft::Planner::estimate;
  bool transposed = false;
  bool real = false;
  darray::fft::Decomposition decomposition = darray::fft::Decomposition::automatic;
  std::string wisdom;  // file for the wisdom-plan timing
};

struct Result {
  double darray = 1e300, fftw_mpi = 1e300, difference = 0;
  double darray_median = 0, fftw_mpi_median = 0;  // forward, median over the repetitions
  double darray_estimate = -1;                    // darray's estimate plan, forward (measure / patient only)
  double darray_backward = 1e300, fftw_mpi_backward = 1e300;
  double plan = 0, fftw_mpi_plan = 0, estimate_plan = 1e300, wisdom_plan = -1, again_plan = -1;
  double estimate_loaded_plan = -1;  // an estimate plan with the file's wisdom in memory, as again_plan has it
  std::string layout, strategies;
};

darray::fft::Options options_of(const Config& c) {
  darray::fft::Options o;
  o.output = c.transposed ? darray::fft::OutputLayout::transposed : darray::fft::OutputLayout::same;
  o.planner = c.planner;
  return o;
}

// The forward transform lines of Plan::describe(), shortened: "s0 passes+copy, s1 guru".
std::string strategies_of(const std::string& described) {
  std::string out;
  std::size_t at = 0;
  while ((at = described.find("  stage ", at)) != std::string::npos) {
    const std::size_t f = described.find("forward ", at) + 8, end = described.find(' ', f);
    out += (out.empty() ? "s" : ",s") + described.substr(at + 8, described.find(' ', at + 8) - at - 8) + ":" +
           described.substr(f, end - f);
    at = end;
  }
  return out;
}

// darray's plan construction: the benchmarked plan once, then an estimate plan (best of 9, no wisdom in memory),
// then for measuring planners the same plan rebuilt from the wisdom file it saved (best of 9, memory forgotten
// before each, as in a new run), and rebuilt again with the file already loaded in this run (best of 9, as the
// second plan of a program that names the file in every plan's options).
template <class PlanT>
void time_construction(const Shape& shape, const darray::NamedSharding& sharding, const Config& c, Result& r) {
  darray::fft::Options estimate = options_of(c);
  estimate.planner = darray::fft::Planner::estimate;
  for (int k = 0; k < 9; ++k) {
    darray::fft::forget_wisdom();
    r.estimate_plan = std::min(r.estimate_plan, timed([&] { PlanT p(shape, sharding, estimate); }));
  }
  if (c.planner == darray::fft::Planner::estimate) return;
  darray::fft::Options wise = options_of(c);
  wise.wisdom_file = c.wisdom;
  if (darray::process_index() == 0) std::remove(c.wisdom.c_str());
  darray::fft::forget_wisdom();
  { PlanT saving(shape, sharding, wise); }
  r.wisdom_plan = 1e300;
  for (int k = 0; k < 9; ++k) {
    darray::fft::forget_wisdom();
    r.wisdom_plan = std::min(r.wisdom_plan, timed([&] { PlanT p(shape, sharding, wise); }));
  }
  r.again_plan = 1e300;
  for (int k = 0; k < 9; ++k) r.again_plan = std::min(r.again_plan, timed([&] { PlanT p(shape, sharding, wise); }));
  // FFTW_ESTIMATE takes FFTW's measured plans from wisdom in memory too, and those cost more to create than the plans
  // it would estimate: an estimate plan in again_plan's state, for the ratio of like to like.
  r.estimate_loaded_plan = 1e300;
  for (int k = 0; k < 9; ++k)
    r.estimate_loaded_plan = std::min(r.estimate_loaded_plan, timed([&] { PlanT p(shape, sharding, estimate); }));
}

Result bench_size(int64_t n, const Config& c) {
  Result r;
  darray::fft::forget_wisdom();  // FFTW's wisdom is per process: each library plans as it would alone
  const Shape shape{n, n, n};
  const int64_t nc = c.real ? n / 2 + 1 : n;  // complex extent of dim 2
  // FFTW-MPI: slabs of dim 0 (dim 1 after FFTW_MPI_TRANSPOSED_OUT), out of place, as its users run it; r2c input
  // rows padded to 2 (n / 2 + 1) reals.
  ptrdiff_t local_n0 = 0, local_0_start = 0, local_n1 = 0, local_1_start = 0;
  const ptrdiff_t alloc =
      fftw_mpi_local_size_3d_transposed(n, n, nc, MPI_COMM_WORLD, &local_n0, &local_0_start, &local_n1, &local_1_start);
  fftw_complex* in = fftw_alloc_complex(static_cast<std::size_t>(alloc));
  fftw_complex* out = fftw_alloc_complex(static_cast<std::size_t>(alloc));
  double* rin = reinterpret_cast<double*>(in);
  const unsigned flags = c.flags | (c.transposed ? FFTW_MPI_TRANSPOSED_OUT : 0u);
  fftw_plan plan = nullptr;
  r.fftw_mpi_plan = timed([&] {
    plan = c.real ? fftw_mpi_plan_dft_r2c_3d(n, n, n, rin, out, MPI_COMM_WORLD, flags)
                  : fftw_mpi_plan_dft_3d(n, n, n, in, out, MPI_COMM_WORLD, FFTW_FORWARD, flags);
  });
  // FFTW-MPI's backward transform, on arrays of its own: its input is the forward's output, copied in before each call.
  fftw_complex* back_in = fftw_alloc_complex(static_cast<std::size_t>(alloc));
  fftw_complex* back_out = fftw_alloc_complex(static_cast<std::size_t>(alloc));
  const unsigned back_flags = c.flags | (c.transposed ? FFTW_MPI_TRANSPOSED_IN : 0u);
  fftw_plan back = c.real ? fftw_mpi_plan_dft_c2r_3d(n, n, n, back_in, reinterpret_cast<double*>(back_out),
                                                     MPI_COMM_WORLD, back_flags)
                          : fftw_mpi_plan_dft_3d(n, n, n, back_in, back_out, MPI_COMM_WORLD, FFTW_BACKWARD, back_flags);
  for (ptrdiff_t i = 0; i < local_n0; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t k = 0; k < n; ++k) {
        const int64_t flat = ((local_0_start + i) * n + j) * n + k;
        if (c.real) {
          rin[(i * n + j) * 2 * nc + k] = value(flat, 0);
        } else {
          in[(i * n + j) * n + k][0] = value(flat, 0);
          in[(i * n + j) * n + k][1] = value(flat, 1);
        }
      }

  // darray: the automatic decomposition (a slab while every device holds a plane), the same planner effort.
  const darray::NamedSharding sharding = darray::fft::auto_sharding(shape, c.decomposition);
  r.layout = sharding.mesh().to_string() + " " + sharding.spec().to_string();
  darray::fft::forget_wisdom();
  auto fill = [&](auto tag) {
    using T = decltype(tag);
    return darray::make_array_from_callback<T, 3>(shape, sharding, [&](const darray::Index& box) {
      std::vector<T> v;
      v.reserve(static_cast<std::size_t>(darray::volume(box)));
      for (int64_t i = box[0].start; i < box[0].stop; ++i)
        for (int64_t j = box[1].start; j < box[1].stop; ++j)
          for (int64_t k = box[2].start; k < box[2].stop; ++k) {
            const int64_t flat = (i * n + j) * n + k;
            if constexpr (std::is_same<T, double>::value)
              v.push_back(value(flat, 0));
            else
              v.emplace_back(value(flat, 0), value(flat, 1));
          }
      return v;
    });
  };
  std::vector<C> result;         // this process's first block of darray's output
  std::vector<double> restored;  // and of its backward transform (real parts for c2c; c2r's reals)
  int64_t count = 0;
  // dplan: the benchmarked plan; eplan: darray's estimate plan (null under estimate), timed in the same turns.
  auto run = [&](const auto& dplan, const auto* eplan, const auto& x) {
    // All write into an output array they keep, as FFTW-MPI users do. In turns (time_calls_in_turns: a warm-up
    // call of each first, for the first touch of every buffer and the communicators' set-up; then each repetition
    // times every forward once, starting one later each time).
    auto y = dplan.allocate_output();
    std::optional<decltype(y)> ey;
    std::vector<std::function<void()>> forwards{[&] { dplan.forward(x, y); }, [&] { fftw_execute(plan); }};
    if (eplan != nullptr) {
      ey.emplace(eplan->allocate_output());
      forwards.emplace_back([&] { eplan->forward(x, *ey); });
    }
    const std::vector<darray_bench::Stats> forward = darray_bench::time_calls_in_turns(c.reps, 1, forwards);
    r.darray = forward[0].min;
    r.darray_median = forward[0].median;
    r.fftw_mpi = forward[1].min;
    r.fftw_mpi_median = forward[1].median;
    if (eplan != nullptr) r.darray_estimate = forward[2].min;
    // The backward transform of the forward's output, into an output kept the same way.
    auto z = dplan.backward(y);
    const std::size_t back_bytes = static_cast<std::size_t>(alloc) * sizeof(fftw_complex);
    for (int it = 0; it < c.reps; ++it) {
      r.darray_backward = std::min(r.darray_backward, timed([&] { dplan.backward(y, z); }));
      std::memcpy(back_in, out, back_bytes);
      r.fftw_mpi_backward = std::min(r.fftw_mpi_backward, timed([&] { fftw_execute(back); }));
    }
    r.strategies = strategies_of(dplan.describe());
    const auto& shards = y.addressable_shards();
    if (!shards.empty()) {
      count = darray::volume(shards[0].index);
      result.assign(shards[0].data.data(), shards[0].data.data() + count);
    }
    const auto& back_shards = z.addressable_shards();
    if (!back_shards.empty()) {
      const auto& d = back_shards[0].data;
      restored.resize(static_cast<std::size_t>(darray::volume(back_shards[0].index)));
      for (std::size_t e = 0; e < restored.size(); ++e) {
        const auto v = d.data()[e];
        if constexpr (std::is_same<decltype(v), const double>::value)
          restored[e] = v;
        else
          restored[e] = v.real();
      }
    }
  };
  // Under measure / patient, darray's estimate plan too, built first with no wisdom in memory, as the estimate
  // planner builds it in a program of its own (built after, its FFTW_ESTIMATE plans would take the measured plan's
  // wisdom; a measuring planner ignores an estimate's).
  darray::fft::Options estimate = options_of(c);
  estimate.planner = darray::fft::Planner::estimate;
  const bool compare = c.planner != darray::fft::Planner::estimate;
  auto bench_plans = [&](auto* tag, auto element) {
    using PlanT = std::remove_pointer_t<decltype(tag)>;
    std::unique_ptr<PlanT> e, p;
    if (compare) e = std::make_unique<PlanT>(shape, sharding, estimate);
    r.plan = timed([&] { p = std::make_unique<PlanT>(shape, sharding, options_of(c)); });
    run(*p, e.get(), fill(element));
  };
  if (c.real)
    bench_plans(static_cast<darray::fft::RealPlan<double>*>(nullptr), double());
  else
    bench_plans(static_cast<darray::fft::Plan<double>*>(nullptr), C());

  // Both libraries hold dim-0 slabs (dim-1 slabs when transposed) of the same block partition when the process
  // count divides n and every process has one device: compare element by element there.
  const bool comparable =
      darray::local_device_count() == 1 && n % darray::process_count() == 0 && sharding.mesh().ndim() == 1 && count > 0;
  if (comparable) {
    double diff = 0, ref = 0;
    for (int64_t e = 0; e < count; ++e) {
      // FFTW_MPI_TRANSPOSED_OUT stores (k1, k0, k2); darray's transposed layout keeps (k0, k1, k2) order.
      int64_t f = e;
      if (c.transposed) {
        const int64_t i = e / (local_n1 * nc), j = (e / nc) % local_n1, k = e % nc;
        f = (j * n + i) * nc + k;
      }
      diff = std::max(diff, std::hypot(result[e].real() - out[f][0], result[e].imag() - out[f][1]));
      ref = std::max(ref, std::hypot(out[f][0], out[f][1]));
    }
    // The backward results, both in the input's layout (dim-0 slabs; FFTW's c2r rows padded to 2 nc reals), darray's
    // normalised by 1 / n^3 (Normalization::backward) where FFTW's is not.
    const double* back_reals = reinterpret_cast<const double*>(back_out);
    const double scale = static_cast<double>(n) * n * n;
    double back_diff = 0, back_ref = 0;
    for (std::size_t e = 0; e < restored.size(); ++e) {
      const auto f = static_cast<int64_t>(e);
      const double theirs = c.real ? back_reals[(f / n) * 2 * nc + f % n] : back_reals[2 * f];
      back_diff = std::max(back_diff, std::abs(restored[e] * scale - theirs));
      back_ref = std::max(back_ref, std::abs(theirs));
    }
    double local[4] = {diff, ref, back_diff, back_ref}, global[4] = {0, 0, 0, 0};
    MPI_Allreduce(local, global, 4, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    r.difference =
        std::max(global[1] > 0 ? global[0] / global[1] : global[0], global[3] > 0 ? global[2] / global[3] : global[2]);
  } else {
    r.difference = -1;
  }
  fftw_destroy_plan(plan);
  fftw_destroy_plan(back);
  fftw_free(in);
  fftw_free(out);
  fftw_free(back_in);
  fftw_free(back_out);
  if (c.real)
    time_construction<darray::fft::RealPlan<double>>(shape, sharding, c, r);
  else
    time_construction<darray::fft::Plan<double>>(shape, sharding, c, r);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench-fft: darray 3-D FFT vs FFTW-MPI, same processes, planner flags and layout"};
  std::vector<int64_t> sizes{64, 128, 256};
  std::vector<std::string> transforms{"c2c", "r2c"}, layouts{"same", "transposed"};
  int reps = 5;
  std::string planner = "estimate", decomposition = "auto", wisdom;
  app.add_option("--sizes", sizes, "cube edges to run, e.g. --sizes 64,128,256")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  app.add_option("--transforms", transforms, "c2c, r2c or both (c2c,r2c)")
      ->delimiter(',')
      ->check(CLI::IsMember({"c2c", "r2c"}));
  app.add_option("--layouts", layouts, "same (FFTW-MPI default), transposed (FFTW_MPI_TRANSPOSED_OUT) or both")
      ->delimiter(',')
      ->check(CLI::IsMember({"same", "transposed"}));
  app.add_option("--reps", reps, "timed transforms per library and size (best one reported)")
      ->check(CLI::PositiveNumber);
  app.add_option("--planner", planner, "FFTW flags for both: estimate, measure or patient")
      ->check(CLI::IsMember({"estimate", "measure", "patient"}));
  app.add_option("--decomposition", decomposition, "darray's decomposition: auto, slab or pencil")
      ->check(CLI::IsMember({"auto", "slab", "pencil"}));
  app.add_option("--wisdom", wisdom, "wisdom file for the wisdom-plan timing (default: a temporary, removed)");
  CLI11_PARSE(app, argc, argv);
  try {
    darray::Environment env(argc, argv);
    fftw_mpi_init();
    const bool root = darray::process_index() == 0;
    Config c;
    c.reps = reps;
    c.flags = planner == "patient" ? FFTW_PATIENT : planner == "measure" ? FFTW_MEASURE : FFTW_ESTIMATE;
    c.planner = planner == "patient"   ? darray::fft::Planner::patient
                : planner == "measure" ? darray::fft::Planner::measure
                                       : darray::fft::Planner::estimate;
    c.decomposition = decomposition == "slab"     ? darray::fft::Decomposition::slab
                      : decomposition == "pencil" ? darray::fft::Decomposition::pencil
                                                  : darray::fft::Decomposition::automatic;
    long long pid = static_cast<long long>(getpid());
    MPI_Bcast(&pid, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    const bool own_wisdom = wisdom.empty();
    c.wisdom = own_wisdom ? "/tmp/darray-bench-fft-" + std::to_string(pid) + ".wisdom" : wisdom;
    if (root)
      std::printf(
          "# bench-fft: %d processes, %d devices, FFTW_%s; seconds per forward transform (best of %d, max over "
          "processes); plan construction: plan_s the benchmarked plan (both directions) and fftw_plan_s FFTW-MPI's "
          "(forward; seconds, each from no wisdom), est_ms an estimate plan, wis_ms the plan from its saved wisdom "
          "file as in a new run, again_ms the same with the file already loaded in this run (milliseconds), and their "
          "ratios to est_ms; agn/estw: again_ms over an estimate plan built with that wisdom in memory; bwd: the "
          "backward transform of the forward's output, seconds and ratio; est_s: darray's estimate plan's forward "
          "(measure, patient), timed in the same turns, and m/est: darray_s over it; med: the forward's ratio of the "
          "medians over the repetitions (what a best of few reps hides on a noisy machine)\n"
          "%-4s %-10s %5s %10s %10s %6s %8s %8s %9s %8s %11s %8s %8s %7s %8s %8s %8s %10s %10s %6s %10s %6s %6s  %s\n",
          darray::process_count(), darray::device_count(),
          planner == "patient"   ? "PATIENT"
          : planner == "measure" ? "MEASURE"
                                 : "ESTIMATE",
          reps, "kind", "layout", "n", "darray_s", "fftwmpi_s", "ratio", "darray_GF", "fftw_GF", "rel_diff", "plan_s",
          "fftw_plan_s", "est_ms", "wis_ms", "wis/est", "again_ms", "agn/est", "agn/estw", "darray_bwd", "fftw_bwd",
          "bwd", "est_s", "m/est", "med", "darray strategies (forward) / layout");
    for (const std::string& kind : transforms)
      for (const std::string& layout : layouts)
        for (int64_t n : sizes) {
          c.real = kind == "r2c";
          c.transposed = layout == "transposed";
          const Result r = bench_size(n, c);
          const double points = static_cast<double>(n) * n * n;
          const double flops = (c.real ? 2.5 : 5.0) * points * std::log2(points);
          if (root) {
            char diff[32], wis[32], ratio[32], again[32], again_ratio[32], again_loaded_ratio[32], est[32],
                est_ratio[32];
            if (r.difference < 0)
              std::snprintf(diff, sizeof diff, "%9s", "n/a");
            else
              std::snprintf(diff, sizeof diff, "%9.1e", r.difference);
            const auto timing = [&](char* out, std::size_t size, double t, int width) {
              if (t < 0)
                std::snprintf(out, size, "%*s", width, "-");
              else
                std::snprintf(out, size, "%*.3f", width, t);
            };
            timing(wis, sizeof wis, r.wisdom_plan < 0 ? -1 : r.wisdom_plan * 1e3, 8);
            timing(ratio, sizeof ratio, r.wisdom_plan < 0 ? -1 : r.wisdom_plan / r.estimate_plan, 7);
            timing(again, sizeof again, r.again_plan < 0 ? -1 : r.again_plan * 1e3, 8);
            timing(again_ratio, sizeof again_ratio, r.again_plan < 0 ? -1 : r.again_plan / r.estimate_plan, 8);
            timing(again_loaded_ratio, sizeof again_loaded_ratio,
                   r.again_plan < 0 ? -1 : r.again_plan / r.estimate_loaded_plan, 8);
            if (r.darray_estimate < 0)
              std::snprintf(est, sizeof est, "%10s", "-");
            else
              std::snprintf(est, sizeof est, "%10.5f", r.darray_estimate);
            timing(est_ratio, sizeof est_ratio, r.darray_estimate < 0 ? -1 : r.darray / r.darray_estimate, 6);
            std::printf(
                "%-4s %-10s %5lld %10.5f %10.5f %6.3f %8.2f %8.2f %s %8.3f %11.3f %8.3f %s %s %s %s %s %10.5f %10.5f "
                "%6.3f %s %s %6.3f  %s / %s\n",
                kind.c_str(), layout.c_str(), static_cast<long long>(n), r.darray, r.fftw_mpi, r.darray / r.fftw_mpi,
                flops / r.darray * 1e-9, flops / r.fftw_mpi * 1e-9, diff, r.plan, r.fftw_mpi_plan,
                r.estimate_plan * 1e3, wis, ratio, again, again_ratio, again_loaded_ratio, r.darray_backward,
                r.fftw_mpi_backward, r.darray_backward / r.fftw_mpi_backward, est, est_ratio,
                r.darray_median / r.fftw_mpi_median, r.strategies.c_str(), r.layout.c_str());
            std::fflush(stdout);
          }
          if (r.difference > 1e-12) {
            if (root)
              std::fprintf(stderr, "bench-fft: results differ by %.3e (relative) at %s %s n = %lld\n", r.difference,
                           kind.c_str(), layout.c_str(), static_cast<long long>(n));
            return 1;
          }
        }
    if (root && own_wisdom) std::remove(c.wisdom.c_str());
    fftw_mpi_cleanup();
  } catch (const std::exception& e) {
    std::cerr << "bench-fft: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
