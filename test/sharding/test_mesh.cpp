#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "darray/runtime/device.hpp"
#include "darray/sharding/mesh.hpp"
#include "huge_page_flags.hpp"
#include "mpi_test.hpp"
#include "random_layouts.hpp"

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

TEST_CASE("make_device_table: a million-device table is right, its storage advised to huge pages") {
  const std::vector<Device> table = make_device_table(std::vector<int>(1 << 19, 2));
  REQUIRE(table.size() == std::size_t(1) << 20);
  bool dense = true;
  for (std::size_t i = 0; i < table.size(); ++i)
    dense = dense && table[i].id == static_cast<int>(i) && table[i].process_index == static_cast<int>(i / 2) &&
            table[i].local_index == static_cast<int>(i % 2) && table[i].gpu_ordinal == -1;
  CHECK(dense);
  // 20 MiB written device by device: 5,120 page faults of 4 KiB, or 10 of 2 MiB (bench/reshard's plan table).
  if (darray::testing::kernel_has_huge_pages()) {
    const auto m = darray::testing::mapping_flags(&table[table.size() / 2]);
    REQUIRE(m.found);
    CHECK(m.huge_advised);
  }
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

namespace {

// The devices of each process and the axes that keep every process at one coordinate, by visiting every device.
void check_process_index(const Mesh& mesh) {
  std::map<int, std::vector<int64_t>> positions;
  for (int64_t pos = 0; pos < mesh.size(); ++pos)
    positions[mesh.devices()[static_cast<std::size_t>(pos)].process_index].push_back(pos);
  for (int p = -1; p <= (positions.empty() ? 0 : positions.rbegin()->first + 1); ++p) {
    INFO(mesh << ", process " << p);
    const auto it = positions.find(p);
    CHECK(mesh.process_positions(p) == (it == positions.end() ? std::vector<int64_t>{} : it->second));
  }
  for (int a = 0; a < mesh.ndim(); ++a) {
    bool constant = true;
    for (const auto& [p, list] : positions)
      for (int64_t pos : list) constant = constant && mesh.coord(pos, a) == mesh.coord(list.front(), a);
    INFO(mesh << ", axis " << a);
    CHECK(mesh.coordinate_constant_per_process(a) == constant);
  }
  for (const Device& d : mesh.devices()) CHECK(mesh.devices()[static_cast<std::size_t>(mesh.position(d))] == d);
}

}  // namespace

TEST_CASE("Mesh: process positions and per-process axes match a visit of every device") {
  std::mt19937_64 rng(4242);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<int> counts(1 + rng() % 5);
    for (int& c : counts) c = static_cast<int>(rng() % 4);  // processes without devices too
    auto table = make_device_table(counts);
    if (table.empty()) continue;
    const int kind = static_cast<int>(rng() % 3);
    if (kind == 1) std::shuffle(table.begin(), table.end(), rng);  // not process-major, not in id order
    if (kind == 2)
      for (Device& d : table) d.id = d.id * 1000003 + 7;  // ids too sparse for a table by id
    if (rng() % 2) table.erase(table.begin(), table.begin() + static_cast<std::ptrdiff_t>(rng() % table.size()));
    const Mesh mesh = darray::testing::random_mesh(rng, table);
    check_process_index(mesh);
  }
}

TEST_CASE("Mesh: every position index rejects a repeated device and a foreign one") {
  for (int stride : {1, 1000003}) {
    auto table = make_device_table({2, 2});
    for (Device& d : table) d.id *= stride;
    std::vector<Device> twice{table[2], table[0], table[1], table[2]};
    CHECK_THROWS_WITH(Mesh(twice, {4}, {"x"}), Catch::Contains("is given twice (positions 0 and 3)"));
    std::vector<Device> swapped{table[1], table[0], table[2], table[3]};
    const Mesh mesh(swapped, {4}, {"x"});
    CHECK(mesh.position(table[0]) == 1);
    Device other = table[0];
    other.process_index = 5;  // same id, another device table's device
    CHECK(!mesh.contains(other));
    Device absent = table[3];
    absent.id += 1;
    CHECK(!mesh.contains(absent));
  }
  const auto table = make_device_table({2, 2});
  const Mesh in_order(std::vector<Device>(table.begin(), table.begin() + 2), {2}, {"x"});
  CHECK(in_order.contains(table[1]));
  CHECK(!in_order.contains(table[2]));  // an id past the mesh, in an id-ordered mesh
  Device other = table[1];
  other.local_index = 3;
  CHECK(!in_order.contains(other));
}
