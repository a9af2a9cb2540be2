// The particle-mesh solver of apps/pm-nbody, shared with bench/pm-nbody: Einstein-de Sitter background, CIC
// painting with halo accumulation, Poisson's equation by fft::rfftn, spectral or finite-difference forces, CIC readout
// with the halo fill, FastPM's kick-drift-kick leapfrog in the scale factor and particle migration every step. See
// main.cpp for the program and README.md for the conventions.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "darray/darray.hpp"

namespace pm {

using darray::GlobalIndex;
using darray::Index;
using darray::Shape;
using Complex = Kokkos::complex<double>;
using Grid = darray::DistributedArray<double, 3>;
using Spectrum = darray::DistributedArray<Complex, 3>;
using Particles = darray::RaggedArray<double>;
using Rows = Particles::view_type;
using Padded = darray::PaddedShard<double, 3>;
using Accel = Kokkos::View<double* [3], Kokkos::LayoutRight, darray::DefaultMemorySpace>;

// A particle is one row: its id (the flat index of its place on the initial lattice, exact in a double below 2^53),
// its position x, y, z and its momentum px, py, pz.
constexpr int ID = 0, X = 1, P = 4, WIDTH = 7;

struct Config {
  int64_t n = 32;     // particles per side
  int64_t mesh = 0;   // mesh cells per side (0: n)
  int64_t steps = 8;  // leapfrog steps, evenly spaced in a
  double box = 128;   // side of the periodic box, Mpc/h
  double a_start = 0.1, a_end = 0.5;
  std::string decomposition = "auto";  // of the density mesh: slab, pencil or auto (fft::choose_decomposition)
  std::string gradient = "spectral";   // the force: spectral (i k phi_k) or fd (central differences of phi)
  std::string ic = "zeldovich";        // zeldovich: one sine mode along x; random: a Gaussian random field
  double a_cross = 1.0;                // zeldovich: the scale factor of shell crossing
  double sigma = 1.0;                  // random: rms linear density contrast at a = 1 on the particle lattice
  double spectral_index = -2.0;        // random: P(k) ~ k^index up to the lattice's Nyquist wavenumber
  uint64_t seed = 1;                   // random
  std::string density, image, particles, compare;
  double tolerance = 1e-12;
  bool check = false;
};

// Einstein-de Sitter (Omega_m = 1): E(a) = H / H0 = a^(-3/2) and the growth factor D(a) = a. With x comoving and
// p = a^2 dx/dt, dx/da = p / (a^3 E) and dp/da = F / (a E), F = -grad(phi). In linear theory (the Zel'dovich
// approximation x = q + D(a) psi(q)) p = gp(a) psi with gp = a^3 E dD/da, and F = (3/2) Omega_m D / a psi. FastPM's
// drift and kick factors integrate exactly those trajectories: drift dx = p(ar) (D(a1) - D(a0)) / gp(ar), kick
// dp = F(ar) (gp(a1) - gp(a0)) / ((3/2) Omega_m D(ar) / ar).
struct EdS {
  static constexpr double omega_m = 1.0;
  static double growth(double a) { return a; }
  static double gp(double a) { return a * std::sqrt(a); }  // a^3 * a^(-3/2) * 1
  static double force_factor(double a) { return 1.5 * omega_m / a; }
  static double drift(double a0, double a1, double ar) { return (growth(a1) - growth(a0)) / gp(ar); }
  static double kick(double a0, double a1, double ar) { return (gp(a1) - gp(a0)) / (1.5 * omega_m * growth(ar) / ar); }
};

// ---- the mesh side: wavenumbers, inverse Laplacian ----

// The wavenumbers of a half spectrum (fft::rfftn of an n^3 mesh): 2 pi fftfreq along dims 0 and 1, 2 pi rfftfreq
// along dim 2, in 1 / box units; kd is the same with the Nyquist entry (n even) set to 0, for the derivative i k of
// a real field (its sign there is ambiguous; zero keeps the gradient odd, so forces conserve momentum).
struct Wavenumbers {
  Kokkos::View<double*> k[3];
  Kokkos::View<double*> kd[3];
};

inline Wavenumbers wavenumbers(int64_t n, double box) {
  Wavenumbers w;
  for (int d = 0; d < 3; ++d) {
    const double spacing = box / static_cast<double>(n);
    const std::vector<double> f = d < 2 ? darray::fft::fftfreq(n, spacing) : darray::fft::rfftfreq(n, spacing);
    w.k[d] = Kokkos::View<double*>("pm::k", f.size());
    w.kd[d] = Kokkos::View<double*>("pm::kd", f.size());
    auto k = Kokkos::create_mirror_view(w.k[d]);
    auto kd = Kokkos::create_mirror_view(w.kd[d]);
    for (std::size_t i = 0; i < f.size(); ++i) {
      k(i) = 2 * M_PI * f[i];
      kd(i) = n % 2 == 0 && static_cast<int64_t>(i) == n / 2 ? 0.0 : k(i);
    }
    Kokkos::deep_copy(w.k[d], k);
    Kokkos::deep_copy(w.kd[d], kd);
  }
  return w;
}

// factor * i k_d / k^2 * s_k along dim d (0 at k = 0). With s = delta and factor 1 it is the Zel'dovich displacement
// psi (div psi = -delta); with factor (3/2) Omega_m / a it is the force F = -grad(phi), phi_k = -factor delta_k / k^2.
inline Spectrum inverse_laplacian_gradient(const Spectrum& s, const Wavenumbers& w, int d, double factor) {
  const auto k0 = w.k[0], k1 = w.k[1], k2 = w.k[2], kd = w.kd[d];
  return darray::map_indexed(
      s, KOKKOS_LAMBDA(GlobalIndex<3> i, Complex v) {
        const double kk = k0(i[0]) * k0(i[0]) + k1(i[1]) * k1(i[1]) + k2(i[2]) * k2(i[2]);
        const double c = kk > 0 ? factor * kd(i[d]) / kk : 0.0;
        return Complex(-c * v.imag(), c * v.real());
      });
}

// phi_k = -factor s_k / k^2 (0 at k = 0).
inline Spectrum inverse_laplacian(const Spectrum& s, const Wavenumbers& w, double factor) {
  const auto k0 = w.k[0], k1 = w.k[1], k2 = w.k[2];
  return darray::map_indexed(
      s, KOKKOS_LAMBDA(GlobalIndex<3> i, Complex v) {
        const double kk = k0(i[0]) * k0(i[0]) + k1(i[1]) * k1(i[1]) + k2(i[2]) * k2(i[2]);
        return kk > 0 ? v * (-factor / kk) : Complex(0, 0);
      });
}

// ---- the particle side: cloud in cell ----

// The cell of coordinate x in [0, box] (mesh units u = x / cell) and the offset in it: the CIC weights are 1 - f on
// node c and f on node c + 1. x == box (a wrap that rounded up) is node n == node 0.
KOKKOS_INLINE_FUNCTION void locate(double x, double inv_cell, int64_t n, int64_t& c, double& f) {
  const double u = x * inv_cell;
  c = static_cast<int64_t>(u);  // u >= 0
  f = u - static_cast<double>(c);
  if (c >= n) c -= n;
}

// The device that owns a particle's cell.
struct CellOwner {
  darray::OwnerMap<3> owner;
  double inv_cell;
  int64_t n;
  KOKKOS_INLINE_FUNCTION int operator()(const double* row) const {
    int64_t c[3];
    double f;
    for (int d = 0; d < 3; ++d) locate(row[X + d], inv_cell, n, c[d], f);
    return owner(c);
  }
};

// The destination of every row, f(const double* row) -> global device id, evaluated in a kernel where the rows
// live (a GPU build never copies them to the host for it): one view per local device, as migrate() takes them.
using Destinations = std::vector<Kokkos::View<const int*, darray::DefaultMemorySpace>>;
template <class F>
Destinations destinations(const Particles& particles, const F& f) {
  Destinations out;
  for (const Rows& r : particles.local_rows()) {
    Kokkos::View<int*, darray::DefaultMemorySpace> d(Kokkos::view_alloc("pm::dest", Kokkos::WithoutInitializing),
                                                     r.extent(0));
    Kokkos::parallel_for(
        "pm::destinations", static_cast<int64_t>(r.extent(0)), KOKKOS_LAMBDA(int64_t p) { d(p) = f(&r(p, 0)); });
    out.push_back(d);
  }
  Kokkos::fence();
  return out;
}

// The padded shard that belongs to each of the particles' local devices (matched by device id).
inline std::vector<Padded> match_devices(const std::vector<darray::Device>& devices,
                                         const std::vector<Padded>& shards) {
  std::vector<Padded> out;
  for (const darray::Device& d : devices) {
    auto it = std::find_if(shards.begin(), shards.end(), [&](const Padded& s) { return s.device.id == d.id; });
    DARRAY_THROW_IF(it == shards.end(), InvalidArgument, "pm-nbody",
                    "no mesh block for " << d << "; the particles and the mesh must share their devices");
    out.push_back(*it);
  }
  return out;
}

// Calls f(i, j, k, w) for the 8 nodes of the cloud of the particle at x[0..3): (i, j, k) the node's place in a padded
// block whose corner is the global cell o, w its CIC weight. The one stencil of painting and both readouts.
template <class F>
KOKKOS_INLINE_FUNCTION void for_each_cic_node(const double* x, double inv_cell, int64_t n, const int64_t* o, F&& f) {
  int64_t c[3];
  double t[3];
  for (int d = 0; d < 3; ++d) locate(x[d], inv_cell, n, c[d], t[d]);
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2; ++b)
      for (int e = 0; e < 2; ++e)
        f(c[0] + a - o[0], c[1] + b - o[1], c[2] + e - o[2],
          (a ? t[0] : 1 - t[0]) * (b ? t[1] : 1 - t[1]) * (e ? t[2] : 1 - t[2]));
}

