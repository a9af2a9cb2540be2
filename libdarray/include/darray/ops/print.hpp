// Printing a distributed array as NumPy prints it (str(a), print(a)): to_string(a) and operator<<. Above NumPy's
// threshold of 1000 elements only the first and last 3 entries of each long dim are printed, with "...", and only
// those elements travel: each process gathers them from its replica-0 blocks with a small kernel, then one
// allgather gives every process the same text.
#pragma once

#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "darray/array/distributed_array.hpp"
#include "darray/ops/detail/format.hpp"
#include "darray/ops/detail/kernels.hpp"
#include "darray/runtime/detail/mpi.hpp"
#include "darray/runtime/program.hpp"

namespace darray {

// NumPy's print options this printer follows (numpy.get_printoptions() defaults).
struct PrintOptions {
  int64_t threshold = 1000;  // more elements than this: summarise
  int64_t edgeitems = 3;     // entries kept at each end of a summarised dim
  int linewidth = 75;        // characters per line
};

namespace detail {

// The printed elements of a: per dim the first and last `edge` indices of long dims when summarising, all
// otherwise; returned row-major over their Cartesian product on every process. Collective.
template <class T, int N, class M>
std::vector<T> gather_printed(const DistributedArray<T, N, M>& a, const std::vector<std::vector<int64_t>>& sel) {
  std::vector<int64_t> sel_shape;
  for (const auto& s : sel) sel_shape.push_back(static_cast<int64_t>(s.size()));
  const int64_t total = volume(sel_shape);
  std::vector<int64_t> positions;  // in the selection
  std::vector<T> values;
  for (const auto& shard : a.addressable_shards()) {
    if (shard.replica_id != 0 || shard.data.size() == 0) continue;
    // Per dim: (position in sel, offset along the block) of the selected indices inside the block.
    std::vector<std::vector<std::pair<int64_t, int64_t>>> hit(static_cast<std::size_t>(N));
    for (std::size_t d = 0; d < static_cast<std::size_t>(N); ++d)
      for (std::size_t k = 0; k < sel[d].size(); ++k)
        if (sel[d][k] >= shard.index[d].start && sel[d][k] < shard.index[d].stop)
          hit[d].push_back({static_cast<int64_t>(k), sel[d][k] - shard.index[d].start});
    std::vector<int64_t> local, pos;
    std::vector<std::size_t> c(static_cast<std::size_t>(N), 0);
    bool empty = false;
    for (const auto& h : hit) empty = empty || h.empty();
    while (!empty) {
      int64_t off = 0, p = 0;
      for (std::size_t d = 0; d < static_cast<std::size_t>(N); ++d) {
        off = off * shard.index[d].size() + hit[d][c[d]].second;
        p = p * sel_shape[d] + hit[d][c[d]].first;
      }
      local.push_back(off);
      pos.push_back(p);
      int d = N - 1;
      for (; d >= 0; --d) {
        const auto u = static_cast<std::size_t>(d);
        if (++c[u] < hit[u].size()) break;
        c[u] = 0;
      }
      if (d < 0) break;
    }
    if (local.empty()) continue;
    // Pick the elements where they live (device memory in GPU builds), then bring only them to the host.
    using Exec = typename Shard<T, N, M>::view_type::execution_space;
    const auto n = static_cast<int64_t>(local.size());
    Kokkos::View<int64_t*, M> where(Kokkos::view_alloc("darray::print_where", Kokkos::WithoutInitializing),
                                    local.size());
    Kokkos::View<T*, M> picked(Kokkos::view_alloc("darray::print_values", Kokkos::WithoutInitializing), local.size());
    Kokkos::deep_copy(
        where, Kokkos::View<const int64_t*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(local.data(), local.size()));
    const T* src = shard.data.data();
    static const std::string kernel_name = "darray::print_pick";  // kokkos_compat.hpp: built once
    Kokkos::parallel_for(
        kernel_name, flat_policy<Exec>(n), KOKKOS_LAMBDA(const int64_t i) { picked(i) = src[where(i)]; });
    auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), picked);
    positions.insert(positions.end(), pos.begin(), pos.end());
    values.insert(values.end(), host.data(), host.data() + n);
  }
  // Every process learns every printed element (at most a few thousand).
  const MPI_Comm comm = mpi_comm();
  const int size = process_count();
  int count = static_cast<int>(positions.size());
  std::vector<int> counts(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size), 0);
  DARRAY_MPI_CHECK(MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm));
  for (int p = 1; p < size; ++p)
    displs[static_cast<std::size_t>(p)] =
        displs[static_cast<std::size_t>(p) - 1] + counts[static_cast<std::size_t>(p) - 1];
  std::vector<int64_t> all_pos(static_cast<std::size_t>(total));
  std::vector<T> all_values(static_cast<std::size_t>(total));
  DARRAY_MPI_CHECK(MPI_Allgatherv(positions.data(), count, MPI_INT64_T, all_pos.data(), counts.data(), displs.data(),
                                  MPI_INT64_T, comm));
  std::vector<int> bcounts(counts), bdispls(displs);
  for (auto& v : bcounts) v *= static_cast<int>(sizeof(T));
  for (auto& v : bdispls) v *= static_cast<int>(sizeof(T));
  DARRAY_MPI_CHECK(MPI_Allgatherv(values.data(), count * static_cast<int>(sizeof(T)), MPI_BYTE, all_values.data(),
                                  bcounts.data(), bdispls.data(), MPI_BYTE, comm));
  std::vector<T> out(static_cast<std::size_t>(total));
  for (std::size_t k = 0; k < all_pos.size(); ++k) out[static_cast<std::size_t>(all_pos[k])] = all_values[k];
  return out;
}

}  // namespace detail

// The array as NumPy's str(a) prints it, e.g. "[[0. 1. 2.]\n [3. 4. 5.]]"; the same text on every process.
// Collective: call it on every process (then print on one: `auto s = to_string(a); if (process_index() == 0)
// std::cout << s << "\n";`).
template <class T, int N, class M>
std::string to_string(const DistributedArray<T, N, M>& a, const PrintOptions& options = {}) {
  const Shape& shape = a.shape();
  if (N > 0 && a.size() == 0) return "[]";
  const bool summary = a.size() > options.threshold;
  std::vector<std::vector<int64_t>> sel(static_cast<std::size_t>(N));
  for (std::size_t d = 0; d < static_cast<std::size_t>(N); ++d) {
    const int64_t len = shape[d], e = options.edgeitems;
    for (int64_t i = 0; i < len; ++i)
      if (!summary || 2 * e >= len || i < e || i >= len - e) sel[d].push_back(i);
  }
  const std::vector<T> values = detail::gather_printed(a, sel);
  if (N == 0) return detail::scalar_string(values.at(0));
  std::vector<int64_t> sel_shape;
  for (const auto& s : sel) sel_shape.push_back(static_cast<int64_t>(s.size()));
  return detail::format_array(values, sel_shape, shape, summary, options.edgeitems, options.linewidth);
}

// os << to_string(a). Collective, like to_string: every process must reach it (each prints to its own os).
template <class T, int N, class M>
std::ostream& operator<<(std::ostream& os, const DistributedArray<T, N, M>& a) {
  return os << to_string(a);
}

}  // namespace darray
