// The reductions of the ops layer: how values combine (NaN-propagating min/max as NumPy's), a Kokkos reducer for
// them that builds with Kokkos 3.4 (volatile joins) and 4.x, the whole-array reduction over the replica-0 blocks
// followed by a process-order combine that gives every process the same bits, and the local reduction of each
// block along one dim.
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
#include "darray/array/distributed_array.hpp"
#include "darray/array/dtype.hpp"
#include "darray/comm/check.hpp"
#include "darray/comm/detail/same_reduction.hpp"
#include "darray/core/error.hpp"
#include "darray/ops/detail/kernels.hpp"
#include "darray/runtime/detail/arrival.hpp"
#include "darray/runtime/detail/kokkos_compat.hpp"
#include "darray/runtime/detail/mpi.hpp"
#include "darray/runtime/detail/state.hpp"

namespace darray {
namespace detail {

enum class ArrayOp { sum, prod, max, min };

template <ArrayOp op, class Acc>
KOKKOS_INLINE_FUNCTION void combine(Acc& acc, const Acc& v) {
  if constexpr (op == ArrayOp::sum) {
    acc += v;
  } else if constexpr (op == ArrayOp::prod) {
    acc *= v;
  } else if constexpr (op == ArrayOp::max) {
    if (v > acc || v != v) acc = v;  // NaN propagates: once acc is NaN, v > acc is false for every v
  } else {
    if (v < acc || v != v) acc = v;
  }
}

// The value that leaves any other unchanged; infinities for floating point, so -inf survives max.
template <ArrayOp op, class Acc>
Acc identity() {
  if constexpr (op == ArrayOp::sum) {
    return Acc(0);
  } else if constexpr (op == ArrayOp::prod) {
    return Acc(1);
  } else {
    using L = std::numeric_limits<Acc>;
    if (op == ArrayOp::max) return L::has_infinity ? -L::infinity() : L::lowest();
    return L::has_infinity ? L::infinity() : L::max();
  }
}

// A Kokkos reducer (the concept of Kokkos::Sum and friends) for combine<op>, with its identity carried along.
template <ArrayOp op, class Acc>
struct Reducer {
  using reducer = Reducer;
  using value_type = Acc;
  using result_view_type = Kokkos::View<value_type, Kokkos::HostSpace>;

  result_view_type value;
  Acc ident;
  bool refs_scalar;