struct Corner {  // a padded block's first cell, global coordinates (device-copyable)
  int64_t o[3];
};
inline Corner corner(const Padded& s) {
  return Corner{{s.padded_index[0].start, s.padded_index[1].start, s.padded_index[2].start}};
}

// Adds each particle's unit mass to the 8 nodes around it. Every particle is on the device that owns its cell, so
// the nodes are the device's block and its halo on the upper side.
inline void paint(const Rows& rows, const Padded& s, double inv_cell, int64_t n) {
  const auto v = s.data;
  const Corner o = corner(s);
  Kokkos::parallel_for(
      "pm::paint", static_cast<int64_t>(rows.extent(0)), KOKKOS_LAMBDA(int64_t p) {
        for_each_cic_node(&rows(p, X), inv_cell, n, o.o,
                          [&](int64_t i, int64_t j, int64_t k, double w) { Kokkos::atomic_add(&v(i, j, k), w); });
      });
}

// The force at each particle from three halo-filled force meshes (spectral gradient), with the same CIC weights.
inline void readout(const Rows& rows, const Padded& fx, const Padded& fy, const Padded& fz, const Accel& acc,
                    double inv_cell, int64_t n) {
  const auto v0 = fx.data, v1 = fy.data, v2 = fz.data;
  const Corner o = corner(fx);
  Kokkos::parallel_for(
      "pm::readout", static_cast<int64_t>(rows.extent(0)), KOKKOS_LAMBDA(int64_t p) {
        double g[3] = {0, 0, 0};
        for_each_cic_node(&rows(p, X), inv_cell, n, o.o, [&](int64_t i, int64_t j, int64_t k, double w) {
          g[0] += w * v0(i, j, k);
          g[1] += w * v1(i, j, k);
          g[2] += w * v2(i, j, k);
        });
        for (int d = 0; d < 3; ++d) acc(p, d) = g[d];
      });
}

