// broadcast_from_root: host data from one process to all (the pbroadcast JAX lacks; the MPI broadcast of the
// multi-controller tutorials). Any size_t length: the comm layer cuts it into messages MPI's int counts can carry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "darray/array/detail/checks.hpp"
#include "darray/array/dtype.hpp"
#include "darray/comm/check.hpp"
#include "darray/comm/chunked_collectives.hpp"
#include "darray/comm/limits.hpp"
#include "darray/runtime/detail/mpi.hpp"
#include "darray/runtime/detail/state.hpp"
#include "darray/runtime/environment.hpp"

namespace darray {
namespace detail {

// DARRAY_CHECK=1: all processes must broadcast from the same root with the same element type (and count, when the
// receivers give one), or every process fails instead of some matching the wrong broadcast.
template <class T>
void check_broadcast_call(int root, const std::string& count) {
  if (consistency_checks_enabled())
    check_consistent(world_comm(), "broadcast_from_root(root=" + std::to_string(root) + ", " + count + "element type " +
                                       dtype_name<T>() + " of " + std::to_string(sizeof(T)) + " bytes)");
}

}  // namespace detail

// Every process gets root's vector; the others' host_data is ignored (pass an empty one). Collective. Root may
// std::move its data in to skip a copy.
template <class T>
std::vector<T> broadcast_from_root(std::vector<T> host_data, int root) {
  static_assert(std::is_trivially_copyable<T>::value, "broadcast_from_root sends elements as bytes");
  constexpr const char* api = "broadcast_from_root";
  detail::check_broadcast_call<T>(root, "");
  detail::check_root(api, root);
  const MPI_Comm comm = detail::world_comm();
  std::uint64_t count = process_index() == root ? host_data.size() : 0;
  DARRAY_MPI_CHECK(MPI_Bcast(&count, 1, MPI_UINT64_T, root, comm));
  if (process_index() != root) host_data.assign(static_cast<std::size_t>(count), T{});
  detail::bcast(comm, host_data.data(), byte_count(static_cast<int64_t>(count), sizeof(T), api), root);
  return host_data;
}

// In place: count elements at data, the same count on every process; root's values overwrite everyone's.
template <class T>
void broadcast_from_root(T* data, std::size_t count, int root) {
  static_assert(std::is_trivially_copyable<T>::value, "broadcast_from_root sends elements as bytes");
  constexpr const char* api = "broadcast_from_root";
  detail::check_broadcast_call<T>(root, std::to_string(count) + " elements, ");
  detail::check_root(api, root);
  detail::bcast(detail::world_comm(), data, byte_count(static_cast<int64_t>(count), sizeof(T), api), root);
}

}  // namespace darray
