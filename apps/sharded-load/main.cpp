// sharded-load: the JAX multi-controller tutorial's "loading data from a single source", the C++ way. Process 0
// (--root) alone creates a 1024x128 array of normal random numbers; scatter_from_root sends every process only the
// blocks of its devices, for a 1-D decomposition (one row block per device) and a 2-D one (a 4x2 mesh on 8
// devices); every process checks its blocks against the source, element by element, and the root gathers the
// array back. Where the tutorial needs mpi4py's comm.scatter and a hand-written 2-D splitter that must match
// make_array_from_callback's indices, here the sharding decides both.
//
//   mpirun -np 8 sharded-load                                   8 processes, 1 device each (the tutorial's set-up)
//   DARRAY_HOST_DEVICE_COUNT=2 mpirun -np 4 sharded-load        4 processes, 2 devices each
//   mpirun -np 4 sharded-load --file a.npy --write              file mode: save a.npy in parallel, then load it
//   mpirun -np 3 sharded-load --file a.npy                      file mode: load a.npy written by any process count
//
// Every process checks its own blocks without the global array: element f of the source is a function of
// (seed, f) alone (a counter-based generator), so a process computes the values of its blocks directly, where the
// tutorial re-created the whole array on every process to compare.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "darray/darray.hpp"

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Element f of the source: a standard normal sample (Box-Muller on two counter-based uniforms).
double source_value(uint64_t seed, int64_t f) {
  const uint64_t key = splitmix64(seed) ^ static_cast<uint64_t>(f);
  const double u1 = (static_cast<double>(splitmix64(2 * key) >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
  const double u2 = static_cast<double>(splitmix64(2 * key + 1) >> 11) * 0x1.0p-53;      // [0, 1)
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

// NumPy's spelling, as the tutorial prints shapes: "(128, 128)".
std::string shape_text(const darray::Shape& s) {
  std::ostringstream os;
  os << "(";
  for (std::size_t d = 0; d < s.size(); ++d) os << (d ? ", " : "") << s[d];
  return os.str() + (s.size() == 1 ? ",)" : ")");
}

struct Decomposition {
  std::string name;
  darray::NamedSharding sharding;
};

// The 2-D mesh: --mesh RxC, or "auto": (devices/2, 2) as the tutorial's (4, 2) on 8 devices, (devices, 1) when
// the device count is odd.
darray::Mesh mesh_2d(const std::string& spec) {
  const int64_t n = darray::device_count();
  if (spec == "auto") return darray::make_mesh(n % 2 == 0 ? darray::Shape{n / 2, 2} : darray::Shape{n, 1}, {"a", "b"});
  int64_t r = 0, c = 0;
  char extra = 0;
  if (std::sscanf(spec.c_str(), "%" SCNd64 "x%" SCNd64 "%c", &r, &c, &extra) != 2 || r < 1 || c < 1)
    throw darray::InvalidArgument("sharded-load", "--mesh \"" + spec + "\"; expected RxC (e.g. 4x2) or auto");
  return darray::make_mesh({r, c}, {"a", "b"});
}

// Scatters the source with one decomposition, checks every local block and the gathered array; true when all match
// on this process.
bool load(const Decomposition& dec, const darray::Shape& shape, int root, uint64_t seed,
          const std::vector<double>& source) {
  const int p = darray::process_index();
  if (p == 0)
    std::cout << "\n"
              << dec.name << ": " << dec.sharding << "\n"
              << darray::visualize_sharding(dec.sharding, shape) << std::flush;
  darray::reset_array_transfer_stats();
  const auto a = darray::scatter_from_root<double, 2>(root, source, shape, dec.sharding);
  const darray::ArrayTransferStats stats = darray::array_transfer_stats();

  std::ostringstream out;
  int64_t mismatches = 0;
  const darray::Shape strides = darray::row_major_strides(shape);
  for (const auto& shard : a.addressable_shards()) {
    const darray::Shape piece = darray::box_shape(shard.index);
    out << "Process " << p << " has array piece " << shape_text(piece) << " on " << shard.device << " at "
        << shard.index << "\n";
    // The shard's data on the host (a no-op mirror in host builds), checked against the source it came from.
    const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), shard.data);
    for (int64_t i = 0; i < piece[0]; ++i)
      for (int64_t j = 0; j < piece[1]; ++j) {
        const int64_t f = (shard.index[0].start + i) * strides[0] + shard.index[1].start + j;
        if (host(i, j) != source_value(seed, f)) ++mismatches;
      }
  }
  out << "Process " << p << " received " << stats.bytes_received << " bytes in " << stats.messages_received
      << " message(s), staged at most " << stats.largest_staging_bytes << " bytes\n";
  if (mismatches > 0) out << "Process " << p << " MISMATCH: " << mismatches << " elements differ from the source\n";

  // And back: the root gathers the blocks (each once) and compares with what it scattered.
  const std::vector<double> back = darray::gather_to_root(a, root);
  bool gathered_ok = true;
  if (p == root) {
    gathered_ok = back == source;
    if (!gathered_ok) out << "Process " << p << " MISMATCH: gather_to_root differs from the source\n";
  }
  darray::print_in_process_order(out.str());
  return mismatches == 0 && gathered_ok;
}

// ---- File mode (--file PATH [--write]) ---------------------------------------------------------------------------
// The tutorial's other answer to "a single source": a file every process can reach. With --write each process
// computes only its own row blocks and io::save_npy writes them into one .npy file with collective MPI-IO (numpy
// reads it with np.load); then each decomposition loads the file with io::load_npy, every process reading only
// the blocks of its devices, whatever process count wrote it. No process ever holds the whole array.

// The source's values for one block, with element `corrupted` (if any) off by one, as --inject-error does above.
std::vector<double> source_block(const darray::Index& b, const darray::Shape& shape, uint64_t seed, int64_t corrupted) {
  std::vector<double> out;
  for (int64_t i = b[0].start; i < b[0].stop; ++i)
    for (int64_t j = b[1].start; j < b[1].stop; ++j) {
      const int64_t f = i * shape[1] + j;
      out.push_back(source_value(seed, f) + (f == corrupted ? 1.0 : 0.0));
    }
  return out;
}

// Loads the file with one decomposition and checks every local block against the generator; true when all match.
bool load_file(const Decomposition& dec, const std::string& path, const darray::Shape& shape, uint64_t seed) {
  const int p = darray::process_index();
  const auto a = darray::io::load_npy<double, 2>(path, dec.sharding);  // throws first for a file of another dtype/rank
  if (p == 0)
    std::cout << "\n"
              << dec.name << ": " << dec.sharding << "\n"
              << darray::visualize_sharding(dec.sharding, shape) << std::flush;
  std::ostringstream out;
  int64_t mismatches = 0;
  for (const auto& shard : a.addressable_shards()) {
    out << "Process " << p << " read array piece " << shape_text(darray::box_shape(shard.index)) << " on "
        << shard.device << " at " << shard.index << "\n";
    const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), shard.data);
    const std::vector<double> want = source_block(shard.index, shape, seed, -1);
    for (std::size_t k = 0; k < want.size(); ++k) mismatches += host.data()[k] != want[k] ? 1 : 0;
  }
  if (mismatches > 0) out << "Process " << p << " MISMATCH: " << mismatches << " elements differ from the source\n";
  darray::print_in_process_order(out.str());
  return mismatches == 0;
}

