// Loading with a callback: every process builds only the blocks of its own devices, for a sharding and its
// transpose (jax.make_array_from_callback), then the same from views made by hand
// (jax.make_array_from_single_device_arrays).
#include <cstdint>
#include <iostream>
#include <sstream>
#include <vector>

#include "darray/darray.hpp"

int main(int argc, char** argv) {
  return darray::run(argc, argv, [] {
    // The global array: element (i, j) = i * 128 + j. The callback gets one block's index and returns its elements.
    const darray::Shape shape{128, 128};
    const auto cb = [&](const darray::Index& index) {
      std::vector<double> block;
      for (int64_t i = index[0].start; i < index[0].stop; ++i)
        for (int64_t j = index[1].start; j < index[1].stop; ++j) block.push_back(double(i * shape[1] + j));
      return block;
    };
    const darray::Mesh mesh = darray::make_mesh({4, 2}, {"a", "b"});
    const auto arr = darray::make_array_from_callback<double, 2>(shape, {mesh, darray::P("a", "b")}, cb);
    const auto transposed = darray::make_array_from_callback<double, 2>(shape, {mesh, darray::P("b", "a")}, cb);

    // make_array_from_single_device_arrays: one view per local device, filled by hand (here from the callback).
    const darray::NamedSharding xy(darray::make_mesh({2, darray::device_count() / 2}, {"x", "y"}), darray::P("x", "y"));
    std::vector<Kokkos::View<int64_t**>> views;
    for (const auto& [device, index] : xy.addressable_devices_indices_map({8, 8})) {
      const int64_t i0 = index[0].start, j0 = index[1].start;
      Kokkos::View<int64_t**> v("block", index[0].stop - i0, index[1].stop - j0);
      Kokkos::parallel_for(
          "fill", Kokkos::MDRangePolicy<Kokkos::Rank<2>>({0, 0}, {v.extent(0), v.extent(1)}),
          KOKKOS_LAMBDA(int64_t i, int64_t j) { v(i, j) = (i0 + i) * 8 + j0 + j; });
      views.push_back(v);
    }
    const auto small = darray::make_array_from_single_device_arrays<int64_t, 2>({8, 8}, xy, views);

    std::ostringstream out;
    out << "Process " << darray::process_index() << ": " << darray::numpy_shape_string(arr.shape()) << " "
        << darray::numpy_shape_string(darray::box_shape(arr.addressable_shards()[0].index)) << " "
        << darray::numpy_shape_string(darray::box_shape(transposed.addressable_shards()[0].index)) << "\n";
    darray::print_in_process_order(out.str());
    // Collective calls run on every process; process 0 prints.
    const double s1 = darray::sum(arr), s2 = darray::sum(transposed);
    const std::string text = darray::to_string(small);
    if (darray::process_index() == 0) std::cout << "sums " << int64_t(s1) << " " << int64_t(s2) << "\n" << text << "\n";
  });
}
