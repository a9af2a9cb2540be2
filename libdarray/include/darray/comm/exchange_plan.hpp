// What one process sends to and receives from its peers in one exchange: byte ranges of a contiguous send buffer
// and of a contiguous receive buffer. Each process builds its own plan from replicated metadata; the k-th send to
// peer q on process p matches the k-th receive from p on process q.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

namespace darray {

struct PeerBytes {
  int peer = 0;            // rank in the communicator the exchange runs on
  std::size_t offset = 0;  // byte offset into the send (or receive) buffer
  std::size_t bytes = 0;   // byte count; 0 is allowed and moves nothing
  // The point-to-point messages' tag; -1: ExchangeOptions::tag. A receive with a tag of its own accepts messages of
  // any tag from its peer and checks it on arrival, so a peer that sent another operation's data (another tag) is
  // an InvalidArgument rather than bytes taken for this one. Alltoallv and NCCL carry no tags.
  int tag = -1;
};

struct ExchangePlan {
  std::vector<PeerBytes> sends;
  std::vector<PeerBytes> recvs;
};

enum class ExchangeMethod {
  automatic,       // decided collectively by choose_exchange_method
  alltoallv,       // one MPI_Alltoallv: best when most processes talk to most others
  point_to_point,  // chunked MPI_Isend/MPI_Irecv: few peers, or blocks beyond max_message_bytes()
};

inline const char* to_string(ExchangeMethod m) {
  switch (m) {
    case ExchangeMethod::alltoallv:
      return "alltoallv";
    case ExchangeMethod::point_to_point:
      return "point_to_point";
    default:
      return "automatic";
  }
}

struct ExchangeOptions {
  ExchangeMethod method = ExchangeMethod::automatic;
  // automatic picks MPI_Alltoallv when every process has at least this fraction of the other processes as peers
  // (and every block fits the MPI limits); below it most Alltoallv slots would be empty.
  double dense_peer_fraction = 0.5;
  // Tag of the point-to-point messages; exchanges on one communicator run in order, so one tag is enough.
  int tag = 0x6461;
};

// Called once per receive entry (index into plan.recvs) as soon as its bytes are in the receive buffer, so the
// caller can unpack it while other messages are still in flight. Self and empty entries are reported first.
using ReceiveCallback = std::function<void(std::size_t recv_index, const PeerBytes& piece)>;

}  // namespace darray
