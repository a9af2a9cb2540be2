// bench/pm-nbody: the time per step of apps/pm-nbody and its breakdown (paint, FFT, force, readout, migrate), for
// n^3 particles on each of several meshes, and migrate() against the floor of any particle exchange: one
// MPI_Alltoallv of the same rows, already packed by destination process (no destination search, no packing, no
// unpacking into per-device blocks). Random initial displacements, a from 0.1 to 1: particles cross device
// boundaries every step. Times are max over processes; the breakdown is the mean over --steps steps after one
// warm-up step (plans, communicators, caches), the migrate comparison min and median over --reps x --calls.
//   mpirun -n 2 bench/pm-nbody/pm-nbody --n 64 --meshes 64,128
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <vector>

#include "pm.hpp"
#include "time_calls.hpp"
#include "unaliased.hpp"

using darray_bench::Stats;
using darray_bench::time_calls;

namespace {

// The device that would own a particle's cell after one more drift of `factor`.
struct NextOwner {
  pm::CellOwner owner;
  double factor, box;
  KOKKOS_INLINE_FUNCTION int operator()(const double* r) const {
    double row[pm::WIDTH];
    for (int c = 0; c < pm::WIDTH; ++c) row[c] = r[c];
    for (int d = 0; d < 3; ++d) {
      double x = row[pm::X + d] + factor * row[pm::P + d];
      while (x >= box) x -= box;
      while (x < 0) x += box;
      row[pm::X + d] = x >= box ? 0.0 : x;
    }
    return owner(row);
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench/pm-nbody: pm-nbody per-step breakdown, and migrate() against a pre-packed MPI_Alltoallv"};
  int64_t n = 64, steps = 5;
  std::vector<int64_t> meshes{64, 128};
  int reps = 7, calls = 10;
  app.add_option("--n", n, "particles per side")->check(CLI::PositiveNumber);
  app.add_option("--meshes", meshes, "mesh cells per side, comma-separated")->delimiter(',');
  app.add_option("--steps", steps, "timed steps (after one warm-up step)")->check(CLI::PositiveNumber);
  app.add_option("--reps", reps, "repetitions of the migrate comparison")->check(CLI::PositiveNumber);
  app.add_option("--calls", calls, "calls per repetition")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    darray::Environment env(argc, argv);
    const int np = darray::process_count(), me = darray::process_index();
    if (me == 0)
      std::printf("# bench/pm-nbody: %d process(es) x %d device(s), %lld^3 particles, %lld timed steps\n", np,
                  darray::local_device_count(), static_cast<long long>(n), static_cast<long long>(steps));
    for (const int64_t mesh : meshes) {
      pm::Config c;
      c.n = n;
      c.mesh = mesh;
      c.ic = "random";
      c.a_start = 0.1;
      c.a_end = 1.0;
      c.steps = steps + 1;
      pm::Simulation sim(c);
      pm::Timing warm, t;
      sim.step(warm);
      for (int64_t s = 0; s < steps; ++s) sim.step(t);
      const double rest = t.step - t.paint - t.fft - t.force - t.readout - t.migrate;  // kicks and drifts
      double local[7] = {t.paint, t.fft, t.force, t.readout, t.migrate, rest, t.step}, tmax[7];
      MPI_Allreduce(local, tmax, 7, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      const double per = 1e3 / static_cast<double>(steps);
      if (me == 0)
        std::printf(
            "mesh %4lld^3 (%s): ms per step %.2f; parts, each the max over processes: paint %.2f fft %.2f "
            "force %.2f readout %.2f migrate %.2f kick/drift %.2f\n",
            static_cast<long long>(mesh), sim.sharding().spec().to_string().c_str(), per * tmax[6], per * tmax[0],
            per * tmax[1], per * tmax[2], per * tmax[3], per * tmax[4], per * tmax[5]);

      // migrate() of the rows a next drift would move, against one MPI_Alltoallv of the same rows packed by
      // destination process beforehand (the self part included, as a particle code's own exchange would).
      const pm::Particles& particles = sim.particles();
      const double a0 = sim.a(), a1 = a0 + 0.1, ah = 0.5 * (a0 + a1);
      // The destinations after one more drift, the rows unchanged: every call of migrate() moves the same rows.
      const pm::Destinations dest =
          pm::destinations(particles, NextOwner{sim.solver().cell_owner(), pm::EdS::drift(a0, a1, ah), c.box});
      const Stats lib = time_calls(reps, calls, [&] { (void)darray::migrate(particles, dest); });
      std::vector<int> send_counts(static_cast<std::size_t>(np), 0), recv_counts(static_cast<std::size_t>(np));
      const auto all = darray::devices();
      std::vector<std::vector<double>> by_process(static_cast<std::size_t>(np));
      int64_t moving = 0;
      for (std::size_t s = 0; s < particles.local_rows().size(); ++s) {
        auto rows = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), particles.local_rows()[s]);
        auto d = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), dest[s]);
        for (std::size_t p = 0; p < rows.extent(0); ++p) {
          const int to = all[static_cast<std::size_t>(d(p))].process_index;
          moving += d(p) != particles.local_devices()[s].id ? 1 : 0;
          for (int col = 0; col < pm::WIDTH; ++col) by_process[static_cast<std::size_t>(to)].push_back(rows(p, col));
        }
      }
      std::vector<double> send, recvstore;
      std::vector<int> sdispl(static_cast<std::size_t>(np)), rdispl(static_cast<std::size_t>(np));
      for (int q = 0; q < np; ++q) {
        sdispl[static_cast<std::size_t>(q)] = static_cast<int>(send.size());
        send_counts[static_cast<std::size_t>(q)] = static_cast<int>(by_process[static_cast<std::size_t>(q)].size());
        send.insert(send.end(), by_process[static_cast<std::size_t>(q)].begin(),
                    by_process[static_cast<std::size_t>(q)].end());
      }
      MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
      int total = 0;
      for (int q = 0; q < np; ++q) {
        rdispl[static_cast<std::size_t>(q)] = total;
        total += recv_counts[static_cast<std::size_t>(q)];
      }
      double* const recv = darray_bench::unaliased(recvstore, static_cast<std::size_t>(total), send.data());
      const Stats base = time_calls(reps, calls, [&] {
        MPI_Alltoallv(send.data(), send_counts.data(), sdispl.data(), MPI_DOUBLE, recv, recv_counts.data(),
                      rdispl.data(), MPI_DOUBLE, MPI_COMM_WORLD);
      });
      int64_t moving_all = 0;
      MPI_Allreduce(&moving, &moving_all, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
      if (me == 0)
        std::printf(
            "  migrate %lld rows (%lld change device): darray %.3f ms, pre-packed MPI_Alltoallv %.3f ms, "
            "ratio %.2f (median %.2f)\n",
            static_cast<long long>(n * n * n), static_cast<long long>(moving_all), 1e3 * lib.min, 1e3 * base.min,
            lib.min / base.min, lib.median / base.median);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench/pm-nbody: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