  Reducer(value_type& v, const Acc& id) : value(&v), ident(id), refs_scalar(true) {}
  KOKKOS_INLINE_FUNCTION void join(value_type& dest, const value_type& src) const { combine<op>(dest, src); }
#if !DARRAY_KOKKOS_VERSION_AT_LEAST(4, 0)
  KOKKOS_INLINE_FUNCTION void join(volatile value_type& dest, const volatile value_type& src) const {
    value_type d = dest;
    const value_type s = src;
    combine<op>(d, s);
    dest = d;
  }
#endif
  KOKKOS_INLINE_FUNCTION void init(value_type& v) const { v = ident; }
  KOKKOS_INLINE_FUNCTION value_type& reference() const { return *value.data(); }
  KOKKOS_INLINE_FUNCTION result_view_type view() const { return value; }
  KOKKOS_INLINE_FUNCTION bool references_scalar() const { return refs_scalar; }
};

// One chunk of a host reduction: combine<op> of load(i) over the chunk's range, into partial[c].
template <ArrayOp op, class Acc, class Load>
struct ChunkReduceItem {
  Load load;
  Acc* partial;
  int64_t n, per_chunk;
  Acc ident;
  KOKKOS_INLINE_FUNCTION void operator()(const int64_t c) const {
    Acc acc = ident;
    const int64_t begin = c * per_chunk, end = begin + per_chunk < n ? begin + per_chunk : n;
    for (int64_t i = begin; i < end; ++i) combine<op>(acc, load(i));
    partial[c] = acc;
  }
};

// Elements a chunk of a host reduction takes at least, and chunks a thread at most.
constexpr int64_t reduce_chunk_min = 2048;
constexpr int64_t reduce_chunks_per_thread = 4;

// combine<op> of load(i) over i in [0, n) in the execution space Exec. Blocks until the value is on the host. Host
// spaces: one loop here where a kernel costs more than the work (loop_inline), else contiguous chunks, one loop each,
// in a parallel_for, their partials combined here in chunk order (the same bits for the same thread count); no
// allocation once warm, where Kokkos 4's parallel_reduce allocates its fence label on every call (kokkos_compat.hpp).
// Elsewhere (CUDA) Kokkos' parallel_reduce.
template <ArrayOp op, class Acc, class Exec, class Load>
Acc reduce_range(int64_t n, const Load& load) {
  Acc result = identity<op, Acc>();
  if (n == 0) return result;
  static const std::string kernel_name = "darray::reduce";  // kokkos_compat.hpp: built once
  if constexpr (host_execution_space_v<Exec>) {
    if (loop_inline<Acc, Exec>(n)) {  // one chunk, on this thread
      ChunkReduceItem<op, Acc, Load>{load, &result, n, n, result}(0);
      return result;
    }
    const Exec& space = default_instance<Exec>();
    const int64_t chunks =
        std::max<int64_t>(1, std::min(n / reduce_chunk_min, host_concurrency(space) * reduce_chunks_per_thread));
    const int64_t per_chunk = (n + chunks - 1) / chunks;
    static thread_local std::vector<Acc> partial;  // reused: per element type and operation
    partial.resize(static_cast<std::size_t>(chunks));
    Kokkos::parallel_for(kernel_name, range_policy(space, int64_t{0}, chunks),
                         ChunkReduceItem<op, Acc, Load>{load, partial.data(), n, per_chunk, result});
    fence(space);
    for (const Acc& p : partial) combine<op>(result, p);
  } else {
    Kokkos::parallel_reduce(
        kernel_name, flat_policy<Exec>(n), KOKKOS_LAMBDA(const int64_t i, Acc& acc) { combine<op>(acc, load(i)); },
        Reducer<op, Acc>(result, identity<op, Acc>()));
  }
  return result;
}

inline const char* to_string(ArrayOp op) {
  return op == ArrayOp::sum ? "sum" : op == ArrayOp::prod ? "prod" : op == ArrayOp::max ? "max" : "min";
}

// Every process's value combined in process order, the same bits on every process (an allreduce may round
// differently on different ranks). Collective over all processes. The same allgather carries `fingerprint` (what
// is reduced: operation, element type, length); processes that disagree all throw the same InvalidArgument, with
// describe() (the same text on every process that reduces the same) as this process's line
// (comm/detail/same_reduction.hpp), instead of combining each other's bytes. Under DARRAY_CHECK the processes first
// compare describe() as every collective does, so one that calls another collective meanwhile fails everywhere too.
template <ArrayOp op, class Acc, class Describe>
Acc combine_processes(const Acc& mine, std::uint64_t fingerprint, const Describe& describe) {
  const MPI_Comm comm = world_comm();
  int size = 1;
  DARRAY_MPI_CHECK(MPI_Comm_size(comm, &size));
  if (size == 1) return mine;
  struct Tagged {
    std::uint64_t fingerprint;
    Acc value;
  };
  if (consistency_checks_enabled()) check_consistent(comm, describe());
  Tagged own;
  std::memset(static_cast<void*>(&own), 0, sizeof own);  // no indeterminate padding bytes on the wire
  own.fingerprint = fingerprint;
  own.value = mine;
  static thread_local std::vector<Tagged> all;  // reused: a reduction in a time loop allocates nothing once warm
  all.resize(static_cast<std::size_t>(size));
  arrive_together(comm, to_string(op));  // under DARRAY_TIMEOUT_S: a process that never comes is an error
  DARRAY_MPI_CHECK(MPI_Allgather(&own, static_cast<int>(sizeof(Tagged)), MPI_BYTE, all.data(),
                                 static_cast<int>(sizeof(Tagged)), MPI_BYTE, comm));
  for (const Tagged& t : all)
    if (t.fingerprint != fingerprint)
      throw_other_reduction(comm, to_string(op), "process " + std::to_string(process_index()) + ": " + describe());
  Acc result = all[0].value;
  for (std::size_t p = 1; p < all.size(); ++p) combine<op>(result, all[p].value);
  return result;
}

// combine<op> over every global element once: each process reduces its replica-0 blocks (make_load(k) gives
// the loader of addressable shard k), then the processes combine their partials. Collective.
template <ArrayOp op, class Acc, class T, int N, class M, class MakeLoad>
Acc reduce_all(const DistributedArray<T, N, M>& a, const MakeLoad& make_load) {
  using Exec = typename Shard<T, N, M>::view_type::execution_space;
  Acc mine = identity<op, Acc>();
  const auto& shards = a.addressable_shards();
  for (std::size_t k = 0; k < shards.size(); ++k)
    if (shards[k].replica_id == 0)
      combine<op>(mine, reduce_range<op, Acc, Exec>(static_cast<int64_t>(shards[k].data.size()), make_load(k)));
  std::uint64_t fingerprint = mix_fingerprint(static_cast<std::uint64_t>(op) + 1, dtype_code<T>());
  fingerprint = mix_fingerprint(mix_fingerprint(fingerprint, dtype_code<Acc>()), static_cast<std::uint64_t>(a.size()));
  return combine_processes<op>(mine, fingerprint, [&] {
    return std::string(to_string(op)) + " of " + std::to_string(a.size()) + " x " + dtype_name<T>() +
           " (accumulated as " + dtype_name<Acc>() + ")";
  });
}

// Loads element i of a block converted to Acc.
template <class Acc, class T>
struct LoadAs {
  const T* data;
  KOKKOS_INLINE_FUNCTION Acc operator()(int64_t i) const { return ConvertTo<Acc>()(data[i]); }
};

// An axis argument, NumPy style: -rank .. rank - 1. Returns it in 0 .. rank - 1.
inline int normalize_axis(const char* api, int axis, int rank) {
  DARRAY_THROW_IF(axis < -rank || axis >= rank, InvalidArgument, api,
                  "axis " << axis << " is out of bounds for an array of rank " << rank << "; expected " << -rank
                          << " .. " << rank - 1);
  return axis < 0 ? axis + rank : axis;
}

// out[o, j] = combine<op> over k of in[o, k, j] for a row-major block viewed as (outer, len, inner). On host
// memory each work item walks a tile of `inner` row by row (cache-friendly); on a GPU one item per output element,
// so neighbouring threads read neighbouring elements.
template <ArrayOp op, class Acc, class Exec, class T>
void reduce_block_along(const T* in, Acc* out, int64_t outer, int64_t len, int64_t inner, const Acc& ident) {
  if (outer * inner == 0) return;
  constexpr bool host = std::is_same<typename Exec::memory_space, Kokkos::HostSpace>::value;
  const int64_t tile = host ? 512 : 1;
  const int64_t tiles = (inner + tile - 1) / tile;
  static const std::string kernel_name = "darray::reduce_along";  // kokkos_compat.hpp: built once
  Kokkos::parallel_for(
      kernel_name, flat_policy<Exec>(outer * tiles), KOKKOS_LAMBDA(const int64_t w) {
        const int64_t o = w / tiles, j0 = (w % tiles) * tile;
        const int64_t j1 = j0 + tile < inner ? j0 + tile : inner;
        Acc* dst = out + o * inner;
        const T* src = in + o * len * inner;
        for (int64_t j = j0; j < j1; ++j) dst[j] = ident;
        for (int64_t k = 0; k < len; ++k)
          for (int64_t j = j0; j < j1; ++j) combine<op>(dst[j], ConvertTo<Acc>()(src[k * inner + j]));
      });
}

}  // namespace detail
}  // namespace darray
