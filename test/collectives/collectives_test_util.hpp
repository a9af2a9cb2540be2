// Helpers of the collectives tests: random layouts (1-3-d meshes over every device, in make_mesh order or shuffled;
// random specs; shapes whose blocks divide as an operation needs), operands whose elements follow from their
// global index, and a reference for every collective computed from those global indices on the host, independently
// of the library's group and plan code: the axis group of a device is found by scanning the mesh.
#pragma once

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "darray/darray.hpp"
#include "mpi_test.hpp"
#include "split_sizes.hpp"

namespace darray {
namespace testing {

// Small integers (exact in float sums), negative ones too so pmax/pmin are not trivial.
template <class T>
T value_of(int64_t flat) {
  const int64_t v = (flat * 37) % 101 - 50;
  if constexpr (std::is_same<T, Kokkos::complex<double>>::value || std::is_same<T, Kokkos::complex<float>>::value) {
    using R = typename T::value_type;
    return T(static_cast<R>(v), static_cast<R>(flat % 7 - 3));
  } else if constexpr (std::is_unsigned<T>::value) {
    return static_cast<T>(v + 50);
  } else {
    return static_cast<T>(v);
  }
}

// A row-major block on the host.
template <class T>
struct HostBlock {
  Shape shape;
  std::vector<T> data;
};

template <class T>
HostBlock<T> operand_block(const Index& box, const Shape& global) {
  HostBlock<T> b{box_shape(box), std::vector<T>(static_cast<std::size_t>(volume(box)))};
  const Shape strides = row_major_strides(global);
  for (int64_t e = 0; e < volume(box); ++e) {
    int64_t rest = e, flat = 0;
    for (std::size_t d = box.size(); d-- > 0;) {
      flat += (box[d].start + rest % box[d].size()) * strides[d];
      rest /= box[d].size();
    }
    b.data[static_cast<std::size_t>(e)] = value_of<T>(flat);
  }
  return b;
}

// The sub-block [start, start + size) along dim.
template <class T>
HostBlock<T> slice(const HostBlock<T>& b, std::size_t dim, int64_t start, int64_t size) {
  HostBlock<T> out{b.shape, {}};
  out.shape[dim] = size;
  int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < dim; ++d) outer *= b.shape[d];
  for (std::size_t d = dim + 1; d < b.shape.size(); ++d) inner *= b.shape[d];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = start; k < start + size; ++k)
      for (int64_t i = 0; i < inner; ++i)
        out.data.push_back(b.data[static_cast<std::size_t>((o * b.shape[dim] + k) * inner + i)]);
  return out;
}

template <class T>
HostBlock<T> concat(const std::vector<HostBlock<T>>& parts, std::size_t dim) {
  HostBlock<T> out{parts.at(0).shape, {}};
  out.shape[dim] = 0;
  for (const auto& p : parts) out.shape[dim] += p.shape[dim];
  int64_t outer = 1;
  for (std::size_t d = 0; d < dim; ++d) outer *= out.shape[d];
  for (int64_t o = 0; o < outer; ++o)
    for (const auto& p : parts) {
      const int64_t run = volume(p.shape) / (outer > 0 ? outer : 1);
      for (int64_t i = 0; i < run; ++i) out.data.push_back(p.data[static_cast<std::size_t>(o * run + i)]);
    }
  return out;
}

template <class T>
HostBlock<T> insert_dim(HostBlock<T> b, std::size_t dim) {
  b.shape.insert(b.shape.begin() + static_cast<std::ptrdiff_t>(dim), 1);
  return b;
}

