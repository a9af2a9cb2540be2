// exchange(): moves the byte ranges of an ExchangePlan between the processes of a communicator. Dense patterns go
// through one MPI_Alltoallv, sparse ones (or blocks beyond max_message_bytes()) through chunked Isend/Irecv, and
// messages to the process itself are a memcpy. exchange_with_callback reports each receive as soon as it lands.
#pragma once

#include <mpi.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <optional>
#include <vector>

#include "darray/comm/detail/chunking.hpp"
#include "darray/comm/detail/exchange_layout.hpp"
#include "darray/comm/detail/requests.hpp"
#include "darray/comm/exchange_plan.hpp"
#include "darray/comm/limits.hpp"
#include "darray/core/error.hpp"
#include "darray/runtime/detail/agree.hpp"
#include "darray/runtime/detail/mpi.hpp"

namespace darray {

namespace detail {

inline void comm_rank_size(MPI_Comm comm, int& rank, int& size, const char* api) {
  DARRAY_THROW_IF(comm == MPI_COMM_NULL, InvalidArgument, api, "communicator is MPI_COMM_NULL");
  DARRAY_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  DARRAY_MPI_CHECK(MPI_Comm_size(comm, &size));
}

inline void check_exchange_options(const ExchangeOptions& o) {
  DARRAY_THROW_IF(!(o.dense_peer_fraction >= 0.0 && o.dense_peer_fraction <= 1.0), InvalidArgument, "ExchangeOptions",
                  "dense_peer_fraction = " << o.dense_peer_fraction << "; expected a value from 0 to 1");
  DARRAY_THROW_IF(o.tag < 0, InvalidArgument, "ExchangeOptions", "tag = " << o.tag << "; expected 0 or more");
}

inline void check_exchange_buffers(const ExchangePlan& plan, const std::byte* send, std::byte* recv) {
  for (const PeerBytes& e : plan.sends)
    DARRAY_THROW_IF(send == nullptr && e.bytes > 0, InvalidArgument, "exchange",
                    "null send buffer but the plan sends " << e.bytes << " bytes to peer " << e.peer);
  for (const PeerBytes& e : plan.recvs)
    DARRAY_THROW_IF(recv == nullptr && e.bytes > 0, InvalidArgument, "exchange",
                    "null receive buffer but the plan receives " << e.bytes << " bytes from peer " << e.peer);
}

}  // namespace detail

// Collective over comm: the method every process will use for this plan. Alltoallv when every process has at
// least options.dense_peer_fraction of the others as peers and every block fits, else point_to_point. An invalid
// plan on any process throws the same InvalidArgument on all (naming the process), instead of a hang.
// An explicit options.method is returned as is, without communication. Cache the result with the plan.
inline ExchangeMethod choose_exchange_method(MPI_Comm comm, const ExchangePlan& plan,
                                             const ExchangeOptions& options = {}) {
  if (options.method != ExchangeMethod::automatic) return options.method;
  int rank = 0, size = 1;
  detail::comm_rank_size(comm, rank, size, "choose_exchange_method");
  detail::check_exchange_options(options);
  bool fits = false;
  const detail::CapturedError err = detail::capture_error([&] {
    detail::validate_plan(plan, rank, size);
    fits = detail::dense_layout(plan, rank, size, max_message_bytes()).fits;
  });
  const bool valid = err.kind == detail::ErrorKind::none;
  int local[3] = {valid ? size : rank, fits ? 1 : 0, valid ? detail::remote_peer_count(plan, rank, size) : 0};
  int global[3] = {0, 0, 0};
  DARRAY_MPI_CHECK(MPI_Allreduce(local, global, 3, MPI_INT, MPI_MIN, comm));
  if (global[0] < size) detail::agree_on_error(comm, err);
  const int needed = static_cast<int>(std::ceil(options.dense_peer_fraction * (size - 1)));
  const bool dense = size > 1 && global[1] == 1 && global[2] >= (needed > 1 ? needed : 1);
  return dense ? ExchangeMethod::alltoallv : ExchangeMethod::point_to_point;
}

namespace detail {

// What exchange_impl keeps between calls, per thread: its request set and receive counters, reused so that a warm
// exchange allocates nothing. A nested exchange (from an on_receive callback) takes a fresh one.
struct ExchangeScratch {
  RequestSet requests;
  std::vector<std::size_t> remaining;
  bool busy = false;
};

inline void exchange_impl(MPI_Comm comm, const ExchangePlan& plan, const std::byte* send, std::byte* recv,
                          const ExchangeOptions& options, const ReceiveCallback* on_receive) {
  int rank = 0, size = 1;
  comm_rank_size(comm, rank, size, "exchange");
  check_exchange_options(options);
  ExchangeMethod method = options.method;
  if (method == ExchangeMethod::automatic) {
    method = choose_exchange_method(comm, plan, options);  // validates on every process, agreeing on errors
  } else {
    validate_plan(plan, rank, size);
  }
  check_exchange_buffers(plan, send, recv);
  const std::size_t max_bytes = max_message_bytes();
  DenseLayout dense;
  if (method == ExchangeMethod::alltoallv) {
    dense = dense_layout(plan, rank, size, max_bytes);
    DARRAY_THROW_IF(!dense.fits, InvalidArgument, "exchange",
                    "ExchangeMethod::alltoallv requested but " << dense.why_not
                                                               << "; use ExchangeMethod::automatic or point_to_point");
  }
  auto report = [&](std::size_t i) {
    if (on_receive != nullptr && *on_receive) (*on_receive)(i, plan.recvs[i]);
  };

  static thread_local ExchangeScratch shared;
  std::optional<ExchangeScratch> own;  // made only for a nested exchange
  ExchangeScratch& scratch = shared.busy ? own.emplace() : shared;
  struct Release {  // on every exit, an exception's included: outstanding requests cancelled or released
    ExchangeScratch& s;
    ~Release() {
      s.requests.abandon();
      s.busy = false;
    }
  } release{scratch};
  scratch.busy = true;
  RequestSet& requests = scratch.requests;
  std::vector<std::size_t>& remaining = scratch.remaining;
  remaining.assign(plan.recvs.size(), 0);
  if (method == ExchangeMethod::point_to_point) {
    // Receives first, so early messages land in place instead of in MPI's unexpected-message queue.
    for (std::size_t i = 0; i < plan.recvs.size(); ++i) {
      const PeerBytes& e = plan.recvs[i];
      if (e.peer != rank && e.bytes > 0)
        remaining[i] = requests.post_recv(comm, recv + e.offset, e.bytes, e.peer, e.tag >= 0 ? e.tag : options.tag, i,
                                          max_bytes, "exchange", /*check_tag=*/e.tag >= 0);
    }
    for (std::size_t i = 0; i < plan.sends.size(); ++i) {
      const PeerBytes& e = plan.sends[i];
      if (e.peer != rank && e.bytes > 0)
        requests.post_send(comm, send + e.offset, e.bytes, e.peer, e.tag >= 0 ? e.tag : options.tag, i, max_bytes,
                           "exchange");
    }
  }

  // Self messages and empty entries need no network, so they are done (and reported) while messages fly.
  for_each_self_pair(plan, rank, [&](std::size_t si, std::size_t ri) {
    const PeerBytes &s = plan.sends[si], &r = plan.recvs[ri];
    if (s.bytes > 0) std::memcpy(recv + r.offset, send + s.offset, s.bytes);
    report(ri);
  });
  for (std::size_t i = 0; i < plan.recvs.size(); ++i)
    if (plan.recvs[i].peer != rank && plan.recvs[i].bytes == 0) report(i);

  if (method == ExchangeMethod::alltoallv) {
    const std::byte* sbase = send != nullptr ? send + dense.send.base : nullptr;
    std::byte* rbase = recv != nullptr ? recv + dense.recv.base : nullptr;
    DARRAY_MPI_CHECK(MPI_Alltoallv(sbase, dense.send.counts.data(), dense.send.displs.data(), MPI_BYTE, rbase,
                                   dense.recv.counts.data(), dense.recv.displs.data(), MPI_BYTE, comm));
    for (std::size_t i = 0; i < plan.recvs.size(); ++i)
      if (plan.recvs[i].peer != rank && plan.recvs[i].bytes > 0) report(i);
    return;
  }
  while (requests.pending() > 0)
    requests.wait_some(
        [&](std::size_t i) {
          if (--remaining[i] == 0) report(i);
        },
        "exchange");
}

}  // namespace detail

// Collective over comm: after return, every plan.recvs range of recv holds the bytes its peer sent. send and recv
// are host memory (the NCCL transport handles device memory); they must not overlap.
inline void exchange(MPI_Comm comm, const ExchangePlan& plan, const std::byte* send, std::byte* recv,
                     const ExchangeOptions& options = {}) {
  detail::exchange_impl(comm, plan, send, recv, options, nullptr);
}

// exchange() that calls on_receive(recv_index, piece) for every receive entry as soon as its bytes have arrived
// (MPI_Waitsome on the point-to-point path; after the single call on the Alltoallv path).
inline void exchange_with_callback(MPI_Comm comm, const ExchangePlan& plan, const std::byte* send, std::byte* recv,
                                   const ReceiveCallback& on_receive, const ExchangeOptions& options = {}) {
  detail::exchange_impl(comm, plan, send, recv, options, &on_receive);
}

}  // namespace darray
