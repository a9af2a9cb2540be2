// Cached communicators and transports belong to one Environment: they are freed before it ends (checked with an
// MPI attribute whose delete callback runs when the communicator is freed) and rebuilt by the next Environment.
// Built on the bare test main, which starts MPI itself so Environments can come and go.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <vector>

#include "darray/comm/world_transport.hpp"
#include "darray/runtime/environment.hpp"
#include "mpi_test.hpp"

namespace {

int count_free(MPI_Comm, int, void* attribute, void*) {
  ++*static_cast<int*>(attribute);
  return MPI_SUCCESS;
}

// An all-to-all of one byte per pair over t, checked.
bool small_exchange(darray::Transport& t) {
  darray::ExchangePlan plan;
  std::vector<std::byte> send(static_cast<std::size_t>(t.size())), recv(send.size(), std::byte{0});
  for (int q = 0; q < t.size(); ++q) {
    plan.sends.push_back({q, static_cast<std::size_t>(q), 1});
    plan.recvs.push_back({q, static_cast<std::size_t>(q), 1});
    send[static_cast<std::size_t>(q)] = static_cast<std::byte>(16 * t.rank() + q);
  }
  t.exchange(plan, send.data(), recv.data());
  bool ok = true;
  for (int q = 0; q < t.size(); ++q)
    ok = ok && recv[static_cast<std::size_t>(q)] == static_cast<std::byte>(16 * q + t.rank());
  return ok;
}

}  // namespace

TEST_CASE("cached communicators are freed when the Environment ends and rebuilt by the next one") {
  int keyval = MPI_KEYVAL_INVALID;
  REQUIRE(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, count_free, &keyval, nullptr) == MPI_SUCCESS);
  const int procs = darray::testing::world_size();
  std::vector<int> parity(static_cast<std::size_t>(procs));
  for (int p = 0; p < procs; ++p) parity[static_cast<std::size_t>(p)] = p % 2;
  bool ok = true;
  for (int round = 0; round < 2; ++round) {
    int freed_group = 0, freed_sub = 0;
    bool own_sub = false;
    {
      darray::Environment env;
      const MPI_Comm g = darray::group_comm(parity);
      ok = ok && g != MPI_COMM_NULL;
      REQUIRE(MPI_Comm_set_attr(g, keyval, &freed_group) == MPI_SUCCESS);
      darray::Transport& t = darray::transport(darray::Backend::mpi);
      darray::Transport& tg = t.group(parity);
      // A group of a group owns its communicator: it must be freed with the transport cache. (A partition of one
      // color is the group itself: no communicator to own, where the group holds one process.)
      std::vector<int> halves(static_cast<std::size_t>(tg.size()));
      for (int r = 0; r < tg.size(); ++r) halves[static_cast<std::size_t>(r)] = r < (tg.size() + 1) / 2 ? 0 : 1;
      own_sub = tg.size() > 1;
      darray::Transport& sub = tg.group(halves);
      if (own_sub)
        REQUIRE(MPI_Comm_set_attr(static_cast<darray::MpiTransport&>(sub).comm(), keyval, &freed_sub) == MPI_SUCCESS);
      else
        CHECK(&sub == &tg);
      // CHECK (not REQUIRE) between collectives: a failure is recorded and the processes stay in step.
      CHECK(small_exchange(t));
      CHECK(small_exchange(tg));
      CHECK(small_exchange(sub));
      CHECK(freed_group == 0);
      CHECK(freed_sub == 0);
      CHECK_FALSE(darray::detail::group_cache().groups.empty());
      CHECK_FALSE(darray::detail::transport_cache().transports.empty());
    }
    INFO("round " << round);
    CHECK(freed_group == 1);
    CHECK(freed_sub == (own_sub ? 1 : 0));
    CHECK(darray::detail::group_cache().groups.empty());
    CHECK(darray::detail::transport_cache().transports.empty());
    CHECK_FALSE(darray::detail::group_cache().cleanup_registered);
    CHECK_FALSE(darray::detail::transport_cache().cleanup_registered);
  }
  REQUIRE(MPI_Comm_free_keyval(&keyval) == MPI_SUCCESS);
  REQUIRE(darray::testing::all_ok(ok));
}
