// bench/collectives: each collective as users call it (allocating: y = psum(x, "i")) and into a kept output
// (psum(x, "i", y)) and its plan executed into a kept output (execute(psum_plan(x, "i"), x, y) with the plan made
// once), against the raw MPI call on the same bytes measured in the same run: MPI_Allreduce,
// MPI_Allgather, MPI_Alltoall, MPI_Sendrecv. With several devices per process the baseline is the hand-written
// equivalent: memcpy between the process's device blocks plus the one MPI call across processes; on device memory (a
// GPU build) the baselines work on host copies of the blocks, copied from and to the device in each call
// (host_staging.hpp: what a program for an MPI without CUDA support writes). The mesh is 1-D
// ("i") over every device; each device holds one block of --sizes bytes. Times are per call, max over processes;
// each of --reps repetitions runs enough calls to last about a millisecond, the four forms of a row in turns
// (allocating, kept, plan, raw, then again), so that this VM's drifts hit them alike; min and median are printed.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <darray/darray.hpp>
#include <functional>
#include <string>
#include <vector>

#include "host_staging.hpp"
#include "time_calls.hpp"

using namespace darray;

namespace {

using darray_bench::HostBlocks;
using darray_bench::Stats;
using Blocks = HostBlocks<double, DistributedArray<double, 1>::memory_space>;

struct Row {
  std::string op;
  std::size_t bytes = 0;
  Stats alloc, kept, planned, raw;
};

// A row's four forms timed in turns, repetition by repetition. The allocating form assigns another array than the
// one the kept forms and the raw baseline write, whose blocks the baseline holds pointers to.
template <class Alloc, class Kept, class Planned, class Raw>
void time_row(Row& r, int reps, int calls, Alloc alloc, Kept kept, Planned planned, Raw raw) {
  const std::vector<Stats> t = darray_bench::time_calls_in_turns(reps, calls, {alloc, kept, planned, raw});
  r.alloc = t[0];
  r.kept = t[1];
  r.planned = t[2];
  r.raw = t[3];
}

void print_header() {
  std::printf("%-11s %9s %10s %9s %9s %9s %10s %9s %9s %9s %9s %9s\n", "collective", "B/device", "alloc[us]",
              "kept[us]", "plan[us]", "raw[us]", "alloc/raw", "kept/raw", "plan/raw", "(median", "median", "median)");
}

void print_row(const Row& r) {
  std::printf("%-11s %9zu %10.2f %9.2f %9.2f %9.2f %10.2f %9.2f %9.2f %9.2f %9.2f %9.2f\n", r.op.c_str(), r.bytes,
              r.alloc.min * 1e6, r.kept.min * 1e6, r.planned.min * 1e6, r.raw.min * 1e6, r.alloc.min / r.raw.min,
              r.kept.min / r.raw.min, r.planned.min / r.raw.min, r.alloc.median / r.raw.median,
              r.kept.median / r.raw.median, r.planned.median / r.raw.median);
  std::fflush(stdout);
}

// The process's device blocks of a as host pointers, in local-device order.
std::vector<double*> blocks(const DistributedArray<double, 1>& a) {
  std::vector<double*> p;
  for (const auto& s : a.addressable_shards()) p.push_back(s.data.data());
  return p;
}

int calls_for(std::size_t bytes) {
  const std::size_t target = std::size_t{4} << 20;  // about 4 MiB moved per repetition
  return static_cast<int>(std::clamp<std::size_t>(target / std::max<std::size_t>(bytes, 1), 1, 2000));
}

}  // namespace

