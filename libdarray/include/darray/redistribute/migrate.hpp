// migrate: the ragged all-to-all of a RaggedArray (JAX's ragged_all_to_all, a particle-mesh code's particle
// exchange). Every row goes to the device a destination names; counts travel first in one small exchange among the
// processes, then the rows on the exchange engine, each run of rows from one device to another as one 2-D piece.
#pragma once

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "darray/array/detail/view.hpp"
#include "darray/array/ragged_array.hpp"
#include "darray/core/error.hpp"
#include "darray/redistribute/detail/migrate_rows.hpp"

namespace darray {

// Every row of every local device goes to the device dest[slot](row) names (a global device id of a.mesh(); slot is
// the local device's position in a.local_devices()). Rows keep their order per source device and arrive grouped by
// source device id ascending. A destination outside the mesh, or a dest vector that does not match the rows, is an
// InvalidArgument naming the row and the value, thrown on every process alike. Collective over the processes of the
// job.
template <class T, class M>
RaggedArray<T, M> migrate(const RaggedArray<T, M>& a, const std::vector<Kokkos::View<const int*, M>>& dest) {
  std::vector<typename RaggedArray<T, M>::view_type> rows =
      detail::migrate_rows<T, M>(a.mesh(), a.row_width(), a.local_devices(), a.local_rows(), dest);
  return RaggedArray<T, M>(a.mesh(), a.row_width(), std::move(rows));
}

// The same with the destinations computed on the host, row by row: f(const T* row) -> global device id.
template <class T, class M, class F, class = std::enable_if_t<std::is_invocable_r<int, F&, const T*>::value>>
RaggedArray<T, M> migrate(const RaggedArray<T, M>& a, F&& f) {
  std::vector<Kokkos::View<const int*, M>> dest;
  for (const auto& rows : a.local_rows()) {
    const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), rows);
    auto d = detail::cached_view<Kokkos::View<int*, Kokkos::HostSpace>>("darray::migrate dest", host.extent(0));
    for (std::size_t i = 0; i < host.extent(0); ++i) d(i) = f(host.data() + i * host.extent(1));
    dest.push_back(detail::copy_to_space<M>(d, "darray::migrate dest"));
  }
  return migrate(a, dest);
}

}  // namespace darray
