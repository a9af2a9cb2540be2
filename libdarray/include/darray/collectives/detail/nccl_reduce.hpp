// The NCCL step of a reduction (GPU builds with DARRAY_HAS_NCCL): ncclAllReduce on the NCCL communicator of the
// process component, in place on device memory, watched by the transport's DARRAY_NCCL_TIMEOUT_S watchdog.
// nccl_reducible<T> says whether NCCL has a type for T's scalars; reductions of other types take the MPI path.
#pragma once

#include "darray/config.hpp"

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "darray/collectives/detail/element_ops.hpp"

#if defined(DARRAY_HAS_NCCL)
#include <nccl.h>

#include "darray/comm/detail/nccl.hpp"
#include "darray/comm/limits.hpp"
#include "darray/comm/nccl_transport.hpp"
#include "darray/runtime/detail/kokkos_compat.hpp"
#endif

namespace darray {
namespace detail {

template <class T>
constexpr bool nccl_reducible() {
#if defined(DARRAY_HAS_NCCL)
  using S = typename ReduceScalar<T>::type;
  return std::is_same<S, float>::value || std::is_same<S, double>::value ||
         (std::is_integral<S>::value && !std::is_same<S, bool>::value &&
          (sizeof(S) == 1 || sizeof(S) == 4 || sizeof(S) == 8));
#else
  return false;
#endif
}

#if defined(DARRAY_HAS_NCCL)

template <class T>
ncclDataType_t nccl_reduce_datatype() {
  using S = typename ReduceScalar<T>::type;
  static_assert(nccl_reducible<T>(), "no NCCL datatype for this element type");
  if constexpr (std::is_same<S, float>::value)
    return ncclFloat32;
  else if constexpr (std::is_same<S, double>::value)
    return ncclFloat64;
  else if constexpr (sizeof(S) == 1)
    return std::is_signed<S>::value ? ncclInt8 : ncclUint8;
  else if constexpr (sizeof(S) == 4)
    return std::is_signed<S>::value ? ncclInt32 : ncclUint32;
  else
    return std::is_signed<S>::value ? ncclInt64 : ncclUint64;
}

inline ncclRedOp_t nccl_reduce_op(ReduceOp op) {
  return op == ReduceOp::sum ? ncclSum : op == ReduceOp::max ? ncclMax : ncclMin;
}

// In-place allreduce of `count` elements at device pointer data over the transport's processes. Collective over
// them; returns once the result is in data. Floating-point max and min run as an integer max/min of order keys
// (element_ops.hpp), since NCCL's ncclMax/ncclMin drop NaN and JAX's pmax/pmin propagate it.
template <class T, class Exec>
void nccl_allreduce(const Exec& space, NcclTransport& t, T* data, int64_t count, ReduceOp op) {
  ncclComm_t comm = t.nccl_comm();
  const auto n = static_cast<std::size_t>(count) * static_cast<std::size_t>(ReduceScalar<T>::lanes);
  NcclWatchdog dog(to_string(op), nccl_timeout_seconds());
  dog.poll(comm);  // throws if an earlier error aborted the communicator
  DARRAY_CUDA_CHECK(cudaSetDevice(t.cuda_device()));
  ncclDataType_t type = nccl_reduce_datatype<T>();
  [[maybe_unused]] const bool keys = std::is_floating_point<T>::value && op != ReduceOp::sum;
  if constexpr (std::is_floating_point<T>::value) {
    if (keys) {
      order_keys_in_place(space, data, count, /*to_keys=*/true, /*nan_high=*/op == ReduceOp::max);
      type = sizeof(T) == 4 ? ncclUint32 : ncclUint64;
    }
  }
  // On the kernels' stream: after the kernels that wrote data, before those that read it.
  const cudaStream_t stream = gpu_stream(space);
  DARRAY_NCCL_CHECK_ASYNC(ncclAllReduce(data, data, n, type, nccl_reduce_op(op), comm, stream));
  dog.wait_ready(comm);
  dog.wait_stream(comm, stream);
  if constexpr (std::is_floating_point<T>::value) {
    if (keys) {
      order_keys_in_place(space, data, count, /*to_keys=*/false, op == ReduceOp::max);
      detail::fence(space);
    }
  }
}

#endif  // DARRAY_HAS_NCCL

}  // namespace detail
}  // namespace darray
