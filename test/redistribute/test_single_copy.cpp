// Single copies (runtime/detail/single_copy.hpp): pieces of 64 KiB or more (pinned here; in a job the start-up probe
// picks the size) between processes of one node, with long contiguous runs on both sides, are read by the receiver
// straight from the sender's blocks where the system allows it, from a plan's second run on. At 1-4 processes x 1-2
// host devices: reshard chains of large arrays (each step run twice) stay bit-exact, FFT transposes, halo phases and
// all_gather give bit for bit what MPI messages give, and DARRAY_SINGLE_COPY=0 turns single copies off.
#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "darray/darray.hpp"
#include "holds_iota.hpp"
#include "mpi_test.hpp"
#include "random_layouts.hpp"
#include "single_copy_pin.hpp"

using namespace darray;
using darray::testing::all_ok;
using darray::testing::holds_iota;
using darray::testing::random_spec;
// Single copies read host memory (process_vm_readv): every array here is in host memory, in GPU builds too.
using Host = Kokkos::HostSpace;

namespace {

bool single_copies_on() { return !detail::state().single_copy_pids.empty(); }

std::size_t pieces_read() { return detail::MoveEngine::single_copy_pieces(); }

// Pieces read by single copy on all processes together since `before` (this process's count then).
std::size_t pieces_read_everywhere(std::size_t before) {
  unsigned long n = pieces_read() - before, sum = 0;
  MPI_Allreduce(&n, &sum, 1, MPI_UNSIGNED_LONG, MPI_SUM, detail::world_comm());
  return sum;
}

// Runs f() with the engines it builds sending every piece as MPI messages (the probe's result set aside).
template <class F>
auto with_messages_only(F&& f) {
  std::vector<int> saved = std::move(detail::state().single_copy_pids);
  detail::state().single_copy_pids.clear();
  struct Restore {
    std::vector<int>& pids;
    std::vector<int> saved;
    ~Restore() { pids = std::move(saved); }
  } restore{detail::state().single_copy_pids, std::move(saved)};
  return f();
}

template <class T, int N, class M>
std::vector<T> local_values(const DistributedArray<T, N, M>& a) {
  std::vector<T> flat;
  for (const auto& s : a.addressable_shards()) flat.insert(flat.end(), s.data.data(), s.data.data() + s.data.size());
  return flat;
}

template <class T, int N, class M>
bool bit_equal(const std::vector<T>& a, const DistributedArray<T, N, M>& b) {
  const std::vector<T> flat = local_values(b);
  return a.size() == flat.size() && std::memcmp(a.data(), flat.data(), a.size() * sizeof(T)) == 0;
}

// iota through random shardings of an array of about `elements` elements.
template <class T, int N>
void large_chain(std::mt19937_64& rng, int64_t elements, int steps) {
  Shape shape(N);
  const auto edge = static_cast<int64_t>(std::pow(static_cast<double>(elements), 1.0 / N));
  for (auto& n : shape) n = edge / 2 + static_cast<int64_t>(rng() % static_cast<uint64_t>(edge));
  Mesh mesh = darray::testing::random_mesh(rng, devices(), 0, true, 'p');
  auto a = iota<T, N, Host>(shape, NamedSharding(mesh, random_spec(rng, mesh.axis_names(), N)));
  for (int k = 0; k < steps; ++k) {
    Mesh m = rng() % 2 ? darray::testing::random_mesh(rng, devices(), 0, true, 'p') : mesh;
    NamedSharding next(m, random_spec(rng, m.axis_names(), N));
    INFO("step " << k << ": " << a.sharding() << " -> " << next << " shape " << shape_to_string(shape));
    // A plan's first run settles which directions go by single copy (on other values, so that a block the cache
    // hands out again cannot hold the right answer already); the second uses them.
    (void)reshard(full<T, N, Host>(shape, T(-1), a.sharding()), next);
    a = reshard(a, next);
    REQUIRE(all_ok(holds_iota(a)));
  }
}

}  // namespace

TEST_CASE("large reshards between processes of a node: bit-exact, by single copy where the system allows it") {
  const darray::testing::SingleCopiesFrom pinned(std::size_t(64) << 10);
  std::mt19937_64 rng(4242);
  const std::size_t before = pieces_read();
  for (int trial = 0; trial < 4; ++trial) {
    large_chain<double, 2>(rng, 400000, 4);
    large_chain<int64_t, 3>(rng, 300000, 4);
    large_chain<float, 1>(rng, 600000, 3);
    large_chain<int32_t, 2>(rng, 200000 + static_cast<int64_t>(rng() % 1000), 3);  // uneven, short rows
  }
  const std::size_t read = pieces_read_everywhere(before);
  if (process_count() > 1 && single_copies_on()) {
    CHECK(read > 0);
  } else {
    CHECK(read == 0);
    if (process_count() > 1) WARN("single copies are not available here: every piece went as MPI messages");
  }
}

