// bench/reshard: reshard throughput against baselines measured in the same run, on whatever layout it is
// launched with. Per size and pattern it prints the time (max over processes, best of --reps, each rep one call or a
// loop of --calls calls; the kept and allocating calls, the packed MPI_Alltoall and the memcpy in turns), GB/s of the
// bytes each process holds, and the ratios to (a) MPI_Alltoall of the same bytes already packed, (a') the hand-written
// MPI transpose of the same layout (one MPI_Alltoallw whose datatypes walk the strided side in place), (b) FFTW-MPI's
// transpose of the same matrix (FFTW_MEASURE), (c) memcpy of the same bytes, and staging memory against local shard
// bytes. Also: the device table, Mesh, shardings and plan of one process in 4,096- to 1,048,576-device meshes.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <darray/darray.hpp>
#include <functional>
#include <iostream>
#include <vector>

#include "time_calls.hpp"
#include "unaliased.hpp"

#if defined(DARRAY_BENCH_HAS_FFTW_MPI)
#include <fftw3-mpi.h>
#endif

using namespace darray;

namespace {

double now() { return MPI_Wtime(); }

// Calls per repetition (--calls): 1 times single calls, each after a barrier; more time a loop of calls, as a time
// stepper makes them, and report the time per call.
int calls_per_rep = 1;

// Best over reps of the max over processes of fn's time (per call, over calls_per_rep calls in a row).
double time_it(int reps, const std::function<void()>& fn) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = now();
    for (int c = 0; c < calls_per_rep; ++c) fn();
    double t = (now() - t0) / calls_per_rep, tmax = 0;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    best = std::min(best, tmax);
  }
  return best;
}

struct Row {
  std::string pattern;
  double mib = 0;
  double t = 0, t_alloc = 0, alltoall = 0, alltoallw = 0, fftw = 0, memcpy_t = 0;
  double local_bytes = 0;
  double staging = 0;
};

void print_header() {
  std::printf("%-26s %7s %9s %10s %7s %10s %11s %10s %8s %8s\n", "pattern", "MiB", "time[ms]", "+alloc[ms]", "GB/s",
              "/alltoall", "/alltoallw", "/fftw-mpi", "/memcpy", "staging");
}

void print_row(const Row& r) {
  char fftw[32];
  if (r.fftw > 0)
    std::snprintf(fftw, sizeof fftw, "%10.2f", r.t / r.fftw);
  else
    std::snprintf(fftw, sizeof fftw, "%10s", "-");
  char a2a[32];
  if (r.alltoall > 0)
    std::snprintf(a2a, sizeof a2a, "%10.2f", r.t / r.alltoall);
  else
    std::snprintf(a2a, sizeof a2a, "%10s", "-");
  char a2aw[32];
  if (r.alltoallw > 0)
    std::snprintf(a2aw, sizeof a2aw, "%11.2f", r.t / r.alltoallw);
  else
    std::snprintf(a2aw, sizeof a2aw, "%11s", "-");
  std::printf("%-26s %7.0f %9.2f %10.2f %7.2f %s %s %s %8.2f %7.2fx\n", r.pattern.c_str(), r.mib, r.t * 1e3,
              r.t_alloc * 1e3, r.local_bytes / r.t / 1e9, a2a, a2aw, fftw, r.t / r.memcpy_t, r.staging / r.local_bytes);
  std::fflush(stdout);
}

// MPI_Alltoall of `bytes` per process, already packed: the communication floor of any transpose. Its buffers, and
// the call on them (empty where it does not apply: one process, or messages past INT_MAX).
struct PackedAlltoall {
  std::vector<char> send, store;
  char* recv = nullptr;
  std::function<void()> call;  // holds `this`: the struct stays where it was made
  PackedAlltoall(const PackedAlltoall&) = delete;
  PackedAlltoall& operator=(const PackedAlltoall&) = delete;
  explicit PackedAlltoall(std::size_t bytes) {
    const int np = process_count();
    const std::size_t per = bytes / static_cast<std::size_t>(np);
    if (per > static_cast<std::size_t>(INT_MAX) || np == 1) return;
    send.assign(per * static_cast<std::size_t>(np), 1);
    recv = darray_bench::unaliased(store, send.size(), send.data());
    call = [this, per] {
      MPI_Alltoall(send.data(), static_cast<int>(per), MPI_BYTE, recv, static_cast<int>(per), MPI_BYTE, MPI_COMM_WORLD);
    };
  }
};

