// io::save_npy under SIGKILL. Modes (argv[1]):
//   init PATH BASE         save iteration BASE
//   loop PATH BASE PIDDIR  save iterations BASE+1, BASE+2, ... forever; after the first save each process writes
//                          PIDDIR/pid.<rank> so the driver can kill one of them at a random moment
//   check PATH             load the file; exit 0 when every element belongs to one complete iteration (prints it)
// Element k of iteration i is i * 1e7 + k, so a file torn between two saves (old and new bytes mixed, or zeros)
// never passes the check. Used by save_kill.sh.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <darray/darray.hpp>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace {
constexpr double stride = 1e7;
const darray::Shape shape = {2048, 2048};  // 32 MiB of float64: long enough that a random kill lands mid-save

// Filled in place by a kernel, so the loop spends its time saving, not building arrays.
void fill(darray::DistributedArray<double, 2>& a, int64_t i) {
  for (const auto& s : a.addressable_shards()) {
    const auto v = s.data;
    const int64_t r0 = s.index[0].start, c0 = s.index[1].start, cols = shape[1];
    const double offset = static_cast<double>(i) * stride;
    Kokkos::parallel_for(
        "save_victim_fill",
        Kokkos::MDRangePolicy<Kokkos::Rank<2>>({0, 0},
                                               {static_cast<int64_t>(v.extent(0)), static_cast<int64_t>(v.extent(1))}),
        KOKKOS_LAMBDA(int64_t r, int64_t c) { v(r, c) = offset + static_cast<double>((r0 + r) * cols + c0 + c); });
  }
  Kokkos::fence();
}
}  // namespace

int main(int argc, char** argv) {
  darray::Environment env(argc, argv);
  using namespace darray;
  const std::string mode = argc > 1 ? argv[1] : "", path = argc > 2 ? argv[2] : "";
  const int64_t base = argc > 3 ? std::atoll(argv[3]) : 0;
  Mesh mesh = make_mesh({device_count()}, {"x"});
  NamedSharding rows(mesh, P{"x"});
  if (mode == "init") {
    auto a = zeros<double, 2>(shape, rows);
    fill(a, base);
    io::save_npy(path, a);
    return 0;
  }
  if (mode == "loop" && argc > 4) {
    auto a = zeros<double, 2>(shape, rows);
    for (int64_t i = base + 1;; ++i) {
      fill(a, i);
      io::save_npy(path, a);
      if (i == base + 1) {
        std::ofstream(std::string(argv[4]) + "/pid." + std::to_string(process_index())) << ::getpid() << "\n";
      }
    }
  }
  if (mode == "check") {
    auto a = io::load_npy<double, 2>(path, NamedSharding(mesh, P{}));
    const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.addressable_shards()[0].data);
    const double it = std::floor(h(0, 0) / stride);
    int64_t bad = 0, first_bad = -1;
    for (int64_t r = 0; r < shape[0]; ++r)
      for (int64_t c = 0; c < shape[1]; ++c)
        if (h(r, c) != it * stride + static_cast<double>(r * shape[1] + c)) {
          if (first_bad < 0) first_bad = r * shape[1] + c;
          ++bad;
        }
    if (bad > 0) {
      std::cout << "TORN: " << bad << " of " << shape[0] * shape[1] << " elements are not from iteration "
                << static_cast<int64_t>(it) << " (first at flat index " << first_bad << ")\n";
      return 1;
    }
    std::cout << "iteration " << static_cast<int64_t>(it) << "\n";
    return 0;
  }
  std::cerr << "usage: save_victim init PATH BASE | loop PATH BASE PIDDIR | check PATH\n";
  return 2;
}
