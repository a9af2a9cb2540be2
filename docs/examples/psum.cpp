// The talk's mpi4jax example: every process adds its rank to a (3, 3) array of zeros and all-reduces the sum.
// Here each device's block is the operand and psum sums them over the mesh axis.
#include <iostream>

#include "darray/darray.hpp"

int main(int argc, char** argv) {
  return darray::run(argc, argv, [] {
    const int n = darray::device_count();
    const darray::Mesh mesh = darray::make_mesh({n}, {"i"});
    // One (3, 3) block per device, stacked along dim 0: device d's block is a = zeros((3, 3)) + d.
    const auto a = darray::map_indexed(
        darray::zeros<float, 2>({3 * n, 3}, {mesh, darray::P("i")}),
        KOKKOS_LAMBDA(darray::GlobalIndex<2> i, float) { return float(i[0] / 3); });
    const auto arr_sum = darray::psum(a, "i");  // mpi4jax.allreduce(arr, op=MPI.SUM): replicated, shape (3, 3)
    const std::string text = darray::to_string(arr_sum);
    if (darray::process_index() == 0) std::cout << text << "\n";
  });
}
