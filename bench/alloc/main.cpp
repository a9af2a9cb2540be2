// bench/alloc: what the shard memory cache buys. (1) The loop `b = reshard(a, s)` (a fresh output per call) against
// `execute(plan, a, b)` into a kept output, rows -> columns of a matrix of --sizes MiB per process, with the cache
// on and off (off = DARRAY_CACHE_BYTES=0, plain Kokkos allocations): min and median over --reps calls, each the max
// over processes, and the ratio allocating / kept. (2) The resident set size over --rss-calls allocate/free calls
// whose sizes cycle through --rss-sizes sizes (flat after the first cycle, "warm") and whose sizes never repeat
// (bounded by the limit). (3) One call of the allocating reshard, fftn, psum, all_gather and all_to_all against
// their kept forms: time, and the peak bytes the call held beyond its operand and result.
#include <mpi.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <darray/darray.hpp>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

using namespace darray;

namespace {

using Cache = detail::BlockCache<DefaultMemorySpace>;

// One call's time, max over processes.
double time_once(const std::function<void()>& fn) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  fn();
  double t = MPI_Wtime() - t0, tmax = 0;
  MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return tmax;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

// Resident set size of this process in bytes, max over processes.
double rss_bytes() {
  long pages = 0, resident = 0;
  std::ifstream statm("/proc/self/statm");
  statm >> pages >> resident;
  double mine = static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGE_SIZE)), most = 0;
  MPI_Allreduce(&mine, &most, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return most;
}

constexpr double mib = 1024.0 * 1024.0;

void reshard_rows(int mib_per_process, int reps, bool cache_on, std::size_t default_limit) {
  Cache::instance().set_limit(cache_on ? default_limit : 0);
  release_cached_memory();
  const int64_t nd = device_count();
  const int64_t elems = static_cast<int64_t>(mib_per_process) * (1 << 20) / 8 * process_count();
  int64_t n = 1;
  while ((n * 2) * (n * 2) <= elems) n *= 2;
  const int64_t rows = elems / n;
  const Mesh line = make_mesh({nd}, {"x"});
  const NamedSharding from(line, P{"x"}), to(line, P{none, "x"});
  auto a = iota<double, 2>({rows, n}, from);
  auto b = reshard(a, to);
  const auto plan = reshard_plan<double>(from, to, {rows, n});
  execute(*plan, a, b);  // warm: plan, pages of b
  b = reshard(a, to);    // warm: a second output block
  auto kept = reshard(a, to);
  b = reshard(a, to);  // steady state: the cache holds the block the next call takes
  std::vector<double> t_kept, t_alloc;
  reset_memory_stats();
  for (int r = 0; r < reps; ++r) {
    t_kept.push_back(time_once([&] { execute(*plan, a, kept); }));
    t_alloc.push_back(time_once([&] { b = reshard(a, to); }));
  }
  const MemoryStats s = memory_stats();
  if (process_index() == 0)
    std::printf("%-22s %8d %5s %9.2f %9.2f %9.2f %9.2f %7.2f %7.2f %6zu/%zu\n",
                ("rows->cols " + std::to_string(rows) + "x" + std::to_string(n)).c_str(), mib_per_process,
                cache_on ? "on" : "off", min_of(t_kept) * 1e3, median(t_kept) * 1e3, min_of(t_alloc) * 1e3,
                median(t_alloc) * 1e3, min_of(t_alloc) / min_of(t_kept), median(t_alloc) / median(t_kept),
                s.allocations_from_cache, s.allocations_from_cache + s.allocations_from_system);
  std::fflush(stdout);
}

// `calls` allocate/fill/free calls of 1-D float arrays, per process size_of(k) bytes; RSS before, after the first
// `warmup` calls, max, after.
void rss_run(const std::string& name, int calls, int warmup, bool cache_on, std::size_t limit,
             const std::function<std::size_t(int)>& size_of) {
  Cache::instance().set_limit(cache_on ? limit : 0);
  release_cached_memory();
  reset_memory_stats();
  const int64_t nd = device_count();
  const NamedSharding line(make_mesh({nd}, {"x"}), P{"x"});
  const double start = rss_bytes();
  double most = start, warm = start;
  for (int k = 0; k < calls; ++k) {
    const auto elems =
        static_cast<int64_t>(size_of(k) / sizeof(float) / static_cast<std::size_t>(local_device_count()));
    auto z = zeros<float, 1>({elems * nd}, line);  // zero-filled: every page touched
    if (k % 100 == 99 || k == calls - 1) most = std::max(most, rss_bytes());
    if (k == std::min(warmup, calls) - 1) warm = rss_bytes();
  }
  const double end = rss_bytes();
  const MemoryStats s = memory_stats();
  if (process_index() == 0)
    std::printf("%-46s %5s %8.1f %8.1f %8.1f %8.1f %+7.1f%% %8.1f %10zu %8zu\n", name.c_str(), cache_on ? "on" : "off",
                start / mib, warm / mib, most / mib, end / mib, 100.0 * (end - warm) / warm,
                static_cast<double>(s.bytes_cached) / mib, s.allocations_from_cache, s.allocations_from_system);
  std::fflush(stdout);
}

