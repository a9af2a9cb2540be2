#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "darray/core/partition.hpp"
#include "darray/runtime/device.hpp"
#include "darray/sharding/named_sharding.hpp"
#include "mpi_test.hpp"

using darray::axes;
using darray::Device;
using darray::Index;
using darray::InvalidArgument;
using darray::make_device_table;
using darray::Mesh;
using darray::NamedSharding;
using darray::none;
using darray::P;
using darray::PartitionSpec;
using darray::Shape;
using darray::Slice;

namespace {

std::vector<int> ids(const std::vector<Device>& devices) {
  std::vector<int> out;
  for (const Device& d : devices) out.push_back(d.id);
  return out;
}

}  // namespace

TEST_CASE("NamedSharding: the multi-controller tutorial's (4,2) mesh over a 128x128 array") {
  const auto devices = make_device_table({8});
  const Mesh mesh(devices, {4, 2}, {"a", "b"});
  const Shape shape{128, 128};

  const NamedSharding ab(mesh, P{"a", "b"});
  CHECK(ab.shard_shape(shape) == Shape{32, 64});
  const auto map = ab.devices_indices_map(shape);
  REQUIRE(map.size() == 8);
  for (int k = 0; k < 8; ++k) {
    const auto& [device, index] = map[static_cast<std::size_t>(k)];
    CHECK(device == devices[static_cast<std::size_t>(k)]);
    // Device k sits at mesh coords (k / 2, k % 2).
    CHECK(index == Index{{32 * (k / 2), 32 * (k / 2 + 1)}, {64 * (k % 2), 64 * (k % 2 + 1)}});
    CHECK(ab.shard_shape(shape, device) == Shape{32, 64});
    CHECK(ab.index(shape, device) == index);
    CHECK(ab.replica_id(device) == 0);
  }
  CHECK(ab.num_replicas() == 1);
  CHECK(!ab.is_fully_replicated());

  const NamedSharding ba(mesh, P{"b", "a"});
  CHECK(ba.shard_shape(shape) == Shape{64, 32});
  for (const auto& [device, index] : ba.devices_indices_map(shape)) {
    const int i = device.id / 2, j = device.id % 2;
    CHECK(index == Index{{64 * j, 64 * (j + 1)}, {32 * i, 32 * (i + 1)}});
    CHECK(ba.part_index(device, 0) == j);
    CHECK(ba.part_index(device, 1) == i);
  }
}

TEST_CASE("NamedSharding: 1024x128 over 8 devices on the first axis gives rows [128k, 128(k+1)) to device k") {
  const auto devices = make_device_table({2, 2, 2, 2});
  const NamedSharding s(Mesh(devices, {8}, {"x"}), P{"x"});
  const auto map = s.devices_indices_map({1024, 128});
  REQUIRE(map.size() == 8);
  for (int k = 0; k < 8; ++k) {
    CHECK(map[static_cast<std::size_t>(k)].first.id == k);
    CHECK(map[static_cast<std::size_t>(k)].second == Index{{128 * k, 128 * (k + 1)}, {0, 128}});
  }
  // The offline overload: the devices of one process, in mesh order.
  const auto local = s.addressable_devices_indices_map({1024, 128}, 2);
  REQUIRE(local.size() == 2);
  CHECK(local[0].first.id == 4);
  CHECK(local[0].second == Index{{512, 640}, {0, 128}});
  CHECK(local[1].first.id == 5);
  CHECK(s.addressable_devices_indices_map({1024, 128}, 7).empty());
  CHECK(!s.is_fully_addressable(0));
  CHECK(NamedSharding(Mesh({devices[2], devices[3]}, {2}, {"x"}), P{"x"}).is_fully_addressable(1));
}

TEST_CASE("NamedSharding: several mesh axes on one dim, major first") {
  const auto devices = make_device_table({8});
  const Mesh mesh(devices, {2, 2, 2}, {"x", "y", "z"});
  const NamedSharding yz(mesh, P{none, axes("y", "z")});
  const NamedSharding zy(mesh, P{none, axes("z", "y")});
  CHECK(yz.num_parts(0) == 1);
  CHECK(yz.num_parts(1) == 4);
  CHECK(yz.num_parts(7) == 1);
  CHECK(yz.num_replicas() == 2);
  for (const Device& d : devices) {
    const auto c = mesh.coords(d);
    CHECK(yz.part_index(d, 1) == 2 * c[1] + c[2]);
    CHECK(zy.part_index(d, 1) == 2 * c[2] + c[1]);
    CHECK(yz.part_index(d, 0) == 0);
    CHECK(yz.part_index(d, 5) == 0);
    CHECK(yz.replica_id(d) == c[0]);  // x is the unused axis
    const int64_t p = yz.part_index(d, 1);
    CHECK(yz.index({4, 16}, d) == Index{{0, 4}, {4 * p, 4 * p + 4}});
  }
  CHECK(yz.shard_shape({4, 16}) == Shape{4, 4});
  CHECK(ids(yz.replica_devices({0, 3})) == std::vector<int>{3, 7});  // y = 1, z = 1; x = 0 then 1
  CHECK(ids(zy.replica_devices({0, 1})) == std::vector<int>{2, 6});  // z = 0, y = 1
}

