// pm-nbody: a particle-mesh N-body solver in the style of FastPM and JaxPM. n^3 particles in a periodic box move
// under their own gravity in an Einstein-de Sitter universe; every step paints them onto a distributed 3-D mesh
// (cloud in cell, halo cells added onto their owners), solves Poisson's equation with a distributed real FFT, reads
// the forces back (cloud in cell, halo fill), kicks and drifts them (FastPM's leapfrog in the scale factor) and
// migrates each particle to the device that owns its cell.
//   mpirun -n 2 pm-nbody --n 64 --mesh 128 --ic random --a-end 1 --steps 20 --image slice.ppm
//   DARRAY_HOST_DEVICE_COUNT=4 pm-nbody --n 32 --decomposition pencil      # the Zel'dovich plane wave
// Conventions (apps/pm-nbody/README.md): comoving positions in [0, box), time = scale factor a, momenta p = a^2 dx/dt
// in units of H0, unit particle mass; Poisson's equation laplacian(phi) = (3/2) Omega_m delta / a, solved as
// phi_k = -(3/2) Omega_m / a * delta_k / k^2 (FastPM's convention, Omega_m = 1 here).
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "darray/darray.hpp"

#include "pm.hpp"

using namespace pm;

int main(int argc, char** argv) {
  CLI::App app{"pm-nbody: particle-mesh N-body solver (FastPM-style) on a distributed mesh"};
  Config c;
  app.add_option("--n", c.n, "particles per side (N_p = n^3)")->check(CLI::PositiveNumber);
  app.add_option("--mesh", c.mesh, "mesh cells per side (default: n)")->check(CLI::PositiveNumber);
  app.add_option("--steps", c.steps, "leapfrog steps, evenly spaced in the scale factor")->check(CLI::PositiveNumber);
  app.add_option("--box", c.box, "side of the periodic box, Mpc/h")->check(CLI::PositiveNumber);
  app.add_option("--a-start", c.a_start, "initial scale factor")->check(CLI::PositiveNumber);
  app.add_option("--a-end", c.a_end, "final scale factor")->check(CLI::PositiveNumber);
  app.add_option("--decomposition", c.decomposition, "mesh sharding: slab P(x), pencil P(x, y) or auto")
      ->check(CLI::IsMember({"slab", "pencil", "auto"}));
  app.add_option("--gradient", c.gradient, "force: spectral (i k phi_k) or fd (central differences of phi)")
      ->check(CLI::IsMember({"spectral", "fd"}));
  app.add_option("--ic", c.ic, "initial conditions: zeldovich (a sine mode along x) or random (Gaussian field)")
      ->check(CLI::IsMember({"zeldovich", "random"}));
  app.add_option("--a-cross", c.a_cross, "zeldovich: scale factor of shell crossing")->check(CLI::PositiveNumber);
  app.add_option("--sigma", c.sigma, "random: rms linear density contrast at a = 1")->check(CLI::PositiveNumber);
  app.add_option("--spectral-index", c.spectral_index, "random: P(k) ~ k^index");
  app.add_option("--seed", c.seed, "random: seed of the field");
  app.add_option("--density", c.density, "write the final density / mean density as .npy");
  app.add_option("--image", c.image, "write a slice of the final density as a PPM image");
  app.add_option("--particles", c.particles, "write the final particles (id, x, y, z, px, py, pz) in id order, .npy");
  app.add_option("--compare", c.compare, "compare the final particles with a --particles file; fail beyond tolerance");
  app.add_option("--tolerance", c.tolerance, "relative tolerance of --compare")->check(CLI::PositiveNumber);
  app.add_flag("--check", c.check, "count particles off their owning device after every migration");
  CLI11_PARSE(app, argc, argv);
  try {
    darray::Environment env(argc, argv);
    const bool root = darray::process_index() == 0;
    Simulation sim(c);
    c = sim.config();
    const Solver& solver = sim.solver();
    const int64_t count = solver.particles_total();
    if (root) {
      std::printf("pm-nbody: %lld^3 particles, %lld^3 mesh, box %g Mpc/h, EdS, a %g -> %g in %lld steps\n",
                  static_cast<long long>(c.n), static_cast<long long>(c.mesh), c.box, c.a_start, c.a_end,
                  static_cast<long long>(c.steps));
      std::printf("  %d devices (%d processes), mesh sharding %s, %s gradient, %s initial conditions\n",
                  darray::device_count(), darray::process_count(), sim.sharding().to_string().c_str(),
                  c.gradient.c_str(), c.ic.c_str());
    }
    double worst_momentum = 0, worst_mass = 0;
    int64_t worst_misplaced = 0;
    // Per step: the times (max over processes), the total momentum and the painted mass.
    auto report = [&](const Timing& t) {
      const auto p = momentum(sim.particles());
      const double rel = std::sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]) / std::max(p[3], 1e-300);
      const double mass = darray::sum(solver.mass());
      const double mass_err = std::abs(mass - static_cast<double>(count)) / static_cast<double>(count);
      worst_momentum = std::max(worst_momentum, rel);
      worst_mass = std::max(worst_mass, mass_err);
      if (c.check) worst_misplaced = std::max(worst_misplaced, misplaced(sim.particles(), solver.cell_owner()));
      double local[6] = {t.paint, t.fft, t.force, t.readout, t.migrate, t.step}, tmax[6];
      MPI_Allreduce(local, tmax, 6, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (root)
        std::printf(
            "step %3lld a %.4f  ms: paint %7.2f fft %7.2f force %7.2f readout %7.2f migrate %7.2f step %8.2f  "
            "P (%+.2e %+.2e %+.2e) |P|/sum|p| %.1e  mass err %.1e\n",
            static_cast<long long>(sim.steps_done()), sim.a(), 1e3 * tmax[0], 1e3 * tmax[1], 1e3 * tmax[2],
            1e3 * tmax[3], 1e3 * tmax[4], 1e3 * tmax[5], p[0], p[1], p[2], rel, mass_err);
    };
    report(sim.setup_timing());
    Timing total;
    for (int64_t step = 1; step <= c.steps; ++step) {
      Timing t;
      sim.step(t);
      total.paint += t.paint, total.fft += t.fft, total.force += t.force, total.readout += t.readout;
      total.migrate += t.migrate, total.step += t.step;
      report(t);
    }
    const Particles& particles = sim.particles();
    const int64_t rows_total = particles.global_row_count();
    if (root) {
      const double s = 1e3 / static_cast<double>(c.steps);
      std::printf("mean per step (process 0), ms: paint %.2f fft %.2f force %.2f readout %.2f migrate %.2f step %.2f\n",
                  s * total.paint, s * total.fft, s * total.force, s * total.readout, s * total.migrate,
                  s * total.step);
      // What summing N_p momenta in double precision may leave of an exact zero, relative to sum |p|.
      const double bound = static_cast<double>(count) * std::ldexp(1.0, -52);
      std::printf("momentum: max over steps |sum p| / sum |p| = %.3e (round-off bound N_p * 2^-52 = %.3e)\n",
                  worst_momentum, bound);
      std::printf("mass: max over steps |painted - N_p| / N_p = %.3e\n", worst_mass);
      std::printf("particles: %lld after the run (expected %lld)\n", static_cast<long long>(rows_total),
                  static_cast<long long>(count));
      if (c.check)
        std::printf("migration: %lld particles off the device that owns their cell\n",
                    static_cast<long long>(worst_misplaced));
    }
    DARRAY_THROW_IF(rows_total != count, InvalidArgument, "pm-nbody",
                    rows_total << " particles after the run; expected " << count);

    const bool need_sorted = !c.particles.empty() || !c.compare.empty() || c.ic == "zeldovich";
    if (need_sorted) {
      const auto sorted = by_id(particles, count);
      if (c.ic == "zeldovich") {
        const auto [pos, mom] = zeldovich_error(sorted, c, c.a_end);
        if (root)
          std::printf(
              "zeldovich: a = %g (shell crossing at %g): max |x - x_analytic| / max displacement = %.3e, "
              "max |p - p_analytic| / max momentum = %.3e\n",
              c.a_end, c.a_cross, pos, mom);
      }
      if (!c.particles.empty()) {
        darray::io::save_npy(c.particles, sorted);
        if (root) std::printf("particles: %s\n", c.particles.c_str());
      }
      if (!c.compare.empty()) {
        const auto ref = darray::io::load_npy<double, 2>(c.compare, sorted.sharding());
        DARRAY_THROW_IF(ref.shape() != sorted.shape(), InvalidArgument, "pm-nbody",
                        "--compare " << c.compare << " holds " << darray::numpy_shape_string(ref.shape())
                                     << "; expected " << darray::numpy_shape_string(sorted.shape()));
        const double diff = difference(sorted, ref, c.box);
        if (root)
          std::printf("compare: max relative difference from %s = %.3e (tolerance %.1e): %s\n", c.compare.c_str(), diff,
                      c.tolerance, diff <= c.tolerance ? "same" : "DIFFERENT");
        if (!(diff <= c.tolerance)) return 1;
      }
    }
    if (!c.density.empty() || !c.image.empty()) {
      const double mean = static_cast<double>(count) / static_cast<double>(c.mesh * c.mesh * c.mesh);
      const Grid rho = solver.mass() * (1.0 / mean);
      if (!c.density.empty()) {
        darray::io::save_npy(c.density, rho);
        if (root) std::printf("density: %s (rho / mean, %lld^3)\n", c.density.c_str(), static_cast<long long>(c.mesh));
      }
      if (!c.image.empty()) {
        const std::vector<double> all = darray::gather_to_root(rho, 0);
        if (root) {
          write_ppm(c.image, all, c.mesh);
          std::printf("image: %s\n", c.image.c_str());
        }
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "pm-nbody: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
