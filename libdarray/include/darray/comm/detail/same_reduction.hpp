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
#include <utility>
#include <vector>

#include "darray/comm/chunked_collectives.hpp"
#include "darray/comm/limits.hpp"
#include "darray/core/error.hpp"
#include "darray/runtime/detail/deadline.hpp"
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
// `lead` followed by each process's description of its call (distinct ones, up to 8, each cut to 160 characters).
[[noreturn]] inline void throw_disagreement(MPI_Comm comm, const char* api, const std::string& mine,
                                            const std::string& lead) {
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
  throw InvalidArgument(api, lead + list);
}

// throw_disagreement for a reduction.
[[noreturn]] inline void throw_other_reduction(MPI_Comm comm, const char* api, const std::string& mine) {
  throw_disagreement(comm, api, mine,
                     "the processes of this call ran another reduction (each must reduce the same element type, "
                     "operation and length): ");
}

// A reduction record: [f, -f, payload], f the fingerprint's upper 63 bits (the negation stays in range). The
// element-wise max of two headers is [max f, -min f], so after combining, every process sees whether all fingerprints
// were equal (header[0] == -header[1]).
constexpr std::size_t record_header_bytes = 16;
// The largest payload a record carries; every receive is posted for a record of this size.
constexpr std::size_t record_max_payload_bytes = 16384;
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

// Whether a record receive (posted for any tag, truncation tolerated by wait_all_until) got a whole record of
// `bytes` bytes.
inline bool received_record_of(const MPI_Status& status, std::size_t bytes) {
  if (status.MPI_ERROR != MPI_SUCCESS || status.MPI_TAG != record_tag) return false;
  int count = 0;
  DARRAY_MPI_CHECK(MPI_Get_count(&status, MPI_BYTE, &count));
  return static_cast<std::size_t>(count) == bytes;
}

// One step of a record exchange, for combine_records and reduce_in_records alike: sends a record (the 16-byte header,
// then `payload` bytes at data, sent in place: one message, an hindexed datatype when they are apart) to `to`, and/or
// receives one from `from` into in (`capacity` bytes, any tag, truncation tolerated); -1: no such peer. Returns
// whether a record of exactly `expect` bytes (header included) arrived. Waits under DARRAY_TIMEOUT_S.
inline bool exchange_record(MPI_Comm comm, const char* api, int to, const char* header, const char* data,
                            std::size_t payload, int from, char* in, std::size_t capacity, std::size_t expect) {
  static thread_local std::vector<MPI_Request> requests;
  static thread_local std::vector<int> peers;  // named in a timeout's error
  MPI_Status statuses[2];
  requests.assign(2, MPI_REQUEST_NULL);
  if (from >= 0)
    DARRAY_MPI_CHECK(MPI_Irecv(in, static_cast<int>(capacity), MPI_BYTE, from, MPI_ANY_TAG, comm, &requests[0]));
  if (to >= 0) {
    if (payload == 0 || data == header + record_header_bytes) {
      DARRAY_MPI_CHECK(MPI_Isend(header, static_cast<int>(record_header_bytes + payload), MPI_BYTE, to, record_tag,
                                 comm, &requests[1]));
    } else {
      int lengths[2] = {static_cast<int>(record_header_bytes), static_cast<int>(payload)};
      MPI_Aint at[2];
      DARRAY_MPI_CHECK(MPI_Get_address(header, &at[0]));
      DARRAY_MPI_CHECK(MPI_Get_address(data, &at[1]));
      MPI_Datatype type = MPI_DATATYPE_NULL;
      DARRAY_MPI_CHECK(MPI_Type_create_hindexed(2, lengths, at, MPI_BYTE, &type));
      DARRAY_MPI_CHECK(MPI_Type_commit(&type));
      const int rc = MPI_Isend(MPI_BOTTOM, 1, type, to, record_tag, comm, &requests[1]);
      MPI_Type_free(&type);  // the send keeps what it needs
      DARRAY_MPI_CHECK(rc);
    }
  }
  peers.assign({from, to});
  wait_all_until(requests, api, peers, statuses, wait_timeout_seconds(), /*tolerate_truncation=*/true);
  return from >= 0 && received_record_of(statuses[0], expect);
}

