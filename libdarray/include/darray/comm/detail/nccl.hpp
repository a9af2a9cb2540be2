// Checked NCCL and CUDA calls for the NCCL transport, and the watchdog that waits on nonblocking communicators and
// streams: it polls ncclCommGetAsyncError and, past DARRAY_NCCL_TIMEOUT_S, aborts the communicator and throws,
// so a lost peer becomes a darray::NcclError instead of a hang. Compiled only with DARRAY_HAS_NCCL.
#pragma once

#include "darray/config.hpp"

#if defined(DARRAY_HAS_NCCL)

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <string>
#include <thread>

#include "darray/core/error.hpp"
#include "darray/runtime/detail/cuda.hpp"

namespace darray {
namespace detail {

inline std::string nccl_error_text(ncclResult_t rc) {
  std::string s = ncclGetErrorString(rc);
  const char* last = ncclGetLastError(nullptr);  // the comm argument is unused by NCCL
  if (last != nullptr && *last != '\0') s += std::string(" (") + last + ")";
  return s;
}

}  // namespace detail
}  // namespace darray

// DARRAY_NCCL_CHECK(ncclSend(...)): throws darray::NcclError naming the call unless it returns ncclSuccess.
#define DARRAY_NCCL_CHECK(call)                                                            \
  do {                                                                                     \
    const ncclResult_t darray_nccl_rc_ = (call);                                           \
    if (darray_nccl_rc_ != ncclSuccess)                                                    \
      throw ::darray::NcclError(#call, ::darray::detail::nccl_error_text(darray_nccl_rc_), \
                                static_cast<int>(darray_nccl_rc_), __FILE__, __LINE__);    \
  } while (false)

// Like DARRAY_NCCL_CHECK, but ncclInProgress (a nonblocking communicator still working) is not an error: the caller
// waits with nccl_wait_ready before the next call on that communicator.
#define DARRAY_NCCL_CHECK_ASYNC(call)                                                      \
  do {                                                                                     \
    const ncclResult_t darray_nccl_rc_ = (call);                                           \
    if (darray_nccl_rc_ != ncclSuccess && darray_nccl_rc_ != ncclInProgress)               \
      throw ::darray::NcclError(#call, ::darray::detail::nccl_error_text(darray_nccl_rc_), \
                                static_cast<int>(darray_nccl_rc_), __FILE__, __LINE__);    \
  } while (false)

namespace darray {
namespace detail {

// Aborts comm (which becomes null) and throws NcclError(what, message).
[[noreturn]] inline void nccl_abort_and_throw(ncclComm_t& comm, const char* what, const std::string& message,
                                              int code) {
  if (comm != nullptr) {
    ncclCommAbort(comm);  // best effort: the error below is what the caller needs to see
    comm = nullptr;
  }
  throw NcclError(what, message + "; the NCCL communicator was aborted", code);
}

class NcclWatchdog {
 public:
  NcclWatchdog(const char* what, int timeout_s)
      : m_what(what), m_timeout_s(timeout_s), m_start(std::chrono::steady_clock::now()) {}

  // One poll of comm: throws (after aborting it) on an asynchronous error or past the deadline; true when idle.
  bool poll(ncclComm_t& comm) {
    if (comm == nullptr)
      throw NcclError(m_what, "the NCCL communicator was aborted by an earlier error",
                      static_cast<int>(ncclInvalidUsage), __FILE__, __LINE__);
    ncclResult_t async = ncclSuccess;
    DARRAY_NCCL_CHECK(ncclCommGetAsyncError(comm, &async));
    if (async != ncclSuccess && async != ncclInProgress)
      nccl_abort_and_throw(comm, m_what, "asynchronous NCCL error: " + nccl_error_text(async), static_cast<int>(async));
    check_deadline(comm);
    return async == ncclSuccess;
  }

  void check_deadline(ncclComm_t& comm) {
    const auto elapsed = std::chrono::steady_clock::now() - m_start;
    if (elapsed > std::chrono::seconds(m_timeout_s))
      nccl_abort_and_throw(comm, m_what,
                           "did not complete within " + std::to_string(m_timeout_s) +
                               " s (DARRAY_NCCL_TIMEOUT_S); a peer process may have failed or taken another path",
                           static_cast<int>(ncclInProgress));
  }

  // Waits until comm has no call in progress (nonblocking init, split, group end).
  void wait_ready(ncclComm_t& comm) {
    while (!poll(comm)) std::this_thread::yield();
  }

  // Waits until stream has finished, watching comm for asynchronous errors meanwhile.
  void wait_stream(ncclComm_t& comm, cudaStream_t stream) {
    for (;;) {
      const cudaError_t q = cudaStreamQuery(stream);
      if (q == cudaSuccess) return;
      if (q != cudaErrorNotReady)
        throw NcclError(m_what, "cudaStreamQuery: " + cuda_error_text(q), static_cast<int>(q), __FILE__, __LINE__);
      poll(comm);
      std::this_thread::yield();
    }
  }

 private:
  const char* m_what;
  int m_timeout_s;
  std::chrono::steady_clock::time_point m_start;
};

// Configuration of every communicator we create: nonblocking, so no NCCL call can block without the watchdog.
inline ncclConfig_t nonblocking_nccl_config() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

// Finalises and destroys comm without throwing (destructors): a comm that fails to finalise is aborted instead.
inline void nccl_destroy_noexcept(ncclComm_t& comm, int timeout_s) noexcept {
  if (comm == nullptr) return;
  try {
    NcclWatchdog dog("ncclCommFinalize", timeout_s);
    DARRAY_NCCL_CHECK_ASYNC(ncclCommFinalize(comm));
    dog.wait_ready(comm);
    ncclCommDestroy(comm);
  } catch (...) {
    if (comm != nullptr) ncclCommAbort(comm);
  }
  comm = nullptr;
}

}  // namespace detail
}  // namespace darray

#endif  // DARRAY_HAS_NCCL
