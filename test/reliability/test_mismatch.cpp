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

}  // namespace

TEST_CASE("mismatch checks are off: this test is about what travels") { REQUIRE(!consistency_checks_enabled()); }

TEST_CASE("reshard of float64 here and int64 on the last process: an error on every process, not garbage") {
  const Mesh mesh = make_mesh({device_count()}, {"x"});
  const NamedSharding rows(mesh, P{"x"}), cols(mesh, P{none, "x"});
  for (const int64_t n : {int64_t(16), int64_t(512)}) {  // packed messages per peer, and one message per piece
    INFO("n = " << n);
    require_mismatch_error(
        [&] {
          if (last())
            (void)reshard(iota<int64_t, 2>({2 * n, n}, rows), cols);
          else
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

TEST_CASE("reshard of another shape on the last process: an error on every process") {
  const Mesh mesh = make_mesh({device_count()}, {"x"});
  const NamedSharding rows(mesh, P{"x"}), cols(mesh, P{none, "x"});
  const int64_t n = 8 * device_count();
  require_mismatch_error([&] { (void)reshard(iota<double, 2>({n, last() ? 2 * n : n}, rows), cols); });
}

TEST_CASE("all_gather of float32 here and int32 on the last process: an error on every process") {
  const Mesh mesh = make_mesh({device_count()}, {"x"});
  const NamedSharding line(mesh, P{"x"});
  const int64_t n = 4 * device_count();
  require_mismatch_error(
      [&] {
        if (last())
          (void)all_gather(iota<int32_t, 1>({n}, line), "x", 0, tiled);
        else
          (void)all_gather(iota<float, 1>({n}, line), "x", 0, tiled);
      },
      "sent data of another operation");
}