TEST_CASE("NamedSharding: replicated axes, replica ids and replica_devices") {
  const auto devices = make_device_table({4, 4});
  const Mesh mesh(devices, {4, 2}, {"a", "b"});
  const NamedSharding on_b(mesh, P{"b"});
  CHECK(on_b.num_replicas() == 4);
  for (const Device& d : devices) CHECK(on_b.replica_id(d) == d.id / 2);  // coordinate along a
  CHECK(ids(on_b.replica_devices({1, 0})) == std::vector<int>{1, 3, 5, 7});
  CHECK(ids(on_b.replica_devices({0})) == std::vector<int>{0, 2, 4, 6});
  CHECK(on_b.index({6, 3}, devices[5]) == Index{{3, 6}, {0, 3}});

  const NamedSharding replicated(mesh, P{});
  CHECK(replicated.is_fully_replicated());
  CHECK(replicated.num_replicas() == 8);
  for (const Device& d : devices) {
    CHECK(replicated.replica_id(d) == d.id);
    CHECK(replicated.index({5, 7}, d) == Index{{0, 5}, {0, 7}});
  }
  CHECK(replicated.shard_shape({5, 7}) == Shape{5, 7});
  CHECK(ids(replicated.replica_devices({0, 0})) == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(ids(replicated.replica_devices({})) == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});

  // Axes of size 1 shard nothing: JAX calls such a sharding fully replicated too.
  const Mesh thin(devices, {8, 1}, {"a", "b"});
  CHECK(NamedSharding(thin, P{"b"}).is_fully_replicated());
  CHECK(NamedSharding(thin, P{none, "b"}).is_fully_replicated());
  CHECK(!NamedSharding(thin, P{"a", "b"}).is_fully_replicated());
  CHECK(NamedSharding(thin, P{"a", "b"}).num_replicas() == 1);
}

TEST_CASE("NamedSharding: uneven dims give balanced blocks, dims smaller than their parts give empty shards") {
  const auto devices = make_device_table({4});
  const NamedSharding s(Mesh(devices, {4}, {"x"}), P{"x"});
  // 10 into 4: 3, 3, 2, 2 with the remainder to the first parts.
  const std::vector<Slice> ten{{0, 3}, {3, 6}, {6, 8}, {8, 10}};
  for (int k = 0; k < 4; ++k) CHECK(s.index({10}, devices[static_cast<std::size_t>(k)]) == Index{ten[k]});
  CHECK(s.shard_shape({10}) == Shape{3});
  CHECK(s.shard_shape({10}, devices[3]) == Shape{2});
  // 2 into 4: two single rows, then two empty shards.
  CHECK(s.index({2, 5}, devices[1]) == Index{{1, 2}, {0, 5}});
  CHECK(s.index({2, 5}, devices[2]) == Index{{2, 2}, {0, 5}});
  CHECK(s.shard_shape({2, 5}, devices[3]) == Shape{0, 5});
  CHECK(s.shard_shape({2, 5}) == Shape{1, 5});
  CHECK(s.shard_shape({0, 5}) == Shape{0, 5});
  CHECK(s.index({0}, devices[0]) == Index{{0, 0}});
}

TEST_CASE("NamedSharding: a 3-D mesh with a spec over all its axes") {
  const auto devices = make_device_table({6, 6});
  const Mesh mesh(devices, {2, 3, 2}, {"x", "y", "z"});
  const NamedSharding s(mesh, P{"z", axes("x", "y")});
  const Shape shape{5, 13, 4};
  CHECK(s.num_parts(0) == 2);
  CHECK(s.num_parts(1) == 6);
  CHECK(s.num_replicas() == 1);
  // Coords (1, 2, 0): dim 0 part z = 0 -> [0, 3); dim 1 part 3x + y = 5 -> 13 into 6 is 3,2,2,2,2,2 -> [11, 13).
  const Device& a = mesh.device_at({1, 2, 0});
  CHECK(a.id == 10);
  CHECK(s.index(shape, a) == Index{{0, 3}, {11, 13}, {0, 4}});
  // Coords (0, 1, 1): dim 0 part 1 -> [3, 5); dim 1 part 1 -> [3, 5).
  const Device& b = mesh.device_at({0, 1, 1});
  CHECK(s.index(shape, b) == Index{{3, 5}, {3, 5}, {0, 4}});
  CHECK(s.shard_shape(shape) == Shape{3, 3, 4});
  CHECK(ids(s.replica_devices({1, 5, 0})) == std::vector<int>{11});
  CHECK(!s.is_fully_addressable(0));
  const auto second = s.addressable_devices_indices_map(shape, 1);
  REQUIRE(second.size() == 6);
  CHECK(second.front().first.id == 6);
}

