// RaggedArray: a per-device variable-length table, e.g. particles. Every device of a mesh holds its own number of
// rows n_d, each row `row_width` values, as one n_d x row_width LayoutRight view; there is no global index, only
// rows owned by devices. migrate() (redistribute/migrate.hpp) moves rows to the devices a function names.
#pragma once

#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "darray/array/detail/view.hpp"
#include "darray/array/shard.hpp"
#include "darray/comm/chunked_collectives.hpp"
#include "darray/core/error.hpp"
#include "darray/runtime/detail/state.hpp"
#include "darray/runtime/environment.hpp"
#include "darray/sharding/mesh.hpp"

namespace darray {

template <class T, class M = DefaultMemorySpace>
class RaggedArray {
 public:
  using value_type = T;
  using memory_space = M;
  using view_type = Kokkos::View<T**, Kokkos::LayoutRight, M>;  // n_d rows x row_width

  // Every local device of the mesh holds 0 rows.
  RaggedArray(const Mesh& mesh, int64_t row_width) : m_mesh(mesh), m_row_width(row_width) {
    init_devices();
    for (std::size_t i = 0; i < m_devices.size(); ++i)
      m_rows.push_back(detail::allocate_view<T, 2, M>(label(m_devices[i]), {0, m_row_width}, false));
  }

  // One view per local device of the mesh, in local-device order, each with extent(1) == row_width. The views are
  // shared, not copied.
  RaggedArray(const Mesh& mesh, int64_t row_width, std::vector<view_type> local_rows)
      : m_mesh(mesh), m_row_width(row_width), m_rows(std::move(local_rows)) {
    init_devices();
    DARRAY_THROW_IF(m_rows.size() != m_devices.size(), InvalidArgument, "RaggedArray",
                    m_rows.size() << " views given but this process has " << m_devices.size()
                                  << " devices in the mesh; expected one view per local device");
    for (std::size_t i = 0; i < m_rows.size(); ++i)
      DARRAY_THROW_IF(static_cast<int64_t>(m_rows[i].extent(1)) != m_row_width, InvalidArgument, "RaggedArray",
                      "the view of " << m_devices[i] << " has rows of " << m_rows[i].extent(1)
                                     << " values; expected row_width " << m_row_width);
  }

  const Mesh& mesh() const { return m_mesh; }
  int64_t row_width() const { return m_row_width; }
  // This process's devices of the mesh, in local-device order.
  const std::vector<Device>& local_devices() const { return m_devices; }
  // One view per local device.
  const std::vector<view_type>& local_rows() const { return m_rows; }

  // Rows on this process's devices.
  int64_t local_row_count() const {
    int64_t n = 0;
    for (const view_type& v : m_rows) n += static_cast<int64_t>(v.extent(0));
    return n;
  }

  // Rows on all devices; identical on every process. Collective over the processes of the job.
  int64_t global_row_count() const {
    int64_t n = local_row_count();
    detail::allreduce(detail::world_comm(), &n, 1, MPI_SUM);
    return n;
  }

 private:
  static std::string label(const Device& d) { return "darray::ragged(" + to_string(d) + ")"; }

  void init_devices() {
    DARRAY_THROW_IF(m_row_width < 0, InvalidArgument, "RaggedArray",
                    "row_width " << m_row_width << "; expected 0 or more");
    for (const int64_t pos : m_mesh.process_positions(process_index()))
      m_devices.push_back(m_mesh.devices()[static_cast<std::size_t>(pos)]);
    std::sort(m_devices.begin(), m_devices.end(),
              [](const Device& a, const Device& b) { return a.local_index < b.local_index; });
  }

  Mesh m_mesh;
  int64_t m_row_width;
  std::vector<Device> m_devices;
  std::vector<view_type> m_rows;
};

}  // namespace darray
