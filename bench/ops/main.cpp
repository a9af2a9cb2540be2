// bench/ops: the ops layer against the hand-written code it replaces, in one run, on a (rows, 1024) double array
// sharded P("x") over every device (--mib MiB per process):
//   map, a + b, a * 2   vs allocating the result views and one Kokkos parallel_for per shard
//   sum, max, norm      vs one Kokkos parallel_reduce per shard and one MPI_Allreduce
//   sum(a, 0)           vs a per-shard column reduce and psum over "x"
// Each time is the slowest process's; min and median over --reps, and their ratios (ops / hand-written).
//   DARRAY_HOST_DEVICE_COUNT=4 mpirun -np 2 bench/ops/ops --mib 64 --reps 10
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "darray/darray.hpp"

namespace {

using Array = darray::DistributedArray<double, 2>;
using Exec = Kokkos::DefaultExecutionSpace;
using Policy = Kokkos::RangePolicy<Exec, Kokkos::IndexType<int64_t>>;

// Seconds of fn on the slowest process, per repetition.
std::vector<double> time_reps(int reps, const std::function<void()>& fn) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    MPI_Barrier(darray::mpi_comm());
    const double t0 = MPI_Wtime();
    fn();
    double dt = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, darray::mpi_comm());
    t.push_back(dt);
  }
  std::sort(t.begin(), t.end());
  return t;
}

double median(const std::vector<double>& t) { return t[t.size() / 2]; }

// New shards shaped like a's: what a hand-written element-wise loop producing a new array allocates.
std::vector<Array::view_type> new_views(const Array& a) {
  std::vector<Array::view_type> v;
  for (const auto& s : a.addressable_shards())
    v.emplace_back(Kokkos::view_alloc("hand", Kokkos::WithoutInitializing), s.data.extent(0), s.data.extent(1));
  return v;
}

