// Random halo layouts shared by the halo tests: shapes with uneven and empty blocks, widths wider than most
// neighbours' blocks, periodic and open dims, on random meshes and specs. Every process seeded alike draws the same.
#pragma once

#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

#include "darray/darray.hpp"
#include "random_layouts.hpp"

namespace darray {
namespace testing {

struct HaloLayout {
  Shape shape;
  std::vector<int64_t> widths;
  std::vector<Boundary> bc;
  NamedSharding sharding;
};

// A rank-n layout on a random mesh of `mesh_axes` axes over every device. `wide`: a periodic dim sometimes gets a
// halo wider than twice the dim; `shuffle`: the mesh sometimes takes the devices in a shuffled order.
inline HaloLayout random_halo_layout(std::mt19937_64& rng, int n, int mesh_axes, bool wide = false,
                                     bool shuffle = false) {
  Shape shape(static_cast<std::size_t>(n));
  for (auto& e : shape) e = static_cast<int64_t>(rng() % 8);  // 0..7: uneven, and empty blocks on many devices
  std::vector<int64_t> widths(shape.size());
  std::vector<Boundary> bc(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) {
    bc[d] = rng() % 2 ? Boundary::periodic : Boundary::open;
    if (shape[d] == 0) bc[d] = Boundary::open;
    widths[d] = static_cast<int64_t>(rng() % 4);  // up to 3: wider than most neighbours' blocks here
    if (wide && bc[d] == Boundary::periodic && rng() % 5 == 0) widths[d] = shape[d] * 2 + 1;
  }
  const Mesh mesh = random_mesh(rng, devices(), mesh_axes, shuffle, 'p');
  NamedSharding sharding(mesh, random_spec(rng, mesh.axis_names(), shape.size()));
  return HaloLayout{shape, widths, bc, sharding};
}

// `rounds` rounds of random cases: fn(std::integral_constant<int, N>{}, mesh_axes) for 1-D on 1 axis, 2-D on 1 axis
// (unless `short_round`), 2-D on 2 axes and 3-D on 1 to 3 axes.
template <class Fn>
void random_halo_rounds(std::mt19937_64& rng, int rounds, bool short_round, Fn&& fn) {
  for (int k = 0; k < rounds; ++k) {
    fn(std::integral_constant<int, 1>{}, 1);
    if (!short_round) fn(std::integral_constant<int, 2>{}, 1);
    fn(std::integral_constant<int, 2>{}, 2);
    fn(std::integral_constant<int, 3>{}, 1 + static_cast<int>(rng() % 3));
  }
}

}  // namespace testing
}  // namespace darray