TEST_CASE("FFT transposes, halo phases and all_gather by single copy give what MPI messages give") {
  const darray::testing::SingleCopiesFrom pinned(std::size_t(64) << 10);  // the halo's rows are 64 KiB
  const std::size_t before = pieces_read();
  const Shape shape{64, 64, 64};  // slabs of 2 processes: runs of 32 KiB on both sides of a transpose
  const NamedSharding slabs(make_mesh({device_count()}, {"x"}), P("x"));
  using C = Kokkos::complex<double>;
  auto x = make_array_from_callback<C, 3, Host>(shape, slabs, [](const Index& b) {
    std::vector<C> v;
    for (int64_t i = b[0].start; i < b[0].stop; ++i)
      for (int64_t j = b[1].start; j < b[1].stop; ++j)
        for (int64_t k = b[2].start; k < b[2].stop; ++k)
          v.emplace_back(std::sin(0.1 * static_cast<double>(i * 1600 + j * 40 + k)), 0.25 * static_cast<double>(j));
    return v;
  });
  const auto other = full<C, 3, Host>(shape, C(-1.0, 2.0), slabs);
  for (const fft::OutputLayout layout : {fft::OutputLayout::same, fft::OutputLayout::transposed}) {
    fft::Options o;
    o.output = layout;
    const fft::Plan<double, Host> plan(shape, slabs, o);
    (void)plan.backward(plan.forward(other));  // the first run of each transpose settles its single copies
    const auto y = plan.forward(x);
    const auto back = plan.backward(y);
    const auto [y_messages, back_messages] = with_messages_only([&] {
      const fft::Plan<double, Host> p(shape, slabs, o);
      auto f = p.forward(x);
      auto b = p.backward(f);
      return std::make_pair(local_values(f), local_values(b));
    });
    CHECK(all_ok(bit_equal(y_messages, y)));
    CHECK(all_ok(bit_equal(back_messages, back)));
  }

  const Shape grid{16 * device_count(), 4096};  // 2 halo rows of 4096 doubles: 64 KiB per piece
  const NamedSharding rows(make_mesh({device_count()}, {"x"}), P("x"));
  auto g = iota<double, 2, Host>(grid, rows);
  auto padded_by = [&] {
    HaloExchange<double, 2, Host> halo(grid, rows, {2, 0}, Boundary::periodic);
    (void)halo.pad(full<double, 2, Host>(grid, -1.0, rows));  // settles the phases' single copies
    auto shards = halo.pad(g);
    std::vector<double> flat;
    for (const auto& s : shards) flat.insert(flat.end(), s.data.data(), s.data.data() + s.data.size());
    return flat;
  };
  const std::vector<double> halo_single = padded_by();
  CHECK(all_ok(halo_single == with_messages_only(padded_by)));

  const Shape tall{8 * device_count(), 4096};
  (void)all_gather(full<double, 2, Host>(tall, -1.0, rows), "x", 0, tiled);  // settles the plan's single copies
  CHECK(all_ok(holds_iota(all_gather(iota<double, 2, Host>(tall, rows), "x", 0, tiled))));

  const std::size_t read = pieces_read_everywhere(before);
  if (process_count() > 1 && single_copies_on())
    CHECK(read > 0);
  else
    CHECK(read == 0);
}

// The engine takes the node's size (the start-up probe's, here pinned) as it is: an all_gather whose directions
// carry 256 KiB per device goes as messages under a size above that and by single copy under one below it.
TEST_CASE("directions under the node's single-copy size go as messages, from it on by single copy") {
  const NamedSharding rows(make_mesh({device_count()}, {"x"}), P("x"));
  // Another shape per size, and none that another test case here uses: plans are cached by shape, and one made under
  // another size keeps it.
  auto pieces_read_by = [&](std::size_t from, int64_t cols) {
    const darray::testing::SingleCopiesFrom pinned(from);
    const Shape tall{8 * device_count(), cols};  // 8 rows of at least 4096 doubles per device: 256 KiB or more
    const std::size_t before = pieces_read();
    (void)all_gather(full<double, 2, Host>(tall, -1.0, rows), "x", 0, tiled);  // settles the plan's single copies
    const bool ok = all_ok(holds_iota(all_gather(iota<double, 2, Host>(tall, rows), "x", 0, tiled)));
    CHECK(ok);
    return pieces_read_everywhere(before);
  };
  CHECK(pieces_read_by(std::size_t(1) << 30, 4112) == 0);
  const std::size_t read = pieces_read_by(std::size_t(64) << 10, 4120);
  if (process_count() > 1 && single_copies_on())
    CHECK(read > 0);
  else
    CHECK(read == 0);
}

