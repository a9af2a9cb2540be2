// bench/pack: the exchange engine's pack and unpack copies (detail::strided_copy, the one box-copy kernel) against
// a plain copy of the same bytes in the same memory space, measured in the same run: Kokkos::deep_copy between two
// contiguous views, which is cudaMemcpy device-to-device on a GPU and memcpy on the host. Pieces are those a
// reshard or an FFT transpose packs from an n^3 block of doubles: slabs along each dim (contiguous, rows, strided
// elements) and a permuted copy (an FFT stage stored as (n1, n0, n2)). Efficiency = copy time / kernel time.
#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <darray/darray.hpp>
#include <functional>
#include <string>
#include <vector>

using namespace darray;

namespace {

using Space = DefaultMemorySpace;
using Exec = Space::execution_space;

double time_min(int reps, const std::function<void()>& fn) {
  fn();
  Exec().fence();
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    Exec().fence();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  Environment env(argc, argv);
  CLI::App app{"bench/pack: pack/unpack kernels against a device-to-device copy of the same bytes"};
  int64_t n = 256;
  int reps = 10;
  app.add_option("--n", n, "block edge (n^3 doubles)")->check(CLI::PositiveNumber);
  app.add_option("--reps", reps, "repetitions (the minimum is printed)")->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return process_index() == 0 ? app.exit(e) : 1;
  }
  const auto total = static_cast<std::size_t>(n * n * n);
  Kokkos::View<double*, Space> block("block", total), packed("packed", total), copy("copy", total);
  Kokkos::deep_copy(block, 1.0);
  const Index whole{{0, n}, {0, n}, {0, n}};
  struct Piece {
    std::string name;
    Index box;
  };
  const int64_t h = n / 2;
  const std::vector<Piece> pieces{{"slab dim 0 (contiguous)", {{0, h}, {0, n}, {0, n}}},
                                  {"slab dim 1 (rows)", {{0, n}, {0, h}, {0, n}}},
                                  {"slab dim 2 (half rows)", {{0, n}, {0, n}, {0, h}}},
                                  {"pencil 0,1 (rows)", {{0, h}, {0, h}, {0, n}}},
                                  {"column dim 2 (8-wide)", {{0, n}, {0, n}, {0, 8}}}};
  if (process_index() == 0)
    std::printf("# bench/pack: %s, block %lld^3 doubles (%.0f MiB), min of %d\n", Kokkos::DefaultExecutionSpace::name(),
                static_cast<long long>(n), total * 8.0 / (1 << 20), reps);
  if (process_index() == 0)
    std::printf("%-26s %9s %11s %11s %11s %8s %8s\n", "piece", "MiB", "pack[GB/s]", "unpack", "copy[GB/s]", "pack%",
                "unpack%");
  for (const Piece& p : pieces) {
    const auto bytes = static_cast<std::size_t>(volume(p.box)) * 8;
    const detail::CopyGeometry pack = detail::box_copy_geometry(whole, p.box, p.box);
    const detail::CopyGeometry unpack = detail::box_copy_geometry(p.box, whole, p.box);
    const double t_pack =
        time_min(reps, [&] { detail::strided_copy<double, Space>(Exec(), block.data(), packed.data(), pack); });
    const double t_unpack =
        time_min(reps, [&] { detail::strided_copy<double, Space>(Exec(), packed.data(), block.data(), unpack); });
    auto src = Kokkos::subview(packed, std::make_pair(std::size_t(0), bytes / 8));
    auto dst = Kokkos::subview(copy, std::make_pair(std::size_t(0), bytes / 8));
    const double t_copy = time_min(reps, [&] { Kokkos::deep_copy(dst, src); });
    // Bytes read plus bytes written, as a device-to-device copy is usually reported.
    auto gbs = [&](double t) { return 2.0 * static_cast<double>(bytes) / t / 1e9; };
    if (process_index() == 0)
      std::printf("%-26s %9.1f %11.1f %11.1f %11.1f %7.0f%% %7.0f%%\n", p.name.c_str(), bytes / 1048576.0, gbs(t_pack),
                  gbs(t_unpack), gbs(t_copy), 100 * t_copy / t_pack, 100 * t_copy / t_unpack);
  }
  // An FFT stage's permuted layout: the whole block from (n0, n1, n2) to (n1, n0, n2) order.
  {
    detail::CopyGeometry g;
    g.rank = 3;
    for (int d = 0; d < 3; ++d) g.extent[d] = n;
    g.src_stride[0] = n * n;
    g.src_stride[1] = n;
    g.src_stride[2] = 1;
    g.dst_stride[0] = n;
    g.dst_stride[1] = n * n;
    g.dst_stride[2] = 1;
    const double t =
        time_min(reps, [&] { detail::strided_copy<double, Space>(Exec(), block.data(), packed.data(), g); });
    const double t_copy = time_min(reps, [&] { Kokkos::deep_copy(copy, block); });
    const double bytes = static_cast<double>(total) * 8;
    if (process_index() == 0)
      std::printf("%-26s %9.1f %11.1f %11s %11.1f %7.0f%% %8s\n", "permute (n1,n0,n2)", bytes / 1048576.0,
                  2 * bytes / t / 1e9, "-", 2 * bytes / t_copy / 1e9, 100 * t_copy / t, "-");
  }
  return 0;
}
