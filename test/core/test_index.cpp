#include <catch2/catch.hpp>
#include <unordered_set>

#include "darray/core/index.hpp"

using darray::Index;
using darray::Slice;

TEST_CASE("Slice and Index basics") {
  CHECK(Slice{2, 5}.size() == 3);
  CHECK(Slice{5, 2}.size() == 0);
  CHECK(Slice{3, 3}.empty());
  Index box{{0, 4}, {2, 6}};
  CHECK(darray::volume(box) == 16);
  CHECK(darray::box_shape(box) == darray::Shape{4, 4});
  CHECK(darray::volume(Index{}) == 1);
  CHECK(darray::volume(Index{{0, 4}, {3, 3}}) == 0);
  CHECK(darray::to_string(box) == "(0:4, 2:6)");
  CHECK(darray::shape_to_string({128, 64}) == "128x64");
  CHECK(darray::full_index({3, 7}) == Index{{0, 3}, {0, 7}});
}

TEST_CASE("intersect and contains") {
  Index a{{0, 4}, {0, 8}}, b{{2, 6}, {4, 12}};
  CHECK(darray::intersect(a, b) == Index{{2, 4}, {4, 8}});
  CHECK(darray::volume(darray::intersect(Index{{0, 2}}, Index{{2, 4}})) == 0);
  CHECK(darray::contains(a, Index{{1, 3}, {0, 8}}));
  CHECK_FALSE(darray::contains(a, Index{{1, 5}, {0, 8}}));
  CHECK(darray::contains(a, Index{{9, 9}, {0, 1}}));  // empty boxes are inside everything
}

TEST_CASE("row-major strides") {
  CHECK(darray::row_major_strides({2, 3, 4}) == darray::Shape{12, 4, 1});
  CHECK(darray::row_major_strides({}).empty());
}

TEST_CASE("Slice hashing distinguishes slices") {
  std::unordered_set<Slice, std::hash<Slice>, std::equal_to<>> set;
  (void)set;
  CHECK(std::hash<Slice>{}(Slice{0, 1}) != std::hash<Slice>{}(Slice{1, 0}));
}
