// io::load_npy while the file is removed, recreated and replaced under it. Modes (argv[1]):
//   make PATH ITERATION   save one version of the file (element k of iteration i is i * 1e7 + k)
//   loop PATH COUNT       load the file COUNT times into rows sharded over every device; each load must either
//                         return one complete version (every element from the same iteration, on every process)
//                         or throw the same darray::Error on every process. Prints how many of each.
// Used by load_churn.sh, which churns the file while `loop` runs. Before the fix, a process whose MPI_File_open
// failed (the file had gone) left the others waiting inside Open MPI's collective open: the launch hung.
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <darray/darray.hpp>
#include <iostream>
#include <string>

namespace {
constexpr double stride = 1e7;
const darray::Shape shape = {256, 256};

// The iteration every local element belongs to, or -1 when the local elements mix iterations (a torn load).
int64_t local_iteration(const darray::DistributedArray<double, 2>& a) {
  int64_t it = -2;
  for (const auto& s : a.addressable_shards()) {
    const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s.data);
    for (int64_t r = 0; r < static_cast<int64_t>(h.extent(0)); ++r)
      for (int64_t c = 0; c < static_cast<int64_t>(h.extent(1)); ++c) {
        const double flat = static_cast<double>((s.index[0].start + r) * shape[1] + s.index[1].start + c);
        const double v = h(r, c);
        const int64_t i = static_cast<int64_t>(std::floor(v / stride));
        if (v != static_cast<double>(i) * stride + flat) return -1;
        if (it == -2) it = i;
        if (it != i) return -1;
      }
  }
  return it;
}

// True when text is the same on every process.
bool same_everywhere(const std::string& text) {
  int len = static_cast<int>(text.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string root = text;
  root.resize(static_cast<std::size_t>(len));
  MPI_Bcast(&root[0], len, MPI_CHAR, 0, MPI_COMM_WORLD);
  int mine = root == text ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}
}  // namespace

int main(int argc, char** argv) {
  darray::Environment env(argc, argv);
  using namespace darray;
  const std::string mode = argc > 1 ? argv[1] : "", path = argc > 2 ? argv[2] : "";
  const int64_t arg = argc > 3 ? std::atoll(argv[3]) : 0;
  const Mesh mesh = make_mesh({device_count()}, {"x"});
  const NamedSharding rows(mesh, P{"x"});
  if (mode == "make") {
    auto a = make_array_from_callback<double, 2>(shape, rows, [&](const Index& box) {
      std::vector<double> v;
      for (int64_t r = box[0].start; r < box[0].stop; ++r)
        for (int64_t c = box[1].start; c < box[1].stop; ++c)
          v.push_back(static_cast<double>(arg) * stride + static_cast<double>(r * shape[1] + c));
      return v;
    });
    io::save_npy(path, a);
    return 0;
  }
  if (mode == "loop") {
    int64_t complete = 0, errors = 0, changed = 0;
    std::string first_error, first_changed;
    for (int64_t k = 0; k < arg; ++k) {
      std::string error;
      int64_t it = -2;
      try {
        it = local_iteration(io::load_npy<double, 2>(path, rows));
      } catch (const darray::Error& e) {
        error = e.what();
      }
      // An error must be the same error on every process; a success one complete version everywhere.
      if (!same_everywhere(error)) {
        std::cout << "FAIL: load " << k << ": processes disagree; process " << process_index() << " got \"" << error
                  << "\"" << std::endl;
        return 1;
      }
      if (!error.empty()) {
        ++errors;
        if (first_error.empty()) first_error = error;
        if (error.find("changed while being loaded") != std::string::npos && changed++ == 0) first_changed = error;
        continue;
      }
      int64_t lo = 0, hi = 0;
      MPI_Allreduce(&it, &lo, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
      MPI_Allreduce(&it, &hi, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
      if (lo < 0 || lo != hi) {
        if (process_index() == 0)
          std::cout << "FAIL: load " << k << " returned a mix of versions (iterations " << lo << " to " << hi << ")"
                    << std::endl;
        return 1;
      }
      ++complete;
    }
    if (process_index() == 0)
      std::cout << "loads: " << complete << " complete, " << errors << " errors, " << changed
                << " of them for a file that changed mid-load\n"
                << (first_error.empty() ? "" : "first error: " + first_error + "\n")
                << (first_changed.empty() ? "" : "first change: " + first_changed + "\n") << std::flush;
    return 0;
  }
  std::cerr << "usage: load_victim make PATH ITERATION | loop PATH COUNT\n";
  return 2;
}
