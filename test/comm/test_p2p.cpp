// Chunked point-to-point transfers, broadcast and allreduce on real MPI: every byte checked, every MPI message
// no larger than max_message_bytes() (observed on the receiving side with MPI_Probe), mismatched sizes detected.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <numeric>
#include <vector>

#include "comm_test_util.hpp"
#include "darray/comm/chunked_collectives.hpp"
#include "darray/comm/p2p.hpp"
#include "darray/runtime/environment.hpp"
#include "mpi_test.hpp"

using darray::InvalidArgument;
using darray_test::pattern;

namespace {

std::vector<std::byte> make_message(int src, int dst, std::size_t message, std::size_t bytes) {
  std::vector<std::byte> v(bytes);
  for (std::size_t i = 0; i < bytes; ++i) v[i] = pattern(src, dst, message, i);
  return v;
}

bool matches(const std::vector<std::byte>& v, int src, int dst, std::size_t message) {
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i] != pattern(src, dst, message, i)) return false;
  return true;
}

const std::vector<std::size_t> sizes = {0, 1, 6, 7, 8, 13, 64, 4095, 4096, 4097, 100003};

}  // namespace

TEST_CASE("isend/irecv around a ring move every byte") {
  const MPI_Comm comm = darray::detail::world_comm();
  const int rank = darray::process_index(), size = darray::process_count();
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  std::vector<std::vector<std::byte>> out, in;
  std::vector<darray::Request> reqs;
  for (std::size_t m = 0; m < sizes.size(); ++m) {
    in.emplace_back(sizes[m], std::byte{0xEE});
    reqs.push_back(darray::irecv(comm, in.back().data(), sizes[m], prev, 3));
  }
  for (std::size_t m = 0; m < sizes.size(); ++m) {
    out.push_back(make_message(rank, next, m, sizes[m]));
    reqs.push_back(darray::isend(comm, out.back().data(), sizes[m], next, 3));
  }
  darray::wait_all(reqs);
  bool ok = true;
  for (const auto& r : reqs) ok = ok && !r.pending();
  for (std::size_t m = 0; m < sizes.size(); ++m) ok = ok && matches(in[m], prev, rank, m);
  REQUIRE(darray::testing::all_ok(ok));
}

TEST_CASE("blocking send/recv: odd/even ordering between neighbours") {
  const MPI_Comm comm = darray::detail::world_comm();
  const int rank = darray::process_index(), size = darray::process_count();
  bool ok = true;
  if (size == 1) {
    // Blocking self-send could deadlock on a large message: the nonblocking receive goes first.
    auto msg = make_message(0, 0, 0, 5000);
    std::vector<std::byte> got(5000);
    darray::Request r = darray::irecv(comm, got.data(), got.size(), 0, 9);
    darray::send(comm, msg.data(), msg.size(), 0, 9);
    r.wait();
    ok = got == msg;
  } else if (rank < size - size % 2) {  // pairs (0,1), (2,3); a leftover odd process sits out
    const int partner = rank ^ 1;
    for (std::size_t m = 0; m < sizes.size(); ++m) {
      auto msg = make_message(rank, partner, m, sizes[m]);
      std::vector<std::byte> got(sizes[m]);
      if (rank % 2 == 0) {
        darray::send(comm, msg.data(), msg.size(), partner, 4);
        darray::recv(comm, got.data(), got.size(), partner, 4);
      } else {
        darray::recv(comm, got.data(), got.size(), partner, 4);
        darray::send(comm, msg.data(), msg.size(), partner, 4);
      }
      ok = ok && matches(got, partner, rank, m);
    }
  }
  REQUIRE(darray::testing::all_ok(ok));
}

