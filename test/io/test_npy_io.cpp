// Collective save_npy / load_npy at every process and device count: round trips over meshes, specs, uneven and
// empty blocks, 0-d and zero-size arrays and element types of every kind, and over random layouts, checked against
// the file's raw bytes as well as after loading; replica 0 is what gets written; pieces split below the message
// limit; and every bad file gives the same clear error on every process.
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "io_test_util.hpp"
#include "random_layouts.hpp"
#include "split_sizes.hpp"

using namespace darray;
using darray::testing::all_ok;
using darray::testing::TempDir;

namespace {

// What rank 0 finds in the file: the exact header numpy would write, then element_value at every flat index.
template <class T>
std::string check_file_bytes(const std::string& path, const Shape& shape) {
  if (darray::testing::world_rank() != 0) return "";
  const auto bytes = darray::testing::read_file_bytes(path);
  const std::string header = detail::format_npy_header(detail::npy_descr<T>(), shape);
  const std::size_t n = static_cast<std::size_t>(volume(shape));
  if (bytes.size() != header.size() + n * sizeof(T))
    return "file has " + std::to_string(bytes.size()) + " bytes, expected " +
           std::to_string(header.size() + n * sizeof(T));
  if (std::memcmp(bytes.data(), header.data(), header.size()) != 0) return "header differs";
  for (std::size_t f = 0; f < n; ++f) {
    T v;
    std::memcpy(static_cast<void*>(&v), bytes.data() + header.size() + f * sizeof(T), sizeof(T));
    if (!(v == darray::testing::element_value<T>(static_cast<int64_t>(f))))
      return "element " + std::to_string(f) + " differs";
  }
  return "";
}

struct Layout {
  Shape shape;
  NamedSharding sharding;
  NamedSharding reload;  // a second sharding to load the same file into
};

// Meshes over all devices with even, uneven, empty and replicated blocks, for rank N.
template <int N>
std::vector<Layout> layouts() {
  const int64_t n = device_count();
  const auto [a, b] = darray::testing::two_axes(n);
  const Mesh line = make_mesh({n}, {"x"});
  const Mesh grid = make_mesh({a, b}, {"a", "b"});
  const NamedSharding replicated(line, P{});
  std::vector<Layout> out;
  if constexpr (N == 0) {
    out.push_back({{}, replicated, NamedSharding(grid, P{})});
  } else if constexpr (N == 1) {
    out.push_back({{2 * n + 1}, NamedSharding(line, P{"x"}), replicated});
    out.push_back({{1}, NamedSharding(line, P{"x"}), NamedSharding(grid, P{"b"})});  // empty blocks
    out.push_back({{0}, NamedSharding(line, P{"x"}), replicated});                   // zero-size
  } else if constexpr (N == 2) {
    out.push_back({{7, 5}, NamedSharding(grid, P{"a", "b"}), NamedSharding(grid, P{"b", "a"})});
    out.push_back({{9, 4}, NamedSharding(grid, P{none, "a"}), NamedSharding(line, P{"x"})});  // b replicated
    out.push_back({{5, 6}, NamedSharding(grid, P{axes("a", "b")}), replicated});
    out.push_back({{1, 3}, NamedSharding(grid, P{"a", "b"}), NamedSharding(line, P{none, "x"})});
    out.push_back({{4, 0}, NamedSharding(grid, P{"a", "b"}), NamedSharding(line, P{"x"})});
  } else if constexpr (N == 3) {
    out.push_back({{3, 4, 5}, NamedSharding(grid, P{"a", none, "b"}), NamedSharding(grid, P{none, "b", "a"})});
  } else {
    out.push_back(
        {{2, 3, 2, 3}, NamedSharding(grid, P{none, "a", none, "b"}), NamedSharding(line, P{none, none, "x"})});
  }
  // Under a lowered DARRAY_MPI_MAX_MESSAGE_BYTES (at least 4096): rows longer than a piece (cut into sub-rows, the
  // last one partial) and short rows stacked into many slabs.
  if (darray::testing::split_forced()) {
    if constexpr (N == 2) {
      out.push_back({{23, 2053}, NamedSharding(grid, P{"a", none}), NamedSharding(grid, P{"a", "b"})});
      out.push_back({{301, 7}, NamedSharding(line, P{"x"}), NamedSharding(grid, P{"b", "a"})});
    } else if constexpr (N == 3) {
      out.push_back({{5, 9, 301}, NamedSharding(grid, P{"a", none, "b"}), NamedSharding(grid, P{none, "b", "a"})});
    }
  }
  return out;
}

// Saves an array of layout l at path, checks the file's bytes, and loads it under its sharding and its reload one.
template <class T, int N>
void round_trip_layout(const Layout& l, const std::string& path) {
  INFO(dtype_name<T>() << " shape " << shape_to_string(l.shape) << " saved as " << l.sharding << ", reloaded as "
                       << l.reload);
  io::save_npy(path, darray::testing::make_test_array<T, N>(l.shape, l.sharding));
  const std::string file_err = check_file_bytes<T>(path, l.shape);
  INFO("file: " << file_err);
  REQUIRE(all_ok(file_err.empty()));
  for (const NamedSharding& s : {l.sharding, l.reload}) {
    const std::string err = darray::testing::check_loaded(io::load_npy<T, N>(path, s), l.shape, s);
    INFO("loaded as " << s << ": " << err);
    REQUIRE(all_ok(err.empty()));
  }
}

template <class T, int N>
void round_trip(const TempDir& dir, const std::string& name, bool staged = false) {
  std::unique_ptr<darray::detail::StageAsIfOnDevice> hook;
  if (staged) hook = std::make_unique<darray::detail::StageAsIfOnDevice>();
  for (const Layout& l : layouts<N>()) round_trip_layout<T, N>(l, dir.file(name));
}

// One random layout: a shape of rank N (dims 0-9, now and then up to 299: empty, uneven and split blocks), saved
// under a random sharding of a random mesh over all devices and reloaded under another.
template <class T, int N>
void random_round_trip(std::mt19937_64& rng, const std::string& path) {
  Shape shape(N);
  for (int d = 0; d < N; ++d) shape[d] = static_cast<int64_t>(rng() % 8 == 0 ? rng() % 300 : rng() % 10);
  const Mesh saved_mesh = darray::testing::random_mesh(rng, devices());
  const Mesh loaded_mesh = darray::testing::random_mesh(rng, devices(), 0, true, 'p');
  const NamedSharding saved(saved_mesh, darray::testing::random_spec(rng, saved_mesh.axis_names(), N, true));
  const NamedSharding loaded(loaded_mesh, darray::testing::random_spec(rng, loaded_mesh.axis_names(), N, true));
  round_trip_layout<T, N>(Layout{shape, saved, loaded}, path);
}

// The message every process got is the same as process 0's.
bool same_everywhere(const std::string& msg) {
  std::vector<char> root(msg.begin(), msg.end());
  int len = static_cast<int>(root.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
  root.resize(static_cast<std::size_t>(len));
  MPI_Bcast(root.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD);
  return std::string(root.begin(), root.end()) == msg;
}

}  // namespace

// Asserts that expr throws ErrorType with every fragment in its message, and the very same message everywhere.
#define REQUIRE_SAME_ERROR(ErrorType, expr, ...)                                                      \
  do {                                                                                                \
    DARRAY_REQUIRE_THROWS_ALL(ErrorType, expr, __VA_ARGS__);                                          \
    const std::string same_msg_ = ::darray::testing::error_message<ErrorType>([&] { (void)(expr); }); \
    INFO("message: " << same_msg_);                                                                   \
    REQUIRE(all_ok(same_everywhere(same_msg_)));                                                      \
  } while (false)

TEST_CASE("save_npy then load_npy round trips ranks 0-4 and element types of every kind", "[roundtrip]") {
  TempDir dir;
  round_trip<double, 0>(dir, "r0.npy");
  round_trip<float, 1>(dir, "r1.npy");
  round_trip<double, 2>(dir, "r2.npy");
  round_trip<Kokkos::complex<double>, 2>(dir, "c2.npy");
  round_trip<int32_t, 3>(dir, "r3.npy");
  round_trip<int64_t, 4>(dir, "r4.npy");
  round_trip<uint8_t, 1>(dir, "u8.npy");
  round_trip<int16_t, 1>(dir, "i16.npy");
  // Through the host staging buffer that device memory needs.
  round_trip<Kokkos::complex<float>, 2>(dir, "staged.npy", /*staged=*/true);
  // The other element types take the same path with another dtype string; the numpy test covers them.
}

TEST_CASE("pieces split below the message limit land where they belong", "[roundtrip]") {
  // DARRAY_MPI_MAX_MESSAGE_BYTES caps every MPI-IO count; 4099 bytes (odd: pieces end mid-element in bytes, so
  // they hold whole elements below it) cuts the larger layouts' blocks into many slabs and sub-rows, so every
  // process makes many rounds, and uneven counts between processes.
  const char* previous = std::getenv("DARRAY_MPI_MAX_MESSAGE_BYTES");
  const std::string saved = previous ? previous : "";
  setenv("DARRAY_MPI_MAX_MESSAGE_BYTES", "4099", 1);
  TempDir dir;
  round_trip<double, 2>(dir, "split2.npy");
  round_trip<Kokkos::complex<double>, 3>(dir, "split3.npy");  // 16-byte elements: 256 per piece
  // The staging buffer device memory needs, reused across pieces of different sizes and blocks.
  round_trip<float, 2>(dir, "staged.npy", /*staged=*/true);
  if (previous)
    setenv("DARRAY_MPI_MAX_MESSAGE_BYTES", saved.c_str(), 1);
  else
    unsetenv("DARRAY_MPI_MAX_MESSAGE_BYTES");
}

TEST_CASE("random meshes, specs and shapes round trip: saved under one sharding, loaded under another", "[roundtrip]") {
  TempDir dir;
  std::mt19937_64 rng(31);  // same seed everywhere: every process draws the same layouts
  const std::string path = dir.file("random.npy");
  for (int trial = 0; trial < 8; ++trial) {
    random_round_trip<double, 1>(rng, path);
    random_round_trip<int16_t, 2>(rng, path);
    random_round_trip<Kokkos::complex<float>, 3>(rng, path);
    random_round_trip<uint8_t, 4>(rng, path);
  }
}

TEST_CASE("save_npy writes replica 0 of each block, and load_npy fills every replica") {
  TempDir dir;
  const int64_t n = device_count();
  const auto [a, b] = darray::testing::two_axes(n);
  const NamedSharding s(make_mesh({a, b}, {"a", "b"}), P{"a"});  // b replicates
  const Shape shape{2 * a + 1, 3};
  const auto arr = darray::testing::make_test_array<double, 2>(shape, s);
  // Spoil every other replica: had any of them been written, the file would show it.
  for (const auto& sh : arr.addressable_shards())
    if (sh.replica_id != 0) Kokkos::deep_copy(sh.data, -1.0);
  const std::string path = dir.file("replicas.npy");
  io::save_npy(path, arr);
  const std::string err = check_file_bytes<double>(path, shape);
  INFO(err);
  REQUIRE(all_ok(err.empty()));
  const auto back = io::load_npy<double, 2>(path, s);
  const std::string load_err = darray::testing::check_loaded(back, shape, s);
  INFO(load_err);
  REQUIRE(all_ok(load_err.empty()));
}

TEST_CASE("save_npy replaces a longer file and a mesh may leave processes out") {
  TempDir dir;
  const std::string path = dir.file("over.npy");
  const NamedSharding line(make_mesh({device_count()}, {"x"}), P{"x"});
  io::save_npy(path, darray::testing::make_test_array<double, 1>({1000}, line));
  io::save_npy(path, darray::testing::make_test_array<double, 1>({3}, line));
  std::string err = check_file_bytes<double>(path, {3});
  INFO(err);
  REQUIRE(all_ok(err.empty()));
  // A mesh of process 0's devices only: the other processes hold no shard but still take part.
  std::vector<Device> p0;
  for (const Device& d : devices())
    if (d.process_index == 0) p0.push_back(d);
  const NamedSharding on_p0(Mesh(p0, {static_cast<int64_t>(p0.size())}, {"x"}), P{"x"});
  io::save_npy(path, darray::testing::make_test_array<float, 2>({5, 3}, on_p0));
  err = check_file_bytes<float>(path, {5, 3});
  INFO(err);
  REQUIRE(all_ok(err.empty()));
  const auto back = io::load_npy<float, 2>(path, on_p0);
  err = darray::testing::check_loaded(back, {5, 3}, on_p0);
  INFO(err);
  REQUIRE(all_ok(err.empty()));
}

TEST_CASE("read_npy_header reports what a file holds") {
  TempDir dir;
  const std::string path = dir.file("h.npy");
  const NamedSharding line(make_mesh({device_count()}, {"x"}), P{"x"});
  io::save_npy(path, darray::testing::make_test_array<Kokkos::complex<float>, 3>({2, 3, 4}, line));
  const io::NpyHeader h = io::read_npy_header(path);
  REQUIRE(all_ok(h.dtype == "<c8" && h.shape == Shape{2, 3, 4} && !h.fortran_order && h.data_offset == 128 &&
                 h.version_major == 1 && h.version_minor == 0));
  REQUIRE_SAME_ERROR(IoError, io::read_npy_header(dir.file("missing.npy")), "io::read_npy_header",
                     "missing.npy\": cannot open");
}

TEST_CASE("bad files give the same clear error on every process") {
  TempDir dir;
  const NamedSharding s(make_mesh({device_count()}, {"x"}), P{"x"});
  const std::string good = detail::format_npy_header("<f8", {3, 4});
  const std::string data(96, '\0');
  const auto bad = [&](const std::string& name, const std::string& bytes) {
    const std::string path = dir.file(name);
    darray::testing::write_file_on_root(path, bytes);
    return path;
  };
  const auto header_with = [](const std::string& dict) {
    std::string out("\x93NUMPY\x01\x00", 8);
    out += static_cast<char>(dict.size() & 0xff);
    out += static_cast<char>(dict.size() >> 8);
    return out + dict;
  };
  std::string p;
  REQUIRE_SAME_ERROR(IoError, (io::load_npy<double, 2>(dir.file("none.npy"), s)), "io::load_npy", "none.npy\"",
                     "cannot open");
  p = bad("empty.npy", "");
  REQUIRE_SAME_ERROR(IoError, (io::load_npy<double, 2>(p, s)), "empty.npy\" is truncated: 0 bytes");
  p = bad("magic.npy", "PK\x03\x04 this is a zip file" + data);
  REQUIRE_SAME_ERROR(IoError, (io::load_npy<double, 2>(p, s)), "magic.npy\" is not a .npy file", "PK\\x03\\x04");
  p = bad("version.npy", std::string("\x93NUMPY\x05\x00", 8) + good.substr(8) + data);
  REQUIRE_SAME_ERROR(IoError, (io::load_npy<double, 2>(p, s)), "version 5.0, which is not supported");
  p = bad("short_header.npy", good.substr(0, 60));
  REQUIRE_SAME_ERROR(IoError, (io::load_npy<double, 2>(p, s)), "short_header.npy\" is truncated or corrupt",
                     "says 118 bytes, but the file has only 50 bytes after the 10-byte preamble");
  p = bad("short_data.npy", good + data.substr(0, 95));
  REQUIRE_SAME_ERROR(IoError, (io::load_npy<double, 2>(p, s)), "short_data.npy\" is truncated",
                     "96 data bytes from offset 128 (224 bytes in all), but the file has 223 bytes");
  std::string lie = good + data;
  lie[8] = '\xff';
  lie[9] = '\xff';
  p = bad("lie.npy", lie);
  REQUIRE_SAME_ERROR(IoError, (io::load_npy<double, 2>(p, s)), "says 65535 bytes, but the file has only 214 bytes");
  p = bad("absurd.npy", std::string("\x93NUMPY\x02\x00\xf0\xff\xff\x7f", 12) + data);
  REQUIRE_SAME_ERROR(IoError, (io::load_npy<double, 2>(p, s)), "absurd.npy\" is corrupt",
                     "header length field says 2147483632 bytes");
  p = bad("list.npy", header_with("['descr', '<f8']\n"));
  REQUIRE_SAME_ERROR(IoError, (io::load_npy<double, 2>(p, s)), "the header is a list, not a dict");
  p = bad("keys.npy", header_with("{'descr': '<f8', 'shape': (3, 4)}\n") + data);
  REQUIRE_SAME_ERROR(IoError, (io::load_npy<double, 2>(p, s)), "missing key 'fortran_order'");
  p = bad("shape.npy", header_with("{'descr': '<f8', 'fortran_order': False, 'shape': (3, four)}\n") + data);
  REQUIRE_SAME_ERROR(IoError, (io::load_npy<double, 2>(p, s)), "unknown name 'four'");
  p = bad("dtype.npy", good + data);
  REQUIRE_SAME_ERROR(IoError, (io::load_npy<float, 2>(p, s)), "dtype.npy\" has dtype '<f8'",
                     "io::load_npy<float32, 2> expects '<f4' (float32)");
  REQUIRE_SAME_ERROR(IoError, (io::load_npy<double, 3>(p, s)), "has shape (3, 4) (rank 2)",
                     "io::load_npy<float64, 3> expects rank 3");
  p = bad("big_endian.npy", detail::format_npy_header(">f8", {3, 4}) + data);
  REQUIRE_SAME_ERROR(NotSupported, (io::load_npy<double, 2>(p, s)), "big-endian data (dtype '>f8')");
  p = bad("fortran.npy", detail::format_npy_header("<f8", {3, 4}, true) + data);
  REQUIRE_SAME_ERROR(NotSupported, (io::load_npy<double, 2>(p, s)), "Fortran (column-major) order");
  // A directory is no file; a spec longer than the file's rank is the caller's mistake.
  REQUIRE_SAME_ERROR(IoError, (io::load_npy<double, 2>(dir.path(), s)), "\" is a directory, not a regular file");
  p = bad("rank1.npy", detail::format_npy_header("<f8", {12}) + data);
  const NamedSharding two_d(make_mesh({device_count(), 1}, {"a", "b"}), P{"a", "b"});
  REQUIRE_SAME_ERROR(InvalidArgument, (io::load_npy<double, 1>(p, two_d)), "has 2 entries but the array has rank 1");
  // After all that, a good file still loads.
  p = bad("good.npy", good + data);
  const auto ok = io::load_npy<double, 2>(p, s);
  REQUIRE(all_ok(ok.shape() == Shape{3, 4}));
}

TEST_CASE("save_npy failures are IoErrors naming the path and MPI's message, alike everywhere") {
  TempDir dir;
  const NamedSharding s(make_mesh({device_count()}, {"x"}), P{"x"});
  const auto a = darray::testing::make_test_array<double, 1>({10}, s);
  const std::string path = dir.file("no/such/dir/x.npy");
  REQUIRE_SAME_ERROR(IoError, io::save_npy(path, a), "io::save_npy", "no/such/dir/x.npy\": MPI_File_open failed: ");
  // The library keeps working afterwards.
  io::save_npy(dir.file("fine.npy"), a);
  const std::string err = check_file_bytes<double>(dir.file("fine.npy"), {10});
  REQUIRE(all_ok(err.empty()));
}

namespace {
// Names of the entries of a directory, seen by process 0 and broadcast (a listing is what process 0 sees).
std::vector<std::string> listing(const std::string& dir) {
  std::string names;
  if (process_index() == 0)
    for (const auto& e : std::filesystem::directory_iterator(dir)) names += e.path().filename().string() + "\n";
  detail::bcast_string(detail::world_comm(), names, 0);
  std::vector<std::string> out;
  for (const std::string& n : detail::split(names, '\n'))
    if (!n.empty()) out.push_back(n);
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

TEST_CASE("paths that are not regular files are rejected before any process opens them") {
  TempDir dir;
  const NamedSharding s(make_mesh({device_count()}, {"x"}), P{"x"});
  const auto a = darray::testing::make_test_array<double, 1>({10}, s);
  const std::string fifo = dir.file("pipe.npy");
  if (process_index() == 0) REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  MPI_Barrier(MPI_COMM_WORLD);
  // Opening a FIFO for reading blocks until a writer comes: this used to hang every process.
  REQUIRE_SAME_ERROR(IoError, (io::load_npy<double, 1>(fifo, s)), "io::load_npy",
                     "pipe.npy\" is a FIFO (named pipe), not a regular file");
  REQUIRE_SAME_ERROR(IoError, io::read_npy_header(fifo), "pipe.npy\" is a FIFO");
  REQUIRE_SAME_ERROR(IoError, io::save_npy(fifo, a), "io::save_npy", "pipe.npy\" is a FIFO");
  REQUIRE_SAME_ERROR(IoError, io::save_npy(dir.path(), a), "io::save_npy", "is a directory, not a regular file");
  REQUIRE_SAME_ERROR(IoError, (io::load_npy<double, 1>("/dev/null", s)), "\"/dev/null\" is a character device");
  REQUIRE_SAME_ERROR(IoError, io::save_npy("", a), "io::save_npy", "the path is empty");
  // Nothing was replaced or left behind.
  struct stat st;
  REQUIRE(all_ok(::stat(fifo.c_str(), &st) == 0 && S_ISFIFO(st.st_mode)));
  REQUIRE(all_ok(listing(dir.path()) == std::vector<std::string>{"pipe.npy"}));
}

TEST_CASE("save_npy replaces a file atomically: temporary beside it, permissions and symlinks kept") {
  TempDir dir;
  const NamedSharding s(make_mesh({device_count()}, {"x"}), P{"x"});
  const auto a = darray::testing::make_test_array<double, 1>({1000}, s);
  const std::string path = dir.file("a.npy"), link = dir.file("link.npy");
  io::save_npy(path, a);
  if (process_index() == 0) {
    REQUIRE(::chmod(path.c_str(), 0640) == 0);
    REQUIRE(::symlink("a.npy", link.c_str()) == 0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  io::save_npy(link, a);
  struct stat st, lst;
  REQUIRE(all_ok(::stat(path.c_str(), &st) == 0 && (st.st_mode & 07777) == 0640));
  REQUIRE(all_ok(::lstat(link.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)));
  REQUIRE(all_ok(check_file_bytes<double>(path, {1000}).empty()));
  REQUIRE(all_ok(listing(dir.path()) == std::vector<std::string>{"a.npy", "link.npy"}));

  // A save that fails midway (here: the file size limit, EFBIG) leaves the old file as it was and no temporary.
  const auto before = darray::testing::read_file_bytes(path);
  const auto big = darray::testing::make_test_array<double, 1>({100000}, s);
  struct rlimit saved;
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = saved;
  small.rlim_cur = 64 * 1024;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  const std::string err = darray::testing::error_message<IoError>([&] { io::save_npy(path, big); });
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);
  REQUIRE(all_ok(err.find("io::save_npy") != std::string::npos && err.find("a.npy") != std::string::npos));
  REQUIRE(all_ok(darray::testing::read_file_bytes(path) == before));
  REQUIRE(all_ok(listing(dir.path()) == std::vector<std::string>{"a.npy", "link.npy"}));
}

// Without DARRAY_CHECK too: an I/O call's arguments are always compared first (one allgather of 8 bytes beside the
// file's open, writes, sync and rename). Before, a save to another path on process 1 wrote process 0's path alone
// and returned on both, and another shape on one process mixed two layouts in one file.
TEST_CASE("save_npy and load_npy called with other arguments on one process: the same error everywhere, no file") {
  if (process_count() < 2) return;
  TempDir dir;
  const NamedSharding s(make_mesh({device_count()}, {"x"}), P{"x"});
  const auto a = darray::testing::make_test_array<double, 1>({10}, s);
  const bool last = process_index() == process_count() - 1;
  const std::string own = dir.file(last ? "other.npy" : "a.npy");
  REQUIRE_SAME_ERROR(InvalidArgument, io::save_npy(own, a), "processes disagree", "process 0 runs \"io::save_npy(",
                     "other.npy");
  REQUIRE(all_ok(listing(dir.path()).empty()));  // nothing written, not even process 0's file
  const std::string path = dir.file("a.npy");
  io::save_npy(path, a);
  const auto before = darray::testing::read_file_bytes(path);
  const auto longer = darray::testing::make_test_array<double, 1>({12}, s);
  REQUIRE_SAME_ERROR(InvalidArgument, io::save_npy(path, last ? longer : a), "processes disagree",
                     "float64 array of shape (12,)");
  REQUIRE(all_ok(darray::testing::read_file_bytes(path) == before));  // the file as it was
  const NamedSharding replicated(make_mesh({device_count()}, {"x"}), P{});
  REQUIRE_SAME_ERROR(InvalidArgument, (io::load_npy<double, 1>(path, last ? replicated : s)),
                     "process 0 runs \"io::load_npy<float64, 1>(");
  REQUIRE(all_ok(listing(dir.path()) == std::vector<std::string>{"a.npy"}));
}

// Runs only in test_io_npy_check (DARRAY_CHECK=1, several processes): divergent calls are reported, not hung on.
TEST_CASE("DARRAY_CHECK reports processes that call save/load/read_npy_header differently", "[.check]") {
  REQUIRE(consistency_checks_enabled());
  REQUIRE(process_count() > 1);
  TempDir dir;
  const NamedSharding s(make_mesh({device_count()}, {"x"}), P{"x"});
  const auto a = darray::testing::make_test_array<double, 1>({10}, s);
  const std::string own = dir.file("p" + std::to_string(process_index()) + ".npy");
  REQUIRE_SAME_ERROR(InvalidArgument, io::save_npy(own, a), "processes disagree", "process 0 runs \"io::save_npy(",
                     "p0.npy\", float64 array of shape (10,), NamedSharding(", "p1.npy");
  const std::string path = dir.file("shared.npy");
  io::save_npy(path, a);
  const NamedSharding other(make_mesh({device_count()}, {"x"}), P{});
  REQUIRE_SAME_ERROR(InvalidArgument, (io::load_npy<double, 1>(path, process_index() == 1 ? other : s)),
                     "process 0 runs \"io::load_npy<float64, 1>(", "but process 1 runs");
  REQUIRE_SAME_ERROR(InvalidArgument, io::read_npy_header(own), "io::read_npy_header(");
}
