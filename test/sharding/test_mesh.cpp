#include <algorithm>
#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "darray/runtime/device.hpp"
#include "darray/sharding/mesh.hpp"
#include "mpi_test.hpp"

using darray::Device;
using darray::InvalidArgument;
using darray::make_device_table;
using darray::Mesh;

TEST_CASE("Mesh: shape, names, coordinates in row-major device order") {
  const auto devices = make_device_table({4, 4});  // two processes with four devices each
  const Mesh mesh(devices, {4, 2}, {"a", "b"});
  CHECK(mesh.shape() == std::vector<int64_t>{4, 2});
  CHECK(mesh.axis_names() == std::vector<std::string>{"a", "b"});
  CHECK(mesh.ndim() == 2);
  CHECK(mesh.size() == 8);
  CHECK(mesh.devices() == devices);
  CHECK(mesh.axis_size("a") == 4);
  CHECK(mesh.axis_size("b") == 2);
  CHECK(mesh.axis_position("b") == 1);
  CHECK(mesh.find_axis("c") == -1);
  CHECK(mesh.strides() == std::vector<int64_t>{2, 1});
  for (int id = 0; id < 8; ++id) {
    const Device& d = devices[static_cast<std::size_t>(id)];
    CHECK(mesh.coords(d) == std::vector<int64_t>{id / 2, id % 2});
    CHECK(mesh.position(d) == id);
    CHECK(mesh.device_at({id / 2, id % 2}) == d);
  }
  CHECK(mesh.process_indices() == std::vector<int>{0, 1});
  CHECK(mesh.to_string() == "Mesh('a': 4, 'b': 2)");
  std::ostringstream os;
  os << mesh;
  CHECK(os.str() == "Mesh('a': 4, 'b': 2)");
}

TEST_CASE("Mesh: any device order, a subset of the devices, a 0-d mesh") {
  auto devices = make_device_table({4, 2, 2});
  std::reverse(devices.begin(), devices.end());
  const Mesh mesh(devices, {2, 2, 2}, {"x", "y", "z"});
  CHECK(mesh.coords(devices[0]) == std::vector<int64_t>{0, 0, 0});
  CHECK(mesh.device_at({0, 0, 0}).id == 7);
  CHECK(mesh.device_at({1, 0, 1}).id == 2);
  CHECK(mesh.coords(mesh.device_at({1, 1, 0})) == std::vector<int64_t>{1, 1, 0});
  CHECK(mesh.process_indices() == std::vector<int>{0, 1, 2});
  // Device ids appear when they are not 0..n-1 in order: meshes that differ never print alike.
  CHECK(mesh.to_string() == "Mesh('x': 2, 'y': 2, 'z': 2, device_ids=[7, 6, 5, 4, 3, 2, 1, 0])");

  const auto table = make_device_table({4, 4, 4});
  const std::vector<Device> second(table.begin() + 4, table.begin() + 8);
  const Mesh sub(second, {4}, {"x"});
  CHECK(sub.process_indices() == std::vector<int>{1});
  CHECK(sub.coords(table[6]) == std::vector<int64_t>{2});
  CHECK(!sub.contains(table[0]));
  CHECK(sub.to_string() == "Mesh('x': 4, device_ids=[4, 5, 6, 7])");

  const Mesh scalar({table[0]}, {}, {});
  CHECK(scalar.size() == 1);
  CHECK(scalar.ndim() == 0);
  CHECK(scalar.coords(table[0]).empty());
  CHECK(scalar.device_at({}) == table[0]);
}

TEST_CASE("Mesh: long device lists are cut short in to_string") {
  auto devices = make_device_table({20});
  std::swap(devices[0], devices[1]);
  const std::string s = Mesh(devices, {20}, {"x"}).to_string();
  CHECK(s == "Mesh('x': 20, device_ids=[1, 0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, ... (20 devices)])");
}

