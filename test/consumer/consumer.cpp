// A program written the way a libdarray user writes one: only the umbrella header, an Environment, the process
// and device queries. Built twice by test/consumer: against the installed CMake package, and with nothing but an
// include path (header-only use). Compiling the umbrella header checks that every public header is installed
// and self-contained; running it under mpiexec checks the result links and starts.
#include <mpi.h>
#include <darray/darray.hpp>

#include <iostream>
#include <sstream>

int main(int argc, char** argv) {
  try {
    darray::Environment env(argc, argv);
    // The global device table must be the sum of what every process owns.
    int local = darray::local_device_count(), sum = 0;
    MPI_Allreduce(&local, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    std::ostringstream line;
    line << "consumer: process " << darray::process_index() << "/" << darray::process_count() << " local devices "
         << local << " " << darray::local_devices() << " global devices " << darray::device_count() << "\n";
    std::cout << line.str() << std::flush;
    darray::barrier();
    if (sum != darray::device_count()) {
      std::cerr << "consumer: local device counts add up to " << sum << " but device_count() is "
                << darray::device_count() << "\n";
      return 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "consumer: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
