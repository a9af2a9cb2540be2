#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "darray/darray.hpp"
#include "darray/runtime/detail/kokkos_compat.hpp"
#include "darray/runtime/detail/node_shared.hpp"
#include "darray/runtime/detail/single_copy_crossover.hpp"
#include "mpi_test.hpp"

using darray::testing::all_ok;

TEST_CASE("device table is dense, process-major and identical everywhere") {
  const int np = darray::process_count();
  const int me = darray::process_index();
  // GPU builds: one GPU per process; host builds: DARRAY_HOST_DEVICE_COUNT host devices.
  const bool gpu = darray::detail::kokkos_uses_gpu();
  const int per = gpu ? 1 : static_cast<int>(darray::detail::env_int("DARRAY_HOST_DEVICE_COUNT", 1, 1, 4096, "count"));
  const darray::DeviceKind kind = gpu ? darray::DeviceKind::cuda : darray::DeviceKind::cpu;
  const auto all = darray::devices();
  const auto mine = darray::local_devices();
  bool ok = darray::device_count() == np * per && darray::local_device_count() == per &&
            static_cast<int>(all.size()) == np * per && static_cast<int>(mine.size()) == per;
  for (std::size_t i = 0; ok && i < all.size(); ++i) {
    ok = all[i].id == static_cast<int>(i) && all[i].process_index == static_cast<int>(i) / per &&
         all[i].local_index == static_cast<int>(i) % per && all[i].kind == kind;
  }
  for (std::size_t l = 0; ok && l < mine.size(); ++l) ok = mine[l] == all[static_cast<std::size_t>(me * per) + l];
  // Every process holds the same table: compare a checksum.
  // Unsigned: the hash wraps around by design (a signed one overflowed, which UBSan rightly reported).
  uint64_t sum = 0;
  for (const auto& d : all)
    sum = sum * 31u + static_cast<uint64_t>(d.id) * 7u + static_cast<uint64_t>(d.process_index) * 3u +
          static_cast<uint64_t>(d.local_index);
  uint64_t lo = 0, hi = 0;
  MPI_Allreduce(&sum, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&sum, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  REQUIRE(all_ok(ok && lo == hi));
}

TEST_CASE("process queries agree with MPI") {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  REQUIRE(all_ok(darray::process_index() == rank && darray::process_count() == size));
  REQUIRE(all_ok(darray::local_process_index() >= 0 && darray::local_process_index() < darray::local_process_count()));
  // The backend: DARRAY_BACKEND's where set; else NCCL in GPU builds with NCCL whose processes have a GPU each.
  const char* asked = std::getenv("DARRAY_BACKEND");
  const bool nccl_default = darray::detail::kokkos_uses_gpu() && darray::detail::nccl_compiled() &&
                            darray::detail::state().gpu_sharing.empty();
  const darray::Backend expected_backend = asked != nullptr && *asked != '\0'
                                               ? darray::parse_backend("DARRAY_BACKEND", asked)
                                           : nccl_default ? darray::Backend::nccl
                                                          : darray::Backend::mpi;
  REQUIRE(all_ok(darray::backend() == expected_backend));
  // Under the tests' mpiexec the launcher is the one CMake found (Open MPI's, or MPICH's Hydra), and its ranks agree
  // with MPI's.
#if defined(DARRAY_TEST_MPI_LAUNCHER_openmpi)
  constexpr auto expected = darray::LauncherKind::openmpi;
#elif defined(DARRAY_TEST_MPI_LAUNCHER_mpich)
  constexpr auto expected = darray::LauncherKind::mpich;
#else
  const auto expected = darray::launcher().kind;  // an MPI the build does not know: its ranks are still checked
#endif
  const auto& l = darray::launcher();
  REQUIRE(
      all_ok(l.kind == expected && l.rank == rank && l.size == size && l.local_rank == darray::local_process_index()));
}

TEST_CASE("devices print as JAX prints them") {
  darray::Device d{5, 1, 1, darray::DeviceKind::cpu, -1};
  CHECK(darray::to_string(d) == "cpu(id=5)");
  darray::Device g{3, 3, 0, darray::DeviceKind::cuda, 0};
  CHECK(darray::to_string(g) == "cuda(id=3)");
  std::ostringstream os;
  os << std::vector<darray::Device>{d, g};
  CHECK(os.str() == "[cpu(id=5), cuda(id=3)]");
  const auto table = darray::make_device_table({2, 0, 3});
  REQUIRE(table.size() == 5);
  CHECK(table[2].process_index == 2);
  CHECK(table[2].local_index == 0);
  CHECK(table[4].id == 4);
}

TEST_CASE("make_device_table: dense process-major ids, local indices, GPU ordinals; no device for counts <= 0") {
  using darray::Device;
  using darray::DeviceKind;
  const std::vector<Device> cpu = darray::make_device_table({2, 0, 3, -1, 1});
  const std::vector<Device> want_cpu{{0, 0, 0, DeviceKind::cpu, -1}, {1, 0, 1, DeviceKind::cpu, -1},
                                     {2, 2, 0, DeviceKind::cpu, -1}, {3, 2, 1, DeviceKind::cpu, -1},
                                     {4, 2, 2, DeviceKind::cpu, -1}, {5, 4, 0, DeviceKind::cpu, -1}};
  CHECK(cpu == want_cpu);
  const std::vector<Device> gpu = darray::make_device_table({1, 2}, DeviceKind::cuda);
  const std::vector<Device> want_gpu{
      {0, 0, 0, DeviceKind::cuda, 0}, {1, 1, 0, DeviceKind::cuda, 0}, {2, 1, 1, DeviceKind::cuda, 1}};
  CHECK(gpu == want_gpu);
  CHECK(darray::make_device_table({}).empty());
  CHECK(darray::make_device_table({0, -3}).empty());
  // A million processes of one device each (the storage advised to huge pages): id and process index agree.
  const std::vector<Device> big = darray::make_device_table(std::vector<int>(1 << 20, 1));
  REQUIRE(big.size() == std::size_t(1) << 20);
  bool dense = true;
  for (std::size_t i = 0; i < big.size(); ++i)
    dense = dense && big[i].id == static_cast<int>(i) && big[i].process_index == static_cast<int>(i) &&
            big[i].local_index == 0;
  CHECK(dense);
}

TEST_CASE("barrier completes on every process") {
  for (int i = 0; i < 3; ++i) darray::barrier();
  REQUIRE(all_ok(true));
}

TEST_CASE("select_gpu_ordinal: local rank modulo the visible GPUs, or the one ordinal given") {
  using darray::detail::select_gpu_ordinal;
  // 2 nodes x 4 processes on 4 GPUs per node: the local ranks 0..3 of each node take GPUs 0..3.
  for (int local = 0; local < 4; ++local) CHECK(select_gpu_ordinal({}, "DARRAY_LOCAL_DEVICE_IDS", local, 4) == local);
  // More processes than GPUs on a node: they share round-robin.
  CHECK(select_gpu_ordinal({}, "DARRAY_LOCAL_DEVICE_IDS", 5, 4) == 1);
  CHECK(select_gpu_ordinal({2}, "DARRAY_LOCAL_DEVICE_IDS", 0, 4) == 2);
  CHECK_THROWS_WITH(select_gpu_ordinal({4}, "DARRAY_LOCAL_DEVICE_IDS", 0, 4),
                    Catch::Contains("GPU 4 requested but only 4 GPU(s) are visible"));
  CHECK_THROWS_WITH(select_gpu_ordinal({0, 1}, "DARRAY_LOCAL_DEVICE_IDS", 0, 4), Catch::Contains("selects 2 GPUs"));
}

TEST_CASE("first_shared_gpu: the first two processes of a node on one physical GPU, by rank") {
  using darray::detail::first_shared_gpu;
  using Pair = std::pair<int, int>;
  // One GPU each (distinct PCI ids): none shared.
  CHECK(first_shared_gpu({4, 5, 6, 7}, {0x8000000000000100, 0x8000000000000200, 0x8000000000000300,
                                        0x8000000000000400}) == Pair{-1, -1});
  // Six processes of ranks 10..15 listed out of order on three GPUs: ranks 11 and 13 are the first pair.
  CHECK(first_shared_gpu({15, 13, 10, 11, 12, 14}, {7, 9, 5, 9, 6, 7}) == Pair{11, 13});
  // Unknown identities (0) never match; a single process shares with nobody.
  CHECK(first_shared_gpu({0, 1, 2}, {0, 0, 3}) == Pair{-1, -1});
  CHECK(first_shared_gpu({3}, {9}) == Pair{-1, -1});
}

TEST_CASE("gpu_sharing: empty unless processes of a node drive one GPU, and the same on every process") {
  const std::string& mine = darray::detail::state().gpu_sharing;
  std::vector<int> length{static_cast<int>(mine.size())}, longest{0};
  MPI_Allreduce(length.data(), longest.data(), 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  bool ok = longest[0] == length[0];
  // Host builds have no GPU to share.
  if (!darray::detail::kokkos_uses_gpu()) ok = ok && mine.empty();
  // Where a GPU is shared, the backend chosen by default is MPI: NCCL refuses two processes on one GPU.
  if (!mine.empty())
    ok = ok && mine.find("drive the same GPU of their node") != std::string::npos &&
         darray::backend() == darray::Backend::mpi;
  INFO(mine);
  REQUIRE(darray::testing::all_ok(ok));
}

TEST_CASE("gpu_stream: a CUDA instance's own stream, null for host execution spaces") {
  CHECK(darray::detail::gpu_stream(Kokkos::DefaultHostExecutionSpace()) == nullptr);
#if defined(KOKKOS_ENABLE_CUDA)
  const Kokkos::Cuda& space = darray::detail::default_instance<Kokkos::Cuda>();
  CHECK(darray::detail::gpu_stream(space) == space.cuda_stream());
  CHECK(darray::detail::gpu_stream(space) != nullptr);  // Kokkos' own stream, not the legacy default stream
#endif
}

TEST_CASE("written_asynchronously and runs_asynchronously: GPU spaces and the memory they reach, never host ones") {
  using darray::detail::written_asynchronously;
#if defined(KOKKOS_ENABLE_HIP) || defined(KOKKOS_ENABLE_SYCL) || defined(KOKKOS_ENABLE_HPX) || \
    defined(KOKKOS_ENABLE_OPENMPTARGET)
  CHECK(written_asynchronously<Kokkos::HostSpace>());  // not told apart: every space fenced
#else
  CHECK_FALSE(written_asynchronously<Kokkos::HostSpace>());  // Serial, OpenMP, Threads finish a kernel at launch
#endif
  // An instance fence waits only where the space's kernels outlive their launch (detail::fence skips the others).
  CHECK_FALSE(darray::detail::runs_asynchronously<Kokkos::DefaultHostExecutionSpace>());
#if defined(KOKKOS_ENABLE_CUDA)
  CHECK(darray::detail::runs_asynchronously<Kokkos::Cuda>());
  CHECK(written_asynchronously<Kokkos::CudaSpace>());
  CHECK(written_asynchronously<Kokkos::CudaUVMSpace>());         // host-accessible, and Cuda kernels write it
  CHECK(written_asynchronously<Kokkos::CudaHostPinnedSpace>());  // the same
#endif
}

// range_policy gives host spaces their chunk size itself (Kokkos 4 allocates an instance to choose it): the one Kokkos
// would choose, for every length.
TEST_CASE("range_policy: the range and the chunk size Kokkos' own policy has") {
  using Exec = Kokkos::DefaultHostExecutionSpace;
  const Exec& space = darray::detail::default_instance<Exec>();
  for (const int64_t n : {int64_t(0), int64_t(1), int64_t(7), int64_t(100), int64_t(4096), int64_t(9216),
                          int64_t(100000), int64_t(1) << 20, int64_t(1) << 27}) {
    const auto ours = darray::detail::range_policy(space, int64_t{3}, 3 + n);
    const Kokkos::RangePolicy<Exec, Kokkos::IndexType<int64_t>> theirs(space, 3, 3 + n);
    INFO("n = " << n);
    CHECK(ours.begin() == theirs.begin());
    CHECK(ours.end() == theirs.end());
    CHECK(ours.chunk_size() == theirs.chunk_size());
  }
}

TEST_CASE("buffers shared by the processes of a node: each process reads and writes every other's") {
  const int np = darray::process_count(), me = darray::process_index();
  const bool reaches = darray::detail::single_copy_reaches_all();
  // Sizes differ per process; each fills its own with its rank, then every process adds to each peer's word at
  // its own rank (no two processes write the same word).
  const std::size_t words = 1000 + 24 * static_cast<std::size_t>(me);
  darray::detail::NodeSharedBuffer buffer(darray::detail::world_comm(), words * sizeof(std::int64_t));
  REQUIRE(all_ok(buffer.ok() == reaches));  // one process alone or no single copies: nothing to share
  if (!buffer.ok()) {
    REQUIRE(all_ok(buffer.local() == nullptr));
    return;
  }
  auto* mine = reinterpret_cast<std::int64_t*>(buffer.local());
  for (std::size_t i = 0; i < words; ++i) mine[i] = 1000 * me + static_cast<std::int64_t>(i % 7);
  MPI_Barrier(MPI_COMM_WORLD);
  bool ok = true;
  for (int p = 0; p < np; ++p) {
    if (p == me) continue;
    auto* theirs = reinterpret_cast<std::int64_t*>(buffer.of(p));
    const std::size_t n = 1000 + 24 * static_cast<std::size_t>(p);
    for (std::size_t i = 0; i < n; ++i) ok = ok && theirs[i] == 1000 * p + static_cast<std::int64_t>(i % 7);
  }
  MPI_Barrier(MPI_COMM_WORLD);  // everyone has read before anyone writes
  for (int p = 0; p < np; ++p)
    if (p != me)
      reinterpret_cast<std::int64_t*>(
          buffer.of(p))[1000 + 24 * static_cast<std::size_t>(p) - 1 - static_cast<std::size_t>(me)] += 1;
  MPI_Barrier(MPI_COMM_WORLD);
  for (int p = 0; p < np; ++p) {
    const std::size_t i = words - 1 - static_cast<std::size_t>(p);
    ok = ok && mine[i] == 1000 * me + static_cast<std::int64_t>(i % 7) + (p == me ? 0 : 1);
  }
  REQUIRE(all_ok(ok));

  // Not shared where any process declines (the test hook off on one process only): the same answer everywhere.
  darray::detail::node_shared_buffers_enabled() = me != np - 1;
  {
    darray::detail::NodeSharedBuffer declined(darray::detail::world_comm(), 4096);
    REQUIRE(all_ok(!declined.ok() && declined.local() == nullptr));
  }
  darray::detail::node_shared_buffers_enabled() = true;
  // A buffer outlives its owner's end while a peer maps it (the ends are not collective): process 0 lets its go first.
  auto early = std::make_unique<darray::detail::NodeSharedBuffer>(darray::detail::world_comm(), 4096);
  REQUIRE(all_ok(early->ok()));
  *reinterpret_cast<std::int64_t*>(early->local()) = 4242 + me;
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0) early.reset();
  MPI_Barrier(MPI_COMM_WORLD);
  REQUIRE(all_ok(me == 0 || *reinterpret_cast<const std::int64_t*>(early->of(0)) == 4242));
}

TEST_CASE("single copies' crossover: where their losses sum least, measured alike on the processes of a node") {
  using darray::detail::single_copy_crossover;
  const std::vector<std::size_t> sizes = darray::detail::single_copy_probe_sizes();  // 64, 128, 256 KiB
  REQUIRE(sizes.size() == 3);
  const std::vector<double> messages(sizes.size(), 10.0);
  auto single = [](std::vector<double> v) { return v; };
  CHECK(single_copy_crossover(sizes, messages, single({5, 5, 5})) == sizes[0]);
  CHECK(single_copy_crossover(sizes, messages, single({20, 5, 5})) == sizes[1]);
  // Losing everywhere: the largest size probed, the ceiling (above it the pages pinned decide, not the probe).
  CHECK(single_copy_crossover(sizes, messages, single({20, 20, 20})) == sizes.back());
  // Within the margin is not a win: 5 % faster than messages everywhere is the ceiling too.
  CHECK(single_copy_crossover(sizes, messages, single({9.5, 9.5, 9.5})) == sizes.back());
  // One slow measurement among wins (at 128 KiB; at 256 KiB) moves the crossover neither up to it nor to the ceiling.
  CHECK(single_copy_crossover(sizes, messages, single({5, 11, 5})) == sizes[0]);
  CHECK(single_copy_crossover(sizes, messages, single({5, 5, 30})) == sizes[0]);
  // ... but a loss larger than the gains after it does.
  CHECK(single_copy_crossover(sizes, messages, single({30, 4, 4})) == sizes[1]);
  // A size with no time (0: not measured) decides nothing.
  CHECK(single_copy_crossover(sizes, std::vector<double>(sizes.size(), 0.0), single({5, 5, 5})) == sizes.back());
  // The log's line (DARRAY_LOG=info): the size chosen, then each size's times in microseconds.
  CHECK(darray::detail::single_copy_crossover_text(sizes[1], {28.2e-6, 46.7e-6, 70.8e-6, 36.0e-6, 52.9e-6, 96.6e-6}) ==
        "from 128 KiB (start-up probe, the node's pairs summed, messages / single copy, us: 64 KiB 28.2 / 36.0, "
        "128 KiB 46.7 / 52.9, 256 KiB 70.8 / 96.6)");

  // The start-up probe's choice and a second measurement: one of the sizes probed, the same on every process of a
  // node.
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(darray::detail::world_comm(), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  auto agreed = [node](std::size_t mine) {
    unsigned long long v[2] = {mine, ~static_cast<unsigned long long>(mine)};
    MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, node);
    return v[0] == mine && ~v[1] == mine;  // the largest and the smallest are this process's
  };
  auto probed = [&sizes](std::size_t b) { return std::find(sizes.begin(), sizes.end(), b) != sizes.end(); };
  const std::size_t at_start = darray::detail::state().single_copy_min_bytes;
  CHECK(all_ok(agreed(at_start)));
  if (!darray::detail::state().single_copy_pids.empty()) {
    CHECK(all_ok(probed(at_start)));
    std::vector<double> times;
    const std::size_t again = darray::detail::measure_single_copy_min_bytes(node, &times);
    CHECK(all_ok(agreed(again) && probed(again)));
    bool timed = times.size() == 2 * sizes.size();
    for (const double t : times) timed = timed && std::isfinite(t) && t > 0.0 && t < 1.0;
    CHECK(all_ok(timed));
    const auto n = static_cast<std::ptrdiff_t>(sizes.size());
    CHECK(all_ok(again == single_copy_crossover(sizes, std::vector<double>(times.begin(), times.begin() + n),
                                                std::vector<double>(times.begin() + n, times.end()))));
  }
  MPI_Comm_free(&node);
}

TEST_CASE("copy_with_process: ranges next to each other on a side go as one iovec, in calls of at most 1024 a side") {
  using darray::detail::PeerRange;
  using darray::detail::single_copy_calls;
  const int pid = static_cast<int>(::getpid());  // this process reads itself: the kernel's path for a peer
  // A block of 256 rows x 8 pieces of 64 doubles (a row of 4 KiB); read 4 pieces side by side, row by row in the
  // block's address order, into 4 blocks of their own: 1024 ranges, side by side in the block 4 at a time.
  const std::size_t rows = 256, pieces = 8, width = 64, taken = 4, first = 2;
  std::vector<double> block(rows * pieces * width);
  for (std::size_t i = 0; i < block.size(); ++i) block[i] = static_cast<double>(i) + 0.5;
  std::vector<std::vector<double>> out(taken, std::vector<double>(rows * width, -1.0));
  std::vector<PeerRange> ranges;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t p = 0; p < taken; ++p)
      ranges.push_back(PeerRange{out[p].data() + r * width,
                                 reinterpret_cast<std::uintptr_t>(block.data() + (r * pieces + first + p) * width),
                                 width * sizeof(double)});
  auto read_back = [&](std::size_t max_call_bytes) {
    for (auto& o : out) std::fill(o.begin(), o.end(), -1.0);
    single_copy_calls() = {};
    const int err = darray::detail::copy_with_process(pid, ranges, false, max_call_bytes);
    bool same = err == 0;
    for (std::size_t p = 0; p < taken; ++p)
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t e = 0; e < width; ++e)
          same = same && out[p][r * width + e] == block[(r * pieces + first + p) * width + e];
    return same;
  };
  if (darray::detail::copy_with_process(pid, {PeerRange{&block[1], reinterpret_cast<std::uintptr_t>(&block[0]), 8}},
                                        false) != 0) {
    WARN("process_vm_readv is not permitted here: nothing to test");
    return;
  }
  CHECK(block[1] == block[0]);
  block[1] = 1.5;
  // The pieces' rows side by side in the block: one remote iovec per row, one local iovec per range.
  CHECK(read_back(std::size_t(1) << 30));
  CHECK(single_copy_calls().calls == 1);
  CHECK(single_copy_calls().remote_iovecs == rows);
  CHECK(single_copy_calls().local_iovecs == rows * taken);
  // Cut at max_call_bytes, inside ranges too (a range of 512 B here: 3 KiB cuts every sixth).
  CHECK(read_back(3 << 10));
  CHECK(single_copy_calls().calls == (rows * taken * width * sizeof(double) + (3 << 10) - 1) / (3 << 10));
  // More than 1024 ranges not next to each other on either side: calls of 1024 iovecs a side.
  std::vector<PeerRange> apart;
  std::vector<double> gaps(4 * 1500, 0.0);
  for (std::size_t k = 0; k < 1500; ++k)
    apart.push_back(PeerRange{&gaps[4 * k], reinterpret_cast<std::uintptr_t>(&block[2 * k]), sizeof(double)});
  single_copy_calls() = {};
  CHECK(darray::detail::copy_with_process(pid, apart, false) == 0);
  CHECK(single_copy_calls().calls == 2);
  CHECK(single_copy_calls().remote_iovecs == 1500);
  bool copied = true;
  for (std::size_t k = 0; k < 1500; ++k) copied = copied && gaps[4 * k] == block[2 * k] && gaps[4 * k + 1] == 0.0;
  CHECK(copied);
  // Ranges next to each other on both sides, and empty ones: one iovec a side.
  std::vector<PeerRange> joined;
  std::vector<double> whole(3000, 0.0);
  for (std::size_t k = 0; k < 1500; ++k) {
    joined.push_back(PeerRange{&whole[2 * k], reinterpret_cast<std::uintptr_t>(&block[2 * k]), 2 * sizeof(double)});
    joined.push_back(PeerRange{&whole[0], reinterpret_cast<std::uintptr_t>(&block[0]), 0});
  }
  single_copy_calls() = {};
  CHECK(darray::detail::copy_with_process(pid, joined, false) == 0);
  CHECK(single_copy_calls().calls == 1);
  CHECK(single_copy_calls().local_iovecs == 1);
  CHECK(single_copy_calls().remote_iovecs == 1);
  CHECK(std::equal(whole.begin(), whole.end(), block.begin()));
  // A range the peer does not have: an errno, as before.
  CHECK(darray::detail::copy_with_process(pid, {PeerRange{&whole[0], 8, 8}}, false) != 0);
}