int main(int argc, char** argv) {
  Environment env(argc, argv);
  CLI::App app{"bench/collectives: collectives (allocating and kept output) against raw MPI in the same run"};
  std::vector<std::size_t> sizes{8, 65536, 8388608};
  std::vector<std::string> ops{"psum", "all_gather", "all_to_all", "ppermute"};
  int reps = 7;
  app.add_option("--sizes", sizes, "bytes per device, comma-separated")->delimiter(',')->check(CLI::PositiveNumber);
  app.add_option("--ops", ops, "collectives to time")
      ->delimiter(',')
      ->check(CLI::IsMember({"psum", "all_gather", "all_to_all", "ppermute"}));
  app.add_option("--reps", reps, "repetitions (min and median reported)")->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return process_index() == 0 ? app.exit(e) : 1;
  }
  const int np = process_count(), k = local_device_count();
  const int64_t nd = device_count();
  const bool root = process_index() == 0;
  const int me = process_index(), next = (me + 1) % np, prev = (me + np - 1) % np;
  if (root) {
    const bool staged = darray_bench::staged_v<DistributedArray<double, 1>::memory_space>;
    std::printf("# bench/collectives: %d process(es) x %d %s device(s), reps %d, backend %s%s\n", np, k,
                staged ? "GPU" : "host", reps, to_string(backend()),
                staged ? ", baselines staged through the host" : "");
    print_header();
  }
  const Mesh mesh = make_mesh({nd}, {"i"});
  const NamedSharding by_i(mesh, P{"i"});
  for (const std::string& op : ops)
    for (const std::size_t size : sizes) {
      Row r;
      r.op = op;
      const int calls = calls_for(size);
      if (op == "psum") {
        const int64_t n = std::max<int64_t>(1, static_cast<int64_t>(size / 8));
        r.bytes = static_cast<std::size_t>(n) * 8;
        auto x = full<double, 1>({nd * n}, 1.0, by_i);
        auto y = psum(x, "i"), fresh = y;
        const auto plan = psum_plan(x, "i");
        const auto count = static_cast<std::size_t>(n);
        Blocks in_blocks(blocks(x), count), out_blocks(blocks(y), count);
        const auto &in = in_blocks.host(), &out = out_blocks.host();
        std::vector<double> sum(count);
        auto raw = [&] {
          in_blocks.pull();
          if (k == 1) {
            MPI_Allreduce(in[0], out[0], static_cast<int>(n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
          } else {
            std::memcpy(sum.data(), in[0], count * 8);
            for (int a = 1; a < k; ++a)
              for (std::size_t e = 0; e < count; ++e) sum[e] += in[static_cast<std::size_t>(a)][e];
            MPI_Allreduce(MPI_IN_PLACE, sum.data(), static_cast<int>(n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            for (int a = 0; a < k; ++a) std::memcpy(out[static_cast<std::size_t>(a)], sum.data(), count * 8);
          }
          out_blocks.push();
        };
        time_row(
            r, reps, calls, [&] { fresh = psum(x, "i"); }, [&] { psum(x, "i", y); }, [&] { execute(plan, x, y); }, raw);
      } else if (op == "all_gather") {
        const int64_t n = std::max<int64_t>(1, static_cast<int64_t>(size / 8));
        r.bytes = static_cast<std::size_t>(n) * 8;
        auto x = full<double, 1>({nd * n}, 1.0, by_i);
        auto y = all_gather(x, "i", 0, tiled), fresh = y;
        const auto plan = all_gather_plan(x, "i", 0, tiled);
        const auto count = static_cast<std::size_t>(n);
        Blocks in_blocks(blocks(x), count), out_blocks(blocks(y), count * static_cast<std::size_t>(nd));
        const auto &in = in_blocks.host(), &out = out_blocks.host();
        std::vector<double> send(count * static_cast<std::size_t>(k));
        auto raw = [&] {
          in_blocks.pull();
          if (k == 1) {
            MPI_Allgather(in[0], static_cast<int>(n), MPI_DOUBLE, out[0], static_cast<int>(n), MPI_DOUBLE,
                          MPI_COMM_WORLD);
          } else {
            for (int a = 0; a < k; ++a)
              std::memcpy(send.data() + a * count, in[static_cast<std::size_t>(a)], count * 8);
            MPI_Allgather(send.data(), static_cast<int>(count * k), MPI_DOUBLE, out[0], static_cast<int>(count * k),
                          MPI_DOUBLE, MPI_COMM_WORLD);
            for (int a = 1; a < k; ++a)
              std::memcpy(out[static_cast<std::size_t>(a)], out[0], count * static_cast<std::size_t>(nd) * 8);
          }
          out_blocks.push();
        };
        time_row(
            r, reps, calls, [&] { fresh = all_gather(x, "i", 0, tiled); }, [&] { all_gather(x, "i", 0, tiled, y); },
            [&] { execute(plan, x, y); }, raw);
      } else if (op == "all_to_all") {
        // Each block holds one chunk per device of the axis: chunk j goes to device j.
        const int64_t c = std::max<int64_t>(1, static_cast<int64_t>(size / 8) / nd);
        r.bytes = static_cast<std::size_t>(c * nd) * 8;
        auto x = full<double, 1>({nd * nd * c}, 1.0, by_i);
        auto y = all_to_all(x, "i", 0, 0), fresh = y;
        const auto plan = all_to_all_plan(x, "i", 0, 0);
        const auto block = static_cast<std::size_t>(c * nd);
        Blocks in_blocks(blocks(x), block), out_blocks(blocks(y), block);
        const auto &in = in_blocks.host(), &out = out_blocks.host();
        const auto cb = static_cast<std::size_t>(c) * 8;
        const auto kk = static_cast<std::size_t>(k) * static_cast<std::size_t>(k);
        std::vector<double> send(kk * static_cast<std::size_t>(np * c)), recv(send.size());
        auto raw = [&] {
          in_blocks.pull();
          if (k == 1) {
            MPI_Alltoall(in[0], static_cast<int>(c), MPI_DOUBLE, out[0], static_cast<int>(c), MPI_DOUBLE,
                         MPI_COMM_WORLD);
            out_blocks.push();
            return;
          }
          // send[q][a][b]: chunk for device (q, b) from local device a.
          for (int q = 0; q < np; ++q)
            for (int a = 0; a < k; ++a)
              for (int b = 0; b < k; ++b)
                std::memcpy(send.data() + ((static_cast<std::size_t>(q) * k + a) * k + b) * c,
                            in[static_cast<std::size_t>(a)] + (static_cast<std::size_t>(q) * k + b) * c, cb);
          MPI_Alltoall(send.data(), static_cast<int>(kk * c), MPI_DOUBLE, recv.data(), static_cast<int>(kk * c),
                       MPI_DOUBLE, MPI_COMM_WORLD);
          for (int q = 0; q < np; ++q)
            for (int a = 0; a < k; ++a)
              for (int b = 0; b < k; ++b)
                std::memcpy(out[static_cast<std::size_t>(b)] + (static_cast<std::size_t>(q) * k + a) * c,
                            recv.data() + ((static_cast<std::size_t>(q) * k + a) * k + b) * c, cb);
          out_blocks.push();
        };
        time_row(
            r, reps, calls, [&] { fresh = all_to_all(x, "i", 0, 0); }, [&] { all_to_all(x, "i", 0, 0, y); },
            [&] { execute(plan, x, y); }, raw);
      } else {  // ppermute: a cyclic shift by one along the axis
        const int64_t n = std::max<int64_t>(1, static_cast<int64_t>(size / 8));
        r.bytes = static_cast<std::size_t>(n) * 8;
        std::vector<std::pair<int, int>> perm;
        for (int i = 0; i < static_cast<int>(nd); ++i) perm.emplace_back(i, (i + 1) % static_cast<int>(nd));
        auto x = full<double, 1>({nd * n}, 1.0, by_i);
        auto y = ppermute(x, "i", perm), fresh = y;
        const auto plan = ppermute_plan(x, "i", perm);
        const auto count = static_cast<std::size_t>(n);
        Blocks in_blocks(blocks(x), count), out_blocks(blocks(y), count);
        const auto &in = in_blocks.host(), &out = out_blocks.host();
        auto raw = [&] {
          in_blocks.pull();
          for (int a = 0; a + 1 < k; ++a)
            std::memcpy(out[static_cast<std::size_t>(a) + 1], in[static_cast<std::size_t>(a)], count * 8);
          if (np == 1)
            std::memcpy(out[0], in[static_cast<std::size_t>(k) - 1], count * 8);
          else
            MPI_Sendrecv(in[static_cast<std::size_t>(k) - 1], static_cast<int>(n), MPI_DOUBLE, next, 7, out[0],
                         static_cast<int>(n), MPI_DOUBLE, prev, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          out_blocks.push();
        };
        time_row(
            r, reps, calls, [&] { fresh = ppermute(x, "i", perm); }, [&] { ppermute(x, "i", perm, y); },
            [&] { execute(plan, x, y); }, raw);
      }
      if (root) print_row(r);
    }
  // What a reduction's always-on mismatch check costs (comm/detail/same_reduction.hpp): the raw MPI_Allreduce of a
  // block, against what psum does with the same bytes (reduce_with_fingerprint), timed in the same run: up to 16 KiB
  // one record exchange per doubling step carrying fingerprint and data, up to 16 MiB a reduce-scatter and
  // allgather whose messages carry it, beyond a record without data then the same MPI_Allreduce.
  if (np > 1 && std::find(ops.begin(), ops.end(), "psum") != ops.end()) {
    if (root)
      std::printf("\nreduction fingerprint: %10s %11s %13s %9s %9s\n", "B", "raw[us]", "checked[us]", "ratio",
                  "(median)");
    for (const std::size_t size : sizes) {
      const auto n = std::max<std::size_t>(1, size / 8);
      std::vector<double> in(n, 1.0), out_words(n + 64);
      double* const out_data = out_words.data() + 40;
      const int calls = calls_for(size);
      const std::size_t max_bytes = max_message_bytes();  // as psum's plan reads it
      auto raw = [&] { MPI_Allreduce(in.data(), out_data, static_cast<int>(n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); };
      auto checked = [&] {
        detail::reduce_with_fingerprint(MPI_COMM_WORLD, 12345, in.data(), out_data, n, 8, MPI_DOUBLE, MPI_SUM,
                                        max_bytes, "bench",
                                        &detail::combine_record_payload<double, detail::ReduceOp::sum>);
      };
      // In turns, so drifts of a shared machine hit both alike (three times the repetitions of a row above).
      const std::vector<Stats> both = darray_bench::time_calls_in_turns(3 * reps, calls, {raw, checked});
      const Stats &a = both[0], &b = both[1];
      if (root)
        std::printf("reduction fingerprint: %10zu %11.2f %13.2f %9.3f %9.3f\n", n * 8, a.min * 1e6, b.min * 1e6,
                    b.min / a.min, b.median / a.median);
    }
  }
  return 0;
}
