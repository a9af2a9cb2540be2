// The tutorial's single-controller resharding (section 5.1) on one process with 4 devices: an array on the first
// device, then laid over (2, 2), (1, 4) and (4, 1) grids of the 4 devices, each shown as visualize_array_sharding
// shows it.
#include <iostream>

#include "darray/darray.hpp"

int main(int argc, char** argv) {
  return darray::run(argc, argv, [] {
    const darray::Shape shape{4096, 4096};
    // A one-device mesh: the whole array on devices()[0], where jax.random.normal(key, (4096, 4096)) lands.
    const darray::Mesh first({darray::devices()[0]}, {1}, {"x"});
    std::cout << darray::visualize_sharding(darray::NamedSharding(first, darray::P()), shape);
    // A reshard moves data between the devices of one mesh (to another device set: scatter_from_root, or build the
    // array there), so the array starts on the (2, 2) grid: jax.device_put(x, sharding.reshape(2, 2)).
    auto x = darray::iota<float, 2>(shape, {darray::make_mesh({2, 2}, {"a", "b"}), darray::P("a", "b")});
    std::cout << darray::visualize_sharding(x.sharding(), shape);
    for (const darray::Shape& grid : {darray::Shape{1, 4}, darray::Shape{4, 1}}) {
      x = darray::reshard(x, {darray::make_mesh(grid, {"a", "b"}), darray::P("a", "b")});  // sharding.reshape(grid)
      std::cout << darray::visualize_sharding(x.sharding(), shape);
    }
    // Every element arrived where it belongs: x equals the same iota made directly in the final sharding.
    const auto expected = darray::iota<float, 2>(shape, x.sharding());
    const float differ = darray::sum(darray::map(
        x, expected, KOKKOS_LAMBDA(float a, float b) { return a == b ? 0.f : 1.f; }));
    std::cout << differ << " elements differ\n";
  });
}