TEST_CASE("no MPI message exceeds max_message_bytes") {
  const MPI_Comm comm = darray::detail::world_comm();
  const int rank = darray::process_index(), size = darray::process_count();
  const std::size_t max = darray::max_message_bytes();
  const std::size_t total = 10000;
  const int src = 0, dst = size - 1;
  auto msg = make_message(src, dst, 0, total);
  darray::Request sent;
  if (rank == src) sent = darray::isend(comm, msg.data(), total, dst, 11);
  bool ok = true;
  if (rank == dst) {
    // Receive with raw MPI: the number and the sizes of the messages on the wire are what the chunking promised.
    const std::size_t n = darray::detail::chunk_count(total, max);
    std::vector<std::byte> got(total);
    for (std::size_t i = 0; i < n; ++i) {
      MPI_Status st;
      DARRAY_MPI_CHECK(MPI_Probe(src, 11, comm, &st));
      int count = -1;
      DARRAY_MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &count));
      const darray::detail::Chunk c = darray::detail::chunk_at(total, max, i);
      ok = ok && static_cast<std::size_t>(count) == c.bytes && static_cast<std::size_t>(count) <= max;
      DARRAY_MPI_CHECK(MPI_Recv(got.data() + c.offset, count, MPI_BYTE, src, 11, comm, MPI_STATUS_IGNORE));
    }
    int more = 0;
    DARRAY_MPI_CHECK(MPI_Iprobe(src, 11, comm, &more, MPI_STATUS_IGNORE));
    ok = ok && more == 0 && got == msg;
    if (max < total) ok = ok && n > 1;
  }
  if (rank == src) sent.wait();
  REQUIRE(darray::testing::all_ok(ok));
}

TEST_CASE("a size mismatch between sender and receiver is detected") {
  const int size = darray::process_count();
  if (size < 2) return;
  const MPI_Comm comm = darray::detail::world_comm();
  const int rank = darray::process_index();
  std::vector<std::byte> buf(64, std::byte{1});
  // Receiver expects more than was sent: MPI itself accepts a short message, the chunk check must not.
  std::string short_msg, long_msg;
  if (rank == 0) darray::send(comm, buf.data(), 10, 1, 21);
  if (rank == 1)
    short_msg = darray::testing::error_message<InvalidArgument>([&] { darray::recv(comm, buf.data(), 12, 0, 21); });
  // Receiver expects less than was sent: truncation is an MPI error.
  if (rank == 0) darray::send(comm, buf.data(), 12, 1, 22);
  if (rank == 1)
    long_msg = darray::testing::error_message<darray::Error>([&] { darray::recv(comm, buf.data(), 10, 0, 22); });
  bool ok = true;
  if (rank == 1) {
    INFO(short_msg << " | " << long_msg);
    ok = short_msg.find("from process 0") != std::string::npos &&
         short_msg.find("bytes were expected") != std::string::npos && !long_msg.empty();
  }
  REQUIRE(darray::testing::all_ok(ok));
}

TEST_CASE("point-to-point argument errors") {
  const MPI_Comm comm = darray::detail::world_comm();
  const int size = darray::process_count();
  std::vector<std::byte> buf(8);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, darray::send(comm, buf.data(), 8, size, 0), "send", "peer", "not a rank");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, darray::irecv(comm, buf.data(), 8, -1, 0), "irecv", "peer -1");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, darray::isend(comm, nullptr, 8, 0, 0), "null buffer");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, darray::recv(MPI_COMM_NULL, buf.data(), 8, 0, 0), "MPI_COMM_NULL");
}

TEST_CASE("chunked bcast and allreduce") {
  const MPI_Comm comm = darray::detail::world_comm();
  const int rank = darray::process_index(), size = darray::process_count();
  const int root = size - 1;
  bool ok = true;
  for (std::size_t bytes : {std::size_t(0), std::size_t(1), std::size_t(7), std::size_t(100003)}) {
    std::vector<std::byte> v = rank == root ? make_message(root, -1, bytes, bytes) : std::vector<std::byte>(bytes);
    darray::detail::bcast(comm, v.data(), bytes, root);
    ok = ok && matches(v, root, -1, bytes);
  }
  std::vector<int64_t> a(10007);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<int64_t>(i) * (rank + 1);
  darray::detail::allreduce(comm, a.data(), a.size(), MPI_SUM);
  const int64_t factor = static_cast<int64_t>(size) * (size + 1) / 2;
  for (std::size_t i = 0; i < a.size(); ++i) ok = ok && a[i] == static_cast<int64_t>(i) * factor;
  // Out of place, doubles: 24008 bytes, several chunks of whole elements under a lowered limit.
  std::vector<double> x(3001, 1.0 + rank), y(3001, -1.0);
  darray::detail::allreduce(comm, x.data(), y.data(), x.size(), MPI_DOUBLE, MPI_MAX);
  for (double v : y) ok = ok && v == static_cast<double>(size);
  REQUIRE(darray::testing::all_ok(ok));
}
