// bench/migrate: migrate() of a RaggedArray against the floor an MPI code would write for the same rows, measured in
// the same run. Every device holds --rows rows of 8 doubles; a fraction of them (10%, 50%, 100% by default) is bound
// for another device (spread evenly over the others), the rest stays. The baseline is one MPI_Alltoallv of every
// row, already packed by destination process (the rows that stay included, since migrate also hands back a new
// array holding them): no sort, no count exchange, no per-device bookkeeping. A second baseline packs the rows
// first (a host counting sort by destination process, then the Alltoallv), as a code whose rows move between time
// steps must. Times are per call, max over processes; min and median over --reps repetitions of --calls calls.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <darray/darray.hpp>
#include <vector>

#include "time_calls.hpp"
#include "unaliased.hpp"

using namespace darray;

using darray_bench::Stats;
using darray_bench::time_calls;

int main(int argc, char** argv) {
  Environment env(argc, argv);
  CLI::App app{"bench/migrate: migrate against a pre-packed MPI_Alltoallv of the same rows"};
  std::vector<int64_t> rows_list{10000, 100000, 1000000};
  std::vector<double> fractions{0.1, 0.5, 1.0};
  int reps = 5, calls = 5;
  app.add_option("--rows", rows_list, "rows per device, comma-separated")->delimiter(',');
  app.add_option("--moving", fractions, "fractions of rows that change device, comma-separated")->delimiter(',');
  app.add_option("--reps", reps, "repetitions (min and median reported)")->check(CLI::PositiveNumber);
  app.add_option("--calls", calls, "calls per repetition")->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return process_index() == 0 ? app.exit(e) : 1;
  }
  using M = Kokkos::HostSpace;
  constexpr int64_t width = 8;
  const int np = process_count(), me = process_index();
  const int nd = device_count();
  const Mesh mesh = make_mesh({nd}, {"x"});
  if (me == 0) {
    std::printf("# bench/migrate: %d process(es) x %d host device(s), rows of %lld doubles, reps %d x %d\n", np,
                local_device_count(), static_cast<long long>(width), reps, calls);
    std::printf("%10s %7s %10s %12s %12s %9s %9s %7s %14s %9s\n", "rows/dev", "moving", "MiB/proc", "migrate[ms]",
                "a2av[ms]", "ratio", "(median)", "allocs", "pack+a2av[ms]", "ratio");
  }
  for (const int64_t rows : rows_list)
    for (const double moving : fractions) {
      if (nd == 1 && moving > 0) continue;
      // Row i of device d leaves when its hash falls below `moving`; it then goes to one of the other devices.
      auto dest_of = [&](int d, int64_t i) {
        const uint64_t h = (static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(d)) >> 11;
        if (static_cast<double>(h % 1000000) >= moving * 1e6) return d;
        return static_cast<int>((d + 1 + static_cast<int64_t>((h >> 20) % static_cast<uint64_t>(nd - 1))) % nd);
      };
      std::vector<RaggedArray<double, M>::view_type> views;
      std::vector<Kokkos::View<const int*, M>> dest;
      std::vector<int64_t> send_counts(static_cast<std::size_t>(np), 0);  // doubles per destination process
      const RaggedArray<double, M> empty(mesh, width);
      for (const Device& d : empty.local_devices()) {
        RaggedArray<double, M>::view_type v("rows", static_cast<std::size_t>(rows), width);
        Kokkos::View<int*, M> t("dest", static_cast<std::size_t>(rows));
        for (int64_t i = 0; i < rows; ++i) {
          for (int64_t k = 0; k < width; ++k) v(i, k) = static_cast<double>(i * width + k);
          t(i) = dest_of(d.id, i);
          send_counts[static_cast<std::size_t>(mesh.devices()[static_cast<std::size_t>(t(i))].process_index)] += width;
        }
        views.push_back(v);
        dest.push_back(t);
      }
      const RaggedArray<double, M> a(mesh, width, views);
      (void)migrate(a, dest);  // the first call fills the allocation cache
      reset_memory_stats<M>();
      const Stats lib = time_calls(reps, calls, [&] { (void)migrate(a, dest); });
      const std::size_t fresh = memory_stats<M>().allocations_from_system;  // should be 0: all from the cache
      // The baseline: the same rows, packed by destination process, in one Alltoallv.
      std::vector<int> scount(static_cast<std::size_t>(np)), sdispl(scount.size()), rcount(scount.size()),
          rdispl(scount.size());
      for (int q = 0; q < np; ++q)
        scount[static_cast<std::size_t>(q)] = static_cast<int>(send_counts[static_cast<std::size_t>(q)]);
      MPI_Alltoall(scount.data(), 1, MPI_INT, rcount.data(), 1, MPI_INT, MPI_COMM_WORLD);
      int64_t s_total = 0, r_total = 0;
      for (int q = 0; q < np; ++q) {
        sdispl[static_cast<std::size_t>(q)] = static_cast<int>(s_total);
        rdispl[static_cast<std::size_t>(q)] = static_cast<int>(r_total);
        s_total += scount[static_cast<std::size_t>(q)];
        r_total += rcount[static_cast<std::size_t>(q)];
      }
      std::vector<double> sendbuf(static_cast<std::size_t>(s_total), 1.0), recvstore;
      double* const recvbuf = darray_bench::unaliased(recvstore, static_cast<std::size_t>(r_total), sendbuf.data());
      const Stats base = time_calls(reps, calls, [&] {
        MPI_Alltoallv(sendbuf.data(), scount.data(), sdispl.data(), MPI_DOUBLE, recvbuf, rcount.data(), rdispl.data(),
                      MPI_DOUBLE, MPI_COMM_WORLD);
      });
      // What an MPI code pays when its rows are not packed yet: a counting sort by destination process into the
      // send buffer (a count pass, then each row copied to its place), then the same Alltoallv.
      std::vector<int64_t> place(static_cast<std::size_t>(np));
      const Stats packed = time_calls(reps, calls, [&] {
        for (int q = 0; q < np; ++q) place[static_cast<std::size_t>(q)] = sdispl[static_cast<std::size_t>(q)];
        for (std::size_t s = 0; s < views.size(); ++s)
          for (int64_t i = 0; i < rows; ++i) {
            const auto q = static_cast<std::size_t>(mesh.devices()[static_cast<std::size_t>(dest[s](i))].process_index);
            std::memcpy(&sendbuf[static_cast<std::size_t>(place[q])], &views[s](i, 0), width * sizeof(double));
            place[q] += width;
          }
        MPI_Alltoallv(sendbuf.data(), scount.data(), sdispl.data(), MPI_DOUBLE, recvbuf, rcount.data(), rdispl.data(),
                      MPI_DOUBLE, MPI_COMM_WORLD);
      });
      if (me == 0)
        std::printf("%10lld %6.0f%% %10.1f %12.3f %12.3f %9.2f %9.2f %7zu %14.3f %9.2f\n", static_cast<long long>(rows),
                    moving * 100, static_cast<double>(s_total) * 8 / (1 << 20), lib.min * 1e3, base.min * 1e3,
                    lib.min / base.min, lib.median / base.median, fresh, packed.min * 1e3, lib.min / packed.min);
    }
  return 0;
}
