// Stress (not in the default suite; see README "Reliability"): a reshard whose per-process messages exceed 2 GiB,
// the limit an int count puts on one MPI message. Two processes swap rows of a (2, n) int64 array through a mesh
// whose device order is reversed, so each sends its whole row (--gib GiB) to the other; every element is verified.
// Run: DARRAY_HOST_DEVICE_COUNT=1 mpirun -np 2 stress-large-reshard --gib 2.2   (needs about 4.5x --gib GiB of RAM)
#include <CLI/CLI.hpp>
#include <cstdio>
#include <darray/darray.hpp>

int main(int argc, char** argv) {
  darray::Environment env(argc, argv);
  using namespace darray;
  CLI::App app{"Reshard with per-process messages above 2 GiB, every element verified"};
  double gib = 2.2;
  app.add_option("--gib", gib, "GiB each process sends (default 2.2, above the 2 GiB MPI count limit)")
      ->check(CLI::Range(0.001, 64.0));
  CLI11_PARSE(app, argc, argv);
  DARRAY_THROW_IF(device_count() != 2, InvalidArgument, "stress-large-reshard",
                  device_count() << " devices; run with 2 devices in all (e.g. mpirun -np 2 with 1 host device each)");
  const int64_t n = static_cast<int64_t>(gib * 1024 * 1024 * 1024 / 8);
  std::vector<Device> devs = devices();
  Mesh forward(devs, {2}, {"x"});
  Mesh backward({devs[1], devs[0]}, {2}, {"x"});
  auto a = iota<int64_t, 2>({2, n}, NamedSharding(forward, P{"x"}));
  const auto plan = reshard_plan<int64_t>(a.sharding(), NamedSharding(backward, P{"x"}), a.shape());
  if (process_index() == 0)
    std::printf("per process: %.2f GiB to send, in %zu message(s) of at most %zu bytes\n",
                static_cast<double>(plan->stats().bytes_sent) / (1 << 30),
                static_cast<std::size_t>((plan->stats().bytes_sent + max_message_bytes() - 1) / max_message_bytes()),
                max_message_bytes());
  const double t0 = MPI_Wtime();
  auto b = execute(*plan, a);
  const double t = MPI_Wtime() - t0;
  a = detail::adopt_shards<int64_t, 2, DefaultMemorySpace>({}, NamedSharding(forward, P{}),
                                                           {});  // free the source before checking
  int64_t bad = 0;
  for (const auto& s : b.addressable_shards()) {
    const int64_t row = s.index[0].start;
    const int64_t* p = s.data.data();
    for (int64_t j = 0; j < n; ++j) bad += p[j] != row * n + j;
  }
  int64_t bad_all = 0;
  MPI_Allreduce(&bad, &bad_all, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (process_index() == 0) {
    std::printf("%s: %lld wrong elements; reshard of %.2f GiB per process took %.2f s (%.2f GB/s)\n",
                bad_all == 0 ? "OK" : "FAILED", static_cast<long long>(bad_all), static_cast<double>(n * 8) / (1 << 30),
                t, static_cast<double>(n * 8) / t / 1e9);
  }
  return bad_all == 0 ? 0 : 1;
}
