// Every argument error of the collectives throws darray::InvalidArgument on every process (no process is left
// waiting in a collective), with a message that names the bad value and what was expected.
#include <catch2/catch.hpp>
#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "collectives_test_util.hpp"

using namespace darray;
using namespace darray::testing;

namespace {

// "cpu" or "cuda": how devices of this build print in messages.
std::string device_kind() {
  std::ostringstream os;
  os << devices()[0];
  const std::string s = os.str();
  return s.substr(0, s.find('('));
}

NamedSharding line(const PartitionSpec& spec) { return NamedSharding(make_mesh({device_count()}, {"x"}), spec); }

}  // namespace

TEST_CASE("unknown, repeated or missing mesh axes") {
  const auto a = operand<float, 2>({device_count(), 2}, line(P("x")));
  const char* unknown = "mesh axis \"q\" not found; mesh axes are (\"x\")";
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, psum(a, "q"), "darray::psum: ", unknown);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, pmax(a, {"x", "q"}), "darray::pmax: ", unknown);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, pmin(a, "q"), "darray::pmin: ", unknown);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, psum_scatter(a, "q", 0), "darray::psum_scatter: ", unknown);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, all_gather(a, "q", 0, tiled), "darray::all_gather: ", unknown);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, all_gather(a, "q", 0, stacked), "darray::all_gather: ", unknown);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, all_to_all(a, "q", 0, 1), "darray::all_to_all: ", unknown);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, ppermute(a, "q", {{0, 0}}), "darray::ppermute: ", unknown);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, axis_index(a.sharding().mesh(), "q", devices()[0]),
                            "darray::axis_index: ", unknown);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, psum(a, {"x", "x"}),
                            "mesh axis \"x\" is named twice in (\"x\", \"x\"); expected distinct axes");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, psum(a, std::vector<std::string>{}),
                            "no mesh axis given; expected one or more of (\"x\")");
  // A name that is a null pointer (a getenv that found nothing): an error naming it, not std::string's crash.
  const char* unset = nullptr;
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, psum(a, unset), "mesh axis name is a null const char*",
                            "expected one of (\"x\")");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, pmax(a, unset), "darray::pmax: ", "null const char*");
  // The single-axis collectives alike, their plans and kept-output forms included.
  const char* null_name = "mesh axis name is a null const char*; expected one of (\"x\")";
  auto out = a;
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, all_gather(a, unset, 0, tiled), "darray::all_gather: ", null_name);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, all_gather(a, unset, 0, stacked), "darray::all_gather: ", null_name);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, all_gather_plan(a, unset, 0, tiled), "darray::all_gather: ", null_name);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, all_to_all(a, unset, 0, 1), "darray::all_to_all: ", null_name);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, all_to_all_plan(a, unset, 0, 1), "darray::all_to_all: ", null_name);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, ppermute(a, unset, {{0, 0}}), "darray::ppermute: ", null_name);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, ppermute(a, unset, {{0, 0}}, out), "darray::ppermute: ", null_name);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, ppermute_plan(a, unset, {{0, 0}}), "darray::ppermute: ", null_name);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, psum_scatter(a, unset, 0), "darray::psum_scatter: ", null_name);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, psum_scatter_plan(a, unset, 0), "darray::psum_scatter: ", null_name);
  // They take one mesh axis: a list of another length names what it got.
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, all_gather(a, {"x", "x"}, 0, tiled),
                            "darray::all_gather: mesh axes (\"x\", \"x\") given; expected one mesh axis of (\"x\")");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, ppermute(a, std::vector<std::string>{}, {{0, 0}}),
                            "darray::ppermute: no mesh axis given; expected one of (\"x\")");
  CHECK(all_gather(a, {"x"}, 0, tiled).shape() == all_gather(a, "x", 0, tiled).shape());
}

TEST_CASE("dims out of range") {
  const auto a = operand<double, 1>({device_count()}, line(P("x")));
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, all_gather(a, "x", 1, tiled),
                            "all_gather: dim = 1 is out of range for rank-1 blocks; expected -1 .. 0");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, all_gather(a, "x", -3, stacked),
                            "all_gather: dim = -3 is out of range for rank-2 blocks; expected -2 .. 1");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, psum_scatter(a, "x", -2),
                            "psum_scatter: dim = -2 is out of range for rank-1 blocks; expected -1 .. 0");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, all_to_all(a, "x", 5, 0), "split_dim = 5 is out of range");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, all_to_all(a, "x", 0, -2), "concat_dim = -2 is out of range");
  const auto scalar = full<float, 0>({}, 1.0f, line(P()));
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, all_gather(scalar, "x", 0, tiled),
                            "dim = 0 but the blocks have rank 0; expected an operand with at least one dim");
}

