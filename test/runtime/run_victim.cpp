// A program run through darray::run whose processes fail in the way `mode` says (argv[1]):
//   ok       no error: every process returns 0 and nothing is printed on stderr
//   all      every process throws the same darray::InvalidArgument: one "error:" line, every process returns 1
//   one      process 1 throws, the others finish their body: one "error:" line naming the error, status 1
//   blocked  process 1 throws while the others wait in a collective it never joins: the launch ends non-zero
//            (MPI_Abort after the agreement deadline) with a message naming process 1
#include <darray/darray.hpp>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "ok";
  return darray::run(argc, argv, [&] {
    const darray::Mesh mesh = darray::make_mesh({darray::device_count()}, {"x"});
    const auto a = darray::iota<double, 1>({darray::device_count() * 4}, darray::NamedSharding(mesh, darray::P("x")));
    if (mode == "all") DARRAY_THROW(InvalidArgument, "run_victim", "bad input on every process");
    if (mode == "one" && darray::process_index() == 1)
      DARRAY_THROW(InvalidArgument, "run_victim", "bad input on process 1");
    if (mode == "blocked") {
      if (darray::process_index() == 1) DARRAY_THROW(InvalidArgument, "run_victim", "process 1 gave up");
      const auto s = darray::psum(a, "x");  // waits for process 1 forever
      (void)s;
    }
    std::cout << "process " << darray::process_index() << " done\n";
  });
}
