// Which transport carries a collective's data: MPI for memory the host can address, otherwise the Environment's
// backend (NCCL on GPUs when built with it, else MPI through host mirrors). The choice depends only on the memory
// space, the element type and the agreed backend, so every process makes the same one.
#pragma once

#include "darray/array/detail/view.hpp"
#include "darray/collectives/detail/nccl_reduce.hpp"
#include "darray/comm/transport.hpp"
#include "darray/comm/world_transport.hpp"
#include "darray/runtime/environment.hpp"

namespace darray {
namespace detail {

template <class M>
bool collective_uses_nccl() {
  if constexpr (host_accessible_v<M>) {
    return false;
  } else {
    return backend() == Backend::nccl;
  }
}

// Moving bytes: NCCL takes any element type.
template <class M>
Transport& exchange_transport() {
  return transport(collective_uses_nccl<M>() ? Backend::nccl : Backend::mpi);
}

// Reducing elements: NCCL only where it has a datatype for T.
template <class T, class M>
Transport& reduce_transport() {
  return transport(collective_uses_nccl<M>() && nccl_reducible<T>() ? Backend::nccl : Backend::mpi);
}

}  // namespace detail
}  // namespace darray