// The same from the halo-filled potential (width 2): the force at each node is the central difference
// -(phi(g + e_d) - phi(g - e_d)) / (2 cell), itself odd, so the forces still conserve momentum.
inline void readout_fd(const Rows& rows, const Padded& phi, const Accel& acc, double inv_cell, int64_t n) {
  const auto v = phi.data;
  const Corner o = corner(phi);
  const double scale = -0.5 * inv_cell;
  Kokkos::parallel_for(
      "pm::readout_fd", static_cast<int64_t>(rows.extent(0)), KOKKOS_LAMBDA(int64_t p) {
        double g[3] = {0, 0, 0};
        for_each_cic_node(&rows(p, X), inv_cell, n, o.o, [&](int64_t i, int64_t j, int64_t k, double w) {
          g[0] += w * scale * (v(i + 1, j, k) - v(i - 1, j, k));
          g[1] += w * scale * (v(i, j + 1, k) - v(i, j - 1, k));
          g[2] += w * scale * (v(i, j, k + 1) - v(i, j, k - 1));
        });
        for (int d = 0; d < 3; ++d) acc(p, d) = g[d];
      });
}

inline void kick(const Rows& rows, const Accel& acc, double factor) {
  Kokkos::parallel_for(
      "pm::kick", static_cast<int64_t>(rows.extent(0)), KOKKOS_LAMBDA(int64_t p) {
        for (int d = 0; d < 3; ++d) rows(p, P + d) += factor * acc(p, d);
      });
}