TEST_CASE("ppermute: a perm that is not one") {
  const int n = device_count();
  const auto a = operand<int32_t, 1>({n}, line(P("x")));
  const std::string size =
      "mesh axis \"x\" has size " + std::to_string(n) + "; expected axis indices 0 .. " + std::to_string(n - 1);
  // Fragments are named strings: the macro keeps only their c_str() pointers.
  const std::string pair1 = "perm pair 1 is (" + std::to_string(n) + ", 0) but " + size;
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, ppermute(a, "x", {{0, 0}, {n, 0}}), pair1.c_str());
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, ppermute(a, "x", {{0, -1}}), "perm pair 0 is (0, -1) but", size.c_str());
  if (n < 2) return;
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, ppermute(a, "x", {{0, 0}, {0, 1}}),
                            "ppermute: source 0 appears in perm pairs 0 and 1; expected each axis index at most once "
                            "as a source");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, ppermute(a, "x", {{1, 1}, {0, 1}}),
                            "ppermute: destination 1 appears in perm pairs 0 and 1; expected each axis index at most "
                            "once as a destination");
  // Replicated along "x": zeros on the devices without a source would make the replicas differ.
  const auto r = operand<int32_t, 1>({3}, line(P()));
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, ppermute(r, "x", {{0, 1}}), "axis index 0 receives from no source",
                            "replicated along mesh axis \"x\"");
}

TEST_CASE("blocks of unequal shape where the operation needs equal ones") {
  const int n = device_count();
  if (n < 2) return;
  // 2n + 1 over n devices: blocks (3,) on cpu(id=0) and (2,) from the second device on.
  const auto a = operand<double, 1>({2 * n + 1}, line(P("x")));
  const std::string first = "blocks along mesh axis \"x\" have unequal shapes: " + device_kind() +
                            "(id=0) holds (3,) but " + device_kind() + "(id=";
  const std::string operand_text = "operand of shape (" + std::to_string(2 * n + 1) + ",) sharded PartitionSpec('x')";
  for (const auto& case_ : std::vector<std::pair<std::string, std::function<void()>>>{
           {"psum", [&] { psum(a, "x"); }},
           {"pmin", [&] { pmin(a, "x"); }},
           {"psum_scatter", [&] { psum_scatter(a, "x", 0); }},
           {"all_to_all", [&] { all_to_all(a, "x", 0, 0); }},
           {"all_gather", [&] { all_gather(a, "x", 0, stacked); }},
           {"ppermute", [&] {
              ppermute(a, "x", {{0, n - 1}});
            }}}) {
    // Named, not a structured binding: the macro's lambda captures it (capturing a binding is C++20).
    const std::string& api = case_.first;
    const std::function<void()>& fn = case_.second;
    INFO(api);
    const std::string prefix = "darray::" + api + ": " + first;
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, fn(), prefix.c_str(), operand_text.c_str(),
                              "make each sharded dim a multiple of its number of parts");
  }
  // Chunks: one element per device cannot be cut into n pieces.
  const auto b = operand<float, 1>({n}, line(P("x")));
  const std::string chunks = "which does not split into " + std::to_string(n) + " equal chunks along mesh axis \"x\"";
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, psum_scatter(b, "x", 0),
                            ("psum_scatter: dim = 0: the block of " + device_kind() + "(id=0)").c_str(),
                            chunks.c_str());
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, all_to_all(b, "x", -1, 0), "all_to_all: split_dim = 0", chunks.c_str());
}

TEST_CASE("uneven blocks whose results cannot tile the result array") {
  const int n = device_count();
  if (n % 4 != 0) return;
  // Rows 5 over "y" (3 and 2), gathered over "x" along the rows: 3x and 2x rows, not a split of 5x into 2 parts.
  const Mesh mesh = make_mesh({2, n / 2}, {"y", "x"});
  const auto a = operand<int64_t, 2>({5, n}, NamedSharding(mesh, P("y", "x")));
  const std::string sizes = "along result dim 0 the 2 parts hold blocks of sizes [" + std::to_string(3 * n / 2) + ", " +
                            std::to_string(n) + "]";
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, all_gather(a, "x", 0, tiled),
                            "all_gather: the per-device results cannot form one array sharded PartitionSpec('y', None)",
                            sizes.c_str());
}

