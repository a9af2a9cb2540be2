// Shared helpers of the ops tests: random layouts (meshes over every device, specs with replication, several
// axes per dim, uneven and empty blocks), deterministic element values, and serial references on the gathered
// array.
#pragma once

#include <Kokkos_Core.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "darray/darray.hpp"
#include "mpi_test.hpp"
#include "random_layouts.hpp"

namespace darray {
namespace testing {

struct Layout {
  NamedSharding sharding;
  Shape shape;
  std::string describe() const {
    return numpy_shape_string(shape) + " " + sharding.spec().to_string() + " on " + sharding.mesh().to_string();
  }
};

// Extents 0..9, so blocks come out uneven and sometimes empty.
inline Layout random_layout(std::mt19937_64& rng, int rank) {
  const Mesh mesh = random_mesh(rng, devices());
  const PartitionSpec spec = random_spec(rng, mesh.axis_names(), static_cast<std::size_t>(rank), true);
  Shape shape;
  for (int d = 0; d < rank; ++d) shape.push_back(static_cast<int64_t>(rng() % 10));
  // Mostly non-empty arrays: an empty extent empties everything.
  if (rng() % 4 != 0)
    for (auto& e : shape) e = e == 0 ? 1 + static_cast<int64_t>(rng() % 5) : e;
  return Layout{NamedSharding(mesh, spec), shape};
}

// Element values from the flat global index: small, exact in every type, negative too.
template <class T>
T value_at(int64_t flat, int seed) {
  const int64_t v = (flat * 7 + seed * 13) % 23 - 11;
  if constexpr (detail::is_kokkos_complex<T>::value) {
    using R = typename T::value_type;
    return T(static_cast<R>(v) * R(0.5), static_cast<R>((flat * 5 + seed) % 9 - 4));
  } else if constexpr (std::is_floating_point<T>::value) {
    return static_cast<T>(v) * T(0.25);
  } else {
    return static_cast<T>(v);
  }
}

template <class T, int N>
DistributedArray<T, N> random_array(const Layout& l, int seed) {
  const Shape strides = [&] {
    Shape s(l.shape.size(), 1);
    for (int d = static_cast<int>(l.shape.size()) - 2; d >= 0; --d)
      s[static_cast<std::size_t>(d)] = s[static_cast<std::size_t>(d) + 1] * l.shape[static_cast<std::size_t>(d) + 1];
    return s;
  }();
  return make_array_from_callback<T, N>(l.shape, l.sharding, [&](const Index& box) {
    std::vector<T> out;
    std::vector<int64_t> i(box.size());
    const int64_t n = volume(box);
    for (int64_t k = 0; k < n; ++k) {
      int64_t rest = k, flat = 0;
      for (int d = static_cast<int>(box.size()) - 1; d >= 0; --d) {
        const auto u = static_cast<std::size_t>(d);
        flat += (box[u].start + rest % box[u].size()) * strides[u];
        rest /= box[u].size();
      }
      out.push_back(value_at<T>(flat, seed));
    }
    return out;
  });
}

// The coordinates of flat index f in shape.
inline std::vector<int64_t> unravel(int64_t f, const Shape& shape) {
  std::vector<int64_t> c(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    const auto u = static_cast<std::size_t>(d);
    c[u] = f % shape[u];
    f /= shape[u];
  }
  return c;
}

// |got - want| within a relative tolerance for floating point, exact otherwise; NaN equals NaN.
template <class T>
bool close(const T& got, const T& want, double rtol) {
  if constexpr (detail::is_kokkos_complex<T>::value) {
    return close(got.real(), want.real(), rtol) && close(got.imag(), want.imag(), rtol);
  } else if constexpr (std::is_floating_point<T>::value) {
    if (std::isnan(want)) return std::isnan(got);
    if (std::isinf(want)) return got == want;
    return std::abs(static_cast<double>(got) - static_cast<double>(want)) <=
           rtol * (1.0 + std::abs(static_cast<double>(want)));
  } else {
    return got == want;
  }
}

template <class T>
double tolerance() {
  if constexpr (detail::is_kokkos_complex<T>::value)
    return tolerance<typename T::value_type>();
  else if constexpr (std::is_same<T, float>::value)
    return 1e-5;
  else
    return 1e-12;
}

// Whether every block of `a` holds the values `want` (row-major, global) at its box, replicas included, and the
// layout is `shape` sharded `sharding`.
template <class T, int N, class M>
bool blocks_equal(const DistributedArray<T, N, M>& a, const std::vector<T>& want, double rtol = 0) {
  const Shape shape = a.shape();
  for (const auto& s : a.addressable_shards()) {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s.data);
    const Index& box = s.index;
    const int64_t n = volume(box);
    for (int64_t k = 0; k < n; ++k) {
      const auto c = unravel(k, box_shape(box));
      int64_t flat = 0;
      for (std::size_t d = 0; d < c.size(); ++d) flat = flat * shape[d] + box[d].start + c[d];
      const T got = h.data()[k];
      const T exp = want[static_cast<std::size_t>(flat)];
      if (rtol > 0 && close(got, exp, rtol)) continue;
      if (!(got == exp)) {
        if constexpr (std::is_floating_point<T>::value)
          if (std::isnan(got) && std::isnan(exp)) continue;
        return false;
      }
    }
  }
  return true;
}

// The same value on every process, bit for bit.
template <class T>
bool same_everywhere(const T& v) {
  std::vector<char> mine(sizeof(T)), root(sizeof(T));
  std::memcpy(mine.data(), &v, sizeof(T));
  root = mine;
  MPI_Bcast(root.data(), static_cast<int>(sizeof(T)), MPI_BYTE, 0, MPI_COMM_WORLD);
  return all_ok(root == mine);
}

}  // namespace testing
}  // namespace darray
