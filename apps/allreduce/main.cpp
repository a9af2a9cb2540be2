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
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "darray/darray.hpp"

namespace {

// NumPy's spelling of a float32 array: [8.] for whole numbers, [2.5] otherwise.
std::string numpy_str(const std::vector<float>& values) {
  std::ostringstream os;
  os << "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    os << (i ? " " : "");
    const float v = values[i];
    if (v == static_cast<float>(static_cast<long long>(v)))
      os << static_cast<long long>(v) << ".";
    else
      os << v;
  }
  return os.str() + "]";
}

// Prints each process's text in process order: process 0 gathers and prints them all, so lines of different
// processes never interleave.
void print_in_process_order(const std::string& mine) {
  const int n = darray::process_count();
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(static_cast<std::size_t>(n)), offsets(static_cast<std::size_t>(n), 0);
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  for (int p = 1; p < n; ++p)
    offsets[static_cast<std::size_t>(p)] =
        offsets[static_cast<std::size_t>(p - 1)] + lens[static_cast<std::size_t>(p - 1)];
  std::string all(darray::process_index() == 0 ? static_cast<std::size_t>(offsets.back() + lens.back()) : 0, '\0');
  MPI_Gatherv(mine.data(), len, MPI_CHAR, &all[0], lens.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  if (darray::process_index() == 0) std::cout << all << std::flush;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"allreduce: psum of ones over every device; each process prints the result it holds"};
  bool show_devices = false;
  app.add_flag("--show-devices", show_devices,
               "also print the tutorial's \"Total devices: N  |  Devices per task: K\" line before each result");
  CLI11_PARSE(app, argc, argv);

  try {
    darray::Environment env(argc, argv);  // MPI + Kokkos + the device table (jax.distributed.initialize())
    const int n = darray::device_count();

    // One mesh axis "i" over every device of the job, like pmap's axis_name="i".
    const darray::Mesh mesh = darray::make_mesh({n}, {"i"});
    // x: one element per device, sharded along "i", so every device's block is [1.].
    const auto x = darray::full<float, 1>({n}, 1.0f, darray::NamedSharding(mesh, darray::P("i")));
    // y: every device's block becomes the sum of all blocks, [n.]. The result is equal along "i", so y is
    // replicated: shape (1,), one copy per device.
    const auto y = darray::psum(x, "i");

    // This process's copy of y (the shard of its first device), brought to the host.
    const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y.addressable_data(0));
    std::ostringstream line;
    if (show_devices)
      line << "Total devices: " << n << "  |  Devices per task: " << darray::local_device_count() << "\n";
    line << "Process " << darray::process_index()
         << " has y=" << numpy_str(std::vector<float>(host.data(), host.data() + host.size())) << "\n";
    print_in_process_order(line.str());
  } catch (const std::exception& e) {
    std::cerr << "allreduce: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
