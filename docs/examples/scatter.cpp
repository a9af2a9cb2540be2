// Scatter from one process: only process 0 holds the whole (1024, 128) array; scatter_from_root sends every
// process the blocks of its devices, for a 1-D decomposition and a (4, 2) mesh, with no hand-written splitter.
#include <cstdint>
#include <sstream>
#include <vector>

#include "darray/darray.hpp"

int main(int argc, char** argv) {
  return darray::run(argc, argv, [] {
    const darray::Shape shape{1024, 128};
    std::vector<double> array;  // empty on every process but the root
    if (darray::process_index() == 0)
      for (int64_t f = 0; f < 1024 * 128; ++f) array.push_back(double(f));

    const int n = darray::device_count();
    const darray::NamedSharding rows(darray::make_mesh({n}, {"a"}), darray::P("a"));
    const darray::NamedSharding pencils(darray::make_mesh({n / 2, 2}, {"a", "b"}), darray::P("a", "b"));
    std::ostringstream out;
    for (const auto& sharding : {rows, pencils}) {
      const auto piece = darray::scatter_from_root<double, 2>(/*root_process=*/0, array, shape, sharding);
      // Each block holds the elements of its index: (i, j) = i * 128 + j, checked on the host.
      for (const auto& shard : piece.addressable_shards()) {
        const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), shard.data);
        int64_t wrong = 0;
        for (int64_t i = 0; i < int64_t(host.extent(0)); ++i)
          for (int64_t j = 0; j < int64_t(host.extent(1)); ++j)
            wrong += host(i, j) != double((shard.index[0].start + i) * 128 + shard.index[1].start + j);
        out << "Process " << darray::process_index() << " has array piece "
            << darray::numpy_shape_string(darray::box_shape(shard.index)) << " at " << shard.index << ", " << wrong
            << " wrong\n";
      }
    }
    darray::print_in_process_order(out.str());
  });
}