TEST_CASE("Mesh: coords are found by id on a 65,536-device mesh") {
  const Mesh mesh(make_device_table(std::vector<int>(1024, 64)), {16, 64, 64}, {"x", "y", "z"});
  const Device& d = mesh.devices()[40000];
  CHECK(d.process_index == 625);
  CHECK(mesh.coords(d) == std::vector<int64_t>{40000 / 4096, (40000 / 64) % 64, 40000 % 64});
  CHECK(mesh.process_indices().size() == 1024);
}

TEST_CASE("Mesh: bad shapes, names and devices are errors naming the value") {
  const auto devices = make_device_table({8});
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, Mesh(devices, {4, 2}, {"x"}),
                            "darray::Mesh: ", "1 axis names (\"x\") given for a 2-d mesh shape 4x2",
                            "one name per axis");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, Mesh(devices, {3, 2}, {"x", "y"}),
                            "mesh shape 3x2 has 6 positions but 8 devices were given");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, Mesh(devices, {8, 2}, {"x", "y"}),
                            "mesh shape 8x2 has 16 positions but 8 devices were given");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, Mesh(devices, {int64_t(1) << 40, int64_t(1) << 40}, {"x", "y"}),
                            "has over 2^63 positions but 8 devices");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, Mesh(devices, {4, 2}, {"x", "x"}),
                            "axis name \"x\" appears twice in (\"x\", \"x\")", "must be distinct");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, Mesh(devices, {4, 2}, {"x", ""}), "axis name 1 of (\"x\", \"\") is empty");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, Mesh(devices, {8, 0}, {"x", "y"}),
                            "axis \"y\" has size 0 in mesh shape 8x0", "must be >= 1");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, Mesh(devices, {-8, -1}, {"x", "y"}), "axis \"x\" has size -8");
  auto twice = devices;
  twice[5] = twice[2];
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, Mesh(twice, {8}, {"x"}),
                            "device cpu(id=2) is given twice (positions 2 and 5)");

  const Mesh mesh(devices, {4, 2}, {"x", "y"});
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, mesh.axis_size("z"),
                            "darray::Mesh: mesh axis \"z\" not found; mesh axes are (\"x\", \"y\")");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, mesh.axis_position("z"), "mesh axis \"z\" not found");
  const Device stranger{8, 1, 0};
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, mesh.coords(stranger), "device cpu(id=8) is not in Mesh('x': 4, 'y': 2)");
  // Same id, but another process's device: a device of another table, not this mesh's.
  const Device impostor{3, 1, 0};
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, mesh.position(impostor), "device cpu(id=3) is not in");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, mesh.device_at({4, 0}), "coordinate 4 along axis \"x\" is outside [0, 4)");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, mesh.device_at({1}), "device_at got 1 coordinates for the 2-d");
}

TEST_CASE("Mesh: equality and hashing cover shape, names and device order") {
  const auto devices = make_device_table({4, 4});
  auto reversed = devices;
  std::reverse(reversed.begin(), reversed.end());
  const Mesh a(devices, {4, 2}, {"a", "b"});
  const Mesh same(devices, {4, 2}, {"a", "b"});
  const Mesh copy = a;
  CHECK(a == same);
  CHECK(a == copy);
  CHECK(std::hash<Mesh>{}(a) == std::hash<Mesh>{}(same));
  CHECK(a != Mesh(devices, {2, 4}, {"a", "b"}));
  CHECK(a != Mesh(devices, {4, 2}, {"a", "c"}));
  CHECK(a != Mesh(reversed, {4, 2}, {"a", "b"}));
  CHECK(a != Mesh(make_device_table({8}), {4, 2}, {"a", "b"}));  // same ids, other processes
  std::unordered_set<Mesh> set{a, same, copy, Mesh(devices, {8}, {"a"}), Mesh(reversed, {4, 2}, {"a", "b"})};
  CHECK(set.size() == 3);
}
