// The Transport interface: the MPI backend runs plans and builds cached group transports; the NCCL backend is a
// NotSupported error in builds or on machines that cannot run it, and runs a real exchange when a GPU is present.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <iostream>
#include <vector>

#include "comm_test_util.hpp"
#include "darray/comm/world_transport.hpp"
#include "darray/runtime/environment.hpp"
#include "mpi_test.hpp"

#if defined(DARRAY_HAS_NCCL)
#include <cuda_runtime_api.h>
#endif

using darray::Backend;
using darray::NotSupported;
using darray_test::pattern;

namespace {

// Every process sends n bytes to every process of t (itself included), laid out by destination / source.
struct AllToAll {
  darray::ExchangePlan plan;
  std::vector<std::byte> send, expect;
};

AllToAll all_to_all(int me_world, const std::vector<int>& world_of, int me, std::size_t n) {
  AllToAll a;
  const int size = static_cast<int>(world_of.size());
  for (int q = 0; q < size; ++q) {
    a.plan.sends.push_back({q, static_cast<std::size_t>(q) * n, n});
    a.plan.recvs.push_back({q, static_cast<std::size_t>(q) * n, n});
    for (std::size_t i = 0; i < n; ++i)
      a.send.push_back(pattern(me_world, world_of[static_cast<std::size_t>(q)], 0, i));
    for (std::size_t i = 0; i < n; ++i)
      a.expect.push_back(pattern(world_of[static_cast<std::size_t>(q)], me_world, 0, i));
  }
  (void)me;
  return a;
}

}  // namespace

TEST_CASE("backend names") {
  CHECK(darray::parse_backend("DARRAY_BACKEND", "mpi") == Backend::mpi);
  CHECK(darray::parse_backend("DARRAY_BACKEND", "nccl") == Backend::nccl);
  CHECK_THROWS_WITH(darray::parse_backend("DARRAY_BACKEND", "gloo"),
                    Catch::Contains("DARRAY_BACKEND") && Catch::Contains("\"gloo\""));
  CHECK(std::string(darray::to_string(Backend::nccl)) == "nccl");
  CHECK(std::string(darray::to_string(Backend::mpi)) == "mpi");
}

TEST_CASE("the MPI transport exchanges and builds cached groups") {
  const int me = darray::process_index(), procs = darray::process_count();
  darray::Transport& t = darray::transport(Backend::mpi);
  CHECK(&t == &darray::transport(Backend::mpi));
  CHECK((darray::backend() != Backend::mpi || &t == &darray::transport()));  // the selected one, where it is "mpi"
  CHECK(t.backend() == Backend::mpi);
  CHECK(t.rank() == me);
  CHECK(t.size() == procs);
  std::vector<int> world(static_cast<std::size_t>(procs));
  for (int p = 0; p < procs; ++p) world[static_cast<std::size_t>(p)] = p;
  AllToAll a = all_to_all(me, world, me, 257);
  std::vector<std::byte> recv(a.expect.size());
  t.exchange(a.plan, a.send.data(), recv.data());
  bool ok = recv == a.expect;

  // Groups by halves; a group of that group by parity of the group rank.
  std::vector<int> halves(static_cast<std::size_t>(procs));
  for (int p = 0; p < procs; ++p) halves[static_cast<std::size_t>(p)] = p < (procs + 1) / 2 ? 0 : 1;
  darray::Transport& h = t.group(halves);
  ok = ok && &h == &t.group(halves) && h.size() == darray::process_group(halves).size();
  ok = ok && h.rank() == darray::group_rank(halves, me);
  std::vector<int> members = darray::process_group(halves).world_ranks();
  AllToAll b = all_to_all(me, members, h.rank(), 99);
  std::vector<std::byte> recv_b(b.expect.size());
  h.exchange(b.plan, b.send.data(), recv_b.data());
  ok = ok && recv_b == b.expect;

  std::vector<int> sub_colors(static_cast<std::size_t>(h.size()));
  for (int r = 0; r < h.size(); ++r) sub_colors[static_cast<std::size_t>(r)] = r % 2;
  darray::Transport& s = h.group(sub_colors);
  ok = ok && &s == &h.group(sub_colors) && s.rank() == h.rank() / 2;
  std::vector<int> sub_members;
  for (int r = h.rank() % 2; r < h.size(); r += 2) sub_members.push_back(members[static_cast<std::size_t>(r)]);
  ok = ok && s.size() == static_cast<int>(sub_members.size());
  AllToAll c = all_to_all(me, sub_members, s.rank(), 41);
  std::vector<std::byte> recv_c(c.expect.size());
  s.exchange(c.plan, c.send.data(), recv_c.data());
  ok = ok && recv_c == c.expect;
  REQUIRE(darray::testing::all_ok(ok));
  DARRAY_REQUIRE_THROWS_ALL(darray::InvalidArgument, t.group(std::vector<int>(static_cast<std::size_t>(procs) + 2, 0)),
                            "Transport::group", "expected one per process");
}

