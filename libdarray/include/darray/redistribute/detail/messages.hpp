// How a plan piece becomes MPI messages: split_for_messages cuts a box into parts of at most max_bytes (the same
// rule on sender and receiver, so the k-th send matches the k-th receive), and MpiTypes builds the subarray
// datatypes that let MPI read and write the parts in place, freeing them when the exchange is over.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "darray/comm/detail/chunking.hpp"
#include "darray/core/error.hpp"
#include "darray/core/index.hpp"
#include "darray/runtime/detail/mpi.hpp"

namespace darray {
namespace detail {

// Calls fn(part) for consecutive row-major parts of `box` of at most max_bytes each (max_bytes >= element_bytes).
// Parts are boxes: whole trailing dims, a run of the first dim that does not fit whole, extent 1 before it.
template <class Fn>
void split_for_messages(const Index& box, std::size_t element_bytes, std::size_t max_bytes, Fn&& fn) {
  const auto total = static_cast<std::size_t>(volume(box)) * element_bytes;
  if (total == 0) return;
  if (total <= max_bytes) {
    fn(box);
    return;
  }
  // d: the outermost dim such that one step of it (all dims after it whole) fits.
  const std::size_t n = box.size();
  std::size_t d = n - 1;
  std::size_t step = element_bytes;  // bytes of one index step of dim d
  while (d > 0 && step * static_cast<std::size_t>(box[d].size()) <= max_bytes) {
    step *= static_cast<std::size_t>(box[d].size());
    --d;
  }
  const int64_t run = static_cast<int64_t>(max_bytes / step);  // >= 1 by the loop above and max_bytes >= element size
  Index part = box;
  std::vector<int64_t> outer(d, 0);  // odometer over dims [0, d)
  while (true) {
    for (std::size_t k = 0; k < d; ++k) part[k] = Slice{box[k].start + outer[k], box[k].start + outer[k] + 1};
    for (int64_t s = box[d].start; s < box[d].stop; s += run) {
      part[d] = Slice{s, std::min(s + run, box[d].stop)};
      fn(static_cast<const Index&>(part));
    }
    std::size_t k = d;
    while (k > 0) {
      --k;
      if (++outer[k] < box[k].size()) break;
      outer[k] = 0;
      if (k == 0) return;
    }
    if (d == 0) return;
  }
}

// Datatypes of one exchange; freed on destruction (after the requests using them completed).
class MpiTypes {
 public:
  MpiTypes() = default;
  MpiTypes(const MpiTypes&) = delete;
  MpiTypes& operator=(const MpiTypes&) = delete;
  ~MpiTypes() {
    int finalized = 1;
    MPI_Finalized(&finalized);
    if (finalized) return;
    for (MPI_Datatype& t : m_types) MPI_Type_free(&t);
  }

  // An element of `bytes` bytes, so counts stay in elements and far from INT_MAX.
  MPI_Datatype element(std::size_t bytes) {
    MPI_Datatype t = MPI_DATATYPE_NULL;
    DARRAY_MPI_CHECK(MPI_Type_contiguous(to_mpi_count(bytes, "reshard"), MPI_BYTE, &t));
    DARRAY_MPI_CHECK(MPI_Type_commit(&t));
    m_types.push_back(t);
    return t;
  }

  // `part` inside the row-major buffer of `shard_box`.
  MPI_Datatype subarray(const Index& shard_box, const Index& part, MPI_Datatype element) {
    const std::size_t n = shard_box.size();
    std::vector<int> sizes(n), subsizes(n), starts(n);
    for (std::size_t d = 0; d < n; ++d) {
      sizes[d] = to_mpi_count(static_cast<std::size_t>(shard_box[d].size()), "reshard");
      subsizes[d] = to_mpi_count(static_cast<std::size_t>(part[d].size()), "reshard");
      starts[d] = to_mpi_count(static_cast<std::size_t>(part[d].start - shard_box[d].start), "reshard");
    }
    MPI_Datatype t = MPI_DATATYPE_NULL;
    DARRAY_MPI_CHECK(MPI_Type_create_subarray(static_cast<int>(n), sizes.data(), subsizes.data(), starts.data(),
                                              MPI_ORDER_C, element, &t));
    DARRAY_MPI_CHECK(MPI_Type_commit(&t));
    m_types.push_back(t);
    return t;
  }

  // A strided box walked in the given order of dims, outermost first: extents[k] elements at byte_strides[k]. Lets
  // a message read or write a block stored in any axis order while its elements travel in a fixed order.
  MPI_Datatype strided(const std::vector<int64_t>& extents, const std::vector<int64_t>& byte_strides,
                       MPI_Datatype element) {
    MPI_Datatype t = element;
    for (std::size_t k = extents.size(); k-- > 0;) {
      MPI_Datatype outer = MPI_DATATYPE_NULL;
      DARRAY_MPI_CHECK(MPI_Type_create_hvector(to_mpi_count(static_cast<std::size_t>(extents[k]), "reshard"), 1,
                                               static_cast<MPI_Aint>(byte_strides[k]), t, &outer));
      if (t != element) m_types.push_back(t);  // freed with the rest: MPI keeps what the outer type needs
      t = outer;
    }
    if (t == element) return element;
    DARRAY_MPI_CHECK(MPI_Type_commit(&t));
    m_types.push_back(t);
    return t;
  }

 private:
  std::vector<MPI_Datatype> m_types;
};

}  // namespace detail
}  // namespace darray
