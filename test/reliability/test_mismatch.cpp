// Without DARRAY_CHECK: processes that call different operations (another element type of the same size, another
// shape) get an error from the data's own fingerprint (the message tag of the exchange engine), never each other's
// bytes as a silent wrong result. Run with DARRAY_TIMEOUT_S as a safety net: a hang would show as "timed out".
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "darray/darray.hpp"
#include "mpi_test.hpp"

using namespace darray;
using darray::testing::all_ok;

namespace {

bool last() { return process_index() == process_count() - 1; }

// fn throws a darray::Error on every process, from the mismatch check rather than from a deadline.
template <class Fn>
void require_mismatch_error(Fn&& fn, const char* must_contain = "") {
  const std::string msg = darray::testing::error_message([&] { fn(); });
  INFO("message: " << msg);
  REQUIRE(all_ok(!msg.empty() && msg.find("timed out") == std::string::npos &&
                 msg.find(must_contain) != std::string::npos));
}

// The last process runs on_last, the others on_others; every process must get the mismatch error.
template <class Last, class Others>
void require_mismatch_between(Last&& on_last, Others&& on_others, const char* must_contain) {
  require_mismatch_error(
      [&] {
        if (last())
          on_last();
        else
          on_others();
      },
      must_contain);
}

}  // namespace

TEST_CASE("mismatch checks are off: this test is about what travels") { REQUIRE(!consistency_checks_enabled()); }

TEST_CASE("reshard of float64 here and int64 on the last process: an error on every process, not garbage") {
  const Mesh mesh = make_mesh({device_count()}, {"x"});
  const NamedSharding rows(mesh, P{"x"}), cols(mesh, P{none, "x"});
  for (const int64_t n : {int64_t(16), int64_t(512)}) {  // packed messages per peer, and one message per piece
    INFO("n = " << n);
    require_mismatch_between(
        [&] {
          (void)reshard(iota<int64_t, 2>({2 * n, n}, rows), cols);
        },
        [&] {
          (void)reshard(iota<double, 2>({2 * n, n}, rows), cols);
        },
        "sent data of another operation");
  }
  // The library is still usable afterwards: a matching call succeeds and is right.
  auto b = reshard(iota<double, 2>({32, 16}, rows), cols);
  bool ok = true;
  for (const auto& s : b.addressable_shards()) {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s.data);
    for (int64_t i = 0; i < s.index[0].size(); ++i)
      for (int64_t j = 0; j < s.index[1].size(); ++j)
        ok = ok && h(i, j) == static_cast<double>((s.index[0].start + i) * 16 + s.index[1].start + j);
  }
  REQUIRE(all_ok(ok));
}

TEST_CASE("staged (device) path: reshard of float64 here and int64 on the last process: an error on every process") {
  // The device path packs into staging buffers and exchanges them through the transport; on the MPI backend each
  // peer's message carries the same fingerprint tag as the host path's.
  const darray::detail::StageAsIfOnDevice staged;
  const Mesh mesh = make_mesh({device_count()}, {"x"});
  const NamedSharding rows(mesh, P{"x"}), cols(mesh, P{none, "x"});
  const int64_t n = 16 * device_count();
  require_mismatch_between(
      [&] {
        (void)reshard(iota<int64_t, 2>({2 * n, n}, rows), cols);
      },
      [&] {
        (void)reshard(iota<double, 2>({2 * n, n}, rows), cols);
      },
      "sent data of another operation");
  require_mismatch_between([&] { (void)all_gather(iota<int32_t, 1>({n}, rows), "x", 0, tiled); },
                           [&] { (void)all_gather(iota<float, 1>({n}, rows), "x", 0, tiled); },
                           "sent data of another operation");
}

TEST_CASE("reshard of another shape on the last process: an error on every process") {
  const Mesh mesh = make_mesh({device_count()}, {"x"});
  const NamedSharding rows(mesh, P{"x"}), cols(mesh, P{none, "x"});
  const int64_t n = 8 * device_count();
  require_mismatch_error([&] { (void)reshard(iota<double, 2>({n, last() ? 2 * n : n}, rows), cols); });
}