TEST_CASE("a group whose color every process shares is the transport itself: nothing is created") {
  // A creation is collective without a deadline: one process absent from a first use held the others there (a sum
  // over an axis spanning every process on one process, a local one on another, hung past DARRAY_TIMEOUT_S).
  darray::Transport& t = darray::transport(Backend::mpi);
  const auto procs = static_cast<std::size_t>(darray::process_count());
  REQUIRE(darray::testing::all_ok(&t.group(std::vector<int>(procs, 0)) == &t &&
                                  &t.group(std::vector<int>(procs, 7)) == &t));
}

TEST_CASE("asking for NCCL where it cannot run is NotSupported on every process") {
  const bool shared = !darray::detail::state().gpu_sharing.empty();
  if (darray::detail::nccl_compiled() && darray::detail::gpu_count() > 0 && !shared) {
    WARN(
        "SKIP: this machine can run NCCL; the NotSupported path is for CPU-only builds or machines, or processes "
        "that share a GPU");
    return;
  }
  const char* why = !darray::detail::nccl_compiled() ? "built without NCCL"
                    : shared                         ? "drive the same GPU of their node"
                                                     : "sees none";
  DARRAY_REQUIRE_THROWS_ALL(NotSupported, darray::transport(Backend::nccl), "NCCL transport", why, "Backend::mpi");
  // The failure left nothing behind: the MPI transport still works.
  CHECK(darray::transport(Backend::mpi).size() == darray::process_count());
}

TEST_CASE("the NCCL transport exchanges device buffers") {
#if !defined(DARRAY_HAS_NCCL)
  WARN("SKIP: libdarray was built without NCCL (DARRAY_HAS_NCCL unset)");
  return;
#else
  if (darray::detail::gpu_count() == 0 || !darray::detail::state().gpu_sharing.empty()) {
    WARN(
        "SKIP: NCCL transport test needs a CUDA GPU per process; cudaGetDeviceCount found none, or processes "
        "share one");
    return;
  }
  const int me = darray::process_index(), procs = darray::process_count();
  darray::Transport& t = darray::transport(Backend::nccl);
  REQUIRE(t.backend() == Backend::nccl);
  REQUIRE(t.size() == procs);
  std::vector<int> world(static_cast<std::size_t>(procs));
  for (int p = 0; p < procs; ++p) world[static_cast<std::size_t>(p)] = p;
  bool ok = true;
  for (std::size_t n : {std::size_t(1), std::size_t(4097), std::size_t(1) << 20}) {
    AllToAll a = all_to_all(me, world, me, n);
    std::byte *d_send = nullptr, *d_recv = nullptr;
    REQUIRE(cudaMalloc(reinterpret_cast<void**>(&d_send), a.send.size()) == cudaSuccess);
    REQUIRE(cudaMalloc(reinterpret_cast<void**>(&d_recv), a.expect.size()) == cudaSuccess);
    REQUIRE(cudaMemcpy(d_send, a.send.data(), a.send.size(), cudaMemcpyHostToDevice) == cudaSuccess);
    REQUIRE(cudaMemset(d_recv, 0, a.expect.size()) == cudaSuccess);
    cudaStream_t stream = nullptr;
    REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);
    t.exchange(a.plan, d_send, d_recv, {}, stream);
    std::vector<std::byte> got(a.expect.size());
    REQUIRE(cudaMemcpy(got.data(), d_recv, got.size(), cudaMemcpyDeviceToHost) == cudaSuccess);
    ok = ok && got == a.expect;
    cudaStreamDestroy(stream);
    cudaFree(d_send);
    cudaFree(d_recv);
  }
  // A group transport via ncclCommSplit has the ranks the MPI groups have.
  std::vector<int> parity(static_cast<std::size_t>(procs));
  for (int p = 0; p < procs; ++p) parity[static_cast<std::size_t>(p)] = p % 2;
  darray::Transport& g = t.group(parity);
  ok = ok && g.rank() == darray::group_rank(parity, me) && g.size() == darray::process_group(parity).size();
  REQUIRE(darray::testing::all_ok(ok));
#endif
}
