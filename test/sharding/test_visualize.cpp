#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "darray/runtime/device.hpp"
#include "darray/sharding/visualize.hpp"
#include "mpi_test.hpp"

using darray::axes;
using darray::make_device_table;
using darray::Mesh;
using darray::NamedSharding;
using darray::none;
using darray::P;
using darray::visualize_sharding;

namespace {

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::size_t b = 0;
  for (std::size_t e; (e = text.find('\n', b)) != std::string::npos; b = e + 1) out.push_back(text.substr(b, e - b));
  return out;
}

// Characters on screen: UTF-8 continuation bytes do not count.
std::size_t display_width(const std::string& line) {
  std::size_t n = 0;
  for (unsigned char c : line) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace

TEST_CASE("visualize_sharding: 2-D golden picture, the tutorial's P('a', 'b') on a (4, 2) mesh") {
  const Mesh mesh(make_device_table({8}), {4, 2}, {"a", "b"});
  CHECK(visualize_sharding(NamedSharding(mesh, P{"a", "b"}), {128, 128}) ==
        "┌────────────┬────────────┐\n"
        "│   CPU 0    │   CPU 1    │\n"
        "│            │            │\n"
        "├────────────┼────────────┤\n"
        "│   CPU 2    │   CPU 3    │\n"
        "│            │            │\n"
        "├────────────┼────────────┤\n"
        "│   CPU 4    │   CPU 5    │\n"
        "│            │            │\n"
        "├────────────┼────────────┤\n"
        "│   CPU 6    │   CPU 7    │\n"
        "│            │            │\n"
        "└────────────┴────────────┘\n");
  // Replicated blocks list all their devices; P('b', 'a') transposes the grid.
  CHECK(visualize_sharding(NamedSharding(mesh, P{"a"}), {128, 128}) ==
        "┌─────────────────────────┐\n"
        "│         CPU 0,1         │\n"
        "│                         │\n"
        "├─────────────────────────┤\n"
        "│         CPU 2,3         │\n"
        "│                         │\n"
        "├─────────────────────────┤\n"
        "│         CPU 4,5         │\n"
        "│                         │\n"
        "├─────────────────────────┤\n"
        "│         CPU 6,7         │\n"
        "│                         │\n"
        "└─────────────────────────┘\n");
  CHECK(visualize_sharding(NamedSharding(mesh, P{"b", "a"}), {128, 128}) ==
        "┌───────┬───────┬───────┬───────┐\n"
        "│       │       │       │       │\n"
        "│       │       │       │       │\n"
        "│ CPU 0 │ CPU 2 │ CPU 4 │ CPU 6 │\n"
        "│       │       │       │       │\n"
        "│       │       │       │       │\n"
        "├───────┼───────┼───────┼───────┤\n"
        "│       │       │       │       │\n"
        "│       │       │       │       │\n"
        "│ CPU 1 │ CPU 3 │ CPU 5 │ CPU 7 │\n"
        "│       │       │       │       │\n"
        "│       │       │       │       │\n"
        "└───────┴───────┴───────┴───────┘\n");
}

TEST_CASE("visualize_sharding: 1-D golden pictures, GPU labels, uneven and replicated blocks") {
  const Mesh mesh(make_device_table({8}), {4, 2}, {"a", "b"});
  CHECK(visualize_sharding(NamedSharding(mesh, P{axes("a", "b")}), {1024}) ==
        "┌───────┬───────┬───────┬───────┬───────┬───────┬───────┬───────┐\n"
        "│ CPU 0 │ CPU 1 │ CPU 2 │ CPU 3 │ CPU 4 │ CPU 5 │ CPU 6 │ CPU 7 │\n"
        "└───────┴───────┴───────┴───────┴───────┴───────┴───────┴───────┘\n");
  // 7 rows into 2: the first block is wider.
  CHECK(visualize_sharding(NamedSharding(mesh, P{"b"}), {7}) ==
        "┌──────────────┬─────────────┐\n"
        "│ CPU 0,2,4,6  │ CPU 1,3,5,7 │\n"
        "└──────────────┴─────────────┘\n");
  const Mesh gpus(make_device_table({1, 1}, darray::DeviceKind::cuda), {2}, {"x"});
  CHECK(visualize_sharding(NamedSharding(gpus, P{"x"}), {64}) ==
        "┌────────────┬────────────┐\n"
        "│   GPU 0    │   GPU 1    │\n"
        "└────────────┴────────────┘\n");
  CHECK(visualize_sharding(NamedSharding(gpus, P{}), {64}) ==
        "┌─────────────────────────┐\n"
        "│         GPU 0,1         │\n"
        "└─────────────────────────┘\n");
}

TEST_CASE("visualize_sharding: the picture stays within its bounds, one text row per block row at least") {
  const Mesh mesh(make_device_table({16}), {16}, {"x"});
  // A wide array is capped at max_width.
  const auto wide =
      lines(visualize_sharding(NamedSharding(Mesh(make_device_table({4}), {4}, {"x"}), P{none, "x"}), {4, 100000}));
  for (const auto& line : wide) CHECK(display_width(line) == 77);  // 4 columns of 75 / 4 characters, 5 borders
  const auto narrow = lines(visualize_sharding(NamedSharding(Mesh(make_device_table({2}), {2}, {"x"}), P{"x"}),
                                               {4, 100000}, darray::VisualizeOptions{40, 6}));
  for (const auto& line : narrow) CHECK(display_width(line) == 40);
  CHECK(narrow.size() == 3 + 1 + 3 + 2);  // two block rows of 6 / 2 text rows
  // 16 block rows in a 10-row budget: every block row still gets its text row, plus 15 separators and 2 borders.
  const auto tall = lines(visualize_sharding(NamedSharding(mesh, P{"x"}), {16, 4}));
  CHECK(tall.size() == 16 + 15 + 2);
  CHECK(tall[1].find("CPU 0") != std::string::npos);
  CHECK(tall[31].find("CPU 15") != std::string::npos);
  // Empty blocks (2 rows over 4 parts) are still drawn, so every device shows up.
  const std::string empty = visualize_sharding(NamedSharding(Mesh(make_device_table({4}), {4}, {"x"}), P{"x"}), {2, 8});
  for (const char* label : {"CPU 0", "CPU 1", "CPU 2", "CPU 3"}) CHECK(empty.find(label) != std::string::npos);
}

TEST_CASE("visualize_sharding: rank 0 and rank 3 get a per-device table") {
  const Mesh mesh(make_device_table({2, 2}), {2, 2}, {"x", "y"});
  CHECK(visualize_sharding(NamedSharding(mesh, P{"x", none, "y"}), {4, 3, 3}) ==
        "NamedSharding(mesh=Mesh('x': 2, 'y': 2), spec=PartitionSpec('x', None, 'y')) on shape 4x3x3: rank 3, so one "
        "line per device (boxes are drawn for rank 1 and 2)\n"
        "device     process  mesh coords  index            shard shape  replica\n"
        "cpu(id=0)  0        (0, 0)       (0:2, 0:3, 0:2)  2x3x2        0\n"
        "cpu(id=1)  0        (0, 1)       (0:2, 0:3, 2:3)  2x3x1        0\n"
        "cpu(id=2)  1        (1, 0)       (2:4, 0:3, 0:2)  2x3x2        0\n"
        "cpu(id=3)  1        (1, 1)       (2:4, 0:3, 2:3)  2x3x1        0\n");
  const std::string scalar = visualize_sharding(NamedSharding(mesh, P{}), {});
  CHECK(scalar.find("rank 0, so one line per device") != std::string::npos);
  CHECK(scalar.find("cpu(id=3)  1        (1, 1)       ()     ()           3\n") != std::string::npos);
}

TEST_CASE("visualize_sharding: bad shapes and options are errors") {
  const Mesh mesh(make_device_table({2}), {2}, {"x"});
  DARRAY_REQUIRE_THROWS_ALL(darray::InvalidArgument, visualize_sharding(NamedSharding(mesh, P{"x", none}), {8}),
                            "has 2 entries but the array has rank 1");
  DARRAY_REQUIRE_THROWS_ALL(darray::InvalidArgument,
                            visualize_sharding(NamedSharding(mesh, P{"x"}), {8}, darray::VisualizeOptions{0, 10}),
                            "darray::visualize_sharding: ", "max_width = 0", "expected both >= 1");
}
