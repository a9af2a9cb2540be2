// allreduce: the all-reduce example of the JAX multi-node tutorials, in C++. Every device starts with x = [1.],
// a psum over all devices adds them up, and every process reports what it holds:
//
//   mpirun -np 8 allreduce                                  (8 processes x 1 device)
//   DARRAY_HOST_DEVICE_COUNT=4 mpirun -np 2 allreduce       (2 processes x 4 devices)
//   DARRAY_HOST_DEVICE_COUNT=8 ./allreduce                  (1 process x 8 devices)
//
// all print, with 8 devices in total:   Process 0 has y=[8.]  ...  Process 7 has y=[8.]   (one line per process)
//
// The JAX version:  y = jax.pmap(lambda x: jax.lax.psum(x, "i"), axis_name="i")(jnp.ones(local_device_count))
#include <CLI/CLI.hpp>
#include <sstream>

#include "darray/darray.hpp"

int main(int argc, char** argv) {
  CLI::App app{"allreduce: psum of ones over every device; each process prints the result it holds"};
  bool show_devices = false;
  app.add_flag("--show-devices", show_devices,
               "also print the tutorial's \"Total devices: N  |  Devices per task: K\" line before each result");
  CLI11_PARSE(app, argc, argv);

  // run: MPI + Kokkos + the device table (jax.distributed.initialize()); an error ends the launch cleanly.
  return darray::run(argc, argv, [&] {
    const int n = darray::device_count();

    // One mesh axis "i" over every device of the job, like pmap's axis_name="i".
    const darray::Mesh mesh = darray::make_mesh({n}, {"i"});
    // x: one element per device, sharded along "i", so every device's block is [1.].
    const auto x = darray::full<float, 1>({n}, 1.0f, darray::NamedSharding(mesh, darray::P("i")));
    // y: every device's block becomes the sum of all blocks, [n.]. The result is equal along "i", so y is
    // replicated: shape (1,), one copy per device, printed as NumPy prints it.
    const auto y = darray::psum(x, "i");

    std::ostringstream line;
    if (show_devices)
      line << "Total devices: " << n << "  |  Devices per task: " << darray::local_device_count() << "\n";
    line << "Process " << darray::process_index() << " has y=" << y << "\n";
    darray::print_in_process_order(line.str());  // one line per process, in process order
  });
}
