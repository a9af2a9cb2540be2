// The transport backend of a run: MPI (always available; host memory, and device memory through CUDA-aware MPI or
// host staging) or NCCL (GPU builds with NCCL). Chosen once by the Environment and agreed by every process.
#pragma once

#include <ostream>
#include <string>

#include "darray/core/env.hpp"

namespace darray {

enum class Backend { mpi, nccl };

inline const char* to_string(Backend b) { return b == Backend::nccl ? "nccl" : "mpi"; }
inline std::ostream& operator<<(std::ostream& os, Backend b) { return os << to_string(b); }

// "mpi" or "nccl"; anything else is an InvalidArgument naming `what` (e.g. "DARRAY_BACKEND").
inline Backend parse_backend(const std::string& what, const std::string& text) {
  return detail::parse_choice(what, text, {"mpi", "nccl"}) == "nccl" ? Backend::nccl : Backend::mpi;
}

}  // namespace darray
