// Compiled by test/consumer (consumer.no-fft) against the source tree's default darray/config.hpp, which enables no
// FFT backend: building an FFT plan must fail to compile with a message naming what to install, not throw
// NotSupported when the program runs.
#include <darray/darray.hpp>

int main(int argc, char** argv) {
  darray::Environment env(argc, argv);
  const darray::Mesh mesh = darray::make_mesh({darray::device_count()}, {"x"});
  const darray::fft::Plan<double> plan({8, 8, 8}, darray::NamedSharding(mesh, darray::P("x")));
  return plan.transposes();
}