// The devices of d's axis group, ordered by axis index (first axis most significant), found by scanning the mesh.
inline std::vector<Device> group_of(const Mesh& mesh, const std::vector<std::string>& axes, const Device& d) {
  const auto mine = mesh.coords(d);
  std::vector<std::pair<int64_t, Device>> members;
  for (const Device& v : mesh.devices()) {
    const auto c = mesh.coords(v);
    bool same = true;
    for (int a = 0; a < mesh.ndim(); ++a) {
      const auto& name = mesh.axis_names()[static_cast<std::size_t>(a)];
      if (std::find(axes.begin(), axes.end(), name) == axes.end())
        same = same && c[static_cast<std::size_t>(a)] == mine[static_cast<std::size_t>(a)];
    }
    if (!same) continue;
    int64_t index = 0;
    for (const auto& name : axes) {
      const int a = mesh.axis_position(name);
      index = index * mesh.shape()[static_cast<std::size_t>(a)] + c[static_cast<std::size_t>(a)];
    }
    members.emplace_back(index, v);
  }
  std::sort(members.begin(), members.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<Device> out;
  for (const auto& m : members) out.push_back(m.second);
  return out;
}

// The documented result spec rule, written out: remove `removed`, then append `added` to entry `add_to`
// (stacked all_gather: insert a replicated entry at `insert_at`); the spec keeps the operand's length unless an
// entry past it names an axis.
inline PartitionSpec expected_spec(const PartitionSpec& in, std::size_t rank, const std::vector<std::string>& removed,
                                   int add_to = -1, const std::string& added = "", int insert_at = -1) {
  auto entries = in.entries();
  entries.resize(std::max(entries.size(), rank));
  for (auto& e : entries)
    for (const auto& r : removed) e.erase(std::remove(e.begin(), e.end(), r), e.end());
  std::size_t keep = in.size();
  if (add_to >= 0) entries[static_cast<std::size_t>(add_to)].push_back(added);
  if (insert_at >= 0) {
    entries.insert(entries.begin() + insert_at, PartitionSpec::Entry{});
    if (static_cast<std::size_t>(insert_at) < keep) ++keep;
  }
  while (entries.size() > keep && entries.back().empty()) entries.pop_back();
  return PartitionSpec(entries);
}

// Compares every addressable shard of `result` with expected(device): its box and replica id must be the result
// sharding's and its values the expected block. Returns "" or the first difference. Not collective.
template <class Array, class Expected>
std::string check_result(const Array& result, Expected&& expected) {
  using T = typename Array::value_type;
  std::ostringstream err;
  std::size_t mine = 0;
  for (const Device& d : result.sharding().mesh().devices()) mine += d.process_index == process_index() ? 1 : 0;
  if (result.addressable_shards().size() != mine) return "wrong number of shards";
  for (const auto& s : result.addressable_shards()) {
    const HostBlock<T> want = expected(s.device);
    if (s.index != result.sharding().index(result.shape(), s.device)) {
      err << s.device << ": shard index " << s.index << " is not the result sharding's";
      return err.str();
    }
    if (s.replica_id != result.sharding().replica_id(s.device)) {
      err << s.device << ": replica id " << s.replica_id << ", the result sharding's is "
          << result.sharding().replica_id(s.device);
      return err.str();
    }
    if (box_shape(s.index) != want.shape) {
      err << s.device << ": block shape " << shape_to_string(box_shape(s.index)) << ", expected "
          << shape_to_string(want.shape);
      return err.str();
    }
    auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s.data);
    for (std::size_t i = 0; i < want.data.size(); ++i)
      if (!(host.data()[i] == want.data[i])) {
        err << s.device << ": element " << i << " of block " << s.index << " differs";
        return err.str();
      }
  }
  return "";
}

// Meshes over every device: 1-d, 2-d or 3-d with random factors, in make_mesh order or shuffled.
inline Mesh random_mesh(std::mt19937_64& rng, int ndim, bool shuffled) {
  int64_t n = device_count();
  Shape shape;
  for (int a = 0; a < ndim - 1; ++a) {
    std::vector<int64_t> divisors;
    for (int64_t k = 1; k <= n; ++k)
      if (n % k == 0) divisors.push_back(k);
    shape.push_back(divisors[rng() % divisors.size()]);
    n /= shape.back();
  }
  shape.push_back(n);
  const std::vector<std::string> all_names{"x", "y", "z"};
  std::vector<std::string> names(all_names.begin(), all_names.begin() + ndim);
  if (!shuffled) return make_mesh(shape, names);
  std::vector<Device> devs = devices();
  std::shuffle(devs.begin(), devs.end(), rng);
  return Mesh(devs, shape, names);
}

// A random spec of at most `rank` entries; each mesh axis used at most once.
inline PartitionSpec random_spec(std::mt19937_64& rng, const Mesh& mesh, std::size_t rank) {
  std::vector<PartitionSpec::Entry> entries(rank);
  std::vector<std::string> order = mesh.axis_names();
  std::shuffle(order.begin(), order.end(), rng);
  for (const auto& a : order) {
    const std::size_t slot = rng() % (rank + 1);
    if (slot < rank) entries[slot].push_back(a);
  }
  // Half of the specs are shorter than the rank (trailing dims whole), as P("x") for a 2-d array.
  if (rng() % 2)
    while (!entries.empty() && entries.back().empty()) entries.pop_back();
  return PartitionSpec(entries);
}

// A shape whose blocks all have the same size: parts x (1..2) per dim, and a multiple of `multiple` along `dim`.
// Blocks of 1-2 elements per dim; under a lowered DARRAY_MPI_MAX_MESSAGE_BYTES (test_collectives_checked) each
// block grows to about three messages of 4-byte elements, so every transfer is cut into chunks.
inline Shape even_shape(std::mt19937_64& rng, const NamedSharding& s, std::size_t rank, int dim = -1,
                        int64_t multiple = 1) {
  Shape shape(rank);
  const int64_t grow = split_extent(rank, 4, 3);
  for (std::size_t d = 0; d < rank; ++d) {
    int64_t block = 1 + static_cast<int64_t>(rng() % 2) + grow;
    if (static_cast<int>(d) == dim) block *= multiple;
    shape[d] = s.num_parts(static_cast<int>(d)) * block;
  }
  return shape;
}

template <class T, int N>
DistributedArray<T, N> operand(const Shape& shape, const NamedSharding& s) {
  return make_array_from_callback<T, N>(shape, s, [&](const Index& box) { return operand_block<T>(box, shape).data; });
}

// Element-wise fold of equal-shape blocks.
template <class T, class Op>
HostBlock<T> fold(const std::vector<HostBlock<T>>& blocks, Op op) {
  HostBlock<T> out = blocks.at(0);
  for (std::size_t k = 1; k < blocks.size(); ++k)
    for (std::size_t i = 0; i < out.data.size(); ++i) out.data[i] = op(out.data[i], blocks[k].data[i]);
  return out;
}

}  // namespace testing
}  // namespace darray
