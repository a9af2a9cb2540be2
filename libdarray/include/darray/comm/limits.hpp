// Size limits of the transport: the largest byte count one MPI message may carry (DARRAY_MPI_MAX_MESSAGE_BYTES),
// the NCCL watchdog timeout (DARRAY_NCCL_TIMEOUT_S), and checked element-count -> byte-count conversion.
// Byte counts are size_t end to end; only the comm layer turns them into MPI's int counts.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "darray/core/env.hpp"
#include "darray/core/env_vars.hpp"
#include "darray/core/error.hpp"

namespace darray {

// Bytes per MPI message: default_max_message_bytes, lowered by DARRAY_MPI_MAX_MESSAGE_BYTES (tests use it to force
// splitting). Read on every call (the exchange engine and the reductions read it once per plan, so a change reaches
// plans built after it); it must be set alike on all processes, since sender and receiver derive the same chunking
// from it independently (a mismatch is detected on receipt).
inline std::size_t max_message_bytes() { return detail::env_max_message_bytes(); }

// How long an NCCL operation may run before the communicator is aborted and NcclError thrown (DARRAY_NCCL_TIMEOUT_S).
inline int nccl_timeout_seconds() { return detail::env_nccl_timeout_seconds(); }

// count * element_size as a byte count; a negative count or an overflowing product is an InvalidArgument naming api.
// Array layers compute element counts as int64_t, so this is where a corrupt size is stopped before MPI sees it.
inline std::size_t byte_count(int64_t count, std::size_t element_size, const char* api) {
  DARRAY_THROW_IF(count < 0, InvalidArgument, api, "negative element count " << count << "; expected 0 or more");
  const auto n = static_cast<std::size_t>(count);
  DARRAY_THROW_IF(element_size != 0 && n > std::numeric_limits<std::size_t>::max() / element_size, InvalidArgument, api,
                  count << " elements of " << element_size << " bytes overflow a 64-bit byte count");
  return n * element_size;
}

}  // namespace darray
