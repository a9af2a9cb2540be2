// Device queries: which devices the job has and which ones this process drives (jax.devices(),
// jax.local_devices()). Every process runs this code; print_in_process_order keeps the lines in process order.
#include <sstream>

#include "darray/darray.hpp"

int main(int argc, char** argv) {
  return darray::run(argc, argv, [] {  // jax.distributed.initialize(): MPI, Kokkos and the device table
    const int p = darray::process_index();
    std::ostringstream out;
    out << "Process " << p << " global devices : " << darray::devices() << "\n"
        << "Process " << p << " local devices : " << darray::local_devices() << "\n"
        << "# Local devices: [ " << darray::local_device_count() << " ], " << darray::local_devices() << "\n"
        << "# Global devices:[ " << darray::device_count() << " ], " << darray::devices() << "\n"
        << "I am " << p << " I see " << darray::local_device_count() << "/" << darray::device_count() << " devices\n";
    darray::print_in_process_order(out.str());
  });
}
