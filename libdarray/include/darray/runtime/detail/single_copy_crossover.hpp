// The size from which single copies pay (runtime/detail/single_copy.hpp): the exchange engine reads a direction of
// at least this many bytes straight from a same-node peer instead of receiving it as MPI messages. A single copy
// saves the second copy of MPI's shared-memory transport but pays two control messages and two process_vm_readv
// calls (the pieces, then the sender's live word) at the price the kernel and the hypervisor set: on one VM a 64 KiB
// single copy was 4x faster than Open MPI's messages, on another 1.3-1.6x slower, tied at 128 KiB and faster from
// 256 KiB. So the Environment measures these fixed costs where it runs, once at start-up and only where single copies
// work: the node's processes in pairs (0 and 1, 2 and 3, ...) exchange each probe size (64, 128 and 256 KiB) both ways,
// as messages and as the engine does a single copy, best of a few tries; the node sums its pairs' times (MPI_SUM) and
// every process of the node picks the same size from the sums (single_copy_crossover). It costs a few milliseconds at
// start-up (4-5.5 on the VM of 2026-12-06, the first messages between the pair included).
//
// The probe decides only up to 256 KiB. Above it, what a single copy costs is mostly the kernel's pinning of the
// sender's pages, one per 4 KiB page or one per 2 MiB huge page (blocks of 2 MiB and more are advised to huge pages:
// core/detail/huge_pages.hpp): on the VM of 2026-12-06 a 1 MiB read of 4 KiB pages cost 2-2.4x one of huge pages, and
// a probe of 4 KiB pages read single copies at 1-4 MiB as anything from 0.7x to 1.1x the messages within an hour,
// while the engine's 2x1 ppermute took 0.8x at 256 KiB, 0.85x at 1 MiB and 0.3x at 8 MiB. A probe of one kind of
// page would misjudge the other's blocks, so from 256 KiB on single copies go wherever they work.
#pragma once

#include <mpi.h>

#if defined(__linux__)
#include <unistd.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "darray/runtime/detail/mpi.hpp"
#include "darray/runtime/detail/single_copy.hpp"

