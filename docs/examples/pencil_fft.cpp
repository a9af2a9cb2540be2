// Pencil FFT: the talk's fft3d (a local FFT per dim, with an mpi4jax alltoall between them on a 2-D process grid)
// is one fft::Plan on a pencil sharding: the plan runs the local FFTs and the two transposes. The input is a plane
// wave of frequency (1, 2, 3), whose transform is N at (1, 2, 3) and 0 elsewhere.
#include <cmath>
#include <iostream>

#include "darray/darray.hpp"

using C = Kokkos::complex<double>;

int main(int argc, char** argv) {
  return darray::run(argc, argv, [] {
    const int n = darray::device_count();
    const darray::Mesh mesh = darray::make_mesh({n % 2 == 0 ? 2 : 1, n % 2 == 0 ? n / 2 : n}, {"r", "c"});
    const darray::NamedSharding z_pencil(mesh, darray::P("r", "c", darray::none));
    const darray::Shape shape{16, 12, 8};
    const double total = 16 * 12 * 8, two_pi = 6.283185307179586;

    const auto x = darray::map_indexed(
        darray::zeros<C, 3>(shape, z_pencil), KOKKOS_LAMBDA(darray::GlobalIndex<3> i, C) {
          const double phase = two_pi * (1.0 * i[0] / 16 + 2.0 * i[1] / 12 + 3.0 * i[2] / 8);
          return C(std::cos(phase), std::sin(phase));
        });
    // numpy.fft.fftn over all three dims, the result left in the last stage's pencil as the talk's fft3d leaves it
    // (one transpose fewer than returning to the input's sharding, as darray::fft::fftn(x) does).
    darray::fft::Options options;
    options.output = darray::fft::OutputLayout::transposed;
    const darray::fft::Plan<double> plan(shape, z_pencil, options);
    const auto y = plan.forward(x);

    const auto error = darray::map_indexed(
        y, KOKKOS_LAMBDA(darray::GlobalIndex<3> k, C v) {
          const bool peak = k[0] == 1 && k[1] == 2 && k[2] == 3;
          return Kokkos::abs(v - C(peak ? total : 0.0, 0.0));
        });
    const double max_error = darray::max(error);  // collective: every process calls it
    if (darray::process_index() == 0) {
      std::cout << "mesh " << mesh << ", input " << z_pencil.spec() << ", output " << y.sharding().spec() << ", "
                << plan.transposes() << " transposes\n"
                << "stages:";
      for (const auto& stage : plan.stages()) std::cout << " " << stage;
      std::cout << "\n|y[1, 2, 3]| = " << total << ", max error " << (max_error < 1e-9 ? "< 1e-9" : "TOO LARGE")
                << "\n";
    }
  });
}