bool run_file_mode(const std::string& path, bool write, const darray::Shape& shape, uint64_t seed, bool inject_error,
                   const std::vector<Decomposition>& decs) {
  const int p = darray::process_index();
  if (write) {
    const darray::NamedSharding rows(darray::make_mesh({darray::device_count()}, {"a"}), darray::P{"a"});
    const int64_t corrupted = inject_error ? shape[0] * shape[1] / 3 : -1;
    const auto a = darray::make_array_from_callback<double, 2>(
        shape, rows, [&](const darray::Index& b) { return source_block(b, shape, seed, corrupted); });
    darray::io::save_npy(path, a);
    if (p == 0) std::cout << "Wrote " << path << " from " << darray::process_count() << " processes\n";
  }
  const darray::io::NpyHeader h = darray::io::read_npy_header(path);
  if (p == 0) std::cout << h << "\n" << std::flush;
  bool ok = true;
  for (const auto& dec : decs) ok = load_file(dec, path, h.shape, seed) && ok;
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "sharded-load: scatter a 1024x128 array from one process with 1-D and 2-D decompositions and check "
      "every block (the JAX multi-controller tutorial's \"loading data from a single source\")"};
  int64_t rows = 1024, cols = 128;
  int root = 0;
  uint64_t seed = 42;
  std::string mesh = "auto";
  bool transposed = false, inject_error = false;
  app.add_option("--rows", rows, "global rows")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--cols", cols, "global columns")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--root", root, "the process that holds the source array")->capture_default_str();
  app.add_option("--seed", seed, "seed of the source's random numbers")->capture_default_str();
  app.add_option("--mesh", mesh, "2-D mesh RxC over all devices, or auto: (devices/2, 2)")->capture_default_str();
  app.add_flag("--transposed", transposed, "also load with the 2-D mesh's axes swapped, P('b', 'a') (the YZ pencil)");
  std::string file;
  bool write = false;
  app.add_option("--file", file,
                 "file mode: load the array from this .npy file with io::load_npy instead of scattering it; "
                 "blocks are checked against --seed's values, so the file comes from --write");
  app.add_flag("--write", write, "file mode: first create the file with io::save_npy (--rows x --cols)")
      ->needs("--file");
  app.add_flag("--inject-error", inject_error,
               "corrupt one element of the source after computing it, to see the check fail (exit status 1)");
  CLI11_PARSE(app, argc, argv);

  try {
    darray::Environment env(argc, argv);
    const darray::Shape shape{rows, cols};
    const int p = darray::process_index();
    // Only the root allocates the global array; the others pass an empty vector.
    std::vector<double> source;
    if (p == root && file.empty()) {
      source.resize(static_cast<std::size_t>(rows * cols));
      for (int64_t f = 0; f < rows * cols; ++f) source[static_cast<std::size_t>(f)] = source_value(seed, f);
      if (inject_error && !source.empty()) source[source.size() / 3] += 1.0;
      std::cout << "Initial Process " << p << " has array " << shape_text(shape) << " (" << darray::process_count()
                << " processes, " << darray::device_count() << " devices)\n"
                << std::flush;
    }
    std::vector<Decomposition> decs{
        {"1-D decomposition (one row block per device)",
         darray::NamedSharding(darray::make_mesh({darray::device_count()}, {"a"}), darray::P{"a"})}};
    const darray::Mesh m2 = mesh_2d(mesh);
    decs.push_back({"2-D decomposition", darray::NamedSharding(m2, darray::P{"a", "b"})});
    if (transposed) decs.push_back({"2-D decomposition, transposed", darray::NamedSharding(m2, darray::P{"b", "a"})});

    bool ok = true;
    if (!file.empty())
      ok = run_file_mode(file, write, shape, seed, inject_error, decs);
    else
      for (const auto& dec : decs) ok = load(dec, shape, root, seed, source) && ok;
    int mine = ok ? 1 : 0, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, darray::mpi_comm());
    if (p == 0) std::cout << (all ? "\nOK" : "\nFAILED: some blocks differ from the source") << std::endl;
    return all ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "sharded-load: " << e.what() << std::endl;
    return 1;
  }
}