// (3) One call of an allocating form against its kept form: time (min, median), and the cached-allocator bytes the
// allocating call held at its peak beyond its operand and its result, i.e. what it needs besides the arrays the user
// sees (0: no staging, no work arrays per call). run_alloc must assign a fresh result over the previous one.
void one_call(const std::string& name, int reps, std::size_t out_bytes, const std::function<void()>& run_kept,
              const std::function<void()>& run_alloc, const std::function<void()>& drop_result) {
  run_kept();
  run_alloc();  // warm: plans, work buffers, cached blocks
  std::vector<double> t_kept, t_alloc;
  for (int r = 0; r < reps; ++r) {
    t_kept.push_back(time_once(run_kept));
    t_alloc.push_back(time_once(run_alloc));
  }
  drop_result();
  reset_memory_stats();
  const std::size_t before = memory_stats().bytes_in_use;
  run_alloc();
  const std::size_t peak = memory_stats().peak_bytes_in_use;
  double extra = static_cast<double>(peak) - static_cast<double>(before) - static_cast<double>(out_bytes), most = 0;
  MPI_Allreduce(&extra, &most, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (process_index() == 0)
    std::printf("%-30s %9.2f %9.2f %9.2f %9.2f %7.2f %7.2f %10.2f %12.2f\n", name.c_str(), min_of(t_kept) * 1e3,
                median(t_kept) * 1e3, min_of(t_alloc) * 1e3, median(t_alloc) * 1e3, min_of(t_alloc) / min_of(t_kept),
                median(t_alloc) / median(t_kept), static_cast<double>(out_bytes) / mib, most / mib);
  std::fflush(stdout);
}

// The FFT row, where this build has an FFT backend for the memory space (a plan for one without does not compile).
template <class M>
void fftn_row(int mib_per_process, int reps, const Mesh& line) {
  if constexpr (fft::has_backend_v<M>) {
    const int64_t elems = static_cast<int64_t>(mib_per_process) * (1 << 20) / 16 * process_count();
    int64_t n = 16;
    while ((n * 2) * (n * 2) * (n * 2) <= elems) n *= 2;
    const NamedSharding cube(line, P{"x"});
    using C = Kokkos::complex<double>;
    auto a = iota<C, 3, M>({n, n, n}, cube);
    const fft::Plan<double, M> plan({n, n, n}, cube);
    auto kept = plan.allocate_output();
    std::optional<decltype(kept)> b;
    const std::size_t out = static_cast<std::size_t>(n * n * n / process_count()) * sizeof(C);
    one_call(
        "fftn " + std::to_string(n) + "^3 (c2c)", reps, out, [&] { plan.forward(a, kept); }, [&] { b = fft::fftn(a); },
        [&] { b.reset(); });
  }
}

void one_call_table(int mib_per_process, int reps) {
  const int64_t nd = device_count();
  const Mesh line = make_mesh({nd}, {"x"});
  if (process_index() == 0)
    std::printf("\n%-30s %9s %9s %9s %9s %7s %7s %10s %12s\n", "one call [ms; MiB per process]", "kept.min", "kept.med",
                "alloc.min", "alloc.med", "x(min)", "x(med)", "result", "extra peak");
  {
    const int64_t elems = static_cast<int64_t>(mib_per_process) * (1 << 20) / 8 * process_count();
    int64_t n = 1;
    while ((n * 2) * (n * 2) <= elems) n *= 2;
    const NamedSharding from(line, P{"x"}), to(line, P{none, "x"});
    auto a = iota<double, 2>({elems / n, n}, from);
    const auto plan = reshard_plan<double>(from, to, a.shape());
    auto kept = reshard(a, to);
    std::optional<decltype(kept)> b;
    const std::size_t out = static_cast<std::size_t>(elems / process_count()) * sizeof(double);
    one_call(
        "reshard rows->cols " + std::to_string(elems / n) + "x" + std::to_string(n), reps, out,
        [&] { execute(*plan, a, kept); }, [&] { b = reshard(a, to); }, [&] { b.reset(); });
  }
  fftn_row<DefaultMemorySpace>(mib_per_process, reps, line);
  // The collectives, each with a result of about mib_per_process MiB per process (1-D, sharded over all devices).
  const int64_t local = local_device_count();
  const int64_t per_process = static_cast<int64_t>(mib_per_process) * (1 << 20) / 8;
  const NamedSharding by_x(line, P{"x"});
  {
    const int64_t m = per_process / local;  // result elements per device = operand elements per device
    auto x = full<double, 1>({nd * m}, 1.0, by_x);
    auto kept = psum(x, "x");
    std::optional<decltype(kept)> y;
    one_call(
        "psum " + std::to_string(m * 8 >> 20) + " MiB/device", reps, static_cast<std::size_t>(per_process) * 8,
        [&] { psum(x, "x", kept); }, [&] { y = psum(x, "x"); }, [&] { y.reset(); });
  }
  {
    const int64_t m = std::max<int64_t>(1, per_process / (local * nd));  // the result: nd * m per device
    auto x = full<double, 1>({nd * m}, 1.0, by_x);
    auto kept = all_gather(x, "x", 0, tiled);
    std::optional<decltype(kept)> y;
    one_call(
        "all_gather " + std::to_string(nd * m * 8 >> 20) + " MiB/device", reps,
        static_cast<std::size_t>(local * nd * m) * 8, [&] { all_gather(x, "x", 0, tiled, kept); },
        [&] { y = all_gather(x, "x", 0, tiled); }, [&] { y.reset(); });
  }
  {
    const int64_t c = std::max<int64_t>(1, per_process / (local * nd));  // a chunk; nd chunks per device
    auto x = full<double, 1>({nd * nd * c}, 1.0, by_x);
    auto kept = all_to_all(x, "x", 0, 0);
    std::optional<decltype(kept)> y;
    one_call(
        "all_to_all " + std::to_string(nd * c * 8 >> 20) + " MiB/device", reps,
        static_cast<std::size_t>(local * nd * c) * 8, [&] { all_to_all(x, "x", 0, 0, kept); },
        [&] { y = all_to_all(x, "x", 0, 0); }, [&] { y.reset(); });
  }
}

}  // namespace