// The same extents everywhere, other arguments: the pieces two processes exchange have the same count and extents,
// so only the operation's global arguments in the fingerprint tell the calls apart (before they were in it, such
// calls returned each other's blocks as a silent wrong result, or failed on one side only).
TEST_CASE("reshard over a mesh of reversed device order on the last process: an error on every process") {
  const std::vector<Device> devs = devices();
  const std::vector<Device> reversed(devs.rbegin(), devs.rend());
  const Mesh mesh(last() ? reversed : devs, {device_count()}, {"x"});
  const int64_t n = 4 * device_count();
  require_mismatch_error(
      [&] { (void)reshard(iota<double, 1>({n}, NamedSharding(mesh, P{"x"})), NamedSharding(mesh, P{none})); },
      "sent data of another operation");
  const NamedSharding rows(mesh, P{"x"}), cols(mesh, P{none, "x"});
  require_mismatch_error([&] { (void)reshard(iota<double, 2>({n, n}, rows), cols); }, "sent data of another operation");
}

TEST_CASE("reshard where the last process writes its spec with a trailing None: the same placement, no error") {
  const Mesh mesh = make_mesh({device_count()}, {"x"});
  const NamedSharding rows(mesh, last() ? P{"x", none} : P{"x"}), cols(mesh, P{none, "x"});
  const int64_t n = 4 * device_count();
  auto b = reshard(iota<double, 2>({n, n}, rows), cols);
  bool ok = true;
  for (const auto& s : b.addressable_shards()) {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s.data);
    for (int64_t i = 0; i < s.index[0].size(); ++i)
      for (int64_t j = 0; j < s.index[1].size(); ++j)
        ok = ok && h(i, j) == static_cast<double>((s.index[0].start + i) * n + s.index[1].start + j);
  }
  REQUIRE(all_ok(ok));
}

TEST_CASE("reshard of one more row on the last process, pieces of the same extents: an error on every process") {
  // 2 devices: 4 + 4 rows here, 5 + 4 there; the last device's 4 rows reach the first as the 4 rows it expects.
  const Mesh mesh = make_mesh({device_count()}, {"x"});
  const int64_t n = 4 * device_count() + (last() ? 1 : 0);
  require_mismatch_error(
      [&] { (void)reshard(iota<double, 1>({n}, NamedSharding(mesh, P{"x"})), NamedSharding(mesh, P{none})); },
      "sent data of another operation");
}

TEST_CASE("all_gather over a mesh of reversed device order on the last process: an error on every process") {
  const std::vector<Device> devs = devices();
  const std::vector<Device> reversed(devs.rbegin(), devs.rend());
  const Mesh mesh(last() ? reversed : devs, {device_count()}, {"x"});
  const int64_t n = 4 * device_count();
  require_mismatch_error([&] { (void)all_gather(iota<float, 1>({n}, NamedSharding(mesh, P{"x"})), "x", 0, tiled); },
                         "sent data of another operation");
}

TEST_CASE("fft forward here and backward on the last process: an error on every process") {
  // Both directions transpose between the same shardings; the transposes' fingerprints name direction and step.
  const Mesh mesh = make_mesh({device_count()}, {"x"});
  const NamedSharding slabs(mesh, P{"x"});
  const int64_t n = 4 * device_count();
  const fft::Plan<double> plan({n, n, n}, slabs);
  const auto x = iota<Kokkos::complex<double>, 3>({n, n, n}, slabs);
  // Where the slab's second stage runs fused with its transposes (one node, single copies: fft/detail/fused.hpp),
  // the processes compare the stage's fingerprint before they touch each other's blocks.
  const bool fused = plan.describe().find("fused") != std::string::npos;
  require_mismatch_between([&] { (void)plan.backward(x); }, [&] { (void)plan.forward(x); },
                           fused ? "ran different transforms at the same time" : "sent data of another operation");
}

TEST_CASE("halo exchange with a wider halo on the last process: an error on every process") {
  // The last process sends two rows where the others receive one: their receives are truncated, often before they
  // wait (a wait without a deadline once hung there, at 3 processes: test_deadline has the MPI case). Along a
  // periodic ring of at most 3 processes every process exchanges with the last; beyond, a process none of whose
  // neighbours differ learns nothing of it (only DARRAY_CHECK=1 compares every process's call).
  if (process_count() > 3) return;
  const Mesh mesh = make_mesh({device_count()}, {"x"});
  const NamedSharding rows(mesh, P{"x"});
  const HaloExchange<double, 2> halo({4 * device_count(), 8}, rows, {last() ? 2 : 1, 0}, Boundary::periodic);
  const auto padded = halo.allocate();
  require_mismatch_error([&] { halo.exchange(padded); }, "sent data of another operation");
}

