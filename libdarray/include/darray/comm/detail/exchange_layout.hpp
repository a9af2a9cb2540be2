// Local analysis of an ExchangePlan: validation (peers in range, ranges that do not wrap, self messages that pair
// up), the number of distinct remote peers, and the Alltoallv layout when every block fits MPI's int counts.
#pragma once

#include <algorithm>
#include <climits>
#include <cstddef>
#include <string>
#include <vector>

#include "darray/comm/detail/chunking.hpp"
#include "darray/comm/exchange_plan.hpp"
#include "darray/core/error.hpp"

namespace darray {
namespace detail {

inline void validate_side(const std::vector<PeerBytes>& list, const char* side, int size) {
  for (std::size_t i = 0; i < list.size(); ++i) {
    const PeerBytes& e = list[i];
    DARRAY_THROW_IF(
        e.peer < 0 || e.peer >= size, InvalidArgument, "exchange",
        "plan." << side << "[" << i << "] names peer " << e.peer << "; expected a rank from 0 to " << size - 1);
    DARRAY_THROW_IF(e.tag < -1 || e.tag > 32767, InvalidArgument, "exchange",
                    "plan." << side << "[" << i << "] has tag " << e.tag
                            << "; expected -1 (the options' tag) or 0 to 32767 (the tags MPI guarantees)");
    checked_end(e.offset, e.bytes, "exchange");
  }
}

// Entries of `list` addressed to `rank` itself.
inline std::size_t self_count(const std::vector<PeerBytes>& list, int rank) {
  std::size_t n = 0;
  for (const PeerBytes& e : list) n += e.peer == rank ? 1 : 0;
  return n;
}

// Calls f(send_index, recv_index) for each self message: the k-th send addressed to `rank` with the k-th receive,
// in plan order, for as many pairs as both sides have (validate_plan checks that the counts match). Allocates
// nothing: exchanges run it on every call.
template <class F>
void for_each_self_pair(const ExchangePlan& plan, int rank, F&& f) {
  std::size_t s = 0, r = 0;
  while (true) {
    while (s < plan.sends.size() && plan.sends[s].peer != rank) ++s;
    while (r < plan.recvs.size() && plan.recvs[r].peer != rank) ++r;
    if (s == plan.sends.size() || r == plan.recvs.size()) return;
    f(s++, r++);
  }
}

inline void validate_plan(const ExchangePlan& plan, int rank, int size) {
  validate_side(plan.sends, "sends", size);
  validate_side(plan.recvs, "recvs", size);
  const std::size_t s = self_count(plan.sends, rank), r = self_count(plan.recvs, rank);
  DARRAY_THROW_IF(s != r, InvalidArgument, "exchange",
                  "process " << rank << " sends " << s << " message(s) to itself but receives " << r
                             << "; self messages pair up in order");
  std::size_t k = 0;
  for_each_self_pair(plan, rank, [&](std::size_t si, std::size_t ri) {
    DARRAY_THROW_IF(plan.sends[si].bytes != plan.recvs[ri].bytes, InvalidArgument, "exchange",
                    "self message " << k << " of process " << rank << " sends " << plan.sends[si].bytes
                                    << " bytes (plan.sends[" << si << "]) but receives " << plan.recvs[ri].bytes
                                    << " (plan.recvs[" << ri << "])");
    ++k;
  });
}

// Distinct remote peers that exchange at least one byte with this process, in either direction.
inline int remote_peer_count(const ExchangePlan& plan, int rank, int size) {
  std::vector<char> seen(static_cast<std::size_t>(size), 0);
  int n = 0;
  for (const auto* list : {&plan.sends, &plan.recvs})
    for (const PeerBytes& e : *list)
      if (e.peer != rank && e.bytes > 0 && !seen[static_cast<std::size_t>(e.peer)]) {
        seen[static_cast<std::size_t>(e.peer)] = 1;
        ++n;
      }
  return n;
}

// One side of an Alltoallv call: counts and displacements relative to `base` bytes into the caller's buffer.
struct DenseSide {
  std::vector<int> counts, displs;
  std::size_t base = 0;
};

struct DenseLayout {
  bool fits = false;
  std::string why_not;  // set when !fits
  DenseSide send, recv;
};

// Alltoallv moves one block per peer, so a peer's entries must be back to back in plan order; each block and each
// displacement must fit an int, and a block must not exceed max_bytes (so DARRAY_MPI_MAX_MESSAGE_BYTES forces the
// chunked path). Self entries are left out: they are copied directly.
inline bool dense_side(const std::vector<PeerBytes>& list, const char* side, int rank, int size, std::size_t max_bytes,
                       DenseSide& out, std::string& why_not) {
  const auto n = static_cast<std::size_t>(size);
  std::vector<std::size_t> start(n, 0), end(n, 0);
  std::vector<char> used(n, 0);
  for (const PeerBytes& e : list) {
    if (e.peer == rank || e.bytes == 0) continue;
    const auto p = static_cast<std::size_t>(e.peer);
    if (!used[p]) {
      used[p] = 1;
      start[p] = e.offset;
      end[p] = e.offset + e.bytes;
    } else if (e.offset == end[p]) {
      end[p] += e.bytes;
    } else {
      why_not =
          std::string("the ") + side + " to/from peer " + std::to_string(e.peer) + " are not contiguous in plan order";
      return false;
    }
  }
  std::size_t base = SIZE_MAX;
  for (std::size_t p = 0; p < n; ++p)
    if (used[p]) base = std::min(base, start[p]);
  out.base = base == SIZE_MAX ? 0 : base;
  out.counts.assign(n, 0);
  out.displs.assign(n, 0);
  for (std::size_t p = 0; p < n; ++p) {
    if (!used[p]) continue;
    const std::size_t bytes = end[p] - start[p], displ = start[p] - out.base;
    if (bytes > max_bytes || displ > static_cast<std::size_t>(INT_MAX)) {
      why_not = std::string("the ") + side + " block of peer " + std::to_string(p) + " (" + std::to_string(bytes) +
                " bytes at displacement " + std::to_string(displ) + ") exceeds the per-message limit of " +
                std::to_string(max_bytes) + " bytes or INT_MAX";
      return false;
    }
    out.counts[p] = static_cast<int>(bytes);
    out.displs[p] = static_cast<int>(displ);
  }
  return true;
}

inline DenseLayout dense_layout(const ExchangePlan& plan, int rank, int size, std::size_t max_bytes) {
  DenseLayout d;
  d.fits = dense_side(plan.sends, "sends", rank, size, max_bytes, d.send, d.why_not) &&
           dense_side(plan.recvs, "recvs", rank, size, max_bytes, d.recv, d.why_not);
  return d;
}

}  // namespace detail
}  // namespace darray