// The hand-written reductions: a parallel_reduce per shard (named functions: CUDA allows device lambdas only there).
struct SumTag {
  double init = 0;
  void run(const double* x, int64_t m, double& v) const {
    Kokkos::parallel_reduce(
        Policy(0, m), KOKKOS_LAMBDA(int64_t i, double& s) { s += x[i]; }, v);
  }
  double join(double p, double q) const { return p + q; }
};
struct MaxTag {
  double init = -HUGE_VAL;
  void run(const double* x, int64_t m, double& v) const {
    Kokkos::parallel_reduce(
        Policy(0, m), KOKKOS_LAMBDA(int64_t i, double& s) { s = x[i] > s ? x[i] : s; }, Kokkos::Max<double>(v));
  }
  double join(double p, double q) const { return std::max(p, q); }
};
struct Norm2Tag {
  double init = 0;
  void run(const double* x, int64_t m, double& v) const {
    Kokkos::parallel_reduce(
        Policy(0, m), KOKKOS_LAMBDA(int64_t i, double& s) { s += x[i] * x[i]; }, v);
  }
  double join(double p, double q) const { return p + q; }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench/ops: ops-layer calls vs hand-written Kokkos loops + MPI"};
  double mib = 64;
  int reps = 10;
  app.add_option("--mib", mib, "MiB of doubles per process")->check(CLI::PositiveNumber);
  app.add_option("--reps", reps, "repetitions (min and median reported)")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  return darray::run(argc, argv, [&] {
    const int n = darray::device_count();
    const int64_t cols = 1024;
    const auto rows =
        std::max<int64_t>(n, static_cast<int64_t>(mib * 1048576.0 * darray::process_count() / sizeof(double) / cols));
    const darray::Mesh mesh = darray::make_mesh({n}, {"x"});
    const darray::NamedSharding sharding(mesh, darray::P("x"));
    const Array a = darray::map(
        darray::iota<double, 2>({rows, cols}, sharding), KOKKOS_LAMBDA(double v) { return std::sin(v * 1e-3); });
    const Array b = darray::full_like(a, 0.5);
    double sink = 0;

    struct Row {
      std::string name;
      std::vector<double> ops, hand;
    };
    std::vector<Row> rows_out;
    auto bench = [&](const std::string& name, const std::function<void()>& ops, const std::function<void()>& hand) {
      ops();
      hand();  // warm up both
      rows_out.push_back(Row{name, time_reps(reps, ops), time_reps(reps, hand)});
    };

    bench(
        "map 2x+1",
        [&] {
          darray::map(
              a, KOKKOS_LAMBDA(double x) { return 2 * x + 1; });
        },
        [&] {
          auto out = new_views(a);
          for (std::size_t k = 0; k < out.size(); ++k) {
            const double* x = a.addressable_data(k).data();
            double* y = out[k].data();
            Kokkos::parallel_for(
                Policy(0, static_cast<int64_t>(out[k].size())), KOKKOS_LAMBDA(int64_t i) { y[i] = 2 * x[i] + 1; });
          }
          Kokkos::fence();
        });
    bench(
        "a + b", [&] { (void)(a + b); },
        [&] {
          auto out = new_views(a);
          for (std::size_t k = 0; k < out.size(); ++k) {
            const double *x = a.addressable_data(k).data(), *z = b.addressable_data(k).data();
            double* y = out[k].data();
            Kokkos::parallel_for(
                Policy(0, static_cast<int64_t>(out[k].size())), KOKKOS_LAMBDA(int64_t i) { y[i] = x[i] + z[i]; });
          }
          Kokkos::fence();
        });
    bench(
        "a * 2", [&] { (void)(a * 2); },
        [&] {
          auto out = new_views(a);
          for (std::size_t k = 0; k < out.size(); ++k) {
            const double* x = a.addressable_data(k).data();
            double* y = out[k].data();
            Kokkos::parallel_for(
                Policy(0, static_cast<int64_t>(out[k].size())), KOKKOS_LAMBDA(int64_t i) { y[i] = x[i] * 2; });
          }
          Kokkos::fence();
        });
    auto hand_reduce = [&](auto reducer_tag, MPI_Op op) {
      double mine = reducer_tag.init;
      for (std::size_t k = 0; k < a.addressable_shards().size(); ++k) {
        const double* x = a.addressable_data(k).data();
        double v = 0;
        reducer_tag.run(x, static_cast<int64_t>(a.addressable_data(k).size()), v);
        mine = reducer_tag.join(mine, v);
      }
      MPI_Allreduce(MPI_IN_PLACE, &mine, 1, MPI_DOUBLE, op, darray::mpi_comm());
      sink += mine;
    };
    bench(
        "sum", [&] { sink += darray::sum(a); }, [&] { hand_reduce(SumTag{}, MPI_SUM); });
    bench(
        "max", [&] { sink += darray::max(a); }, [&] { hand_reduce(MaxTag{}, MPI_MAX); });
    bench(
        "norm", [&] { sink += darray::norm(a); }, [&] { hand_reduce(Norm2Tag{}, MPI_SUM); });
    bench(
        "sum(a, 0)", [&] { (void)darray::sum(a, 0); },
        [&] {
          // Column sums of each block (one thread per column), then psum over "x".
          std::vector<darray::Shard<double, 1>> parts;
          for (const auto& s : a.addressable_shards()) {
            Kokkos::View<double*> v(Kokkos::view_alloc("hand", Kokkos::WithoutInitializing), cols);
            const double* x = s.data.data();
            double* y = v.data();
            const auto r = static_cast<int64_t>(s.data.extent(0));
            Kokkos::parallel_for(
                Policy(0, cols), KOKKOS_LAMBDA(int64_t j) {
                  double acc = 0;
                  for (int64_t i = 0; i < r; ++i) acc += x[i * cols + j];
                  y[j] = acc;
                });
            parts.push_back(darray::Shard<double, 1>{s.device, darray::Index{s.index[1]}, s.replica_id, v});
          }
          Kokkos::fence();
          const darray::NamedSharding rs(mesh, darray::P());
          const auto partial = darray::detail::adopt_shards<double, 1, darray::DefaultMemorySpace>({cols}, rs, parts);
          (void)darray::psum(partial, "x");
        });

    if (darray::process_index() == 0) {
      std::printf(
          "bench/ops: (%lld, %lld) doubles sharded P(\"x\"), %.0f MiB per process, %d processes x %d devices, "
          "%d reps\n",
          static_cast<long long>(rows), static_cast<long long>(cols), mib, darray::process_count(),
          darray::local_device_count(), reps);
      std::printf("%-10s %11s %11s %11s %11s %9s %9s\n", "op", "ops min ms", "ops med ms", "hand min", "hand med",
                  "ratio min", "ratio med");
      for (const auto& r : rows_out)
        std::printf("%-10s %11.3f %11.3f %11.3f %11.3f %9.3f %9.3f\n", r.name.c_str(), 1e3 * r.ops.front(),
                    1e3 * median(r.ops), 1e3 * r.hand.front(), 1e3 * median(r.hand), r.ops.front() / r.hand.front(),
                    median(r.ops) / median(r.hand));
      std::printf("(checksum %g)\n", sink);
    }
  });
}
