#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "darray/runtime/device.hpp"
#include "darray/sharding/mesh.hpp"
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

TEST_CASE("PartitionSpec: nullptr is Python's None; a null axis name is an error") {
  // P("x", None, None) translated with nullptr for None: a replicated dim, as `none`.
  CHECK(P("x", nullptr, nullptr) == P("x", none, none));
  CHECK(P{nullptr, "y"}.entries() == Entries{{}, {"y"}});
  // A name that happens to be a null pointer (a getenv that found nothing) is not taken for None.
  const char* unset = nullptr;
  DARRAY_REQUIRE_THROWS_ALL(darray::InvalidArgument, (P{"x", unset}),
                            "darray::PartitionSpec: ", "axis name is a null const char*",
                            "none (or nullptr) for a replicated dim");
  DARRAY_REQUIRE_THROWS_ALL(darray::InvalidArgument, (P{axes("a", unset)}),
                            "darray::PartitionSpec: ", "axis name is a null const char*");
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

// Issue 16, finding 8: validation was quadratic (50,000 names: 4.1 s), error messages echoed the whole input
// (1 MiB), and a NUL or other control character was accepted in an axis name.
namespace {

double seconds_of(const std::function<void()>& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const darray::InvalidArgument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("PartitionSpec: validation is linear and its messages are capped") {
  const std::size_t n = 100000;  // the quadratic check took about 16 s here
  Entries entries;
  std::string text;
  for (std::size_t i = 0; i < n; ++i) {
    entries.push_back({"axis" + std::to_string(i)});
    text += (i ? ", " : "") + entries.back()[0];
  }
  double t = seconds_of([&] { CHECK(PartitionSpec(entries).size() == n); });
  t += seconds_of([&] { CHECK(PartitionSpec::parse(text).size() == n); });
  entries.push_back({"axis0"});  // a repeat found only at the very end
  std::string msg;
  t += seconds_of([&] { msg = message_of([&] { PartitionSpec{entries}; }); });
  INFO("3 validations of " << n << " names took " << t << " s; message: " << msg.substr(0, 400));
  CHECK(t < 2.0);
  CHECK(msg.find("mesh axis \"axis0\" is used twice in PartitionSpec('axis0', 'axis1'") != std::string::npos);
  CHECK(msg.find("more characters)") != std::string::npos);
  CHECK(msg.find("(dims 0 and 100000)") != std::string::npos);
  CHECK(msg.size() < 600);
  // A 1 MiB parse error quotes an excerpt around the column, not the whole text.
  const std::string junk = std::string(1 << 20, 'x') + ")";
  const std::string perr = message_of([&] { PartitionSpec::parse(junk); });
  INFO(perr.substr(0, 400));
  CHECK(perr.find("1048577 characters in all") != std::string::npos);
  CHECK(perr.find("at column 1048577 expected ',' or the end, found ')'") != std::string::npos);
  CHECK(perr.size() < 600);
}

TEST_CASE("NUL and other control characters in axis names are rejected with a readable message") {
  const std::string nul("x\0y", 3);
  const std::string m1 = message_of([&] { P{nul}; });
  CHECK(m1.find("axis name \"x\\x00y\" in dim 0 holds the control character \\x00 at position 1") != std::string::npos);
  CHECK(m1.find('\0') == std::string::npos);
  CHECK(message_of([&] {
          PartitionSpec::parse(std::string("P('a', 'b\0c')", 14));
        }).find("axis name \"b\\x00c\" in dim 1 holds the control character \\x00") != std::string::npos);
  CHECK(message_of([&] { PartitionSpec::parse("x, y\x01z"); }).find("\\x01 at position 1") != std::string::npos);
  CHECK(message_of([&] { P{axes("a", "tab\there")}; }).find("\\x09 at position 3") != std::string::npos);
  CHECK(message_of([&] { P{"del\x7f"}; }).find("\\x7f") != std::string::npos);
  const auto table = darray::make_device_table({2});
  CHECK(message_of([&] {
          darray::Mesh(table, {2}, {nul});
        }).find("darray::Mesh: axis name 0 \"x\\x00y\" holds the control character \\x00 at position 1") !=
        std::string::npos);
  CHECK(message_of([&] {
          darray::Mesh(table, {1, 2}, {"ok", "new\nline"});
        }).find("\\x0a at position 3") != std::string::npos);
  // Printable names, UTF-8 included, stay valid.
  CHECK(P{"x-0", "y.1", "\xce\xbc"}.size() == 3);
}
