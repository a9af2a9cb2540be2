// Reductions travel through MPI_Allreduce (or an allgather of partial results), which carries no tag: a process that
// reduces other data (another element type of the same size, another operation, another length) would combine its
// bytes with the others' and every process would return garbage, and a process with a longer buffer would make the
// others' receives fail (MPI_ERR_TRUNCATE) and leave the rest waiting. So the processes first agree on a 64-bit
// fingerprint of the reduction, always on, DARRAY_CHECK or not, in a record exchange that cannot truncate or block
// (combine_records: small reductions carry their data in the same records); on a mismatch all of them throw the same
// InvalidArgument, which names what each process ran (the descriptions are gathered only then).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "darray/comm/detail/deadline.hpp"
#include "darray/core/error.hpp"
#include "darray/runtime/detail/mpi.hpp"

namespace darray {
namespace detail {

// h combined with v (the splitmix64 finaliser): order-sensitive, the same on every platform.
constexpr std::uint64_t mix_fingerprint(std::uint64_t h, std::uint64_t v) {
  std::uint64_t z = h ^ (v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2));
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Collective over comm, only once the processes know they disagree: every process throws the same InvalidArgument,
// listing each process's description of its reduction (distinct ones, up to 8, each cut to 160 characters).
[[noreturn]] inline void throw_other_reduction(MPI_Comm comm, const char* api, const std::string& mine) {
  constexpr std::size_t width = 160;
  int size = 1;
  DARRAY_MPI_CHECK(MPI_Comm_size(comm, &size));
  std::vector<char> all(static_cast<std::size_t>(size) * width, '\0');
  char own[width] = {};
  std::memcpy(own, mine.data(), std::min(mine.size(), width - 1));
  DARRAY_MPI_CHECK(
      MPI_Allgather(own, static_cast<int>(width), MPI_CHAR, all.data(), static_cast<int>(width), MPI_CHAR, comm));
  std::vector<std::string> seen;
  std::string list;
  for (int r = 0; r < size; ++r) {
    std::string d(&all[static_cast<std::size_t>(r) * width]);
    if (std::find(seen.begin(), seen.end(), d) != seen.end()) continue;
    if (seen.size() == 8) {
      list += "; ...";
      break;
    }
    list += (seen.empty() ? "" : "; ") + d;
    seen.push_back(std::move(d));
  }
  throw InvalidArgument(api,
                        "the processes of this call ran another reduction (each must reduce the same element "
                        "type, operation and length): " +
                            list);
}

// A reduction record: [f, -f, payload], f the fingerprint's upper 63 bits (the negation stays in range). The
// element-wise max of two headers is [max f, -min f], so after combining, every process sees whether all fingerprints
// were equal (header[0] == -header[1]).
constexpr std::size_t record_header_bytes = 16;
// The largest payload a record carries; every receive is posted for a record of this size.
constexpr std::size_t record_max_payload_bytes = 65536;
constexpr int record_tag = 32767;  // the largest tag every MPI allows

inline void write_record_header(char* record, std::uint64_t fingerprint) {
  const auto f = static_cast<std::int64_t>(fingerprint >> 1);
  const std::int64_t header[2] = {f, -f};
  std::memcpy(record, header, sizeof header);
}

inline bool record_header_agrees(const char* record) {
  std::int64_t header[2];
  std::memcpy(header, record, sizeof header);
  return header[0] == -header[1];
}

// Collective over comm: every process's record (`bytes` bytes, header included) becomes the combination of all
// processes' records, by recursive doubling over point-to-point messages (Rabenseifner's pairing when the process
// count is not a power of two, so every process computes the same combination in the same order).
// combine(in, inout, payload_bytes) combines a received payload into this process's. Receives are posted for the
// largest record and take any tag, so a process whose record has another size or that sent something else neither
// truncates a message nor waits for one that does not come: the record is marked (a header that can never agree)
// and the mark travels on. Returns whether every process passed the same fingerprint and size: the same answer on
// every process. Waits under DARRAY_TIMEOUT_S.
template <class Combine>
bool combine_records(MPI_Comm comm, char* record, std::size_t bytes, const char* api, Combine&& combine) {
  int rank = 0, size = 1;
  DARRAY_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  DARRAY_MPI_CHECK(MPI_Comm_size(comm, &size));
  if (size == 1) return record_header_agrees(record);
  constexpr std::size_t max_bytes = record_header_bytes + record_max_payload_bytes;
  static thread_local std::vector<std::max_align_t> words;
  words.resize((max_bytes + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t));
  char* in = reinterpret_cast<char*>(words.data());
  static thread_local std::vector<MPI_Request> requests;
  static thread_local std::vector<int> peers;  // named in a timeout's error
  MPI_Status statuses[2];
  const auto mark = [&] {
    const std::int64_t never[2] = {std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::max()};
    std::memcpy(record, never, sizeof never);
  };
  // Sends this record to `to` and/or receives one from `from` (-1: none); returns whether a record of this size
  // arrived.
  const auto exchange = [&](int to, int from) {
    requests.assign(2, MPI_REQUEST_NULL);
    if (from >= 0)
      DARRAY_MPI_CHECK(MPI_Irecv(in, static_cast<int>(max_bytes), MPI_BYTE, from, MPI_ANY_TAG, comm, &requests[0]));
    if (to >= 0)
      DARRAY_MPI_CHECK(MPI_Isend(record, static_cast<int>(bytes), MPI_BYTE, to, record_tag, comm, &requests[1]));
    peers.assign({from, to});
    wait_all_until(requests, api, peers, statuses);
    if (from < 0) return false;
    int count = 0;
    DARRAY_MPI_CHECK(MPI_Get_count(&statuses[0], MPI_BYTE, &count));
    return statuses[0].MPI_TAG == record_tag && static_cast<std::size_t>(count) == bytes;
  };
  // Combines the record just received into this one (or marks this one when it did not match).
  const auto absorb = [&](bool matched) {
    if (!matched) return mark();
    std::int64_t a[2], b[2];
    std::memcpy(a, in, sizeof a);
    std::memcpy(b, record, sizeof b);
    for (int w = 0; w < 2; ++w) b[w] = std::max(a[w], b[w]);
    std::memcpy(record, b, sizeof b);
    combine(static_cast<const char*>(in) + record_header_bytes, record + record_header_bytes,
            bytes - record_header_bytes);
  };
  int pof2 = 1;
  while (pof2 * 2 <= size) pof2 *= 2;
  const int rem = size - pof2;
  // The first 2 * rem processes pair up: the even one hands its record to the odd one and waits for the result.
  int vrank = rank - rem;
  if (rank < 2 * rem) {
    if (rank % 2 == 0) {
      exchange(rank + 1, -1);
      vrank = -1;
    } else {
      absorb(exchange(-1, rank - 1));
      vrank = rank / 2;
    }
  }
  if (vrank >= 0)
    for (int mask = 1; mask < pof2; mask <<= 1) {
      const int vpeer = vrank ^ mask;
      const int peer = vpeer < rem ? vpeer * 2 + 1 : vpeer + rem;
      absorb(exchange(peer, peer));
    }
  if (rank < 2 * rem) {
    if (rank % 2 == 1) {
      exchange(rank - 1, -1);
    } else if (exchange(-1, rank + 1)) {
      std::memcpy(record, in, bytes);
    } else {
      mark();
    }
  }
  return record_header_agrees(record);
}

// Collective over comm: returns when every process passed the same fingerprint; otherwise every process throws
// throw_other_reduction's error, with describe() (called only then) as this process's line. A record without payload
// (a reduction whose data follows in its own allreduce): it meets the records of processes that carry their data in
// theirs, so any mix of lengths is an error, never a hang.
template <class Describe>
void check_same_reduction(MPI_Comm comm, std::uint64_t fingerprint, const char* api, const Describe& describe) {
  char record[record_header_bytes];
  write_record_header(record, fingerprint);
  if (!combine_records(comm, record, sizeof record, api, [](const char*, char*, std::size_t) {}))
    throw_other_reduction(comm, api, describe());
}

}  // namespace detail
}  // namespace darray
