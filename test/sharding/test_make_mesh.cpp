// make_mesh and the NamedSharding queries that default to this process, over the runtime's device table, at
// several process and host-device counts. Every check is reduced across processes before it is asserted.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "darray/core/partition.hpp"
#include "darray/runtime/environment.hpp"
#include "darray/sharding/make_mesh.hpp"
#include "mpi_test.hpp"

using darray::axes;
using darray::Index;
using darray::InvalidArgument;
using darray::NamedSharding;
using darray::none;
using darray::P;
using darray::Shape;
using darray::testing::all_ok;

namespace {

int64_t sum_over_processes(int64_t mine) {
  long long in = mine, out = 0;
  MPI_Allreduce(&in, &out, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return out;
}

}  // namespace

TEST_CASE("make_mesh spans every device of the job in id order") {
  const auto mesh = darray::make_mesh({darray::device_count()}, {"x"});
  bool ok = mesh.devices() == darray::devices() && mesh.size() == darray::device_count();
  const int np = darray::process_count(), per = darray::local_device_count();
  const auto grid = darray::make_mesh({np, per}, {"proc", "local"});
  // Ids are process-major, so a (processes, local devices) mesh puts each process on one row.
  for (const auto& d : grid.devices())
    ok = ok && grid.coords(d) == std::vector<int64_t>{d.process_index, d.local_index};
  std::vector<int> processes;
  for (int p = 0; p < np; ++p) processes.push_back(p);
  ok = ok && grid.process_indices() == processes;
  REQUIRE(all_ok(ok));
}

TEST_CASE("make_mesh's meshes hold the job's device table itself, not copies of it") {
  const int np = darray::process_count(), per = darray::local_device_count();
  const auto line = darray::make_mesh({darray::device_count()}, {"x"});
  const auto grid = darray::make_mesh({np, per}, {"proc", "local"});
  // One table (20 MiB at a million devices) for every mesh make_mesh builds, whatever their shapes.
  bool ok = line.devices().data() == grid.devices().data();
  // A mesh over a copy holds its own, and compares equal to make_mesh's by value.
  const darray::Mesh copied(darray::devices(), {darray::device_count()}, {"x"});
  ok = ok && copied.devices().data() != line.devices().data() && copied == line && copied.hash() == line.hash();
  ok = ok && darray::Mesh(darray::devices(), {np, per}, {"proc", "local"}) == grid && !(grid == line);
  // A bad shape for this job still fails before anything is built, naming the device count.
  const std::string want = "the job has " + std::to_string(darray::device_count());
  bool threw = false;
  try {
    (void)darray::make_mesh({darray::device_count() + 1}, {"x"});
  } catch (const InvalidArgument& e) {
    threw = std::string(e.what()).find(want) != std::string::npos;
  }
  ok = ok && threw;
  REQUIRE(all_ok(ok));
}

TEST_CASE("addressable_devices_indices_map and is_fully_addressable default to this process") {
  const int np = darray::process_count(), me = darray::process_index(), per = darray::local_device_count();
  const auto grid = darray::make_mesh({np, per}, {"proc", "local"});
  const Shape shape{10, 6};  // uneven over 3 or 4 processes
  const NamedSharding rows(grid, P{"proc"});
  const auto local = rows.addressable_devices_indices_map(shape);
  bool ok = local == rows.addressable_devices_indices_map(shape, me) && static_cast<int>(local.size()) == per;
  for (std::size_t l = 0; ok && l < local.size(); ++l) {
    const auto& [device, index] = local[l];
    ok = device == darray::local_devices()[l] && index == Index{darray::block_slice(10, np, me), {0, 6}} &&
         rows.replica_id(device) == static_cast<int64_t>(l);
  }
  ok = ok && rows.is_fully_addressable() == (np == 1) && rows.num_replicas() == per;
  // A mesh over this process's devices only is fully addressable here, whatever the job size.
  const NamedSharding mine(darray::Mesh(darray::local_devices(), {per}, {"local"}), P{none, "local"});
  ok = ok && mine.is_fully_addressable() && mine.addressable_devices_indices_map(shape).size() == local.size();
  REQUIRE(all_ok(ok));
}

TEST_CASE("the processes' addressable shards tile the array exactly once") {
  const int np = darray::process_count(), per = darray::local_device_count();
  const auto grid = darray::make_mesh({np, per}, {"proc", "local"});
  for (const auto& [spec, shape] : std::vector<std::pair<P, Shape>>{{P{"proc", "local"}, {7, 9}},
                                                                    {P{axes("proc", "local")}, {37}},
                                                                    {P{none, axes("local", "proc")}, {3, 5, 2}},
                                                                    {P{"local"}, {2, 2}}}) {
    const NamedSharding s(grid, spec);
    int64_t volume = 0;
    for (const auto& [device, index] : s.addressable_devices_indices_map(shape))
      if (s.replica_id(device) == 0) volume += darray::volume(index);
    INFO(s << " shape " << darray::shape_to_string(shape));
    REQUIRE(all_ok(sum_over_processes(volume) == darray::volume(shape)));
  }
}

TEST_CASE("make_mesh and NamedSharding errors are raised alike on every process") {
  const int n = darray::device_count();
  const std::string want = "needs " + std::to_string(n + 1) + " devices but the job has " + std::to_string(n);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, darray::make_mesh({n + 1}, {"x"}), "darray::make_mesh: ", want.c_str());
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, darray::make_mesh({n, 0}, {"x", "y"}),
                            "darray::Mesh: ", "axis \"y\" has size 0");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, darray::make_mesh({n}, {"x", "y"}), "1-d mesh shape");
  const auto mesh = darray::make_mesh({n}, {"x"});
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, NamedSharding(mesh, P{"y"}),
                            "mesh axis \"y\" not found; mesh axes are (\"x\")");
}
