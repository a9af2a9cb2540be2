// Choosing how to decompose a 3-D FFT over every device of the job. A slab (1-D mesh) needs one transpose per
// transform where a pencil (2-D mesh) needs two, so the slab wins whenever every device can hold at least one plane
// in both slab layouts; beyond that (more devices than n0 or n1) the pencil keeps every device busy.
#pragma once

#include <cstdint>
#include <ostream>
#include <utility>

#include "darray/core/error.hpp"
#include "darray/core/index.hpp"
#include "darray/runtime/environment.hpp"
#include "darray/sharding/make_mesh.hpp"
#include "darray/sharding/named_sharding.hpp"

namespace darray {
namespace fft {

enum class Decomposition { automatic, slab, pencil };

inline const char* to_string(Decomposition d) {
  return d == Decomposition::slab ? "slab" : d == Decomposition::pencil ? "pencil" : "automatic";
}
inline std::ostream& operator<<(std::ostream& os, Decomposition d) { return os << to_string(d); }

// The most square r x c grid with r * c == devices and r <= c.
inline std::pair<int64_t, int64_t> pencil_grid(int64_t devices) {
  DARRAY_THROW_IF(devices < 1, InvalidArgument, "fft::pencil_grid", devices << " devices; expected at least 1");
  int64_t r = 1;
  for (int64_t k = 1; k * k <= devices; ++k)
    if (devices % k == 0) r = k;
  return {r, devices / r};
}

// slab when devices <= n0 and devices <= n1 (no device left without a plane before or after the transpose), else
// pencil; `requested` other than automatic is returned as is.
inline Decomposition choose_decomposition(const Shape& shape, int64_t devices,
                                          Decomposition requested = Decomposition::automatic) {
  DARRAY_THROW_IF(shape.size() != 3, InvalidArgument, "fft::choose_decomposition",
                  "shape " << shape_to_string(shape) << " has rank " << shape.size() << "; expected a 3-D shape");
  if (requested != Decomposition::automatic) return requested;
  return devices <= shape[0] && devices <= shape[1] ? Decomposition::slab : Decomposition::pencil;
}

// The input sharding of a 3-D FFT over every device of the job: P("x", none, none) on mesh ("x") for a slab, the
// z pencil P("r", "c", none) on the pencil_grid mesh ("r", "c") otherwise. Both hold dim 2 whole, so real
// transforms take them too.
inline NamedSharding auto_sharding(const Shape& shape, Decomposition requested = Decomposition::automatic) {
  const int64_t n = device_count();
  if (choose_decomposition(shape, n, requested) == Decomposition::slab)
    return NamedSharding(make_mesh({n}, {"x"}), PartitionSpec{"x", none, none});
  const auto [r, c] = pencil_grid(n);
  return NamedSharding(make_mesh({r, c}, {"r", "c"}), PartitionSpec{"r", "c", none});
}

}  // namespace fft
}  // namespace darray
