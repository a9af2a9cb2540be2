// Helpers of the array tests: the layouts they sweep (meshes over every device, specs, uneven and empty shapes),
// the expected element of a global index, and element-by-element checks of shards and gathered host data.
#pragma once

#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

// The array layer and what it stands on, rather than darray/darray.hpp, so these tests build while higher layers
// are under construction.
#include "darray/array/distributed_array.hpp"
#include "darray/array/factories.hpp"
#include "darray/array/from_callback.hpp"
#include "darray/array/from_single_device_arrays.hpp"
#include "darray/array/gather.hpp"
#include "darray/array/process_local.hpp"
#include "darray/array/scatter.hpp"
#include "darray/array/transfer_stats.hpp"
#include "darray/comm/check.hpp"
#include "darray/sharding/make_mesh.hpp"
#include "darray/sharding/named_sharding.hpp"
#include "mpi_test.hpp"
#include "split_sizes.hpp"

namespace darray {
namespace testing {

// The element a flat global index stands for, computed independently of the library: value (index, 0) for complex.
template <class T>
T expected_value(int64_t flat) {
  if constexpr (std::is_same<T, Kokkos::complex<float>>::value || std::is_same<T, Kokkos::complex<double>>::value) {
    using R = typename T::value_type;
    return T(static_cast<R>(flat), R(0));
  } else {
    return static_cast<T>(flat);
  }
}

// A second, distinguishable fill for replicas and scatter tests: depends on the index and a seed.
template <class T>
T salted_value(int64_t flat, int64_t seed) {
  return expected_value<T>((flat * 7 + seed * 13) % 100003);
}

// Flat row-major global index of every element of the box `index` of `shape`, in the box's row-major order.
inline std::vector<int64_t> global_flat_indices(const Index& index, const Shape& shape) {
  std::vector<int64_t> out;
  const int64_t n = volume(index);
  out.reserve(static_cast<std::size_t>(n));
  const Shape strides = row_major_strides(shape);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, flat = 0;
    for (std::size_t d = index.size(); d-- > 0;) {
      const int64_t ext = index[d].size();
      flat += (index[d].start + rest % ext) * strides[d];
      rest /= ext;
    }
    out.push_back(flat);
  }
  return out;
}

// A shard's data on the host, row-major.
template <class View>
std::vector<typename View::non_const_value_type> shard_to_host(const View& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<typename View::non_const_value_type>(h.data(), h.data() + h.size());
}

// Checks every addressable shard of a against value_of(flat global index); returns "" or the first mismatch.
template <class Array, class ValueOf>
std::string check_shards(const Array& a, ValueOf value_of) {
  std::ostringstream err;
  const auto local = local_devices();
  std::size_t expected_shards = 0;
  for (const Device& d : a.sharding().mesh().devices())
    if (d.process_index == process_index()) ++expected_shards;
  if (a.addressable_shards().size() != expected_shards) {
    err << "process " << process_index() << " has " << a.addressable_shards().size() << " shards, expected "
        << expected_shards;
    return err.str();
  }
  int last_local = -1;
  for (const auto& s : a.addressable_shards()) {
    if (s.device.process_index != process_index()) return "shard on a device of another process";
    if (s.device.local_index <= last_local) return "shards not in local-device order";
    last_local = s.device.local_index;
    if (s.index != a.sharding().index(a.shape(), s.device)) return "shard index differs from the sharding's";
    if (s.replica_id != a.sharding().replica_id(s.device)) return "shard replica id differs from the sharding's";
    for (int d = 0; d < Array::rank; ++d)
      if (static_cast<int64_t>(s.data.extent(static_cast<unsigned>(d))) != s.index[static_cast<std::size_t>(d)].size())
        return "shard view extent differs from its block";
    const auto host = shard_to_host(s.data);
    const auto flat = global_flat_indices(s.index, a.shape());
    for (std::size_t i = 0; i < flat.size(); ++i)
      if (!(host[i] == value_of(flat[i]))) {
        err << "device " << s.device << " block " << s.index << ": element " << i << " (global " << flat[i]
            << ") is wrong";
        return err.str();
      }
  }
  return "";
}

// Checks a whole gathered array against value_of(flat index).
template <class T, class ValueOf>
std::string check_whole(const std::vector<T>& host, int64_t size, ValueOf value_of) {
  if (static_cast<int64_t>(host.size()) != size)
    return "size " + std::to_string(host.size()) + ", expected " + std::to_string(size);
  for (int64_t i = 0; i < size; ++i)
    if (!(host[static_cast<std::size_t>(i)] == value_of(i))) return "element " + std::to_string(i) + " is wrong";
  return "";
}

// Whether all replicas of every block agree, across processes: each process publishes (flat index of the block's
// first element, replica id, position-weighted checksum) per non-empty shard, and every block's entries must
// carry the sharding's number of distinct replica ids and one checksum. Collective. Real element types.
template <class Array>
std::string replicas_agree(const Array& a) {
  std::vector<double> mine;
  const Shape strides = row_major_strides(a.shape());
  for (const auto& sh : a.addressable_shards()) {
    if (volume(sh.index) == 0) continue;
    double sum = 0, weight = 0;
    for (const auto& v : shard_to_host(sh.data)) sum += static_cast<double>(v) * ++weight;
    int64_t start = 0;
    for (std::size_t d = 0; d < sh.index.size(); ++d) start += sh.index[d].start * strides[d];
    mine.insert(mine.end(), {static_cast<double>(start), static_cast<double>(sh.replica_id), sum});
  }
  const int count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(world_size())), displs(counts.size());
  MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int total = 0;
  for (std::size_t p = 0; p < counts.size(); ++p) {
    displs[p] = total;
    total += counts[p];
  }
  std::vector<double> all(static_cast<std::size_t>(total));
  MPI_Allgatherv(mine.data(), count, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE, MPI_COMM_WORLD);
  std::map<double, std::vector<std::pair<double, double>>> by_block;  // start -> (replica id, checksum)
  for (std::size_t k = 0; k + 2 < all.size(); k += 3) by_block[all[k]].push_back({all[k + 1], all[k + 2]});
  for (const auto& [start, reps] : by_block) {
    std::set<double> ids;
    for (const auto& r : reps) {
      ids.insert(r.first);
      if (r.second != reps[0].second) return "replicas of the block at flat index " + std::to_string(start) + " differ";
    }
    if (static_cast<int64_t>(ids.size()) != a.sharding().num_replicas() || ids.size() != reps.size())
      return "the block at flat index " + std::to_string(start) + " has " + std::to_string(reps.size()) +
             " replicas, expected " + std::to_string(a.sharding().num_replicas());
  }
  return "";
}

