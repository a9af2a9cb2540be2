// shallow-water: a nonlinear shallow-water model on a 2-D domain split over every device of the job, with halo
// exchange between neighbouring blocks (the model of the mpi4jax shallow-water demo: Arakawa C grid, f-plane
// rotation, periodic in x, solid walls in y). A bump of water collapses into gravity waves and a rotating eddy.
//   mpirun -n 4 shallow-water --nx 512 --ny 256 --steps 480 --image sw.ppm
//   DARRAY_HOST_DEVICE_COUNT=4 shallow-water                      # 4 host devices in one process
// Every cell's update reads only its neighbours, in a fixed order, so the result is bit-for-bit the same for any
// number of processes and devices (the checksum printed at the end shows it). Height changes only through fluxes
// across cell faces, each computed once, so the total mass is conserved to round-off. The diagnostics are reduced
// where the blocks are (darray::sum, darray::max); only the final checksum and image gather the whole state.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "darray/darray.hpp"

namespace {

using darray::Index;
using darray::Shape;

// The state is one array of shape (3, ny, nx): h (layer depth at cell centres), u (x velocity on east faces) and v
// (y velocity on north faces). Sharded P(none, "y", "x"): each device holds all three fields of a block of cells.
constexpr int H = 0, U = 1, V = 2;

struct Model {
  int64_t nx = 256, ny = 128;
  double dx = 20e3, dy = 20e3;  // m
  double g = 9.81;              // m/s^2
  double f = 1e-4;              // Coriolis parameter, 1/s
  double depth = 100;           // mean depth, m
  double bump = 30;             // initial bump height, m
  double dt = 0;                // s, from the CFL condition unless given
};

// Initial state at rest: a Gaussian bump off the domain's centre, and a weaker dip, so the flow is not symmetric.
double initial_value(const Model& m, int64_t c, int64_t j, int64_t i) {
  if (c != H) return 0.0;
  const double x = (static_cast<double>(i) + 0.5) * m.dx, y = (static_cast<double>(j) + 0.5) * m.dy;
  const double lx = static_cast<double>(m.nx) * m.dx, ly = static_cast<double>(m.ny) * m.dy, r = 0.08 * lx;
  auto gauss = [&](double x0, double y0) { return std::exp(-((x - x0) * (x - x0) + (y - y0) * (y - y0)) / (r * r)); };
  return m.depth + m.bump * gauss(0.35 * lx, 0.55 * ly) - 0.4 * m.bump * gauss(0.7 * lx, 0.4 * ly);
}

// One Runge-Kutta stage on one device: out = (1 - b) * base + b * (in + dt * tendency(in)) over the device's cells,
// computed as base + b * (in + dt * tendency - base): the weights then add up to exactly 1 (1/3 + 2/3 do not in
// floating point, which would leak mass by 6e-17 of it per step), and rounding acts on the small change only.
// Views are padded by one cell (halo), so index (c, j + 1, i + 1) is the device's cell (j, i).
void stage(const Model& m, const darray::PaddedShard<double, 3>& in, const darray::PaddedShard<double, 3>& base,
           const darray::PaddedShard<double, 3>& out, double b) {
  const auto s = in.data, s0 = base.data, o = out.data;
  const int64_t rows = in.index[1].size(), cols = in.index[2].size();
  if (rows == 0 || cols == 0) return;
  const int64_t north_wall_row = m.ny - 1 - in.index[1].start + 1;  // padded row of the last cell row, if here
  const double dx = m.dx, dy = m.dy, g = m.g, f = m.f, dt = m.dt;
  Kokkos::parallel_for(
      "shallow_water::stage", Kokkos::MDRangePolicy<Kokkos::Rank<2>>({1, 1}, {rows + 1, cols + 1}),
      KOKKOS_LAMBDA(const int64_t j, const int64_t i) {
        // Depth at u points (j, i+1/2) and v points (j+1/2, i); mass fluxes U = h u, V = h v.
        auto flux_u = [&](int64_t jj, int64_t ii) { return 0.5 * (s(H, jj, ii) + s(H, jj, ii + 1)) * s(U, jj, ii); };
        auto flux_v = [&](int64_t jj, int64_t ii) { return 0.5 * (s(H, jj, ii) + s(H, jj + 1, ii)) * s(V, jj, ii); };
        // Potential vorticity (f + dv/dx - du/dy) / h at the corner (j+1/2, i+1/2).
        auto pv = [&](int64_t jj, int64_t ii) {
          const double zeta = (s(V, jj, ii + 1) - s(V, jj, ii)) / dx - (s(U, jj + 1, ii) - s(U, jj, ii)) / dy;
          const double hc = 0.25 * (s(H, jj, ii) + s(H, jj, ii + 1) + s(H, jj + 1, ii) + s(H, jj + 1, ii + 1));
          return (f + zeta) / hc;
        };
        // Bernoulli function g h + |u|^2 / 2 at the cell centre (j, i).
        auto bernoulli = [&](int64_t jj, int64_t ii) {
          const double ke = 0.25 * (s(U, jj, ii) * s(U, jj, ii) + s(U, jj, ii - 1) * s(U, jj, ii - 1) +
                                    s(V, jj, ii) * s(V, jj, ii) + s(V, jj - 1, ii) * s(V, jj - 1, ii));
          return g * s(H, jj, ii) + ke;
        };
        // Continuity in flux form: what leaves one cell through a face enters its neighbour.
        const double dh = -(flux_u(j, i) - flux_u(j, i - 1)) / dx - (flux_v(j, i) - flux_v(j - 1, i)) / dy;
        // Momentum in vector-invariant form (Sadourny's energy-conserving scheme): q x (h u) and -grad B.
        const double du = 0.5 * (pv(j, i) * 0.5 * (flux_v(j, i) + flux_v(j, i + 1)) +
                                 pv(j - 1, i) * 0.5 * (flux_v(j - 1, i) + flux_v(j - 1, i + 1))) -
                          (bernoulli(j, i + 1) - bernoulli(j, i)) / dx;
        const double dv = -0.5 * (pv(j, i) * 0.5 * (flux_u(j, i) + flux_u(j + 1, i)) +
                                  pv(j, i - 1) * 0.5 * (flux_u(j, i - 1) + flux_u(j + 1, i - 1))) -
                          (bernoulli(j + 1, i) - bernoulli(j, i)) / dy;
        o(H, j, i) = s0(H, j, i) + b * (s(H, j, i) + dt * dh - s0(H, j, i));
        o(U, j, i) = s0(U, j, i) + b * (s(U, j, i) + dt * du - s0(U, j, i));
        // The north face of the last row is the wall: no flow through it. (The south wall is the halo row below
        // the first one, which the exchange leaves at 0 along this open dim.)
        o(V, j, i) = j == north_wall_row ? 0.0 : s0(V, j, i) + b * (s(V, j, i) + dt * dv - s0(V, j, i));
      });
}

// The whole state on every process, in global order (for the checksum and the image at the end).
std::vector<double> gather(const darray::HaloExchange<double, 3>& halo,
                           const std::vector<darray::PaddedShard<double, 3>>& state) {
  return darray::process_allgather(halo.unpad(state));
}

struct Diagnostics {
  double mass = 0, max_eta = 0, max_speed = 0;
};

// Reduced where the blocks are: nothing but three numbers leaves a device.
Diagnostics diagnose(const Model& m, const darray::DistributedArray<double, 3>& s) {
  using darray::GlobalIndex;
  const double depth = m.depth;
  const auto h = darray::map_indexed(
      s, KOKKOS_LAMBDA(GlobalIndex<3> i, double v) { return i[0] == H ? v : 0.0; });
  const auto eta = darray::map_indexed(
      s, KOKKOS_LAMBDA(GlobalIndex<3> i, double v) { return i[0] == H ? (v > depth ? v - depth : depth - v) : 0.0; });
  const auto speed = darray::map_indexed(
      s, KOKKOS_LAMBDA(GlobalIndex<3> i, double v) { return i[0] == H ? 0.0 : (v < 0 ? -v : v); });
  return Diagnostics{darray::sum(h) * m.dx * m.dy, darray::max(eta), darray::max(speed)};
}

uint64_t fnv1a(const std::vector<double>& v) {
  uint64_t h = 1469598103934665603ULL;
  const auto* p = reinterpret_cast<const unsigned char*>(v.data());
  for (std::size_t k = 0; k < v.size() * sizeof(double); ++k) h = (h ^ p[k]) * 1099511628211ULL;
  return h;
}

// The surface elevation h - depth as a binary PPM, north up: blue below the mean, white at it, red above.
void write_ppm(const std::string& path, const Model& m, const std::vector<double>& all, int scale) {
  double range = 1e-12;
  for (int64_t k = 0; k < m.nx * m.ny; ++k)
    range = std::max(range, std::abs(all[static_cast<std::size_t>(k)] - m.depth));
  std::ofstream out(path, std::ios::binary);
  DARRAY_THROW_IF(!out, IoError, "shallow-water", "cannot write image \"" << path << "\"");
  out << "P6\n" << m.nx * scale << " " << m.ny * scale << "\n255\n";
  std::vector<unsigned char> row(static_cast<std::size_t>(3 * m.nx * scale));
  for (int64_t j = m.ny - 1; j >= 0; --j) {
    for (int64_t i = 0; i < m.nx; ++i) {
      const double t = std::clamp((all[static_cast<std::size_t>(j * m.nx + i)] - m.depth) / range, -1.0, 1.0);
      const double to[3] = {t < 0 ? 33.0 : 178.0, t < 0 ? 102.0 : 24.0, t < 0 ? 172.0 : 43.0};
      for (int s = 0; s < scale; ++s)
        for (int c = 0; c < 3; ++c)
          row[static_cast<std::size_t>(3 * (i * scale + s) + c)] =
              static_cast<unsigned char>(std::lround(255.0 + std::abs(t) * (to[c] - 255.0)));
    }
    for (int s = 0; s < scale; ++s)
      out.write(reinterpret_cast<const char*>(row.data()), static_cast<std::streamsize>(row.size()));
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"shallow-water: nonlinear shallow-water model with halo exchange over every device"};
  Model m;
  int64_t steps = 240, every = 0;
  std::string image = "shallow-water.ppm";
  app.add_option("--nx", m.nx, "cells along x (periodic)")->check(CLI::PositiveNumber);
  app.add_option("--ny", m.ny, "cells along y (walls)")->check(CLI::PositiveNumber);
  app.add_option("--steps", steps, "time steps")->check(CLI::NonNegativeNumber);
  app.add_option("--dt", m.dt, "time step in s (default: a third of the gravity-wave CFL limit)")
      ->check(CLI::PositiveNumber);
  app.add_option("--every", every, "print diagnostics every N steps (default: 10 times per run)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--depth", m.depth, "mean depth in m")->check(CLI::PositiveNumber);
  app.add_option("--bump", m.bump, "height of the initial bump in m (a dip of 0.4 times it too)");
  app.add_option("--image", image, "PPM image of the final surface elevation (\"\" for none)");
  CLI11_PARSE(app, argc, argv);
  try {
    darray::Environment env(argc, argv);
    const bool root = darray::process_index() == 0;
    if (m.dt == 0) m.dt = 0.3 * std::min(m.dx, m.dy) / std::sqrt(m.g * (m.depth + m.bump));
    if (every == 0) every = std::max<int64_t>(1, steps / 10);

    // The most square mesh of all devices, more of them along x (the longer dim).
    const int64_t n = darray::device_count();
    int64_t py = 1;
    for (int64_t k = 1; k * k <= n; ++k)
      if (n % k == 0) py = k;
    const darray::Mesh mesh = darray::make_mesh({py, n / py}, {"y", "x"});
    const darray::NamedSharding sharding(mesh, darray::P(darray::none, "y", "x"));
    const Shape shape{3, m.ny, m.nx};

    // One halo cell around each block, corners included; none along the field dim. Periodic in x; open in y, where
    // the halo rows beyond the walls stay 0 (no flow through the south wall).
    const darray::HaloExchange<double, 3> halo(
        shape, sharding, {0, 1, 1}, {darray::Boundary::open, darray::Boundary::open, darray::Boundary::periodic}, 0.0);
    const auto initial = darray::make_array_from_callback<double, 3>(shape, sharding, [&](const Index& box) {
      std::vector<double> v;
      for (int64_t c = box[0].start; c < box[0].stop; ++c)
        for (int64_t j = box[1].start; j < box[1].stop; ++j)
          for (int64_t i = box[2].start; i < box[2].stop; ++i) v.push_back(initial_value(m, c, j, i));
      return v;
    });
    auto state = halo.pad(initial);
    auto stage1 = halo.allocate(), stage2 = halo.allocate();

    if (root) {
      std::printf("shallow-water: %lld x %lld cells of %.0f km, %d devices (%d processes), mesh %s, %s\n",
                  static_cast<long long>(m.nx), static_cast<long long>(m.ny), m.dx / 1e3, darray::device_count(),
                  darray::process_count(), mesh.to_string().c_str(), sharding.spec().to_string().c_str());
      std::printf(
          "  periodic in x, walls in y; depth %.0f m, bump %.0f m, f = %.0e /s; dt = %.2f s, %lld steps (%.2f h)\n",
          m.depth, m.bump, m.f, m.dt, static_cast<long long>(steps), static_cast<double>(steps) * m.dt / 3600);
    }
    const Diagnostics first = diagnose(m, halo.unpad(state));
    auto report = [&](int64_t step, const Diagnostics& d) {
      if (root)
        std::printf("step %6lld  t = %7.2f h  mass %.15e m^3  max|eta| %8.4f m  max speed %7.4f m/s\n",
                    static_cast<long long>(step), static_cast<double>(step) * m.dt / 3600, d.mass, d.max_eta,
                    d.max_speed);
    };
    report(0, first);

    const double t0 = MPI_Wtime();
    for (int64_t step = 1; step <= steps; ++step) {
      // Strong-stability-preserving Runge-Kutta 3 (Shu-Osher): three stages, each a convex combination of
      // conservative updates, so each conserves mass; a halo exchange after each.
      for (std::size_t d = 0; d < state.size(); ++d) stage(m, state[d], state[d], stage1[d], 1.0);
      halo.exchange(stage1);
      for (std::size_t d = 0; d < state.size(); ++d) stage(m, stage1[d], state[d], stage2[d], 0.25);
      halo.exchange(stage2);
      for (std::size_t d = 0; d < state.size(); ++d) stage(m, stage2[d], state[d], state[d], 2.0 / 3.0);
      halo.exchange(state);
      if (step % every == 0 || step == steps) report(step, diagnose(m, halo.unpad(state)));
    }
    const double elapsed = MPI_Wtime() - t0;

    const std::vector<double> final_state = gather(halo, state);
    const Diagnostics last = diagnose(m, halo.unpad(state));
    if (root) {
      std::printf("mass: initial %.15e, final %.15e, relative change %.3e\n", first.mass, last.mass,
                  (last.mass - first.mass) / first.mass);
      std::printf("checksum: 0x%016llx\n", static_cast<unsigned long long>(fnv1a(final_state)));
      std::printf("time: %.3f s for %lld steps (%.3f ms per step, diagnostics included)\n", elapsed,
                  static_cast<long long>(steps), steps > 0 ? 1e3 * elapsed / static_cast<double>(steps) : 0.0);
      if (!image.empty()) {
        const int scale = static_cast<int>(std::max<int64_t>(1, 512 / m.nx));
        write_ppm(image, m, final_state, scale);
        std::printf("image: %s (%lld x %lld pixels)\n", image.c_str(), static_cast<long long>(m.nx * scale),
                    static_cast<long long>(m.ny * scale));
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "shallow-water: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
