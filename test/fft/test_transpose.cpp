// fft::detail::Transpose, the FFT's block transposes, on its own: random 3-D shapes (uneven and empty blocks),
// random meshes and specs, every pair of local axis orders on each side, on the direct path (host memory: MPI
// datatypes straight between the blocks) and on the staged path (the packing the GPU path uses). Every destination
// element must hold its global flat index.
#include <catch2/catch.hpp>
#include <memory>
#include <random>
#include <vector>

#include "darray/darray.hpp"
#include "darray/fft/detail/transpose.hpp"
#include "mpi_test.hpp"
#include "random_layouts.hpp"
#include "split_sizes.hpp"

using namespace darray;
using darray::fft::detail::AxisOrder;
using darray::fft::detail::layout_strides;
using darray::fft::detail::Staging;
using darray::fft::detail::Transpose;
using darray::testing::all_ok;

namespace {

const std::vector<AxisOrder> orders{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};

// The global flat index of every element of `box`, stored in `order`.
void fill(std::vector<double>& block, const Index& box, const AxisOrder& order, const Shape& shape) {
  const auto strides = layout_strides(box, order);
  for (int64_t i = box[0].start; i < box[0].stop; ++i)
    for (int64_t j = box[1].start; j < box[1].stop; ++j)
      for (int64_t k = box[2].start; k < box[2].stop; ++k)
        block[static_cast<std::size_t>((i - box[0].start) * strides[0] + (j - box[1].start) * strides[1] +
                                       (k - box[2].start) * strides[2])] =
            static_cast<double>((i * shape[1] + j) * shape[2] + k);
}

bool holds(const std::vector<double>& block, const Index& box, const AxisOrder& order, const Shape& shape) {
  std::vector<double> want(block.size());
  fill(want, box, order, shape);
  return want == block;
}

}  // namespace

TEST_CASE("fft transposes: random layouts and axis orders, direct and staged paths", "[fft]") {
  std::mt19937_64 rng(23);  // the same on every process: every process draws the same cases
  // Under a lowered DARRAY_MPI_MAX_MESSAGE_BYTES (test_fft_transpose_split) each dim grows so that pieces between
  // device pairs span several messages.
  const int64_t grow = darray::testing::split_extent(3, sizeof(double), 3.0 * device_count() * device_count());
  for (int trial = 0; trial < 40; ++trial) {
    const Shape shape{static_cast<int64_t>(rng() % 9) + grow, static_cast<int64_t>(1 + rng() % 9) + grow,
                      static_cast<int64_t>(1 + rng() % 9) + grow};
    Mesh mesh = darray::testing::random_mesh(rng, devices(), 1 + static_cast<int>(rng() % 2));
    const NamedSharding src(mesh, darray::testing::random_spec(rng, mesh.axis_names(), 3));
    const NamedSharding dst(mesh, darray::testing::random_spec(rng, mesh.axis_names(), 3));
    const AxisOrder src_order = orders[rng() % orders.size()], dst_order = orders[rng() % orders.size()];
    const bool staged = trial % 2 == 1;
    INFO("trial " << trial << ": " << src << " -> " << dst << " shape " << shape_to_string(shape) << " orders ("
                  << src_order[0] << src_order[1] << src_order[2] << ") -> (" << dst_order[0] << dst_order[1]
                  << dst_order[2] << ")" << (staged ? " staged" : " direct"));
    std::unique_ptr<darray::detail::StageAsIfOnDevice> hook;
    if (staged) hook = std::make_unique<darray::detail::StageAsIfOnDevice>();
    const Transpose<double, Kokkos::HostSpace> t(reshard_plan<double>(src, dst, shape), src_order, dst_order);
    std::vector<std::vector<double>> in, out;
    std::vector<Index> out_boxes;
    std::vector<const double*> in_ptrs;
    std::vector<double*> out_ptrs;
    for (const Device& d : local_devices()) {
      const Index a = src.index(shape, d), b = dst.index(shape, d);
      in.emplace_back(static_cast<std::size_t>(volume(a)));
      fill(in.back(), a, src_order, shape);
      out.emplace_back(static_cast<std::size_t>(volume(b)), -1.0);
      out_boxes.push_back(b);
    }
    for (auto& v : in) in_ptrs.push_back(v.data());
    for (auto& v : out) out_ptrs.push_back(v.data());
    Staging<double, Kokkos::HostSpace> staging;
    t.run(in_ptrs, out_ptrs, staging);
    bool ok = true;
    for (std::size_t i = 0; i < out.size(); ++i) ok = ok && holds(out[i], out_boxes[i], dst_order, shape);
    REQUIRE(all_ok(ok));
  }
}
