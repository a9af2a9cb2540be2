// Reshards in a loop; the process named by DARRAY_TEST_KILL_PROCESS kills itself (SIGKILL, no clean-up) in the
// middle, after the others have posted their messages. Used by killed_process.sh: the launch must end, non-zero,
// naming the lost process, instead of the survivors waiting forever.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <darray/darray.hpp>
#include <iostream>

int main(int argc, char** argv) {
  darray::Environment env(argc, argv);
  const int victim =
      static_cast<int>(darray::detail::env_int("DARRAY_TEST_KILL_PROCESS", -1, -1, 1 << 20, "a process index"));
  using namespace darray;
  Mesh mesh = make_mesh({device_count()}, {"x"});
  NamedSharding rows(mesh, P{"x"}), cols(mesh, P{none, "x"});
  auto a = iota<double, 2>({512, 512}, rows);
  for (int step = 0; step < 1000; ++step) {
    if (step == 5 && process_index() == victim) {
      std::cerr << "process " << victim << ": killing myself in the middle of a reshard\n" << std::flush;
      ::kill(::getpid(), SIGKILL);
    }
    auto b = reshard(a, cols);
    a = reshard(b, rows);
  }
  std::cout << "process " << process_index() << ": finished without noticing the lost process\n";
  return 0;
}