// A rows-to-columns reshard: the pieces a source block sends to the devices of one peer lie side by side in each of
// the block's rows, and the peer reads each such row as one stretch of the sender's memory (one remote iovec for the
// row of all its pieces, not one per piece: copy_with_process joins ranges next to each other), plus one read of the
// sender's live word per direction.
TEST_CASE("a peer's pieces side by side in a sender's rows are read one stretch a row") {
  const darray::testing::SingleCopiesFrom pinned(std::size_t(64) << 10);
  const int64_t d = device_count(), k = local_device_count();
  const Mesh mesh = make_mesh({d}, {"x"});
  const NamedSharding rows(mesh, P("x")), cols(mesh, P(none, "x"));
  const Shape shape{16 * d, 520 * d};  // a piece: 16 rows of 520 doubles (4160 B), unlike other cases' shapes
  (void)reshard(full<double, 2, Host>(shape, -1.0, rows), cols);  // settles the plan's single copies
  const auto a = iota<double, 2, Host>(shape, rows);
  const detail::SingleCopyCalls before = detail::single_copy_calls();
  const std::size_t pieces_before = pieces_read();
  const auto b = reshard(a, cols);
  CHECK(all_ok(holds_iota(b)));
  const std::size_t remote = detail::single_copy_calls().remote_iovecs - before.remote_iovecs;
  const std::size_t peers = static_cast<std::size_t>(process_count() - 1);
  if (process_count() > 1 && single_copies_on()) {
    CHECK(pieces_read_everywhere(pieces_before) ==
          static_cast<std::size_t>(process_count()) * peers * static_cast<std::size_t>(k * k));
    // From each peer: k source blocks of 16 rows, each row one stretch; and the live word.
    CHECK(all_ok(remote == peers * static_cast<std::size_t>(k * 16 + 1)));
  } else {
    CHECK(all_ok(remote == 0));
  }
}

// Run under DARRAY_SINGLE_COPY=0 (CMake): no process reads another's memory; the data still arrives.
TEST_CASE("DARRAY_SINGLE_COPY=0 turns single copies off", "[.single_copy_off]") {
  CHECK(!single_copies_on());
  const std::size_t before = pieces_read();
  const NamedSharding rows(make_mesh({device_count()}, {"x"}), P("x")),
      cols(make_mesh({device_count()}, {"x"}), P(none, "x"));
  const auto a = reshard(iota<double, 2, Host>({512, 512}, rows), cols);
  CHECK(all_ok(holds_iota(a)));
  CHECK(pieces_read_everywhere(before) == 0);
}

// Two processes that run different exchanges by single copy (the same collective on other shapes here) read each
// other's announcements as another operation's: both get the mismatch error, and neither waits for an answer.
TEST_CASE("processes that run different single-copy exchanges both get an error, not each other's data") {
  const darray::testing::SingleCopiesFrom pinned(std::size_t(64) << 10);
  if (process_count() != 2 || !single_copies_on()) return;
  const NamedSharding rows(make_mesh({device_count()}, {"x"}), P("x"));
  const auto small = iota<double, 2, Host>({8 * device_count(), 4096}, rows);
  const auto large = iota<double, 2, Host>({16 * device_count(), 4096}, rows);
  (void)all_gather(small, "x", 0, tiled);  // both plans settled on both processes
  (void)all_gather(large, "x", 0, tiled);
  const std::size_t before = pieces_read();
  const std::string msg = darray::testing::error_message<InvalidArgument>(
      [&] { (void)all_gather(process_index() == 0 ? small : large, "x", 0, tiled); });
  INFO(msg);
  CHECK(msg.find("sent data of another operation") != std::string::npos);
  CHECK(pieces_read() == before);
  CHECK(all_ok(holds_iota(all_gather(large, "x", 0, tiled))));  // and the next matching call works
}