// x += factor p, wrapped into [0, box).
inline void drift(const Rows& rows, double factor, double box) {
  Kokkos::parallel_for(
      "pm::drift", static_cast<int64_t>(rows.extent(0)), KOKKOS_LAMBDA(int64_t p) {
        for (int d = 0; d < 3; ++d) {
          double x = rows(p, X + d) + factor * rows(p, P + d);
          while (x >= box) x -= box;
          while (x < 0) x += box;
          rows(p, X + d) = x >= box ? 0.0 : x;  // x + box rounded to box
        }
      });
}

// ---- the solver ----

struct Timing {
  double paint = 0, fft = 0, force = 0, readout = 0, migrate = 0, step = 0;
};

inline double now() {
  Kokkos::fence();
  return MPI_Wtime();
}

class Solver {
 public:
  Solver(const Config& c, const darray::NamedSharding& sharding)
      : m_c(c),
        m_n(c.mesh),
        m_shape{c.mesh, c.mesh, c.mesh},
        m_inv_cell(static_cast<double>(c.mesh) / c.box),
        m_owner(m_shape, sharding),
        m_paint_halo(m_shape, sharding, {1, 1, 1}, darray::Boundary::periodic),
        m_force_halo(m_shape, sharding, c.gradient == "fd" ? Shape{2, 2, 2} : Shape{1, 1, 1},
                     darray::Boundary::periodic),
        m_k(wavenumbers(c.mesh, c.box)) {}

  CellOwner cell_owner() const { return CellOwner{m_owner, m_inv_cell, m_n}; }
  const Shape& shape() const { return m_shape; }

  // The mass on the mesh (one per particle): CIC into padded blocks, then every halo cell added onto its owner.
  Grid paint_mesh(const Particles& particles) const {
    auto shards = m_paint_halo.allocate();  // zeros
    const auto mine = match_devices(particles.local_devices(), shards);
    for (std::size_t d = 0; d < mine.size(); ++d) paint(particles.local_rows()[d], mine[d], m_inv_cell, m_n);
    m_paint_halo.accumulate(shards);
    return m_paint_halo.unpad(shards);
  }

  // The force on every particle at scale factor a, one Accel per local device; the painted mass is kept in mass().
  std::vector<Accel> forces(const Particles& particles, double a, Timing& t) {
    double t0 = now();
    m_mass = paint_mesh(particles);
    double t1 = now();
    t.paint += t1 - t0;
    // delta_k = rho_k / mean (k != 0; k = 0 is dropped by the inverse Laplacian)
    const Spectrum rho_k = darray::fft::rfftn(*m_mass);
    double t2 = now();
    t.fft += t2 - t1;
    std::vector<Accel> acc;
    for (const auto& rows : particles.local_rows())
      acc.push_back(Accel(Kokkos::view_alloc("pm::acc", Kokkos::WithoutInitializing), rows.extent(0)));
    const double mean = static_cast<double>(particles_total()) / static_cast<double>(m_n * m_n * m_n);
    const double factor = EdS::force_factor(a) / mean;
    std::vector<std::vector<Padded>> fields;
    if (m_c.gradient == "fd") {
      const Grid phi = darray::fft::irfftn(inverse_laplacian(rho_k, m_k, factor), m_shape);
      fields.push_back(m_force_halo.pad(phi));
    } else {
      for (int d = 0; d < 3; ++d)
        fields.push_back(
            m_force_halo.pad(darray::fft::irfftn(inverse_laplacian_gradient(rho_k, m_k, d, factor), m_shape)));
    }
    double t3 = now();
    t.force += t3 - t2;
    std::vector<std::vector<Padded>> mine;
    for (const auto& f : fields) mine.push_back(match_devices(particles.local_devices(), f));
    for (std::size_t d = 0; d < acc.size(); ++d) {
      if (m_c.gradient == "fd")
        readout_fd(particles.local_rows()[d], mine[0][d], acc[d], m_inv_cell, m_n);
      else
        readout(particles.local_rows()[d], mine[0][d], mine[1][d], mine[2][d], acc[d], m_inv_cell, m_n);
    }
    t.readout += now() - t3;
    return acc;
  }

  const Grid& mass() const { return m_mass.value(); }
  int64_t particles_total() const { return m_c.n * m_c.n * m_c.n; }

 private:
  Config m_c;
  int64_t m_n;
  Shape m_shape;
  double m_inv_cell;
  darray::OwnerMap<3> m_owner;
  darray::HaloExchange<double, 3> m_paint_halo, m_force_halo;
  Wavenumbers m_k;
  std::optional<Grid> m_mass;  // the last paint_mesh(), from the first forces() on
};

// ---- initial conditions ----