// A layout to test: a mesh over all devices, a spec, and a global shape of rank N.
struct Layout {
  Mesh mesh;
  PartitionSpec spec;
  Shape shape;
  NamedSharding sharding() const { return NamedSharding(mesh, spec); }
  std::string describe() const {
    std::ostringstream os;
    os << mesh << " " << spec << " shape " << shape_to_string(shape);
    return os.str();
  }
};

// Meshes over every device of the job: 1-d, every 2-d factorisation, and a 3-d one when the count allows.
inline std::vector<Mesh> all_meshes() {
  const int64_t n = device_count();
  std::vector<Mesh> meshes{make_mesh({n}, {"x"})};
  for (int64_t a = 2; a < n; ++a)
    if (n % a == 0) meshes.push_back(make_mesh({a, n / a}, {"x", "y"}));
  for (int64_t a = 2; a < n; ++a)
    for (int64_t b = 2; a * b < n; ++b)
      if (n % (a * b) == 0) {
        meshes.push_back(make_mesh({a, b, n / (a * b)}, {"x", "y", "z"}));
        return meshes;
      }
  return meshes;
}

// Random spec of at most `rank` entries over the mesh's axes (each axis used at most once; some dims replicated,
// some with two axes), and random extents 0..max_extent. The generator is seeded alike everywhere, so every
// process draws the same layouts.
inline Layout random_layout(std::mt19937_64& rng, const Mesh& mesh, int rank, int64_t max_extent) {
  std::vector<std::string> free_axes = mesh.axis_names();
  std::shuffle(free_axes.begin(), free_axes.end(), rng);
  const std::size_t len = static_cast<std::size_t>(rng() % static_cast<uint64_t>(rank + 1));
  std::vector<PartitionSpec::Entry> entries(len);
  for (auto& e : entries) {
    const uint64_t pick = rng() % 4;  // 0: replicated, 1-2: one axis, 3: two axes
    const std::size_t want = pick == 0 ? 0 : pick == 3 ? 2 : 1;
    for (std::size_t k = 0; k < want && !free_axes.empty(); ++k) {
      e.push_back(free_axes.back());
      free_axes.pop_back();
    }
  }
  Shape shape(static_cast<std::size_t>(rank));
  for (auto& x : shape) x = static_cast<int64_t>(rng() % static_cast<uint64_t>(max_extent + 1));
  return Layout{mesh, PartitionSpec(entries), shape};
}

// Fixed layouts every test runs at rank N, then random ones: uneven extents, fewer elements than parts (empty
// shards), empty arrays, replication along unused mesh axes.
template <int N>
std::vector<Layout> test_layouts(int random_count, uint64_t seed) {
  std::vector<Layout> out;
  const int64_t n = device_count();
  const Mesh line = make_mesh({n}, {"x"});
  Shape even(N, 4), uneven(N, 3);
  even[0] = 4 * n;
  uneven[0] = 2 * n + 1;
  out.push_back(Layout{line, PartitionSpec{"x"}, even});
  out.push_back(Layout{line, PartitionSpec{"x"}, uneven});
  out.push_back(Layout{line, PartitionSpec{}, uneven});  // fully replicated
  Shape tiny(N, 2);
  tiny[0] = n > 1 ? n - 1 : 0;  // some shards empty
  out.push_back(Layout{line, PartitionSpec{"x"}, tiny});
  if (N >= 2) out.push_back(Layout{line, PartitionSpec{none, "x"}, uneven});
  // Under a lowered DARRAY_MPI_MAX_MESSAGE_BYTES: arrays whose per-process share spans several messages (of 4-byte
  // elements; more for wider types), uneven so the last chunk is partial, sharded and replicated.
  if (const int64_t e = split_extent(static_cast<std::size_t>(N), 4, 4.0 * static_cast<double>(process_count()));
      e > 0 && N > 0) {
    Shape big(N, e);
    big[0] = e + 1;
    out.push_back(Layout{line, PartitionSpec{"x"}, big});
    out.push_back(Layout{line, PartitionSpec{}, big});
  }
  std::mt19937_64 rng(seed);
  const auto meshes = all_meshes();
  for (int k = 0; k < random_count; ++k) out.push_back(random_layout(rng, meshes[rng() % meshes.size()], N, 9));
  return out;
}

}  // namespace testing
}  // namespace darray
