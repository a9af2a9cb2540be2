// The element-wise reductions (sum, max, min): their identities, the kernels that combine blocks on one process,
// and the MPI datatype and operation of the allreduce across processes. Complex numbers travel as pairs of reals,
// which MPI_SUM adds component-wise, so no complex MPI type is needed.
#pragma once

#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "darray/array/dtype.hpp"
#include "darray/comm/detail/mpi_types.hpp"

namespace darray {
namespace detail {
namespace coll {

enum class ReduceOp { sum, max, min };

inline const char* to_string(ReduceOp op) {
  return op == ReduceOp::sum ? "psum" : op == ReduceOp::max ? "pmax" : "pmin";
}

// The real type MPI and NCCL see, and how many of them make one element.
template <class T>
struct ReduceScalar {
  using type = T;
  static constexpr int lanes = 1;
};
template <class R>
struct ReduceScalar<Kokkos::complex<R>> {
  using type = R;
  static constexpr int lanes = 2;
};

// What a process without devices in a group contributes: the value that leaves any other unchanged. Infinities
// for floating point, so a block holding -inf still reduces to -inf under max.
template <class T>
T reduce_identity(ReduceOp op) {
  if constexpr (is_kokkos_complex<T>::value) {
    return T(0);
  } else {
    using L = std::numeric_limits<T>;
    if (op == ReduceOp::sum) return T(0);
    if (op == ReduceOp::max) return L::has_infinity ? -L::infinity() : L::lowest();
    return L::has_infinity ? L::infinity() : L::max();
  }
}

template <class T>
MPI_Datatype mpi_reduce_datatype() {
  return mpi_datatype<typename ReduceScalar<T>::type>();
}

inline MPI_Op mpi_reduce_op(ReduceOp op) {
  return op == ReduceOp::sum ? MPI_SUM : op == ReduceOp::max ? MPI_MAX : MPI_MIN;
}

template <class T, class Exec>
void fill_kernel(const Exec& space, T* dst, int64_t n, T value) {
  if (n == 0) return;
  Kokkos::parallel_for(
      "darray::collective_fill", Kokkos::RangePolicy<Exec, Kokkos::IndexType<int64_t>>(space, 0, n),
      KOKKOS_LAMBDA(const int64_t i) { dst[i] = value; });
}

template <class T, class Exec>
void copy_kernel(const Exec& space, T* dst, const T* src, int64_t n) {
  if (n == 0) return;
  Kokkos::parallel_for(
      "darray::collective_copy", Kokkos::RangePolicy<Exec, Kokkos::IndexType<int64_t>>(space, 0, n),
      KOKKOS_LAMBDA(const int64_t i) { dst[i] = src[i]; });
}

// dst[i] = op(dst[i], src[i]). Not fenced.
template <class T, class Exec>
void combine_kernel(const Exec& space, ReduceOp op, T* dst, const T* src, int64_t n) {
  if (n == 0) return;
  using Policy = Kokkos::RangePolicy<Exec, Kokkos::IndexType<int64_t>>;
  if (op == ReduceOp::sum) {
    Kokkos::parallel_for(
        "darray::psum_combine", Policy(space, 0, n), KOKKOS_LAMBDA(const int64_t i) { dst[i] += src[i]; });
    return;
  }
  if constexpr (!is_kokkos_complex<T>::value) {
    if (op == ReduceOp::max)
      Kokkos::parallel_for(
          "darray::pmax_combine", Policy(space, 0, n),
          KOKKOS_LAMBDA(const int64_t i) { dst[i] = src[i] > dst[i] ? src[i] : dst[i]; });
    else
      Kokkos::parallel_for(
          "darray::pmin_combine", Policy(space, 0, n),
          KOKKOS_LAMBDA(const int64_t i) { dst[i] = src[i] < dst[i] ? src[i] : dst[i]; });
  }
}

}  // namespace coll
}  // namespace detail
}  // namespace darray
