#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "darray/sharding/partition_spec.hpp"
#include "mpi_test.hpp"

using darray::axes;
using darray::none;
using darray::P;
using darray::PartitionSpec;
using Entries = std::vector<PartitionSpec::Entry>;

TEST_CASE("PartitionSpec: entries from names, none and axes()") {
  const P spec{"x", none, axes("y", "z")};
  REQUIRE(spec.size() == 3);
  CHECK(spec[0] == PartitionSpec::Entry{"x"});
  CHECK(spec[1].empty());
  CHECK(spec[2] == PartitionSpec::Entry{"y", "z"});
  CHECK(spec.entries() == Entries{{"x"}, {}, {"y", "z"}});
  CHECK(spec.to_string() == "PartitionSpec('x', None, ('y', 'z'))");
  std::ostringstream os;
  os << spec;
  CHECK(os.str() == spec.to_string());

  CHECK(PartitionSpec().size() == 0);
  CHECK(PartitionSpec().to_string() == "PartitionSpec()");
  CHECK(P{std::string("a"), axes()}.entries() == Entries{{"a"}, {}});  // axes() is a replicated dim, like JAX's ()
  CHECK(PartitionSpec(Entries{{"a", "b"}}) == P{axes("a", "b")});
  CHECK(P{axes("x")} == P{"x"});
  // JAX's call spelling with parentheses builds the same specs.
  CHECK(P("x", none, axes("y", "z")) == spec);
  CHECK(P("a") == P{"a"});
  CHECK(PartitionSpec(none, std::string("b")).entries() == Entries{{}, {"b"}});
}

TEST_CASE("PartitionSpec::parse accepts JAX's spellings") {
  const P expected{"x", none, axes("y", "z")};
  for (const char* text : {"x, None, (y, z)", "P('x', None, ('y','z'))", "PartitionSpec('x', None, ('y', 'z'))",
                           "jax.sharding.PartitionSpec(\"x\", None, (\"y\", \"z\"))", "  x ,None,( y , z ) ",
                           "P(x, None, (y, z),)", "x, None, ('y', \"z\",)"}) {
    INFO(text);
    CHECK(PartitionSpec::parse(text) == expected);
  }
  CHECK(PartitionSpec::parse("PartitionSpec('a', 'b')") == P{"a", "b"});
  CHECK(PartitionSpec::parse("a,b") == P{"a", "b"});
  CHECK(PartitionSpec::parse("P('a')") == P{"a"});
  CHECK(PartitionSpec::parse("a,") == P{"a"});  // Python's one-tuple
  for (const char* text : {"", "   ", "P()", "PartitionSpec()", "P( )"}) {
    INFO(text);
    CHECK(PartitionSpec::parse(text) == P{});
  }
  CHECK(PartitionSpec::parse("None") == P{none});
  CHECK(PartitionSpec::parse("P(None, None)") == P{none, none});
  CHECK(PartitionSpec::parse("()") == P{none});
  CHECK(PartitionSpec::parse("(x,)") == P{"x"});
  CHECK(PartitionSpec::parse("(x, y)") == P{axes("x", "y")});  // unwrapped: parentheses are a tuple of axes
  // Quoted names are names even when they read like keywords; unquoted names may hold '-' and '.'.
  CHECK(PartitionSpec::parse("'None'") == P{"None"});
  CHECK(PartitionSpec::parse("P") == P{"P"});
  CHECK(PartitionSpec::parse("dp-0, x.y") == P{"dp-0", "x.y"});
}

TEST_CASE("PartitionSpec: to_string reads back through parse") {
  for (const P& spec :
       {P{}, P{"x"}, P{none, "x"}, P{"x", none, axes("y", "z")}, P{axes("a", "b", "c"), none}, P{"it's", "dp-0"}}) {
    INFO(spec.to_string());
    CHECK(PartitionSpec::parse(spec.to_string()) == spec);
  }
}

TEST_CASE("PartitionSpec::parse: malformed text names the column and what was expected") {
  using darray::InvalidArgument;
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, PartitionSpec::parse("x,,y"), "PartitionSpec::parse", "\"x,,y\"",
                            "column 3", "expected an axis name, None or '('", "found ','");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, PartitionSpec::parse("P('x'"), "column 6", "expected ',' or ')'",
                            "found the end");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, PartitionSpec::parse("P('x'))"), "column 7",
                            "expected the end after the closing ')'");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, PartitionSpec::parse("x, (y, None)"), "column 8",
                            "None cannot appear inside a tuple of axes");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, PartitionSpec::parse("P('x', '')"), "expected a non-empty axis name");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, PartitionSpec::parse("x y"), "column 3", "expected ',' or the end",
                            "found 'y'");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, PartitionSpec::parse("P('x)"), "column 3",
                            "a closing ' for the quoted axis name");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, PartitionSpec::parse("x, (y z)"), "',' or ')' in a tuple of axes");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, PartitionSpec::parse(")"), "column 1", "found ')'");
  // Parsed specs are validated like constructed ones.
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, PartitionSpec::parse("x, (y, x)"), "mesh axis \"x\" is used twice",
                            "dims 0 and 1");
}

TEST_CASE("PartitionSpec: an axis used twice or an empty name is rejected where the spec is built") {
  using darray::InvalidArgument;
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (P{"x", none, "x"}), "darray::PartitionSpec: ",
                            "mesh axis \"x\" is used twice in PartitionSpec('x', None, 'x') (dims 0 and 2)",
                            "at most one dim");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (P{axes("y", "y")}), "mesh axis \"y\" is used twice", "(both in dim 0)");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, (P{"x", ""}), "empty axis name in dim 1", "expected a mesh axis name");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, PartitionSpec(Entries{{"a"}, {"b", "a"}}), "\"a\" is used twice");
}

TEST_CASE("PartitionSpec: equality is structural and hashing agrees with it") {
  CHECK(P{"x"} == P{"x"});
  CHECK(P{"x"} != P{"x", none});  // the second rejects rank-1 arrays
  CHECK(P{axes("x", "y")} != P{"x", "y"});
  CHECK(P{axes("x", "y")} != P{axes("y", "x")});
  CHECK(P{none} != P{});
  const std::hash<PartitionSpec> h;
  CHECK(h(P{"x", none, axes("y", "z")}) == h(PartitionSpec::parse("x, None, (y, z)")));
  std::unordered_set<PartitionSpec> set{P{},
                                        P{none},
                                        P{"x"},
                                        P{"x", none},
                                        P{axes("x", "y")},
                                        P{"x", "y"},
                                        P{"y", "x"},
                                        P{"x"},
                                        PartitionSpec::parse("x,")};
  CHECK(set.size() == 7);
}
