// Helpers of the io tests (their temporary directories: temp_dir.hpp): the value every element should hold, array
// construction from it, element-by-element checks of loaded shards, and the layouts the round trips sweep.
#pragma once

#include <mpi.h>
#include <sys/wait.h>
#include <unistd.h>

#include <Kokkos_Core.hpp>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "darray/darray.hpp"
#include "darray/io/npy.hpp"
#include "mpi_test.hpp"
#include "temp_dir.hpp"

namespace darray {
namespace testing {

template <class T>
inline constexpr bool is_complex_v =
    std::is_same<T, Kokkos::complex<float>>::value || std::is_same<T, Kokkos::complex<double>>::value;

// The element at flat index f, mirrored exactly by npy_value_expr() on the numpy side: f itself, wrapped to the
// positive range of 1-byte integers, and (f, -(f + 0.5)) for complex so real and imaginary parts cannot be swapped.
template <class T>
T element_value(int64_t f) {
  if constexpr (is_complex_v<T>) {
    using R = typename T::value_type;
    return T(static_cast<R>(f), static_cast<R>(-(static_cast<double>(f) + 0.5)));
  } else if constexpr (std::is_integral<T>::value && sizeof(T) == 1) {
    return static_cast<T>(f % 128);
  } else {
    return static_cast<T>(f);
  }
}

// numpy expression for the same values, for an array `a = np.arange(n)`; dtype as a numpy name.
inline std::string npy_value_expr(const std::string& dtype) {
  if (dtype == "complex64" || dtype == "complex128") return "(a - 1j * (a + 0.5)).astype(np." + dtype + ")";
  if (dtype == "int8" || dtype == "uint8") return "(a % 128).astype(np." + dtype + ")";
  return "a.astype(np." + dtype + ")";
}

// Row-major host data of `block` of an array of `shape` holding element_value at every flat index.
template <class T>
std::vector<T> block_values(const Index& block, const Shape& shape) {
  std::vector<T> out;
  const int64_t n = volume(block);
  out.reserve(static_cast<std::size_t>(n));
  const Shape strides = row_major_strides(shape);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, flat = 0;
    for (std::size_t d = block.size(); d-- > 0;) {
      flat += (block[d].start + rest % block[d].size()) * strides[d];
      rest /= block[d].size();
    }
    out.push_back(element_value<T>(flat));
  }
  return out;
}

template <class T, int N>
DistributedArray<T, N> make_test_array(const Shape& shape, const NamedSharding& sharding) {
  return make_array_from_callback<T, N>(shape, sharding, [&](const Index& b) { return block_values<T>(b, shape); });
}

// "" when every addressable shard of a holds element_value at each global index and matches the sharding
// (devices, boxes, replica ids), else the first problem.
template <class T, int N>
std::string check_loaded(const DistributedArray<T, N>& a, const Shape& shape, const NamedSharding& sharding) {
  std::ostringstream err;
  if (a.shape() != shape) return "shape " + shape_to_string(a.shape()) + " expected " + shape_to_string(shape);
  if (!(a.sharding() == sharding)) return "sharding " + a.sharding().to_string() + " expected " + sharding.to_string();
  const auto expected = sharding.addressable_devices_indices_map(shape, process_index());
  if (a.addressable_shards().size() != expected.size()) {
    err << "process " << process_index() << " has " << a.addressable_shards().size() << " shards, expected "
        << expected.size();
    return err.str();
  }
  for (const auto& s : a.addressable_shards()) {
    if (s.index != sharding.index(shape, s.device) || s.replica_id != sharding.replica_id(s.device)) {
      err << "shard of " << s.device << " has box " << s.index << " replica " << s.replica_id;
      return err.str();
    }
    auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s.data);
    const std::vector<T> want = block_values<T>(s.index, shape);
    if (static_cast<int64_t>(host.size()) != static_cast<int64_t>(want.size())) {
      err << "shard of " << s.device << " holds " << host.size() << " elements, expected " << want.size();
      return err.str();
    }
    for (std::size_t i = 0; i < want.size(); ++i)
      if (!(host.data()[i] == want[i])) {
        err << "shard of " << s.device << " box " << s.index << ": element " << i << " differs";
        return err.str();
      }
  }
  return "";
}

// Bytes of a file (read on the calling process).
inline std::vector<unsigned char> read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<unsigned char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Writes bytes to path on process 0 only; every process returns after it is on disk.
inline void write_file_on_root(const std::string& path, const std::string& bytes) {
  if (world_rank() == 0) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// Runs a shell command on process 0 and returns its exit status to every process.
inline int system_on_root(const std::string& command) {
  int rc = 0;
  if (world_rank() == 0) {
    const int status = std::system(command.c_str());
    rc = status == -1 ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return rc;
}

// A factorisation of the device count into two mesh axes, as square as possible (a >= b).
inline std::pair<int64_t, int64_t> two_axes(int64_t n) {
  int64_t b = 1;
  for (int64_t k = 1; k * k <= n; ++k)
    if (n % k == 0) b = k;
  return {n / b, b};
}

}  // namespace testing
}  // namespace darray
