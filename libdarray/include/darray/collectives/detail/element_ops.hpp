// The element-wise reductions (sum, max, min): their identities, the kernels that combine blocks on one process,
// and the MPI datatype and operation of the allreduce across processes. Complex numbers travel as pairs of reals,
// which MPI_SUM adds component-wise, so no complex MPI type is needed. max and min propagate NaN, as JAX does.
#pragma once

#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "darray/array/detail/host_loop.hpp"
#include "darray/array/detail/stream_copy.hpp"
#include "darray/array/dtype.hpp"
#include "darray/comm/detail/mpi_types.hpp"
#include "darray/runtime/detail/kokkos_compat.hpp"
#include "darray/runtime/detail/mpi.hpp"
#include "darray/runtime/detail/state.hpp"

namespace darray {
namespace detail {

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

// One element of dst = op(dst, src). max and min propagate NaN from either side (src != src only for NaN).
template <class T>
KOKKOS_INLINE_FUNCTION T combine_max(const T& d, const T& s) {
  return s > d || s != s ? s : d;
}
template <class T>
KOKKOS_INLINE_FUNCTION T combine_min(const T& d, const T& s) {
  return s < d || s != s ? s : d;
}
template <ReduceOp Op, class T>
KOKKOS_INLINE_FUNCTION T combine_one(const T& d, const T& s) {
  if constexpr (Op == ReduceOp::sum)
    return d + s;
  else if constexpr (Op == ReduceOp::max)
    return combine_max(d, s);
  else
    return combine_min(d, s);
}

// dst[i] = op(a[i], b[i]) for `count` elements on the host (dst may be a): the record payloads and the MPI user
// operation.
template <class R, ReduceOp Op>
void combine_elements(const R* a, const R* b, R* dst, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) dst[i] = combine_one<Op>(a[i], b[i]);
}

// The user-defined MPI operation `Fn` (commutative), created on first use and freed when the Environment ends.
template <MPI_User_function* Fn>
MPI_Op cached_user_op() {
  static MPI_Op op = MPI_OP_NULL;
  if (op == MPI_OP_NULL) {
    DARRAY_MPI_CHECK(MPI_Op_create(Fn, /*commute=*/1, &op));
    at_finalize([] {
      if (op != MPI_OP_NULL) MPI_Op_free(&op);
      op = MPI_OP_NULL;
    });
  }
  return op;
}

// A user-defined MPI operation combining elements as combine_one does, for where MPI's own differs from JAX and
// NumPy: MPI_MAX and MPI_MIN drop NaN (pmax of [NaN, 1] gives 1), where a NaN operand wins here; and Open MPI 4.1's
// AVX component adds 1- and 2-byte integers with saturation (20000 + 20000 as int16 gives 32767), where they wrap
// around here.
template <class R, ReduceOp Op>
void combine_as_darray(void* in, void* inout, int* len, MPI_Datatype*) {
  R* const dst = static_cast<R*>(inout);
  combine_elements<R, Op>(dst, static_cast<const R*>(in), dst, static_cast<std::size_t>(*len));
}

// The MPI operation reducing elements of type T (complex: its real lanes) under op. Floating-point max and min
// propagate NaN, as JAX's lax.pmax / pmin and NumPy's maximum / minimum do; integer sums wrap around.
template <class T>
MPI_Op mpi_reduce_op(ReduceOp op) {
  using R = typename ReduceScalar<T>::type;
  if constexpr (std::is_integral<R>::value && sizeof(R) <= 2)
    if (op == ReduceOp::sum) return cached_user_op<&combine_as_darray<R, ReduceOp::sum>>();
  if (op == ReduceOp::sum) return MPI_SUM;
  if constexpr (std::is_floating_point<R>::value)
    return op == ReduceOp::max ? cached_user_op<&combine_as_darray<R, ReduceOp::max>>()
                               : cached_user_op<&combine_as_darray<R, ReduceOp::min>>();
  return op == ReduceOp::max ? MPI_MAX : MPI_MIN;
}

// Two reduction records' payloads (elements of R, comm/detail/same_reduction.hpp) combined under Op into dst (which
// may be a).
template <class R, ReduceOp Op>
void combine_record_payload(const char* a, const char* b, char* dst, std::size_t bytes) {
  combine_elements<R, Op>(reinterpret_cast<const R*>(a), reinterpret_cast<const R*>(b), reinterpret_cast<R*>(dst),
                          bytes / sizeof(R));
}

// Floating-point values as unsigned integers of the same size in the same order (IEEE 754 bits: negative values'
// bits flipped below the positive ones'), every NaN at the top end (for max) or the bottom end (for min): an integer
// max or min of the keys is a NaN-propagating max or min of the values. For transports whose own max/min drop NaN
// (NCCL's ncclMax/ncclMin follow fmax). Keys 0 and all-ones are the bits of no number, so NaN round-trips as NaN
// and every other value round-trips bit for bit (-0.0, denormals and infinities included).
template <class F>
using order_key_t = std::conditional_t<sizeof(F) == 4, std::uint32_t, std::uint64_t>;

template <class F>
KOKKOS_INLINE_FUNCTION order_key_t<F> order_key(F v, bool nan_high) {
  using K = order_key_t<F>;
  static_assert(std::is_floating_point<F>::value && sizeof(F) == sizeof(K), "order_key: float or double");
  if (v != v) return nan_high ? ~K(0) : K(0);
  K bits;
  std::memcpy(&bits, &v, sizeof bits);
  const K sign = K(1) << (8 * sizeof(K) - 1);
  return (bits & sign) != 0 ? ~bits : (bits | sign);
}

template <class F>
KOKKOS_INLINE_FUNCTION F from_order_key(order_key_t<F> k) {
  using K = order_key_t<F>;
  const K sign = K(1) << (8 * sizeof(K) - 1);
  // NaN as the bits of std::numeric_limits<F>::quiet_NaN(), which device code may not call (a constexpr host
  // function: nvcc rejects it without --expt-relaxed-constexpr).
  const K quiet_nan = sizeof(K) == 4 ? K(0x7FC00000u) : K(0x7FF8000000000000ull);
  const K bits = k == K(0) || k == ~K(0) ? quiet_nan : (k & sign) != 0 ? (k ^ sign) : ~k;
  F v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// The kernels below are functors, not KOKKOS_LAMBDAs: under nvcc a KOKKOS_LAMBDA is an extended __host__ __device__
// lambda, a type-erased wrapper that allocates on the host heap when it is made and again each time Kokkos copies it
// (three allocations per launch, measured on an H200), and these kernels run on every collective call.

// data[i] in place: values to keys (to_keys) or keys back to values.
template <class F>
struct OrderKeysItem {
  F* data;
  bool to_keys, nan_high;
  KOKKOS_INLINE_FUNCTION void operator()(const int64_t i) const {
    using K = order_key_t<F>;
    K* keys = reinterpret_cast<K*>(data);
    if (to_keys) {
      const K k = order_key<F>(data[i], nan_high);
      keys[i] = k;
    } else {
      const F v = from_order_key<F>(keys[i]);
      data[i] = v;
    }
  }
};

template <class T>
struct FillItem {
  T* dst;
  T value;
  KOKKOS_INLINE_FUNCTION void operator()(const int64_t i) const { dst[i] = value; }
};

template <class T>
struct CopyItem {
  T* dst;
  const T* src;
  KOKKOS_INLINE_FUNCTION void operator()(const int64_t i) const { dst[i] = src[i]; }
};

// dst[i] = op(dst[i], src[i]).
template <ReduceOp Op, class T>
struct CombineItem {
  T* dst;
  const T* src;
  KOKKOS_INLINE_FUNCTION void operator()(const int64_t i) const { dst[i] = combine_one<Op>(dst[i], src[i]); }
};

// data[0..n) in place: values to keys (to_keys) or keys back to values. Not fenced.
template <class F, class Exec>
void order_keys_in_place(const Exec& space, F* data, int64_t n, bool to_keys, bool nan_high) {
  if (n == 0) return;
  static const std::string kernel_name = "darray::order_keys";  // kokkos_compat.hpp: built once
  Kokkos::parallel_for(kernel_name, range_policy(space, int64_t{0}, n), OrderKeysItem<F>{data, to_keys, nan_high});
}

template <class T, class Exec>
void fill_kernel(const Exec& space, T* dst, int64_t n, T value) {
  if (n == 0) return;
  if (loop_inline<T, Exec>(n)) {
    for (int64_t i = 0; i < n; ++i) dst[i] = value;
    return;
  }
  static const std::string kernel_name = "darray::collective_fill";  // kokkos_compat.hpp: built once
  Kokkos::parallel_for(kernel_name, range_policy(space, int64_t{0}, n), FillItem<T>{dst, value});
}

template <class T, class Exec>
void copy_kernel(const Exec& space, T* dst, const T* src, int64_t n) {
  if (n == 0) return;
  if (loop_inline<T, Exec>(n)) {
    copy_bytes(static_cast<void*>(dst), static_cast<const void*>(src), static_cast<std::size_t>(n) * sizeof(T));
    return;
  }
  static const std::string kernel_name = "darray::collective_copy";  // kokkos_compat.hpp: built once
  Kokkos::parallel_for(kernel_name, range_policy(space, int64_t{0}, n), CopyItem<T>{dst, src});
}

// A kernel always: the host's inline loops combine a slot's blocks together (combine_blocks_as below), and
// combine_slot calls this only where loop_inline is false.
template <ReduceOp Op, class T, class Exec>
void combine_kernel_as(const Exec& space, T* dst, const T* src, int64_t n) {
  static const std::string kernel_name = std::string("darray::") + to_string(Op) + "_combine";  // built once
  Kokkos::parallel_for(kernel_name, range_policy(space, int64_t{0}, n), CombineItem<Op, T>{dst, src});
}

// dst[i] = blocks[which[0]][i] op blocks[which[1]][i] op ..., folded left in that order (the bits of combining them
// one block after another), on the host; `which` is not empty and no block is dst. A few elements keep their partial
// result in a register across the blocks, so that no block waits on the store of the one before (a 1 x 8 psum of 8
// bytes waited seven times). More go in passes over dst that take up to three blocks each, so dst is loaded and
// stored once per three blocks rather than once per block (eight blocks: three passes, not eight). Whole passes, not
// passes over chunks of dst: at 8 MiB a block, 4 KiB chunks were 1.4x slower than one block after another (each chunk
// of each block a new page for the prefetcher), whole passes 0.7-0.8x (scratch cb.cpp).
template <ReduceOp Op, class T>
void combine_blocks_as(T* dst, const std::vector<const T*>& blocks, const std::vector<std::size_t>& which, int64_t n) {
  constexpr int64_t few = 8;
  const std::size_t count = which.size();
  auto block = [&](std::size_t k) { return blocks[which[k]]; };
  if (n <= few) {
    for (int64_t i = 0; i < n; ++i) {
      T acc = block(0)[i];
      for (std::size_t k = 1; k < count; ++k) acc = combine_one<Op>(acc, block(k)[i]);
      dst[i] = acc;
    }
    return;
  }
  std::size_t k = std::min<std::size_t>(count, 3);
  const T *a = block(0), *b = block(k > 1 ? 1 : 0), *c = block(k > 2 ? 2 : 0);
  if (k == 3)
    for (int64_t i = 0; i < n; ++i) dst[i] = combine_one<Op>(combine_one<Op>(a[i], b[i]), c[i]);
  else if (k == 2)
    for (int64_t i = 0; i < n; ++i) dst[i] = combine_one<Op>(a[i], b[i]);
  else
    for (int64_t i = 0; i < n; ++i) dst[i] = a[i];
  for (; k + 3 <= count; k += 3) {
    a = block(k), b = block(k + 1), c = block(k + 2);
    for (int64_t i = 0; i < n; ++i)
      dst[i] = combine_one<Op>(combine_one<Op>(combine_one<Op>(dst[i], a[i]), b[i]), c[i]);
  }
  if (count - k == 2) {
    a = block(k), b = block(k + 1);
    for (int64_t i = 0; i < n; ++i) dst[i] = combine_one<Op>(combine_one<Op>(dst[i], a[i]), b[i]);
  } else if (count - k == 1) {
    a = block(k);
    for (int64_t i = 0; i < n; ++i) dst[i] = combine_one<Op>(dst[i], a[i]);
  }
}

// f(std::integral_constant<ReduceOp, Op>{}) for the operation named at run time: the compile-time form each element
// loop takes. Complex values have sum only (pmax and pmin do not compile for them).
template <class T, class F>
void with_reduce_op(ReduceOp op, F&& f) {
  if (op == ReduceOp::sum) {
    f(std::integral_constant<ReduceOp, ReduceOp::sum>{});
    return;
  }
  if constexpr (!is_kokkos_complex<T>::value) {
    if (op == ReduceOp::max)
      f(std::integral_constant<ReduceOp, ReduceOp::max>{});
    else
      f(std::integral_constant<ReduceOp, ReduceOp::min>{});
  }
}

// combine_blocks_as for the operation named at run time.
template <class T>
void combine_blocks(ReduceOp op, T* dst, const std::vector<const T*>& blocks, const std::vector<std::size_t>& which,
                    int64_t n) {
  with_reduce_op<T>(op, [&](auto o) { combine_blocks_as<decltype(o)::value>(dst, blocks, which, n); });
}

// dst[i] = op(dst[i], src[i]) by a kernel on `space`. Not fenced.
template <class T, class Exec>
void combine_kernel(const Exec& space, ReduceOp op, T* dst, const T* src, int64_t n) {
  if (n == 0) return;
  with_reduce_op<T>(op, [&](auto o) { combine_kernel_as<decltype(o)::value>(space, dst, src, n); });
}

}  // namespace detail
}  // namespace darray