TEST_CASE("all_gather of float32 here and int32 on the last process: an error on every process") {
  const Mesh mesh = make_mesh({device_count()}, {"x"});
  const NamedSharding line(mesh, P{"x"});
  const int64_t n = 4 * device_count();
  require_mismatch_between([&] { (void)all_gather(iota<int32_t, 1>({n}, line), "x", 0, tiled); },
                           [&] { (void)all_gather(iota<float, 1>({n}, line), "x", 0, tiled); },
                           "sent data of another operation");
}

// Reductions go through the transport's allreduce, which carries no tag: before it, the processes compare a
// fingerprint of the reduction (operation, element type, element count), so a mismatch is an error on every process.
TEST_CASE("psum of int64 here and float64 on the last process: an error on every process, not garbage") {
  const Mesh mesh = make_mesh({device_count()}, {"x"});
  const NamedSharding line(mesh, P{"x"});
  // The fingerprint rides with the data: 8 B and 16 KiB per device in records, 64 KiB and 1 MiB in the messages of a
  // reduce-scatter; just above 16 MiB a record without data, then the data's allreduce.
  for (const int64_t per_device : {int64_t(1), int64_t(2048), int64_t(8192), int64_t(131072), int64_t(2097153)}) {
    INFO("elements per device = " << per_device);
    const int64_t n = per_device * device_count();
    require_mismatch_between([&] { (void)psum(iota<double, 1>({n}, line), "x"); },
                             [&] { (void)psum(iota<int64_t, 1>({n}, line), "x"); }, "another reduction");
  }
  // Kept output, and the library usable afterwards.
  const int64_t n = 4 * device_count();
  auto out = psum(iota<double, 1>({n}, line), "x");
  require_mismatch_between([&] { psum(iota<double, 1>({n}, line), "x", out); },
                           [&] { (void)pmax(iota<double, 1>({n}, line), "x"); }, "another reduction");
  out = psum(full<double, 1>({n}, 1.0, line), "x");
  bool ok = true;
  for (const auto& s : out.addressable_shards()) {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s.data);
    for (int64_t i = 0; i < s.index[0].size(); ++i) ok = ok && h(i) == static_cast<double>(device_count());
  }
  REQUIRE(all_ok(ok));
}

// Another length: the same element type and operation, but a block of another size on the last process, on each
// path and across the boundaries between them (another number of messages per step, longer messages than the others
// posted for).
TEST_CASE("psum of another length on the last process: an error on every process") {
  const Mesh mesh = make_mesh({device_count()}, {"x"});
  const NamedSharding line(mesh, P{"x"});
  // 2048 here and 2049 there: 16 KiB in records against a reduce-scatter; 2097152 and 2097153: a reduce-scatter of
  // 16 MiB against a record without data followed by an allreduce.
  for (const int64_t per_device :
       {int64_t(3), int64_t(4), int64_t(1000), int64_t(2048), int64_t(8192), int64_t(40000), int64_t(2097152)}) {
    INFO("elements per device here = " << per_device);
    const int64_t n = per_device * device_count(), n_last = (per_device + 1) * device_count();
    require_mismatch_between([&] { (void)psum(iota<double, 1>({n_last}, line), "x"); },
                             [&] { (void)psum(iota<double, 1>({n}, line), "x"); }, "another reduction");
  }
}

TEST_CASE("psum_scatter of float32 here and int32 on the last process: an error on every process") {
  const Mesh mesh = make_mesh({device_count()}, {"x"});
  const NamedSharding line(mesh, P{"x"});
  const int64_t n = 4 * device_count() * device_count();
  require_mismatch_between([&] { (void)psum_scatter(iota<int32_t, 1>({n}, line), "x", 0); },
                           [&] { (void)psum_scatter(iota<float, 1>({n}, line), "x", 0); }, "another reduction");
}

TEST_CASE("sum of a float64 array here and an int64 array on the last process: an error on every process") {
  const Mesh mesh = make_mesh({device_count()}, {"x"});
  const NamedSharding line(mesh, P{"x"});
  const int64_t n = 4 * device_count();
  require_mismatch_between([&] { (void)sum(iota<int64_t, 1>({n}, line)); },
                           [&] { (void)sum(iota<double, 1>({n}, line)); }, "another reduction");
}
