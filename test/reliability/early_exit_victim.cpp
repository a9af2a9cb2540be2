// A process that leaves early while the others enter a collective. Modes (argv[1]):
//   barrier | reshard | psum  process 1 catches a darray::Error and returns from main; the others enter that collective
//   unwinding                 process 1's Environment is destroyed by an exception passing through it
//   run                       under darray::run, process 1's body returns (it caught an error); the others enter a psum
//   normal                    every process runs the collectives and returns (must exit 0, fast)
// Used by early_exit.sh: the launch must end non-zero within DARRAY_SHUTDOWN_TIMEOUT_S, with one message naming
// process 1, instead of hanging.
#include <darray/darray.hpp>
#include <iostream>
#include <string>

namespace {
void collective(const std::string& mode) {
  using namespace darray;
  Mesh mesh = make_mesh({device_count()}, {"x"});
  NamedSharding rows(mesh, P{"x"}), cols(mesh, P{darray::none, "x"});
  auto a = iota<double, 2>({4 * device_count(), 4 * device_count()}, rows);  // even blocks, as psum needs
  if (mode == "barrier" || mode == "unwinding") barrier();
  if (mode == "reshard" || mode == "normal") a = reshard(reshard(a, cols), rows);
  if (mode == "psum" || mode == "normal") a = psum(a, {"x"});
  if (mode == "normal") barrier();
}
}  // namespace

int main(int argc, char** argv) {
  using darray::InvalidArgument;
  using darray::IoError;
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "unwinding") {
    try {
      darray::Environment env(argc, argv);
      if (darray::process_index() == 1) DARRAY_THROW(IoError, "test", "simulated failure on process 1");
      collective(mode);
    } catch (const darray::Error& e) {
      std::cerr << "caught after the Environment ended: " << e.what() << "\n";
      return 3;
    }
    return 0;
  }
  if (mode == "run")
    return darray::run(argc, argv, [&] {
      if (darray::process_index() == 1) {
        std::cerr << "process 1 caught an error and its body returns\n";
        return;
      }
      collective("psum");
      std::cout << "process " << darray::process_index() << ": finished without process 1\n";
    });
  darray::Environment env(argc, argv);
  if (mode != "normal" && darray::process_index() == 1) {
    try {
      DARRAY_THROW(InvalidArgument, "test", "simulated failure on process 1");
    } catch (const darray::Error& e) {
      std::cerr << "process 1 caught \"" << e.what() << "\" and returns from main\n";
      return 0;
    }
  }
  collective(mode);
  if (mode != "normal") std::cout << "process " << darray::process_index() << ": finished without process 1\n";
  return 0;
}