// Takes the header of a record just received (`received`) into `header`, or marks `header` (a value that can never
// agree, and travels on) when no matching record came. Returns whether every header so far agrees: only then are the
// payloads worth combining (another reduction's bytes, floats read as int32 say, could overflow).
inline bool absorb_header(char* header, const char* received, bool matched) {
  std::int64_t a[2], b[2];
  std::memcpy(a, received, sizeof a);
  std::memcpy(b, header, sizeof b);
  for (int w = 0; w < 2; ++w) b[w] = matched ? std::max(a[w], b[w]) : std::numeric_limits<std::int64_t>::max();
  std::memcpy(header, b, sizeof b);
  return record_header_agrees(header);
}

// Collective over comm: every process's record (`bytes` bytes, header included) becomes the combination of all
// processes' records, by recursive doubling over point-to-point messages (Rabenseifner's pairing when the process
// count is not a power of two, so every process computes the same combination in the same order).
// combine(a, b, dst, payload_bytes) writes the combination of payloads a and b to dst (which may be a). Receives are
// posted for the largest record and take any tag; a longer message (a record of reduce_in_records) is cut off at that
// size (truncation tolerated) and, like a record of another size, counted as a mismatch, so a process whose record
// has another size or that sent something else neither fails on a truncated message nor waits for one that does not
// come: the record is marked (a header that can never agree) and the mark travels on. Returns whether every process
// passed the same fingerprint and size: the same answer on every process. Waits under DARRAY_TIMEOUT_S.
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
  const std::size_t payload = bytes - record_header_bytes;
  // Sends this record to `to` and/or receives one from `from` (-1: none); whether one of this size arrived.
  const auto exchange = [&](int to, int from) {
    return exchange_record(comm, api, to, record, record + record_header_bytes, payload, from, in, max_bytes, bytes);
  };
  // Combines the record just received into this one (or marks this one when it did not match).
  const auto absorb = [&](bool matched) {
    if (!absorb_header(record, in, matched)) return;
    char* mine = record + record_header_bytes;
    combine(mine, static_cast<const char*>(in) + record_header_bytes, mine, payload);
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
      absorb_header(record, in, false);
    }
  }
  return record_header_agrees(record);
}

// The largest payload reduce_in_records carries (16 MiB; beyond, a record without data costs under 0.1% of the
// data's MPI_Allreduce). Its receive buffer, kept per thread, grows to the largest record a call receives: the whole
// payload at a process count that is not a power of two, half of it otherwise.
constexpr std::size_t halving_max_payload_bytes = std::size_t(16) << 20;