// The hand-written MPI transpose, one device per process: a block of src_elems doubles to one of dst_elems, one
// MPI_Alltoallw whose per-peer datatypes (send_type(p) at byte send_displ(p), recv likewise; the caller's to free)
// walk the strided side in place, as an MPI programmer would write it without packing.
template <class SendType, class RecvType>
double alltoallw_time(std::size_t src_elems, std::size_t dst_elems, SendType&& send_type, RecvType&& recv_type,
                      int reps) {
  const int np = process_count();
  std::vector<double> src(src_elems, 1.0), dst_store;
  double* const dst = darray_bench::unaliased(dst_store, dst_elems, src.data());
  std::vector<int> counts(static_cast<std::size_t>(np), 1), sdispl(counts.size()), rdispl(counts.size());
  std::vector<MPI_Datatype> stypes(counts.size()), rtypes(counts.size());
  for (int p = 0; p < np; ++p) {
    const auto k = static_cast<std::size_t>(p);
    send_type(p, stypes[k], sdispl[k]);
    recv_type(p, rtypes[k], rdispl[k]);
    MPI_Type_commit(&stypes[k]);
    MPI_Type_commit(&rtypes[k]);
  }
  const double t = time_it(reps, [&] {
    MPI_Alltoallw(src.data(), counts.data(), sdispl.data(), stypes.data(), dst, counts.data(), rdispl.data(),
                  rtypes.data(), MPI_COMM_WORLD);
  });
  for (std::size_t k = 0; k < counts.size(); ++k) {
    MPI_Type_free(&stypes[k]);
    MPI_Type_free(&rtypes[k]);
  }
  return t;
}

// rows -> cols of an r x c matrix of doubles: to process q go this block's columns of q (rows of c, strided), from
// process p come p's rows of this block's columns (contiguous).
double alltoallw_rows_to_cols(int64_t r, int64_t c, int reps) {
  const int np = process_count();
  if (local_device_count() != 1 || np == 1 || r % np != 0 || c % np != 0) return 0;
  const int rl = static_cast<int>(r / np), cl = static_cast<int>(c / np);
  return alltoallw_time(
      static_cast<std::size_t>(rl) * static_cast<std::size_t>(c), static_cast<std::size_t>(r) * cl,
      [&](int q, MPI_Datatype& t, int& displ) {
        MPI_Type_vector(rl, cl, static_cast<int>(c), MPI_DOUBLE, &t);
        displ = q * cl * 8;
      },
      [&](int p, MPI_Datatype& t, int& displ) {
        MPI_Type_contiguous(rl * cl, MPI_DOUBLE, &t);
        displ = p * rl * cl * 8;
      },
      reps);
}

// pencil x -> y of an x by y by z array sharded on y to sharded on x: to process q goes the slab of its x rows
// (contiguous), from process p come p's y columns of this block's x rows (runs of y/np * z, strided).
double alltoallw_pencil(int64_t x, int64_t y, int64_t z, int reps) {
  const int np = process_count();
  if (local_device_count() != 1 || np == 1 || x % np != 0 || y % np != 0) return 0;
  const int xl = static_cast<int>(x / np), yl = static_cast<int>(y / np), zz = static_cast<int>(z);
  return alltoallw_time(
      static_cast<std::size_t>(x) * yl * zz, static_cast<std::size_t>(xl) * y * zz,
      [&](int q, MPI_Datatype& t, int& displ) {
        MPI_Type_contiguous(xl * yl * zz, MPI_DOUBLE, &t);
        displ = q * xl * yl * zz * 8;
      },
      [&](int p, MPI_Datatype& t, int& displ) {
        MPI_Type_vector(xl, yl * zz, static_cast<int>(y) * zz, MPI_DOUBLE, &t);
        displ = p * yl * zz * 8;
      },
      reps);
}

// memcpy of `bytes` into a buffer that does not 4K-alias the source.
struct PlainCopy {
  std::vector<char> src, store;
  char* dst = nullptr;
  std::function<void()> call;  // holds `this`: the struct stays where it was made
  PlainCopy(const PlainCopy&) = delete;
  PlainCopy& operator=(const PlainCopy&) = delete;
  explicit PlainCopy(std::size_t bytes) : src(bytes, 1) {
    dst = darray_bench::unaliased(store, bytes, src.data());
    call = [this] { std::memcpy(dst, src.data(), src.size()); };
  }
};

