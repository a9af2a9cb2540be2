// Argument checks shared by the array factories and gathers. The ones here depend only on replicated metadata
// (shape, sharding, root, template types), so every process throws the same error before any communication.
#pragma once

#include <cstddef>
#include <iterator>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

#include "darray/array/detail/view.hpp"
#include "darray/array/dtype.hpp"
#include "darray/comm/check.hpp"
#include "darray/core/error.hpp"
#include "darray/core/index.hpp"
#include "darray/runtime/detail/state.hpp"
#include "darray/runtime/environment.hpp"
#include "darray/sharding/named_sharding.hpp"

namespace darray {
namespace detail {

// The global shape has rank N, no negative extent and an element count that fits in int64, the spec fits in N dims, and
// the mesh lives in this job.
template <int N>
void check_array_args(const char* api, const Shape& shape, const NamedSharding& sharding) {
  DARRAY_THROW_IF(shape.size() != static_cast<std::size_t>(N), InvalidArgument, api,
                  "shape " << numpy_shape_string(shape) << " has rank " << shape.size() << " but the array has rank "
                           << N << "; expected " << N << " extents");
  for (std::size_t d = 0; d < shape.size(); ++d)
    DARRAY_THROW_IF(shape[d] < 0, InvalidArgument, api,
                    "shape " << numpy_shape_string(shape) << " has negative extent " << shape[d] << " in dim " << d);
  check_volume(api, shape);
  DARRAY_THROW_IF(sharding.spec().size() > static_cast<std::size_t>(N), InvalidArgument, api,
                  "sharding spec " << sharding.spec() << " has " << sharding.spec().size()
                                   << " entries but the array has rank " << N
                                   << "; a PartitionSpec may have at most one entry per array dim");
  const auto& procs = sharding.mesh().process_indices();
  DARRAY_THROW_IF(!procs.empty() && procs.back() >= process_count(), InvalidArgument, api,
                  "the sharding's mesh has devices of process " << procs.back() << " but the job has "
                                                                << process_count() << " processes");
}

inline void check_root(const char* api, int root) {
  const int n = process_count();
  DARRAY_THROW_IF(
      root < 0 || root >= n, InvalidArgument, api,
      "root process " << root << " is out of range; the job has " << n << " processes (0.." << n - 1 << ")");
}

// Every process first compares what it is about to run (operation, dtype, rank, shape, sharding with its device
// order, root), with or without DARRAY_CHECK, so processes that diverge (another root, another shape, another
// element type) get the same InvalidArgument instead of a deadlock or garbled data. These calls move whole arrays
// between the host and the devices: one allgather of 8 bytes is small beside them.
template <class T, int N>
void check_collective(const char* api, const Shape& shape, const NamedSharding& sharding, int root = -1) {
  std::ostringstream os;
  os << api << "<" << dtype_name<T>() << ", " << N << ">(shape " << numpy_shape_string(shape) << ", " << sharding
     << " #" << std::hex << sharding.mesh().hash() << std::dec;
  if (root >= 0) os << ", root " << root;
  os << ")";
  require_same_call(world_comm(), os.str(), consistency_checks_enabled() ? " (DARRAY_CHECK)" : "");
}

// The element type of a contiguous container (std::vector, std::array, a host Kokkos view, a C array).
template <class Container>
using container_element_t =
    std::remove_cv_t<std::remove_pointer_t<decltype(std::data(std::declval<const Container&>()))>>;

// A container of another element type is a runtime InvalidArgument rather than a silent conversion: copying
// float64 data into a float32 array would round every element. The types are static, so every process that
// makes the same call throws the same error.
template <class T, class U>
void check_element_type(const char* api, const char* what) {
  if constexpr (!std::is_same<std::remove_cv_t<U>, T>::value)
    DARRAY_THROW(InvalidArgument, api,
                 what << " has element type " << dtype_name<U>() << " but the array's dtype is " << dtype_name<T>()
                      << "; convert the data to " << dtype_name<T>() << " first");
}

// Pointer and element count of a contiguous host container of T elements. Kokkos views must be host-accessible,
// contiguous and row-major; another element type throws (check_element_type), so the copy code that follows
// compiles for one type only.
template <class T, class Container>
std::pair<const T*, int64_t> host_span(const char* api, const char* what, const Container& c) {
  check_element_type<T, container_element_t<Container>>(api, what);
  if constexpr (Kokkos::is_view<Container>::value) {
    DARRAY_THROW_IF(!host_accessible_v<typename Container::memory_space>, InvalidArgument, api,
                    what << " is a Kokkos view in " << Container::memory_space::name()
                         << ", which the host cannot read; pass host data (e.g. a std::vector or a HostSpace view)");
    DARRAY_THROW_IF(!c.span_is_contiguous(), InvalidArgument, api,
                    what << " is a non-contiguous Kokkos view; pass contiguous row-major data");
    constexpr bool row_major = std::is_same<typename Container::array_layout, Kokkos::LayoutRight>::value ||
                               static_cast<int>(Container::traits::rank) <= 1;
    DARRAY_THROW_IF(!row_major, InvalidArgument, api,
                    what << " is a Kokkos view whose layout is not LayoutRight; pass row-major data");
  }
  if constexpr (std::is_same<container_element_t<Container>, T>::value)
    return {std::data(c), static_cast<int64_t>(std::size(c))};
  else
    return {nullptr, 0};  // unreachable: check_element_type threw
}

}  // namespace detail
}  // namespace darray