// Collective over comm: out = the combination over every process of its `count` elements of `elem_bytes` bytes at
// send (send == out: in place), the fingerprint check of combine_records riding in the same messages. Rabenseifner's
// allreduce: the pairing of combine_records when the process count is not a power of two; a reduce-scatter by
// recursive halving whose messages are a record header followed by the half the peer keeps, sent straight from the
// data (no copy); then, only once every process agreed, an allgather by recursive doubling straight into out. Each
// element is combined by one process, so every process gets the same bits. Against one record exchange carrying the
// whole payload, half the bytes cross and half the elements are combined per process, and nothing is copied in or
// out: with its header, 0.7-1.0x Open MPI 4.1's MPI_Allreduce from 64 KiB to 8 MiB at 2 processes (bench/README
// "Reductions: the fingerprint rides with the data up to 16 MiB"). Message for message it matches combine_records
// while the processes disagree (the allgather is skipped), and its receives take any tag and count a longer message
// than this call expects as a mismatch (truncation tolerated), so a process in combine_records or in this function
// with another fingerprint or length sees a mismatch, never a hang or a truncation error. combine is combine_records's.
// Payloads up to halving_max_payload_bytes. Returns whether every process passed the same fingerprint and length, the
// same answer on every process; out holds no result when it is false (and, in place, not the data either). Waits under
// DARRAY_TIMEOUT_S.
template <class Combine>
bool reduce_in_records(MPI_Comm comm, std::uint64_t fingerprint, const char* send, char* out, std::size_t count,
                       std::size_t elem_bytes, const char* api, Combine&& combine) {
  int rank = 0, size = 1;
  DARRAY_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  DARRAY_MPI_CHECK(MPI_Comm_size(comm, &size));
  DARRAY_THROW_IF(
      count * elem_bytes > halving_max_payload_bytes, Error, api,
      "internal: a record payload of " << count * elem_bytes << " bytes; at most " << halving_max_payload_bytes);
  if (size == 1) {
    if (send != out) std::memcpy(out, send, count * elem_bytes);
    return true;
  }
  char header[record_header_bytes];
  write_record_header(header, fingerprint);
  int pof2 = 1;
  while (pof2 * 2 <= size) pof2 *= 2;
  const int rem = size - pof2;
  // The largest record this process receives: the whole payload when it pairs up (below), else the first half.
  const std::size_t max_bytes = record_header_bytes + (rank < 2 * rem ? count : count - count / 2) * elem_bytes;
  static thread_local std::vector<std::max_align_t> words;
  if (words.size() * sizeof(std::max_align_t) < max_bytes)
    words.resize((max_bytes + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t));
  char* in = reinterpret_cast<char*>(words.data());
  // Sends the header and n elements at data to `to` and/or receives a record from `from` into in (-1: none);
  // returns whether a record of `expect` elements arrived.
  const auto exchange = [&](int to, const char* data, std::size_t n, int from, std::size_t expect) {
    return exchange_record(comm, api, to, header, data, n * elem_bytes, from, in, max_bytes,
                           record_header_bytes + expect * elem_bytes);
  };
  // Takes the header just received into this process's (or marks it); whether the payload is worth combining.
  const auto absorb = [&](bool matched) { return absorb_header(header, in, matched); };
  const char* mine = send;  // this process's partial result: the data until the first combination
  int vrank = rank - rem;
  if (rank < 2 * rem) {
    if (rank % 2 == 0) {
      exchange(rank + 1, send, count, -1, 0);
      vrank = -1;
    } else {
      if (absorb(exchange(-1, nullptr, 0, rank - 1, count))) {
        combine(send, in + record_header_bytes, out, count * elem_bytes);
        mine = out;
      }
      vrank = rank / 2;
    }
  }
  // Reduce-scatter: at each step the range this process holds is halved, the lower half staying with the process
  // whose bit is clear. ranges[k]: the range before step k, for the allgather to retrace.
  std::size_t lo = 0, len = count;
  std::pair<std::size_t, std::size_t> ranges[8 * sizeof(int)];
  int steps = 0;
  const auto peer_of = [&](int mask) {
    const int vpeer = vrank ^ mask;
    return vpeer < rem ? vpeer * 2 + 1 : vpeer + rem;
  };
  if (vrank >= 0) {
    for (int mask = 1; mask < pof2; mask <<= 1) {
      const std::size_t low = len / 2;
      const bool keep_low = (vrank & mask) == 0;
      const std::size_t keep = keep_low ? lo : lo + low, keep_len = keep_low ? low : len - low;
      const std::size_t give = keep_low ? lo + low : lo, give_len = len - keep_len;
      ranges[steps++] = {lo, len};
      const int peer = peer_of(mask);
      if (absorb(exchange(peer, mine + give * elem_bytes, give_len, peer, keep_len))) {
        combine(mine + keep * elem_bytes, in + record_header_bytes, out + keep * elem_bytes, keep_len * elem_bytes);
        mine = out;
      }
      lo = keep;
      len = keep_len;
    }
    // Allgather, only when everyone agreed (every process of the doubling knows it now): the halves retraced.
    if (record_header_agrees(header))
      for (int k = steps - 1; k >= 0; --k) {
        const auto [range_lo, range_len] = ranges[k];
        const bool kept_low = (vrank & (1 << k)) == 0;
        const std::size_t other = kept_low ? range_lo + range_len / 2 : range_lo, other_len = range_len - len;
        const int peer = peer_of(1 << k);
        static thread_local std::vector<MPI_Request> requests;
        static thread_local std::vector<int> peers;  // named in a timeout's error
        requests.assign(2, MPI_REQUEST_NULL);
        DARRAY_MPI_CHECK(MPI_Irecv(out + other * elem_bytes, static_cast<int>(other_len * elem_bytes), MPI_BYTE, peer,
                                   record_tag, comm, &requests[0]));
        DARRAY_MPI_CHECK(MPI_Isend(out + lo * elem_bytes, static_cast<int>(len * elem_bytes), MPI_BYTE, peer,
                                   record_tag, comm, &requests[1]));
        peers.assign({peer, peer});
        wait_all_until(requests, api, peers, nullptr);
        lo = range_lo;
        len = range_len;
      }
  }
  if (rank < 2 * rem) {
    const bool agreed = record_header_agrees(header);
    if (rank % 2 == 1) {
      exchange(rank - 1, out, agreed ? count : 0, -1, 0);
    } else if (absorb(exchange(-1, nullptr, 0, rank + 1, count))) {
      std::memcpy(out, in + record_header_bytes, count * elem_bytes);
    }
  }
  return record_header_agrees(header);
}