#if defined(DARRAY_BENCH_HAS_FFTW_MPI)
// FFTW-MPI's transpose of an n0 x n1 matrix of `howmany`-double elements, distributed by rows.
double fftw_transpose_time(ptrdiff_t n0, ptrdiff_t n1, ptrdiff_t howmany, int reps) {
  ptrdiff_t local_n0, start0, local_n1, start1;
  const ptrdiff_t alloc = fftw_mpi_local_size_many_transposed(2, std::array<ptrdiff_t, 2>{n0, n1}.data(), howmany,
                                                              FFTW_MPI_DEFAULT_BLOCK, FFTW_MPI_DEFAULT_BLOCK,
                                                              MPI_COMM_WORLD, &local_n0, &start0, &local_n1, &start1);
  double* in = fftw_alloc_real(static_cast<std::size_t>(std::max<ptrdiff_t>(alloc, 1)));
  double* out = fftw_alloc_real(static_cast<std::size_t>(std::max<ptrdiff_t>(alloc, 1)));
  fftw_plan plan = fftw_mpi_plan_many_transpose(n0, n1, howmany, FFTW_MPI_DEFAULT_BLOCK, FFTW_MPI_DEFAULT_BLOCK, in,
                                                out, MPI_COMM_WORLD, FFTW_MEASURE);
  for (ptrdiff_t i = 0; i < alloc; ++i) in[i] = static_cast<double>(i);
  const double t = time_it(reps, [&] { fftw_execute(plan); });
  fftw_destroy_plan(plan);
  fftw_free(in);
  fftw_free(out);
  return t;
}
#endif

template <int N>
Row run_pattern(const std::string& name, const Shape& shape, const NamedSharding& from, const NamedSharding& to,
                int reps, double fftw_t, double alltoallw_t) {
  auto a = iota<double, N>(shape, from);
  std::size_t local = 0;
  for (const auto& s : a.addressable_shards()) local += static_cast<std::size_t>(volume(s.index)) * sizeof(double);
  auto b = reshard(a, to);  // plans and warms up
  const auto plan = reshard_plan<double>(from, to, shape);
  Row r;
  r.pattern = name;
  r.mib = static_cast<double>(volume(shape)) * 8 / (1 << 20);
  // The kept and allocating calls and the baselines of the same bytes in turns (bench/support/time_calls.hpp), so a
  // drift of a shared machine hits each alike: each repetition one call or a loop of --calls.
  PackedAlltoall packed(local);
  PlainCopy copy(local);
  std::vector<std::function<void()>> forms{[&] { execute(*plan, a, b); }, [&] { b = reshard(a, to); }, copy.call};
  if (packed.call) forms.push_back(packed.call);
  const std::vector<darray_bench::Stats> t = darray_bench::time_calls_in_turns(reps, calls_per_rep, forms);
  r.t = t[0].min;
  r.t_alloc = t[1].min;
  r.memcpy_t = t[2].min;
  r.alltoall = packed.call ? t[3].min : 0;
  r.staging = static_cast<double>(detail::MoveEngine::last_staging_bytes());
  r.local_bytes = static_cast<double>(local);
  r.alltoallw = alltoallw_t;
  r.fftw = fftw_t;
  return r;
}