int main(int argc, char** argv) {
  Environment env(argc, argv);
  CLI::App app{"bench/alloc: allocating vs kept-output reshard loops with and without the memory cache, and RSS"};
  std::vector<int> sizes{64, 256};
  int reps = 7, rss_calls = 10000, rss_sizes = 100, rss_max_kib = 4096;
  app.add_option("--sizes", sizes, "MiB per process, comma-separated")->delimiter(',')->check(CLI::PositiveNumber);
  app.add_option("--reps", reps, "timed calls per loop; min and median reported")->check(CLI::PositiveNumber);
  app.add_option("--rss-calls", rss_calls, "allocate/free calls of the RSS runs")->check(CLI::PositiveNumber);
  app.add_option("--rss-sizes", rss_sizes, "distinct sizes the cycling RSS run goes through")
      ->check(CLI::PositiveNumber);
  app.add_option("--rss-max-kib", rss_max_kib, "largest allocation of the RSS runs, KiB per process")
      ->check(CLI::Range(16, 1 << 20));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return process_index() == 0 ? app.exit(e) : 1;
  }
  const std::size_t limit = memory_stats().cache_limit_bytes;
  const bool root = process_index() == 0;
  if (root) {
    std::printf("# bench/alloc: %d process(es) x %d host device(s), reps %d, cache limit %.0f MiB per process\n",
                process_count(), local_device_count(), reps, static_cast<double>(limit) / mib);
    std::printf("%-22s %8s %5s %9s %9s %9s %9s %7s %7s %9s\n", "pattern", "MiB/proc", "cache", "kept.min", "kept.med",
                "alloc.min", "alloc.med", "x(min)", "x(med)", "cached");
  }
  if (limit == 0) {
    if (root) std::printf("# DARRAY_CACHE_BYTES=0: the cache is off, only the 'off' rows are measured\n");
  }
  for (int s : sizes)
    for (bool on : {true, false})
      if (on ? limit > 0 : true) reshard_rows(s, reps, on, limit);

  if (limit > 0) {
    Cache::instance().set_limit(limit);  // the rows above end with the cache off
    for (int s : sizes) one_call_table(s, reps);
  }

  const std::size_t max_bytes = static_cast<std::size_t>(rss_max_kib) * 1024;
  const std::size_t min_bytes = max_bytes / 4;
  if (root)
    std::printf("\n%-46s %5s %8s %8s %8s %8s %8s %8s %10s %8s\n", "RSS [MiB, max over processes]", "cache", "start",
                "warm", "max", "end", "end/warm", "cached", "from cache", "from sys");
  const auto cycling = [&](int k) {
    return min_bytes +
           (max_bytes - min_bytes) * static_cast<std::size_t>(k % rss_sizes) / static_cast<std::size_t>(rss_sizes);
  };
  // Never the same byte count twice: 64 bytes more each call (sizes still share the cache's size classes).
  const auto growing = [&](int k) { return min_bytes + 64 * static_cast<std::size_t>(k); };
  const std::string cyc = std::to_string(rss_calls) + " calls, " + std::to_string(rss_sizes) + " sizes cycling";
  const std::string grow = std::to_string(rss_calls) + " calls, sizes never repeat";
  for (bool on : {true, false})
    if (on ? limit > 0 : true) rss_run(cyc, rss_calls, rss_sizes, on, limit, cycling);
  for (bool on : {true, false})
    if (on ? limit > 0 : true) rss_run(grow, rss_calls, rss_sizes, on, limit, growing);
  // The same never-repeating sizes under a limit of 4 blocks of the largest size: RSS stays within the bound.
  const std::size_t small_limit = 4 * (growing(rss_calls - 1) + 4096);
  if (limit > 0)
    rss_run(grow + ", limit " + std::to_string(small_limit >> 10) + " KiB", rss_calls, rss_sizes, true, small_limit,
            growing);
  Cache::instance().set_limit(limit);
  return 0;
}