// A reproducible standard normal deviate per (seed, lattice point): the same for every layout.
inline double gaussian(uint64_t seed, int64_t flat) {
  auto mix = [](uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  const uint64_t base = mix(seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(flat) * 2 + 1);
  const double u1 = (static_cast<double>(mix(base) >> 11) + 0.5) / 9007199254740992.0;
  const double u2 = static_cast<double>(mix(base + 1) >> 11) / 9007199254740992.0;
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
}

// The Zel'dovich displacement field psi (D = 1) of a Gaussian random field with P(k) ~ k^index below the lattice's
// Nyquist wavenumber, scaled so that the rms of delta = -div psi is sigma: three arrays on the particle lattice.
inline std::vector<Grid> random_displacements(const Config& c, const darray::NamedSharding& sharding) {
  const Shape shape{c.n, c.n, c.n};
  const Grid noise = darray::make_array_from_callback<double, 3>(shape, sharding, [&](const Index& box) {
    std::vector<double> v;
    for (int64_t i = box[0].start; i < box[0].stop; ++i)
      for (int64_t j = box[1].start; j < box[1].stop; ++j)
        for (int64_t k = box[2].start; k < box[2].stop; ++k) v.push_back(gaussian(c.seed, (i * c.n + j) * c.n + k));
    return v;
  });
  const Wavenumbers w = wavenumbers(c.n, c.box);
  const auto k0 = w.k[0], k1 = w.k[1], k2 = w.k[2];
  const double knyq = M_PI * static_cast<double>(c.n) / c.box, index = c.spectral_index;
  const Spectrum delta_k = darray::map_indexed(
      darray::fft::rfftn(noise), KOKKOS_LAMBDA(GlobalIndex<3> i, Complex v) {
        const double kk = k0(i[0]) * k0(i[0]) + k1(i[1]) * k1(i[1]) + k2(i[2]) * k2(i[2]);
        return kk > 0 && kk <= knyq * knyq ? v * pow(kk, 0.25 * index) : Complex(0, 0);
      });
  const double rms =
      darray::norm(darray::fft::irfftn(delta_k, shape)) / std::sqrt(static_cast<double>(c.n * c.n * c.n));
  DARRAY_THROW_IF(!(rms > 0), InvalidArgument, "pm-nbody", "the random field of n = " << c.n << " has no modes");
  return {darray::fft::irfftn(inverse_laplacian_gradient(delta_k, w, 0, c.sigma / rms), shape),
          darray::fft::irfftn(inverse_laplacian_gradient(delta_k, w, 1, c.sigma / rms), shape),
          darray::fft::irfftn(inverse_laplacian_gradient(delta_k, w, 2, c.sigma / rms), shape)};
}

// The initial lattice: particle (i, j, k) at ((i, j, k) + 1/2) box / n, the centres of the lattice's cells, as
// FastPM's (pmesh's uniform particle grid, shift 1/2). On an n^3 mesh the particles then sit between the nodes, and
// a node's CIC density is a centred difference of its two neighbours' displacements; on the nodes it would be a
// one-sided one, with twice the error (the Zel'dovich test at n = 32: 4.9% instead of 2.3%).
KOKKOS_INLINE_FUNCTION double lattice_point(int64_t i, double spacing) {
  return (static_cast<double>(i) + 0.5) * spacing;
}

// The Zel'dovich plane wave: psi_x = A sin(2 pi q_x / box), A = box / (2 pi a_cross), so D(a) A 2 pi / box reaches
// 1 (shell crossing) at a = a_cross.
double plane_wave_amplitude(const Config& c) { return c.box / (2 * M_PI * c.a_cross); }

// Particles on the n^3 lattice (lattice_point), each displaced by D(a) psi(q) and moving
// with p = gp(a) psi(q); each device makes the particles of its block of the lattice (sharded like the mesh).
inline Particles initial_particles(const Config& c, const darray::NamedSharding& sharding, double a) {
  const Shape lattice{c.n, c.n, c.n};
  std::vector<Grid> psi;
  if (c.ic == "random") psi = random_displacements(c, sharding);
  const Particles empty(sharding.mesh(), WIDTH);  // for the local-device order the views are given in
  std::vector<Rows> rows;
  const double spacing = c.box / static_cast<double>(c.n), box = c.box, amp = plane_wave_amplitude(c);
  const double dx = EdS::growth(a), dp = EdS::gp(a);
  const int64_t n = c.n;
  const bool random = c.ic == "random";
  for (const darray::Device& dev : empty.local_devices()) {
    const Index b = sharding.index(lattice, dev);
    const int64_t e1 = b[1].size(), e2 = b[2].size(), count = darray::volume(b);
    Rows r(Kokkos::view_alloc("pm::particles", Kokkos::WithoutInitializing), count, WIDTH);
    Grid::shard_type::view_type p0, p1, p2;
    if (random) {
      auto of = [&](const Grid& g) {
        for (const auto& shard : g.addressable_shards())
          if (shard.device.id == dev.id) return shard.data;
        return Grid::shard_type::view_type();
      };
      p0 = of(psi[0]);
      p1 = of(psi[1]);
      p2 = of(psi[2]);
    }
    const int64_t s0 = b[0].start, s1 = b[1].start, s2 = b[2].start;
    Kokkos::parallel_for(
        "pm::initial", count, KOKKOS_LAMBDA(int64_t p) {
          const int64_t i = p / (e1 * e2), j = p / e2 % e1, k = p % e2;
          const int64_t q[3] = {s0 + i, s1 + j, s2 + k};
          double d[3] = {amp * sin(2 * M_PI * lattice_point(q[0], spacing) / box), 0, 0};
          if (random) {
            d[0] = p0(i, j, k);
            d[1] = p1(i, j, k);
            d[2] = p2(i, j, k);
          }
          r(p, ID) = static_cast<double>((q[0] * n + q[1]) * n + q[2]);
          for (int m = 0; m < 3; ++m) {
            double x = lattice_point(q[m], spacing) + dx * d[m];
            while (x >= box) x -= box;
            while (x < 0) x += box;
            r(p, X + m) = x >= box ? 0.0 : x;
            r(p, P + m) = dp * d[m];
          }
        });
    rows.push_back(r);
  }
  Kokkos::fence();
  return Particles(sharding.mesh(), WIDTH, std::move(rows));
}

// ---- diagnostics ----

// Sum of p over every particle (3 components) and the sum of |p|, the scale of its round-off. Collective.
inline std::array<double, 4> momentum(const Particles& particles) {
  std::array<double, 4> local{0, 0, 0, 0}, total{};
  for (const Rows& r : particles.local_rows())
    for (int d = 0; d < 4; ++d) {
      double s = 0;
      Kokkos::parallel_reduce(
          "pm::momentum", static_cast<int64_t>(r.extent(0)),
          KOKKOS_LAMBDA(int64_t p, double& acc) {
            if (d < 3)
              acc += r(p, P + d);
            else
              acc += sqrt(r(p, P) * r(p, P) + r(p, P + 1) * r(p, P + 1) + r(p, P + 2) * r(p, P + 2));
          },
          s);
      local[static_cast<std::size_t>(d)] += s;
    }
  MPI_Allreduce(local.data(), total.data(), 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

// Particles not on the device that owns their cell (0 after every migration). Collective.
inline int64_t misplaced(const Particles& particles, const CellOwner& owner) {
  const Destinations dest = destinations(particles, owner);
  int64_t local = 0, total = 0;
  for (std::size_t s = 0; s < dest.size(); ++s) {
    const auto d = dest[s];
    const int id = particles.local_devices()[s].id;
    int64_t bad = 0;
    Kokkos::parallel_reduce(
        "pm::misplaced", static_cast<int64_t>(d.extent(0)),
        KOKKOS_LAMBDA(int64_t p, int64_t & acc) { acc += d(p) != id ? 1 : 0; }, bad);
    local += bad;
  }
  MPI_Allreduce(&local, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

// The device whose block of ids holds a particle's id.
struct IdOwner {
  darray::OwnerMap<1> owner;
  KOKKOS_INLINE_FUNCTION int operator()(const double* row) const {
    const int64_t id = static_cast<int64_t>(row[ID]);
    return owner(&id);
  }
};

// The particles as an (N_p, 7) array in id order, in blocks of ids over a 1-D mesh of every device: each particle
// migrates to the device whose block holds its id, and each device sorts its block.
inline darray::DistributedArray<double, 2> by_id(const Particles& particles, int64_t count) {
  const darray::NamedSharding rows_sharding(darray::make_mesh({darray::device_count()}, {"p"}), darray::P("p"));
  const darray::OwnerMap<1> owner(Shape{count}, rows_sharding);
  const Particles moved = darray::migrate(particles, destinations(particles, IdOwner{owner}));
  std::vector<std::pair<darray::Device, Rows>> blocks;
  for (std::size_t s = 0; s < moved.local_rows().size(); ++s) {
    auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), moved.local_rows()[s]);
    std::vector<int64_t> order(host.extent(0));
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return host(a, ID) < host(b, ID); });
    // A new view: create_mirror_view of a host view would be the view itself, and the permutation would overwrite it.
    Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace> sorted("pm::sorted", host.extent(0), WIDTH);
    for (std::size_t i = 0; i < order.size(); ++i)
      for (int c = 0; c < WIDTH; ++c) sorted(i, c) = host(order[i], c);
    Rows out(Kokkos::view_alloc("pm::by_id", Kokkos::WithoutInitializing), host.extent(0), WIDTH);
    Kokkos::deep_copy(out, sorted);
    blocks.emplace_back(moved.local_devices()[s], out);
  }
  return darray::make_array_from_single_device_arrays<double, 2>(Shape{count, WIDTH}, rows_sharding, blocks);
}

// Largest difference from a reference particle set (both in id order), relative: positions (periodic) to the box,
// momenta to the largest reference momentum component; ids must match exactly.
inline double difference(const darray::DistributedArray<double, 2>& a, const darray::DistributedArray<double, 2>& ref,
                         double box) {
  const double pmax = darray::max(darray::map_indexed(
      ref, KOKKOS_LAMBDA(GlobalIndex<2> i, double v) { return i[1] >= P ? fabs(v) : 0.0; }));
  const double pscale = pmax > 0 ? pmax : 1.0;
  return darray::max(darray::map_indexed(
      a - ref, KOKKOS_LAMBDA(GlobalIndex<2> i, double v) {
        const double d = fabs(v);
        if (i[1] == ID) return d == 0 ? 0.0 : 1.0;
        if (i[1] < P) return (d < box - d ? d : box - d) / box;
        return d / pscale;
      }));
}

// The Zel'dovich test: the largest distance (periodic, over all 3 dims) between a particle and its analytic place
// x = q + D(a) A sin(2 pi q_x / box), and between its momentum and gp(a) A sin(...), each relative to the largest
// displacement D(a) A (momentum: gp(a) A).
inline std::pair<double, double> zeldovich_error(const darray::DistributedArray<double, 2>& by, const Config& c,
                                                 double a) {
  const double amp = plane_wave_amplitude(c), dx = EdS::growth(a) * amp, dp = EdS::gp(a) * amp;
  const double spacing = c.box / static_cast<double>(c.n), box = c.box;
  const int64_t n = c.n;
  const auto err = darray::map_indexed(
      by, KOKKOS_LAMBDA(GlobalIndex<2> i, double v) {
        const int64_t id = i[0], q[3] = {id / (n * n), id / n % n, id % n};
        const double s = sin(2 * M_PI * lattice_point(q[0], spacing) / box);
        if (i[1] >= X && i[1] < P) {
          const int m = static_cast<int>(i[1] - X);
          const double expect = lattice_point(q[m], spacing) + (m == 0 ? dx * s : 0.0);
          double d = fabs(v - expect);
          while (d > box) d -= box;
          return (d < box - d ? d : box - d) / dx;
        }
        if (i[1] >= P) return fabs(v - (i[1] == P ? dp * s : 0.0)) / dp;
        return 0.0;
      });
  const double pos = darray::max(darray::map_indexed(
      err, KOKKOS_LAMBDA(GlobalIndex<2> i, double v) { return i[1] >= X && i[1] < P ? v : 0.0; }));
  const double mom = darray::max(darray::map_indexed(
      err, KOKKOS_LAMBDA(GlobalIndex<2> i, double v) { return i[1] >= P ? v : 0.0; }));
  return {pos, mom};
}

// A slice of the density (a slab of thickness box / 16 around z = 0, averaged) as a binary PPM, log-scaled from
// black through red and yellow to white.
inline void write_ppm(const std::string& path, const std::vector<double>& rho, int64_t n) {
  const int64_t depth = std::max<int64_t>(1, n / 16);
  std::vector<double> slice(static_cast<std::size_t>(n * n));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t k = 0; k < depth; ++k) s += rho[static_cast<std::size_t>((i * n + j) * n + k)];
      slice[static_cast<std::size_t>(i * n + j)] = std::log10(std::max(s / static_cast<double>(depth), 1e-2));
    }
  const auto [lo, hi] = std::minmax_element(slice.begin(), slice.end());
  const double range = std::max(*hi - *lo, 1e-12);
  const int scale = static_cast<int>(std::max<int64_t>(1, 512 / n));
  std::ofstream out(path, std::ios::binary);
  DARRAY_THROW_IF(!out, IoError, "pm-nbody", "cannot write image \"" << path << "\"");
  out << "P6\n" << n * scale << " " << n * scale << "\n255\n";
  std::vector<unsigned char> row(static_cast<std::size_t>(3 * n * scale));
  for (int64_t j = n - 1; j >= 0; --j) {  // y up
    for (int64_t i = 0; i < n; ++i) {
      const double t = (slice[static_cast<std::size_t>(i * n + j)] - *lo) / range;
      const double rgb[3] = {std::min(1.0, 3 * t), std::clamp(3 * t - 1, 0.0, 1.0), std::clamp(3 * t - 2, 0.0, 1.0)};
      for (int s = 0; s < scale; ++s)
        for (int ch = 0; ch < 3; ++ch)
          row[static_cast<std::size_t>(3 * (i * scale + s) + ch)] =
              static_cast<unsigned char>(std::lround(255 * rgb[ch]));
    }
    for (int s = 0; s < scale; ++s)
      out.write(reinterpret_cast<const char*>(row.data()), static_cast<std::streamsize>(row.size()));
  }
}

