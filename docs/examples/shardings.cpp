// Shardings: a (4, 2) mesh of 8 devices, the same array split P("a", "b") and P("b", "a") (the tutorial's pencils),
// and what a process knows about the shards of an array it cannot address in full.
#include <iostream>
#include <vector>

#include "darray/darray.hpp"

int main(int argc, char** argv) {
  return darray::run(argc, argv, [] {
    const darray::Mesh mesh = darray::make_mesh({4, 2}, {"a", "b"});  // mesh_utils.create_device_mesh((4, 2))
    const darray::NamedSharding ab(mesh, darray::P("a", "b")), ba(mesh, darray::P("b", "a"));
    const darray::Shape shape{1024, 1024};
    const auto x = darray::zeros<float, 2>(shape, ab);
    const auto xt = darray::reshard(x, ba);  // jax.device_put(x, NamedSharding(mesh, P("b", "a")))

    // host_local_array_to_global_array: each process holds its rows of a (1024, 128) array, here all equal to its
    // index, and a 1-D mesh over the same devices makes them one global array: a row block of (128, 128) per device.
    const darray::NamedSharding rows(darray::make_mesh({8}, {"x"}), darray::P("x"));
    const darray::Index mine = darray::process_local_index(rows, {1024, 128});
    const std::vector<float> xs(darray::volume(mine), float(darray::process_index()));
    const auto y = darray::make_array_from_process_local_data<float, 2>(rows, xs, {1024, 128});
    const std::vector<float> gathered = darray::process_allgather(y);  // multihost_utils.process_allgather
    if (darray::process_index() == 1) {
      std::cout << darray::visualize_sharding(x.sharding(), x.shape())
                << darray::visualize_sharding(xt.sharding(), xt.shape());
      std::cout << "fully addressable: " << y.is_fully_addressable()
                << ", fully replicated: " << y.is_fully_replicated() << "\nglobal_shards:\n";
      for (const auto& s : y.global_shards()) std::cout << "  " << s << "\n";
      std::cout << "addressable_shards:\n";
      for (const auto& s : y.addressable_shards()) std::cout << "  " << s << "\n";
      std::cout << "shape " << darray::numpy_shape_string(y.shape()) << ", local block "
                << darray::numpy_shape_string(darray::box_shape(y.addressable_shards()[0].index)) << "\n"
                << "gathered " << gathered.size() << " elements, last row from process " << gathered.back() << "\n";
    }
  });
}
