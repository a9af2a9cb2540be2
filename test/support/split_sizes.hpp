// Test data sized for the split configurations: under a lowered DARRAY_MPI_MAX_MESSAGE_BYTES (the *_split, *_chunked
// and *_max4099 tests; at least 4096 bytes), arrays must be large enough that every message is cut into several
// chunks, the last one partial. Without the variable these helpers leave the tests' own small sizes alone.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "darray/comm/limits.hpp"

namespace darray {
namespace testing {

// Whether DARRAY_MPI_MAX_MESSAGE_BYTES lowers the split threshold (set alike on every process).
inline bool split_forced() { return darray::max_message_bytes() < darray::default_max_message_bytes; }

// An extent per dimension such that a box of `rank` dimensions with it holds at least `messages` messages' worth of
// `element_bytes`-byte elements; 0 when the split is not forced, so that `n + split_extent(...)` keeps the test's n.
inline int64_t split_extent(std::size_t rank, std::size_t element_bytes, double messages) {
  if (!split_forced() || rank == 0) return 0;
  const double elements =
      messages * static_cast<double>(darray::max_message_bytes()) / static_cast<double>(element_bytes);
  return static_cast<int64_t>(std::ceil(std::pow(elements, 1.0 / static_cast<double>(rank))));
}

}  // namespace testing
}  // namespace darray