// One run: the mesh sharding, the solver and the particles, advanced one kick-drift-kick step at a time.
class Simulation {
 public:
  explicit Simulation(const Config& c)
      : m_c(checked(c)),
        m_sharding(darray::fft::auto_sharding(Shape{m_c.mesh, m_c.mesh, m_c.mesh}, decomposition(m_c))),
        m_solver(m_c, m_sharding),
        m_particles(initial_particles(m_c, m_sharding, m_c.a_start)) {
    double t0 = now();
    m_particles = darray::migrate(m_particles, destinations(m_particles, m_solver.cell_owner()));
    m_setup.migrate = now() - t0;
    m_acc = m_solver.forces(m_particles, m_c.a_start, m_setup);
  }

  // Kick to the half step with the force at a0, drift to a1 with the momentum there, migrate, then the force at a1
  // and the kick from the half step to a1. Adds this step's times to t (t.step: the whole step).
  void step(Timing& t) {
    const double a0 = scale_factor(m_step), a1 = scale_factor(m_step + 1), ah = 0.5 * (a0 + a1);
    const double start = now();
    for (std::size_t d = 0; d < m_acc.size(); ++d) kick(m_particles.local_rows()[d], m_acc[d], EdS::kick(a0, ah, a0));
    for (const Rows& r : m_particles.local_rows()) drift(r, EdS::drift(a0, a1, ah), m_c.box);
    const double tm = now();
    m_particles = darray::migrate(m_particles, destinations(m_particles, m_solver.cell_owner()));
    t.migrate += now() - tm;
    m_acc = m_solver.forces(m_particles, a1, t);
    for (std::size_t d = 0; d < m_acc.size(); ++d) kick(m_particles.local_rows()[d], m_acc[d], EdS::kick(ah, a1, a1));
    t.step += now() - start;
    ++m_step;
  }