// Median and minimum of a set of times.
struct Stat {
  double min = 0, median = 0;
};
Stat stat_of(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return Stat{t.front(), t[t.size() / 2]};
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Offline plan construction for process 12345 of an n x n mesh with one device per process (no MPI involved):
// the device table, the Mesh (the table moved in; make_mesh builds its mesh over the runtime's table itself, with no
// copy), the two pencil NamedShardings and the x -> y pencil ReshardPlan of a {4096, 4096, 4096} array of 8-byte
// elements, each timed separately, so the growth with the mesh size shows against the growth of the peer count.
// "copy" is a copy of the table as darray::devices() hands one to its caller (20 MiB at 1,048,576 devices; its
// storage, like the table's, advised to huge pages first: with 4 KiB pages mostly first-touch faults).
void plan_scaling(int reps) {
  std::printf("\nplan construction, process 12345, pencil x->y of {4096,4096,4096} x 8 B; ms as min / median of %d\n",
              reps);
  std::printf("%-9s %9s %6s %17s %17s %17s %17s %17s %17s\n", "devices", "mesh", "peers", "device table", "Mesh",
              "2 NamedShardings", "sum of these 3", "ReshardPlan", "copy of table");
  for (int side : {64, 256, 1024}) {
    std::vector<double> t_table, t_mesh, t_shardings, t_sum, t_plan, t_copy;
    int peers = 0;
    for (int k = 0; k < reps; ++k) {
      auto t0 = std::chrono::steady_clock::now();
      // The per-process counts as the runtime holds them after its allgather (advised storage, 4 MiB here).
      std::vector<Device> table =
          make_device_table(darray::detail::filled_advised(static_cast<std::size_t>(side) * side, 1));
      t_table.push_back(ms_since(t0));
      t0 = std::chrono::steady_clock::now();
      std::vector<Device> copy = darray::detail::copy_advised(table);
      t_copy.push_back(ms_since(t0));
      t0 = std::chrono::steady_clock::now();
      Mesh mesh(std::move(table), {side, side}, {"r", "c"});
      t_mesh.push_back(ms_since(t0));
      t0 = std::chrono::steady_clock::now();
      NamedSharding x(mesh, P{none, "r", "c"}), y(mesh, P{"r", none, "c"});
      t_shardings.push_back(ms_since(t0));
      t_sum.push_back(t_table.back() + t_mesh.back() + t_shardings.back());
      t0 = std::chrono::steady_clock::now();
      ReshardPlan plan(x, y, {4096, 4096, 4096}, 8, 12345 % (side * side));
      t_plan.push_back(ms_since(t0));
      peers = plan.stats().send_peers + plan.stats().recv_peers;
    }
    char mesh_name[32];
    std::snprintf(mesh_name, sizeof mesh_name, "%dx%d", side, side);
    std::printf("%-9d %9s %6d", side * side, mesh_name, peers);
    for (const auto* t : {&t_table, &t_mesh, &t_shardings, &t_sum, &t_plan, &t_copy}) {
      const Stat st = stat_of(*t);
      std::printf(" %8.3f /%7.3f", st.min, st.median);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Environment env(argc, argv);
  CLI::App app{"bench/reshard: reshard time against MPI_Alltoall, FFTW-MPI transpose and memcpy in the same run"};
  std::vector<int> sizes{64, 256, 1024};
  int reps = 5;
  bool no_fftw = false;
  bool plan_only = false;
  int plan_reps = 7;
  app.add_option("--sizes", sizes, "global array sizes in MiB (doubles), comma-separated")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  app.add_option("--reps", reps, "repetitions; the best (max over processes) is reported")->check(CLI::PositiveNumber);
  app.add_option("--calls", calls_per_rep, "calls per repetition, timed as a loop (time per call reported)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--no-fftw", no_fftw, "skip the FFTW-MPI baseline");
  app.add_flag("--plan-only", plan_only, "only time plan construction in large meshes (no data moves)");
  app.add_option("--plan-reps", plan_reps, "repetitions of the plan-construction timings")->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return process_index() == 0 ? app.exit(e) : 1;
  }
#if defined(DARRAY_BENCH_HAS_FFTW_MPI)
  fftw_mpi_init();
#else
  no_fftw = true;
#endif
  const int np = process_count(), nd = device_count();
  const bool root = process_index() == 0;
  if (root)
    std::printf("# bench/reshard: %d process(es) x %d host device(s), reps %d, calls per rep %d, backend %s\n", np,
                local_device_count(), reps, calls_per_rep, to_string(backend()));
  if (root && !plan_only) print_header();
  Mesh line = make_mesh({nd}, {"x"});
  Mesh grid = make_mesh({nd, 1}, {"r", "c"});
  if (plan_only) sizes.clear();
  for (int mib : sizes) {
    const int64_t elems = static_cast<int64_t>(mib) * (1 << 20) / 8;
    // 2-D row blocks -> column blocks of a square-ish matrix.
    int64_t n = 1;
    while ((n * 2) * (n * 2) <= elems) n *= 2;
    const int64_t rows = elems / n;
    double fftw2 = 0;
#if defined(DARRAY_BENCH_HAS_FFTW_MPI)
    if (!no_fftw && np > 1 && local_device_count() == 1) fftw2 = fftw_transpose_time(rows, n, 1, reps);
#endif
    const double w2 = alltoallw_rows_to_cols(rows, n, reps);
    auto r2 = run_pattern<2>("rows->cols " + std::to_string(rows) + "x" + std::to_string(n), {rows, n},
                             NamedSharding(line, P{"x"}), NamedSharding(line, P{none, "x"}), reps, fftw2, w2);
    if (root) print_row(r2);
    // 3-D pencil transpose x -> y on an (nd, 1) mesh: the (X, Y) planes move, Z elements stay together.
    int64_t c = 1;
    while ((c * 2) * (c * 2) * (c * 2) <= elems) c *= 2;
    const int64_t zc = elems / (c * c);
    double fftw3 = 0;
#if defined(DARRAY_BENCH_HAS_FFTW_MPI)
    if (!no_fftw && np > 1 && local_device_count() == 1) fftw3 = fftw_transpose_time(c, c, zc, reps);
#endif
    const double w3 = alltoallw_pencil(c, c, zc, reps);
    auto r3 = run_pattern<3>("pencil x->y " + std::to_string(c) + "x" + std::to_string(c) + "x" + std::to_string(zc),
                             {c, c, zc}, NamedSharding(grid, P{none, "r", "c"}), NamedSharding(grid, P{"r", none, "c"}),
                             reps, fftw3, w3);
    if (root) print_row(r3);
  }
  if (root) plan_scaling(plan_reps);
  return 0;
}
