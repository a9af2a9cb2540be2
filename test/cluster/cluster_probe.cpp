// What the netns cluster test runs besides the apps (test/cluster/run-cluster-test.sh):
//   cluster_probe reshard   a chain of reshards of a 3-D array over a 2-D mesh; prints a hash of the gathered result
//   cluster_probe fft       a pencil FFT (forward, then backward) of reproducible noise; prints hashes of both results
//   cluster_probe local     per process, one JSON line: host, node-local rank and count, and the GPU ordinal the
//                           runtime would pick on a node of --gpus GPUs (DARRAY_LOCAL_DEVICE_IDS unset: by local rank)
//   cluster_probe loop      reshards until killed (at most --steps pairs), so a node can be lost in the middle of one
// The hashes are FNV-1a over the bytes of the whole gathered array: the same program on one node and across nodes
// must print the same hashes (bit-exact), and the reshard hash must be the one of the expected values.
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <darray/darray.hpp>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

template <class T>
uint64_t fnv1a(const std::vector<T>& v) {
  uint64_t h = 0xcbf29ce484222325ULL;
  const auto* p = reinterpret_cast<const unsigned char*>(v.data());
  for (std::size_t i = 0; i < v.size() * sizeof(T); ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

std::string hex(uint64_t h) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

void print_root(const std::string& s) {
  if (darray::process_index() == 0) std::cout << s << std::flush;
}

// Element f of the input: distinct, exactly representable values, so any misplaced element changes the hash.
double value_at(int64_t f) { return static_cast<double>(f) * 0.5 - 1000.0; }

darray::DistributedArray<double, 3> make_values(const darray::Shape& shape, const darray::NamedSharding& s) {
  return darray::make_array_from_callback<double, 3>(shape, s, [&](const darray::Index& box) {
    std::vector<double> v;
    for (int64_t i = box[0].start; i < box[0].stop; ++i)
      for (int64_t j = box[1].start; j < box[1].stop; ++j)
        for (int64_t k = box[2].start; k < box[2].stop; ++k) v.push_back(value_at((i * shape[1] + j) * shape[2] + k));
    return v;
  });
}

// A 2-D mesh over every device: (2, n/2) when the count is even (rows of devices cross nodes), else (1, n).
darray::Mesh mesh_2d() {
  const int64_t n = darray::device_count();
  return n % 2 == 0 ? darray::make_mesh({2, n / 2}, {"r", "c"}) : darray::make_mesh({1, n}, {"r", "c"});
}

int reshard_chain() {
  using darray::none;
  using darray::P;
  const darray::Mesh mesh = mesh_2d();
  const darray::Shape shape{24, 18, 20};
  // x, y and z pencils, a replicated-along-"c" layout, the transposed mesh order, and back.
  const std::vector<darray::PartitionSpec> chain{
      P(none, "r", "c"),         P("r", none, "c"), P("r", "c", none), P("c", "r", none), P("r"),
      P(darray::axes("r", "c")), P(none, "r", "c")};
  auto a = make_values(shape, darray::NamedSharding(mesh, chain[0]));
  for (std::size_t i = 1; i < chain.size(); ++i) a = darray::reshard(a, darray::NamedSharding(mesh, chain[i]));
  const std::vector<double> got = darray::process_allgather(a);
  std::vector<double> want(got.size());
  for (std::size_t f = 0; f < want.size(); ++f) want[f] = value_at(static_cast<int64_t>(f));
  std::ostringstream os;
  os << "reshard chain: " << chain.size() - 1 << " reshards of " << darray::shape_to_string(shape)
     << " float64 on mesh " << mesh.to_string() << ", " << darray::process_count() << " processes\n"
     << "reshard hash " << hex(fnv1a(got)) << " expected " << hex(fnv1a(want)) << (got == want ? " ok" : " WRONG")
     << "\n";
  print_root(os.str());
  return got == want ? 0 : 1;
}

int pencil_fft() {
  const darray::Shape shape{16, 12, 10};
  const darray::NamedSharding s = darray::fft::auto_sharding(shape, darray::fft::Decomposition::pencil);
  const darray::fft::Plan<double> plan(shape, s);
  using C = Kokkos::complex<double>;
  auto x = darray::make_array_from_callback<C, 3>(shape, s, [&](const darray::Index& box) {
    std::vector<C> v;
    for (int64_t i = box[0].start; i < box[0].stop; ++i)
      for (int64_t j = box[1].start; j < box[1].stop; ++j)
        for (int64_t k = box[2].start; k < box[2].stop; ++k) {
          const int64_t f = (i * shape[1] + j) * shape[2] + k;
          v.emplace_back(std::sin(0.37 * static_cast<double>(f)), std::cos(0.11 * static_cast<double>(f * f % 977)));
        }
    return v;
  });
  const auto y = plan.forward(x);
  const auto z = plan.backward(y);
  const auto gx = darray::process_allgather(x), gz = darray::process_allgather(z);
  double err = 0;
  for (std::size_t i = 0; i < gx.size(); ++i)
    err = std::max(err, std::hypot(gz[i].real() - gx[i].real(), gz[i].imag() - gx[i].imag()));
  std::ostringstream os;
  os << "pencil fft: " << darray::shape_to_string(shape) << " complex128, mesh " << s.mesh().to_string() << " spec "
     << s.spec().to_string() << ", " << plan.transposes() << " transposes per transform, " << darray::process_count()
     << " processes\n"
     << "fft forward hash " << hex(fnv1a(darray::process_allgather(y))) << " backward hash " << hex(fnv1a(gz))
     << " round-trip error " << err << (err < 1e-12 ? " ok" : " WRONG") << "\n";
  print_root(os.str());
  return err < 1e-12 ? 0 : 1;
}

int local_report(int gpus) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::ostringstream os;
  os << "{\"process\": " << darray::process_index() << ", \"hostname\": \"" << host
     << "\", \"local_rank\": " << darray::local_process_index()
     << ", \"local_process_count\": " << darray::local_process_count()
     << ", \"launcher_local_rank\": " << darray::launcher().local_rank << ", \"gpu_ordinal\": "
     << darray::detail::select_gpu_ordinal({}, "DARRAY_LOCAL_DEVICE_IDS", darray::local_process_index(), gpus) << "}\n";
  darray::print_in_process_order(os.str());
  return 0;
}

int loop(long steps) {
  // Where each process runs, so that the output of a launch that loses a node says which processes it lost.
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  darray::print_in_process_order("loop: process " + std::to_string(darray::process_index()) + " on " + host + "\n");
  const darray::Mesh mesh = darray::make_mesh({darray::device_count()}, {"x"});
  const darray::NamedSharding rows(mesh, darray::P("x")), cols(mesh, darray::P(darray::none, "x"));
  auto a = darray::iota<double, 2>({256, 256}, rows);
  // A step count, not a time limit: agreeing on a time to stop would need a collective outside the library.
  try {
    for (long step = 0; step < steps; ++step) {
      if (step == 3) print_root("loop: resharding\n");
      auto b = darray::reshard(a, cols);
      a = darray::reshard(b, rows);
    }
  } catch (const darray::Error& e) {
    // Said at once: after a lost node the launcher may end this process before darray::run reports the error.
    std::cerr << "loop: process " << darray::process_index() << ": " << e.what() << std::endl;
    throw;
  }
  std::cout << "process " << darray::process_index() << ": finished the loop without noticing a lost node\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cluster_probe: checks run on the netns test cluster"};
  std::string mode;
  int gpus = 4;
  long steps = 1000000;
  app.add_option("mode", mode, "reshard, fft, local or loop")
      ->required()
      ->check(CLI::IsMember({"reshard", "fft", "local", "loop"}));
  app.add_option("--gpus", gpus, "local: GPUs per node for the ordinal choice")->check(CLI::PositiveNumber);
  app.add_option("--steps", steps, "loop: pairs of reshards to run")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  return darray::run(argc, argv, [&] {
    if (mode == "reshard") return reshard_chain();
    if (mode == "fft") return pencil_fft();
    if (mode == "local") return local_report(gpus);
    return loop(steps);
  });
}