  // a after `step` of the config's steps, evenly spaced from a_start to a_end.
  double scale_factor(int64_t step) const {
    return m_c.a_start + (m_c.a_end - m_c.a_start) * static_cast<double>(step) / static_cast<double>(m_c.steps);
  }
  double a() const { return scale_factor(m_step); }
  int64_t steps_done() const { return m_step; }
  const Config& config() const { return m_c; }
  const darray::NamedSharding& sharding() const { return m_sharding; }
  const Solver& solver() const { return m_solver; }
  const Particles& particles() const { return m_particles; }
  const Timing& setup_timing() const { return m_setup; }  // the initial migration and force

 private:
  static Config checked(Config c) {
    if (c.mesh == 0) c.mesh = c.n;
    DARRAY_THROW_IF(!(c.a_end > c.a_start), InvalidArgument, "pm-nbody",
                    "--a-end " << c.a_end << " is not after --a-start " << c.a_start);
    DARRAY_THROW_IF(c.mesh < 2, InvalidArgument, "pm-nbody", "--mesh " << c.mesh << "; expected at least 2 cells");
    DARRAY_THROW_IF(c.n > (int64_t{1} << 17), InvalidArgument, "pm-nbody",
                    "--n " << c.n << "; expected at most 2^17 (particle ids are doubles, exact below 2^53)");
    return c;
  }
  static darray::fft::Decomposition decomposition(const Config& c) {
    return c.decomposition == "slab"     ? darray::fft::Decomposition::slab
           : c.decomposition == "pencil" ? darray::fft::Decomposition::pencil
                                         : darray::fft::Decomposition::automatic;
  }

  Config m_c;
  darray::NamedSharding m_sharding;
  Solver m_solver;
  Particles m_particles;
  std::vector<Accel> m_acc;
  Timing m_setup;
  int64_t m_step = 0;
};

}  // namespace pm