TEST_CASE("NamedSharding: rank-0 arrays and dims beyond the spec are whole") {
  const auto devices = make_device_table({2});
  const NamedSharding s(Mesh(devices, {2}, {"x"}), P{});
  CHECK(s.index({}, devices[1]).empty());
  CHECK(s.shard_shape({}).empty());
  CHECK(s.devices_indices_map({}).size() == 2);
  const NamedSharding first(Mesh(devices, {2}, {"x"}), P{"x"});
  CHECK(first.index({4, 3, 2}, devices[1]) == Index{{2, 4}, {0, 3}, {0, 2}});
}

TEST_CASE("NamedSharding: errors name the bad value and what was expected") {
  const auto devices = make_device_table({4, 4});
  const Mesh mesh(devices, {4, 2}, {"x", "y"});
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, NamedSharding(mesh, P{"x", "z"}),
                            "darray::PartitionSpec: mesh axis \"z\" not found; mesh axes are (\"x\", \"y\")",
                            "(in PartitionSpec('x', 'z'), dim 1)");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, NamedSharding(mesh, P{axes("y", "w")}), "mesh axis \"w\" not found");
  // An axis used twice fails where the spec is built, before it meets a mesh.
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, NamedSharding(mesh, P{"x", "x"}), "mesh axis \"x\" is used twice");

  const NamedSharding s(mesh, P{"x", "y"});
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, s.index({16}, devices[0]), "darray::NamedSharding: ",
                            "PartitionSpec('x', 'y') has 2 entries but the array has rank 1 (shape 16)",
                            "may not be longer than the array rank");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, s.devices_indices_map({}), "has rank 0 (shape ())");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, s.shard_shape({8, -3}), "shape 8x-3 has negative dim 1 (-3)",
                            "expected sizes >= 0");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, s.check_shape({-1, 4, 4}), "negative dim 0 (-1)");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, s.addressable_devices_indices_map({4}, 0), "has rank 1");
  const Device stranger{9, 2, 0};
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, s.index({8, 8}, stranger),
                            "device cpu(id=9) is not in Mesh('x': 4, 'y': 2)");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, s.replica_id(stranger), "device cpu(id=9) is not in");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, s.part_index(stranger, 0), "device cpu(id=9) is not in");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, s.replica_devices({1}), "replica_devices got 1 part indices",
                            "at least 2");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, s.replica_devices({4, 0}), "part index 4 for dim 0 is outside [0, 4)");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, s.replica_devices({0, 0, 1}), "part index 1 for dim 2 is outside [0, 1)");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, s.replica_devices({0, -1}), "part index -1 for dim 1");
}

TEST_CASE("NamedSharding: equality, hashing and printing") {
  const auto devices = make_device_table({8});
  const Mesh mesh(devices, {4, 2}, {"a", "b"});
  const NamedSharding s(mesh, P{"a", "b"});
  const NamedSharding rebuilt(Mesh(make_device_table({8}), {4, 2}, {"a", "b"}), PartitionSpec::parse("a, b"));
  CHECK(s == rebuilt);
  CHECK(std::hash<NamedSharding>{}(s) == std::hash<NamedSharding>{}(rebuilt));
  CHECK(s != NamedSharding(mesh, P{"b", "a"}));
  CHECK(s != NamedSharding(mesh, P{"a", "b", none}));
  CHECK(s != NamedSharding(Mesh(devices, {2, 4}, {"a", "b"}), P{"a", "b"}));
  CHECK(s != NamedSharding(Mesh(make_device_table({4, 4}), {4, 2}, {"a", "b"}), P{"a", "b"}));
  std::unordered_set<NamedSharding> set{s, rebuilt, NamedSharding(mesh, P{"b", "a"}), NamedSharding(mesh, P{}),
                                        NamedSharding(mesh, P{none})};
  CHECK(set.size() == 4);
  CHECK(s.to_string() == "NamedSharding(mesh=Mesh('a': 4, 'b': 2), spec=PartitionSpec('a', 'b'))");
  std::ostringstream os;
  os << s;
  CHECK(os.str() == s.to_string());
  CHECK(s.mesh() == mesh);
  CHECK(s.spec() == P{"a", "b"});
}
