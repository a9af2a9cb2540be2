// bench/halo: HaloExchange::exchange() against the hand-written exchange an MPI code would write, measured in the
// same run. A (rows, cols) array of doubles is split into row slabs over every device (P("x") on a 1-D mesh);
// each slab is padded by `width` rows above and below, periodic along dim 0. The hand-written version copies the
// edge rows between neighbouring devices of one process with memcpy and exchanges the slabs at process boundaries
// with two MPI_Sendrecv calls (rows are contiguous, so no packing is needed: the floor of any halo exchange).
// --memory default runs on the default memory space (a GPU's in a GPU build): the hand-written exchange then copies
// between devices of one process on the device and sends host copies of the edge rows (host_staging.hpp).
// Times are per exchange, max over processes; min and median over --reps repetitions of --calls exchanges, darray's
// and the hand-written exchange timed in turns (repetition by repetition).
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <darray/darray.hpp>
#include <functional>
#include <string>
#include <vector>

#include "host_staging.hpp"
#include "time_calls.hpp"

using namespace darray;

using darray_bench::Stats;
using darray_bench::time_calls_in_turns;

namespace {

// The exchanges of every --cols row length on arrays of memory space M.
template <class M>
void run(const std::vector<int64_t>& cols_list, int64_t rows_per_device, int64_t width, int reps, int calls) {
  const int np = process_count(), k = local_device_count(), me = process_index();
  const int64_t nd = device_count();
  const int next = (me + 1) % np, prev = (me + np - 1) % np;
  const Mesh mesh = make_mesh({nd}, {"x"});
  for (const int64_t cols : cols_list) {
    const Shape shape{nd * rows_per_device, cols};
    const HaloExchange<double, 2, M> halo(shape, NamedSharding(mesh, P("x")), {width, 0},
                                          {Boundary::periodic, Boundary::open});
    auto padded = halo.allocate();
    // The same padded blocks, exchanged by hand: row r of a padded block starts at r * cols.
    const auto edge = static_cast<std::size_t>(width * cols);
    const int64_t top = width, bottom = rows_per_device;  // first interior rows to send up / down
    auto row = [&](int a, int64_t r) { return padded[static_cast<std::size_t>(a)].data.data() + r * cols; };
    // Edge rows through host copies where MPI is handed device memory it cannot read (host_staging.hpp).
    std::vector<double> out_edge(darray_bench::staged_v<M> ? edge : 0), in_edge(out_edge.size());
    auto sendrecv = [&](const double* send, int to, double* recv, int from, int tag) {
      if constexpr (!darray_bench::staged_v<M>) {
        MPI_Sendrecv(send, static_cast<int>(edge), MPI_DOUBLE, to, tag, recv, static_cast<int>(edge), MPI_DOUBLE, from,
                     tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        darray_bench::copy_to_host<M>(out_edge.data(), send, edge * 8);
        MPI_Sendrecv(out_edge.data(), static_cast<int>(edge), MPI_DOUBLE, to, tag, in_edge.data(),
                     static_cast<int>(edge), MPI_DOUBLE, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        darray_bench::copy_from_host<M>(recv, in_edge.data(), edge * 8);
      }
    };
    auto copy = [&](double* dst, const double* src) { darray_bench::copy_in_space<M>(dst, src, edge * 8); };
    auto by_hand = [&] {
      for (int a = 0; a + 1 < k; ++a) {
        copy(row(a + 1, 0), row(a, bottom));                     // a's last rows down
        copy(row(a, rows_per_device + width), row(a + 1, top));  // a+1's first rows up
      }
      const int last = k - 1;
      if (np == 1) {
        copy(row(0, 0), row(last, bottom));
        copy(row(last, rows_per_device + width), row(0, top));
        return;
      }
      sendrecv(row(last, bottom), next, row(0, 0), prev, 1);
      sendrecv(row(0, top), prev, row(last, rows_per_device + width), next, 2);
    };
    // In turns, repetition by repetition: timed one after the other, the row compared two moments of this VM.
    const std::vector<Stats> both = time_calls_in_turns(reps, calls, {[&] { halo.exchange(padded); }, by_hand});
    const Stats &lib = both[0], &hand = both[1];
    if (me == 0)
      std::printf("%8lld %12.1f %12.2f %12.2f %9.2f %9.2f\n", static_cast<long long>(cols), edge * 8 / 1024.0,
                  lib.min * 1e6, hand.min * 1e6, lib.min / hand.min, lib.median / hand.median);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Environment env(argc, argv);
  CLI::App app{"bench/halo: HaloExchange against a hand-written memcpy + MPI_Sendrecv exchange"};
  std::vector<int64_t> cols_list{64, 4096, 65536};
  int64_t rows_per_device = 64, width = 2;
  int reps = 7, calls = 20;
  std::string memory = "host";
  app.add_option("--cols", cols_list, "row lengths (doubles), comma-separated")->delimiter(',');
  app.add_option("--rows", rows_per_device, "rows per device")->check(CLI::PositiveNumber);
  app.add_option("--width", width, "halo rows on each side")->check(CLI::PositiveNumber);
  app.add_option("--reps", reps, "repetitions (min and median reported)")->check(CLI::PositiveNumber);
  app.add_option("--calls", calls, "exchanges per repetition")->check(CLI::PositiveNumber);
  app.add_option("--memory", memory, "host, or default: the default memory space (a GPU's in a GPU build)")
      ->check(CLI::IsMember({"host", "default"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return process_index() == 0 ? app.exit(e) : 1;
  }
  const int np = process_count(), k = local_device_count(), me = process_index();
  if (width > rows_per_device) {
    if (me == 0) std::fprintf(stderr, "--width must not exceed --rows\n");
    return 1;
  }
  if (me == 0) {
    const bool staged = memory != "host" && darray_bench::staged_v<DistributedArray<double, 2>::memory_space>;
    std::printf("# bench/halo: %d process(es) x %d %s device(s), %lld rows per device, width %lld, reps %d x %d%s\n",
                np, k, staged ? "GPU" : "host", static_cast<long long>(rows_per_device), static_cast<long long>(width),
                reps, calls, staged ? ", edges staged through the host by hand" : "");
    std::printf("%8s %12s %12s %12s %9s %9s\n", "cols", "KiB/edge", "darray[us]", "hand[us]", "ratio", "(median)");
  }
  if (memory == "host")
    run<Kokkos::HostSpace>(cols_list, rows_per_device, width, reps, calls);
  else
    run<DistributedArray<double, 2>::memory_space>(cols_list, rows_per_device, width, reps, calls);
  return 0;
}
