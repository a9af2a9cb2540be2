// transport(): the process-wide Transport of a backend (default: darray::backend(), from DARRAY_BACKEND), built
// once, collectively, on first use and destroyed before MPI_Finalize.
#pragma once

#include "darray/config.hpp"

#include <map>
#include <memory>

#include "darray/comm/mpi_transport.hpp"
#include "darray/comm/nccl_transport.hpp"
#include "darray/comm/transport.hpp"
#include "darray/core/error.hpp"
#include "darray/runtime/detail/agree.hpp"
#include "darray/runtime/detail/state.hpp"
#include "darray/runtime/environment.hpp"

namespace darray {

namespace detail {

struct TransportCache {
  std::map<Backend, std::unique_ptr<Transport>> transports;
  bool cleanup_registered = false;
};

inline TransportCache& transport_cache() {
  static TransportCache c;
  return c;
}

}  // namespace detail

// The transport over all processes for `backend`. Collective the first time; every process must ask for the same
// backend. Backend::nccl throws NotSupported on every process when libdarray was built without NCCL or a process
// has no GPU.
inline Transport& transport(Backend backend) {
  const MPI_Comm world = detail::world_comm();
  detail::TransportCache& cache = detail::transport_cache();
  auto it = cache.transports.find(backend);
  if (it != cache.transports.end()) return *it->second;
  std::unique_ptr<Transport> t;
  if (backend == Backend::mpi) {
    t = std::make_unique<MpiTransport>(world);
  } else {
#if defined(DARRAY_HAS_NCCL)
    t = NcclTransport::create_world();
#else
    detail::run_agreed(world, [] {
      DARRAY_THROW(NotSupported, "transport",
                   "the NCCL transport was requested, but libdarray was built without NCCL (DARRAY_HAS_NCCL unset; "
                   "configure with CUDA and NCCL available); use Backend::mpi (DARRAY_BACKEND=mpi)");
    });
#endif
  }
  if (!cache.cleanup_registered) {
    // NCCL communicators and owned MPI communicators must go before MPI_Finalize.
    detail::at_finalize([] {
      detail::transport_cache().transports.clear();
      detail::transport_cache().cleanup_registered = false;
    });
    cache.cleanup_registered = true;
  }
  return *cache.transports.emplace(backend, std::move(t)).first->second;
}

// The transport of the backend the Environment selected (darray::backend()).
inline Transport& transport() { return transport(backend()); }

}  // namespace darray