namespace darray {
namespace detail {

// A single copy must take at most this share of the messages' time in the probe: the engine's does more than the
// probe's (its ready message carries each piece's address and strides, and the pieces' geometry is walked), and on
// the VM measured on 2026-12-06 its 64 KiB single copy took 16 us where the probe's took 11 (messages: 10).
constexpr double single_copy_margin = 0.9;

// The sizes probed (bytes, ascending). The first is the floor: below 64 KiB (the engine's size before the probe) a
// pair's probe misjudges the engine, whose small single copies wait for their peers one control message after
// another: at 4 processes on 2 cores the probe read 16 KiB single copies as 0.6x the messages while the engine's
// all_gather of 16 and 32 KiB per device took 1.5x the time it took by messages. The last is the ceiling (above).
inline const std::vector<std::size_t>& single_copy_probe_sizes() {
  static const std::vector<std::size_t> sizes{std::size_t(64) << 10, std::size_t(128) << 10, std::size_t(256) << 10};
  return sizes;
}

// The size of `bytes` (ascending) from which single copies lose least against messages. messages[k], single[k]: the
// times at bytes[k]. With r[k] = log(single[k] / (single_copy_margin * messages[k])) (above 0: a single copy loses at
// bytes[k]), choosing bytes[b] costs the losses of single copies from b on and of messages below b: the sum over
// k >= b of max(r[k], 0), plus over k < b of max(-r[k], 0), which is a constant plus the sum of r[k] over k >= b. The
// last size is the ceiling, chosen whatever its r (single copies go from there on), so the crossover is the start of
// the suffix before it with the least sum of r (none below 0: the last size; a tie: the larger size). One noisy size
// moves it only as far as its own loss outweighs its neighbours' gains, where "the first size after which single
// copies win everywhere" would follow any one slow measurement to the end.
inline std::size_t single_copy_crossover(const std::vector<std::size_t>& bytes, const std::vector<double>& messages,
                                         const std::vector<double>& single) {
  if (bytes.empty()) return 0;
  std::size_t from = bytes.back();
  double suffix = 0.0, least = 0.0;
  for (std::size_t k = bytes.size() - 1; k-- > 0;) {
    const bool measured = messages[k] > 0.0 && single[k] > 0.0;
    suffix += measured ? std::log(single[k] / (single_copy_margin * messages[k])) : 0.0;
    if (suffix < least) {
      least = suffix;
      from = bytes[k];
    }
  }
  return from;
}

// Collective over `node` (this node's processes, every one of which can read the others: probe_single_copy passed).
// Measures both ways of moving each probe size between the processes of each pair and returns the crossover the
// node agreed on, the same on each of its processes. times, when given: the node's summed times, messages then single
// copies, per probe size (seconds).
inline std::size_t measure_single_copy_min_bytes(MPI_Comm node, std::vector<double>* times = nullptr) {
  const std::vector<std::size_t>& sizes = single_copy_probe_sizes();
  const std::size_t n = sizes.size();
  int rank = 0, size = 0;
  DARRAY_MPI_CHECK(MPI_Comm_rank(node, &rank));
  DARRAY_MPI_CHECK(MPI_Comm_size(node, &size));
  std::vector<double> sums(2 * n, 0.0);  // messages, then single copies
  const int peer = rank ^ 1;
  if (peer < size) {
    constexpr int tries = 3;  // timed, after one untimed
    constexpr int tag_addresses = 1, tag_sync = 2, tag_data = 3, tag_ready = 4, tag_done = 5;
    const std::size_t largest = sizes.back();
    std::vector<unsigned char> src(largest, 1), dst(largest, 0);  // touched: no page fault is timed
    static std::uint64_t live = 0x6461727261790002ull;            // the sender's live word, as the engine's
#if defined(__linux__)
    const auto pid = static_cast<std::int64_t>(::getpid());
#else
    const std::int64_t pid = -1;
#endif
    const std::int64_t mine[3] = {pid, static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(src.data())),
                                  static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(&live))};
    std::int64_t theirs[3] = {-1, 0, 0};
    DARRAY_MPI_CHECK(MPI_Sendrecv(mine, 3, MPI_INT64_T, peer, tag_addresses, theirs, 3, MPI_INT64_T, peer,
                                  tag_addresses, node, MPI_STATUS_IGNORE));
    const int their_pid = static_cast<int>(theirs[0]);
    auto sync = [&] {
      DARRAY_MPI_CHECK(MPI_Sendrecv(nullptr, 0, MPI_BYTE, peer, tag_sync, nullptr, 0, MPI_BYTE, peer, tag_sync, node,
                                    MPI_STATUS_IGNORE));
    };
    std::vector<PeerRange> pieces(1), word(1);
    std::vector<double> best(2 * n, std::numeric_limits<double>::infinity());
    // Every size once per try, so that a moment when the machine is slow costs one try of each size rather than
    // every try of one.
    for (int t = 0; t <= tries; ++t)
      for (std::size_t k = 0; k < n; ++k) {
        const int bytes = static_cast<int>(sizes[k]);
        sync();
        double start = MPI_Wtime();
        MPI_Request data[2];
        DARRAY_MPI_CHECK(MPI_Irecv(dst.data(), bytes, MPI_BYTE, peer, tag_data, node, &data[0]));
        DARRAY_MPI_CHECK(MPI_Isend(src.data(), bytes, MPI_BYTE, peer, tag_data, node, &data[1]));
        DARRAY_MPI_CHECK(MPI_Waitall(2, data, MPI_STATUSES_IGNORE));
        const double messages = MPI_Wtime() - start;

        // The engine's single copy: ready (the live word's address and value, the piece's address), the read, the
        // live word read again, done (the errno) to the sender, which waits for it.
        sync();
        start = MPI_Wtime();
        std::int64_t ready[3] = {mine[2], static_cast<std::int64_t>(live), mine[1]}, announced[3] = {0, 0, 0};
        std::int64_t done = 0, answer = 0;
        MPI_Request control[3];
        DARRAY_MPI_CHECK(MPI_Irecv(announced, 3, MPI_INT64_T, peer, tag_ready, node, &control[0]));
        DARRAY_MPI_CHECK(MPI_Irecv(&answer, 1, MPI_INT64_T, peer, tag_done, node, &control[1]));
        DARRAY_MPI_CHECK(MPI_Isend(ready, 3, MPI_INT64_T, peer, tag_ready, node, &control[2]));
        DARRAY_MPI_CHECK(MPI_Wait(&control[0], MPI_STATUS_IGNORE));
        std::uint64_t seen = 0;
        pieces[0] = PeerRange{dst.data(), static_cast<std::uint64_t>(announced[2]), sizes[k]};
        word[0] = PeerRange{&seen, static_cast<std::uint64_t>(announced[0]), sizeof seen};
        done = read_from_process(their_pid, pieces);
        if (done == 0) done = read_from_process(their_pid, word);
        DARRAY_MPI_CHECK(MPI_Send(&done, 1, MPI_INT64_T, peer, tag_done, node));
        DARRAY_MPI_CHECK(MPI_Waitall(2, control + 1, MPI_STATUSES_IGNORE));
        // A failed read: a loss at this size (a large finite time, for the log).
        const double single =
            done == 0 && answer == 0 && seen == static_cast<std::uint64_t>(announced[1]) ? MPI_Wtime() - start : 1e9;
        if (t > 0) {
          best[k] = std::min(best[k], messages);
          best[n + k] = std::min(best[n + k], single);
        }
      }
    sums = best;
  }
  DARRAY_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, sums.data(), static_cast<int>(2 * n), MPI_DOUBLE, MPI_SUM, node));
  if (times != nullptr) *times = sums;
  return single_copy_crossover(sizes, std::vector<double>(sums.begin(), sums.begin() + static_cast<std::ptrdiff_t>(n)),
                               std::vector<double>(sums.begin() + static_cast<std::ptrdiff_t>(n), sums.end()));
}

// What the start-up probe found, for the log: "from 128 KiB (start-up probe, ..., messages / single copy, us: 64 KiB
// 28.2 / 36.0, ...)". times: measure_single_copy_min_bytes's.
inline std::string single_copy_crossover_text(std::size_t min_bytes, const std::vector<double>& times) {
  const std::vector<std::size_t>& sizes = single_copy_probe_sizes();
  std::ostringstream out;
  out << "from " << (min_bytes >> 10) << " KiB";  // the probe's sizes are all KiB under 1 MiB
  out << " (start-up probe, the node's pairs summed, messages / single copy, us:";
  out.setf(std::ios::fixed);
  out.precision(1);
  for (std::size_t k = 0; k < sizes.size() && sizes.size() + k < times.size(); ++k) {
    out << (k == 0 ? " " : ", ");
    out << (sizes[k] >> 10) << " KiB " << times[k] * 1e6 << " / " << times[sizes.size() + k] * 1e6;
  }
  out << ")";
  return out.str();
}

}  // namespace detail
}  // namespace darray
