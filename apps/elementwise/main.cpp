// elementwise: the first example of the multi-GPU JAX talk, f = lambda x: 2*x + 1 on an array sharded over a mesh
// ("x", "y"), followed by the global sum and the mean over axis 0. Every layout prints the same:
//   mpirun -np 2 elementwise            DARRAY_HOST_DEVICE_COUNT=8 ./elementwise
// The JAX version:
//   x = jax.device_put(jnp.arange(32.).reshape(8, 4), NamedSharding(mesh, P("x", "y")))
//   y = jax.jit(lambda x: 2 * x + 1)(x);  print(y, y.sum(), y.mean(axis=0))
#include <iostream>
#include <string>

#include "darray/darray.hpp"

int main(int argc, char** argv) {
  // run: starts MPI + Kokkos; an error on any process ends the launch with one message and exit code 1.
  return darray::run(argc, argv, [] {
    const int n = darray::device_count();
    const int64_t rows = n % 2 == 0 ? 2 : 1;  // a (2, n/2) mesh when the device count allows
    const darray::Mesh mesh = darray::make_mesh({rows, n / rows}, {"x", "y"});
    const auto x = darray::iota<float, 2>({8, 4}, darray::NamedSharding(mesh, darray::P("x", "y")));
    // Each device computes its own block, as pjit does; same as map(x, KOKKOS_LAMBDA(float v) { return 2*v+1; }).
    const auto y = 2 * x + 1;
    // Collective calls run on every process; process 0 prints.
    const std::string text = darray::to_string(y), mean0 = darray::to_string(darray::mean(y, 0));
    const float total = darray::sum(y);  // every element once, the same value on every process
    if (darray::process_index() == 0)
      std::cout << text << "\nsum: " << total << "\nmean over axis 0: " << mean0 << std::endl;
  });
}