TEST_CASE("host collectives and axis_index reject bad roots and devices") {
  const int p = process_count();
  const std::string range =
      "root process " + std::to_string(p) + " is out of range; the job has " + std::to_string(p) + " processes";
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, broadcast_from_root(std::vector<int>{1}, p), range.c_str());
  int x = 0;
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, broadcast_from_root(&x, 1, -1), "root process -1 is out of range");
  if (device_count() < 2) return;
  std::vector<Device> most = devices();
  const Device last = most.back();
  most.pop_back();
  const Mesh mesh(most, {static_cast<int64_t>(most.size())}, {"x"});
  const std::string not_in = "axis_index: device " + to_string(last) + " is not in";
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, axis_index(mesh, "x", last), not_in.c_str());
}

TEST_CASE("DARRAY_CHECK=1: processes calling different collectives fail instead of hanging") {
  if (!consistency_checks_enabled() || process_count() < 2 || device_count() % 2 != 0) return;
  const Mesh mesh = make_mesh({2, device_count() / 2}, {"a", "b"});
  const auto a = operand<float, 1>({device_count()}, NamedSharding(mesh, P(axes("a", "b"))));
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, psum(a, process_index() == 1 ? "b" : "a"),
                            "processes disagree on the collective operation (DARRAY_CHECK)",
                            "process 0 runs \"psum((\"a\"))", "process 1 runs \"psum((\"b\"))");
}

TEST_CASE("a collective plan runs only on the operand and into the output it was made for") {
  const int64_t nd = device_count();
  const auto a = operand<float, 1>({2 * nd}, line(P("x")));
  const auto longer = operand<float, 1>({4 * nd}, line(P("x")));
  const auto replicated = operand<float, 1>({2 * nd}, line(P()));
  const auto plan = psum_plan(a, "x");
  REQUIRE(std::string(plan.name()) == "psum");
  REQUIRE((plan.shape() == a.shape() && plan.sharding() == a.sharding()));
  auto out = execute(plan, a);
  REQUIRE((plan.out_shape() == out.shape() && plan.out_sharding() == out.sharding()));
  const std::string made = "plan made for an operand of shape " + shape_to_string(a.shape()) + " sharded as " +
                           a.sharding().to_string() + " executed on one of shape ";
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, execute(plan, longer), "darray::psum", made.c_str(),
                            shape_to_string(longer.shape()).c_str());
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, execute(plan, replicated, out), made.c_str(),
                            replicated.sharding().to_string().c_str());
  // An output of another shape: named with the one expected, and left as it was.
  auto other = execute(psum_plan(longer, "x"), longer);
  const std::vector<float> before = process_allgather(other);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, execute(plan, a, other), "output array of shape",
                            ("expected shape " + shape_to_string(plan.out_shape())).c_str());
  REQUIRE(all_ok(process_allgather(other) == before));
  // Plans of the other collectives check the same way.
  const auto gather = all_gather_plan(a, "x", 0, stacked);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, execute(gather, longer), "darray::all_gather", made.c_str());
  std::vector<std::pair<int, int>> shift;
  for (int i = 0; i < static_cast<int>(nd); ++i) shift.emplace_back(i, (i + 1) % static_cast<int>(nd));
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, execute(ppermute_plan(a, "x", shift), replicated), "darray::ppermute",
                            made.c_str());
}

TEST_CASE("DARRAY_CHECK=1: processes executing different collective plans fail instead of hanging") {
  if (!consistency_checks_enabled() || process_count() < 2 || device_count() % 2 != 0) return;
  const Mesh mesh = make_mesh({2, device_count() / 2}, {"a", "b"});
  const auto a = operand<float, 1>({device_count()}, NamedSharding(mesh, P(axes("a", "b"))));
  const auto over_a = psum_plan(a, "a");
  const auto over_b = psum_plan(a, "b");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, execute(process_index() == 1 ? over_b : over_a, a),
                            "processes disagree on the collective operation (DARRAY_CHECK)",
                            "process 0 runs \"psum((\"a\"))", "process 1 runs \"psum((\"b\"))");
}
