// bench/fft: darray's distributed 3-D complex FFT against FFTW-MPI's (fftw_mpi_plan_dft_3d) in the same run, on the
// same processes, with the same planner flags and the same output layout. Per size it prints the time per forward
// transform of each (max over processes, best of --reps, the two libraries alternating so load spikes hit both),
// their ratio (darray / FFTW-MPI: below 1 means darray is faster), GFlop/s (5 N log2 N) and the largest difference
// between the two results.
//   mpirun -n 2 bench-fft                      # default sizes 128,192,256
//   mpirun -n 2 bench-fft --sizes 512 --reps 3 --planner measure --layout transposed
#include <fftw3-mpi.h>
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "darray/darray.hpp"

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
template <class Fn>
double timed(Fn&& fn) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  fn();
  double t = MPI_Wtime() - t0, slowest = 0;
  MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

struct Result {
  double darray = 1e300, fftw_mpi = 1e300, difference = 0;
  std::string layout;
};

Result bench_size(int64_t n, int reps, unsigned flags, bool transposed, darray::fft::Decomposition decomposition) {
  Result r;
  const Shape shape{n, n, n};
  // FFTW-MPI: slabs of dim 0 (dim 1 after FFTW_MPI_TRANSPOSED_OUT), in and out of place, as its users run it.
  ptrdiff_t local_n0 = 0, local_0_start = 0, local_n1 = 0, local_1_start = 0;
  const ptrdiff_t alloc =
      fftw_mpi_local_size_3d_transposed(n, n, n, MPI_COMM_WORLD, &local_n0, &local_0_start, &local_n1, &local_1_start);
  fftw_complex* in = fftw_alloc_complex(static_cast<std::size_t>(alloc));
  fftw_complex* out = fftw_alloc_complex(static_cast<std::size_t>(alloc));
  const fftw_plan plan = fftw_mpi_plan_dft_3d(n, n, n, in, out, MPI_COMM_WORLD, FFTW_FORWARD,
                                              flags | (transposed ? FFTW_MPI_TRANSPOSED_OUT : 0u));
  for (ptrdiff_t i = 0; i < local_n0; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t k = 0; k < n; ++k) {
        const int64_t local = (i * n + j) * n + k, flat = ((local_0_start + i) * n + j) * n + k;
        in[local][0] = value(flat, 0);
        in[local][1] = value(flat, 1);
      }

  // darray: the automatic decomposition (a slab while every device holds a plane), the same planner effort.
  const darray::NamedSharding sharding = darray::fft::auto_sharding(shape, decomposition);
  darray::fft::Options options;
  options.output = transposed ? darray::fft::OutputLayout::transposed : darray::fft::OutputLayout::same;
  options.planner = (flags & FFTW_MEASURE) != 0 ? darray::fft::Planner::measure : darray::fft::Planner::estimate;
  const darray::fft::Plan<double> dplan(shape, sharding, options);
  const auto x = darray::make_array_from_callback<C, 3>(shape, sharding, [&](const darray::Index& box) {
    std::vector<C> v;
    v.reserve(static_cast<std::size_t>(darray::volume(box)));
    for (int64_t i = box[0].start; i < box[0].stop; ++i)
      for (int64_t j = box[1].start; j < box[1].stop; ++j)
        for (int64_t k = box[2].start; k < box[2].stop; ++k) {
          const int64_t flat = (i * n + j) * n + k;
          v.emplace_back(value(flat, 0), value(flat, 1));
        }
    return v;
  });
  r.layout = sharding.mesh().to_string() + " " + sharding.spec().to_string();

  // Both write into an output array they keep, as FFTW-MPI users do; the first call of each is a warm-up (first
  // touch of every buffer, communicator set-up).
  auto y = dplan.allocate_output();
  dplan.forward(x, y);
  fftw_execute(plan);
  for (int it = 0; it < reps; ++it) {
    r.darray = std::min(r.darray, timed([&] { dplan.forward(x, y); }));
    r.fftw_mpi = std::min(r.fftw_mpi, timed([&] { fftw_execute(plan); }));
  }

  // Both libraries hold dim-0 slabs (dim-1 slabs when transposed) of the same block partition when the process
  // count divides n and every process has one device: compare element by element there.
  double diff = 0, ref = 0;
  const auto& shards = y.addressable_shards();
  const bool comparable = darray::local_device_count() == 1 && n % darray::process_count() == 0 &&
                          sharding.mesh().ndim() == 1 && shards.size() == 1;
  if (comparable) {
    const C* d = shards[0].data.data();
    const int64_t count = darray::volume(shards[0].index);
    for (int64_t e = 0; e < count; ++e) {
      // FFTW_MPI_TRANSPOSED_OUT stores (k1, k0, k2); darray's transposed layout keeps (k0, k1, k2) order.
      int64_t f = e;
      if (transposed) {
        const int64_t i = e / (local_n1 * n), j = (e / n) % local_n1, k = e % n;
        f = (j * n + i) * n + k;
      }
      diff = std::max(diff, std::hypot(d[e].real() - out[f][0], d[e].imag() - out[f][1]));
      ref = std::max(ref, std::hypot(out[f][0], out[f][1]));
    }
    double local[2] = {diff, ref}, global[2] = {0, 0};
    MPI_Allreduce(local, global, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    r.difference = global[1] > 0 ? global[0] / global[1] : global[0];
  } else {
    r.difference = -1;
  }
  fftw_destroy_plan(plan);
  fftw_free(in);
  fftw_free(out);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench-fft: darray 3-D FFT vs FFTW-MPI (fftw_mpi_plan_dft_3d), same processes, flags and layout"};
  std::vector<int64_t> sizes{128, 192, 256};
  int reps = 5;
  std::string planner = "estimate", layout = "same", decomposition = "auto";
  app.add_option("--sizes", sizes, "cube edges to run, e.g. --sizes 128,256,512")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  app.add_option("--reps", reps, "timed transforms per library and size (best one reported)")
      ->check(CLI::PositiveNumber);
  app.add_option("--planner", planner, "FFTW flags for both: estimate or measure")
      ->check(CLI::IsMember({"estimate", "measure"}));
  app.add_option("--layout", layout, "same (FFTW-MPI default) or transposed (FFTW_MPI_TRANSPOSED_OUT)")
      ->check(CLI::IsMember({"same", "transposed"}));
  app.add_option("--decomposition", decomposition, "darray's decomposition: auto, slab or pencil")
      ->check(CLI::IsMember({"auto", "slab", "pencil"}));
  CLI11_PARSE(app, argc, argv);
  try {
    darray::Environment env(argc, argv);
    fftw_mpi_init();
    const bool root = darray::process_index() == 0;
    const unsigned flags = planner == "measure" ? FFTW_MEASURE : FFTW_ESTIMATE;
    const auto dec = decomposition == "slab"     ? darray::fft::Decomposition::slab
                     : decomposition == "pencil" ? darray::fft::Decomposition::pencil
                                                 : darray::fft::Decomposition::automatic;
    if (root)
      std::printf(
          "# bench-fft: %d processes, %d devices, FFTW_%s, layout %s; seconds per forward c2c transform "
          "(best of %d, max over processes)\n"
          "%6s %12s %12s %7s %10s %10s %10s  %s\n",
          darray::process_count(), darray::device_count(), planner == "measure" ? "MEASURE" : "ESTIMATE",
          layout.c_str(), reps, "n", "darray_s", "fftw_mpi_s", "ratio", "darray_GF", "fftwmpi_GF", "max_rel_diff",
          "darray layout");
    for (int64_t n : sizes) {
      const Result r = bench_size(n, reps, flags, layout == "transposed", dec);
      const double points = static_cast<double>(n) * n * n, flops = 5 * points * std::log2(points);
      if (root) {
        char diff[32];
        if (r.difference < 0)
          std::snprintf(diff, sizeof diff, "%10s", "n/a");
        else
          std::snprintf(diff, sizeof diff, "%10.2e", r.difference);
        std::printf("%6lld %12.5f %12.5f %7.3f %10.3f %10.3f %s  %s\n", static_cast<long long>(n), r.darray, r.fftw_mpi,
                    r.darray / r.fftw_mpi, flops / r.darray * 1e-9, flops / r.fftw_mpi * 1e-9, diff, r.layout.c_str());
        std::fflush(stdout);
      }
      if (r.difference > 1e-12) {
        if (root)
          std::fprintf(stderr, "bench-fft: results differ by %.3e (relative) at n = %lld\n", r.difference,
                       static_cast<long long>(n));
        return 1;
      }
    }
    fftw_mpi_cleanup();
  } catch (const std::exception& e) {
    std::cerr << "bench-fft: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