// Collective over comm: a record without payload (its header alone) through combine_records. Returns whether every
// process passed the same fingerprint (and no payload), the same answer on every process.
inline bool same_fingerprint(MPI_Comm comm, std::uint64_t fingerprint, const char* api) {
  char record[record_header_bytes];
  write_record_header(record, fingerprint);
  return combine_records(comm, record, sizeof record, api, [](const char*, const char*, char*, std::size_t) {});
}

// Collective over comm: out = the combination over every process of its `count` elements of `elem_bytes` bytes at
// send (send == out: in place), with the fingerprint check riding along: up to record_max_payload_bytes in one
// record exchange per doubling step (combine_records, one exchange as MPI_Allreduce does for small messages; the
// data copied into the record and out), up to halving_max_payload_bytes by reduce-scatter and allgather
// (reduce_in_records) unless a record would exceed max_bytes (max_message_bytes(): DARRAY_MPI_MAX_MESSAGE_BYTES, set
// alike everywhere; callers read it once per plan), beyond a record without payload, then the data's MPI_Allreduce
// (type, op, chunked) where the record costs under 0.1% (bench/collectives "reduction fingerprint"). Returns whether
// every process passed the same fingerprint and length, the same answer on every process; out holds no result when it
// is false.
template <class Combine>
bool reduce_with_fingerprint(MPI_Comm comm, std::uint64_t fingerprint, const void* send, void* out, std::size_t count,
                             std::size_t elem_bytes, MPI_Datatype type, MPI_Op op, std::size_t max_bytes,
                             const char* api, Combine&& combine) {
  const std::size_t payload = count * elem_bytes;
  const auto* from = static_cast<const char*>(send);
  auto* to = static_cast<char*>(out);
  if (payload > halving_max_payload_bytes ||
      (payload > record_max_payload_bytes && record_header_bytes + payload > max_bytes)) {
    if (!same_fingerprint(comm, fingerprint, api)) return false;
    allreduce(comm, send == out ? MPI_IN_PLACE : send, out, count, type, op);
    return true;
  }
  if (payload > record_max_payload_bytes)
    return reduce_in_records(comm, fingerprint, from, to, count, elem_bytes, api, combine);
  static thread_local std::vector<std::max_align_t> words;
  const std::size_t bytes = record_header_bytes + payload;
  words.resize((bytes + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t));
  char* record = reinterpret_cast<char*>(words.data());
  write_record_header(record, fingerprint);
  if (payload > 0) std::memcpy(record + record_header_bytes, from, payload);
  if (!combine_records(comm, record, bytes, api, combine)) return false;
  if (payload > 0) std::memcpy(to, record + record_header_bytes, payload);
  return true;
}

// Collective over comm: returns when every process passed the same fingerprint; otherwise every process throws
// throw_other_reduction's error, with describe() (called only then) as this process's line. A record without payload
// (a reduction whose data follows in its own allreduce): it meets the records of processes that carry their data in
// theirs, so any mix of lengths is an error, never a hang.
template <class Describe>
void check_same_reduction(MPI_Comm comm, std::uint64_t fingerprint, const char* api, const Describe& describe) {
  if (!same_fingerprint(comm, fingerprint, api)) throw_other_reduction(comm, api, describe());
}

}  // namespace detail
}  // namespace darray
