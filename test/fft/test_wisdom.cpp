// FFT wisdom (fft/wisdom.hpp, Options::wisdom_file) and measured local strategies (Plan::describe): a plan built
// from saved wisdom computes bit for bit what the measured plan computed, without measuring; missing, corrupt,
// truncated and foreign wisdom files are reported the same on every process and never stop a transform; unreadable
// and unwritable paths are IoErrors everywhere.
#include <fcntl.h>
#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "darray/darray.hpp"
#include "fft_test_util.hpp"
#include "mpi_test.hpp"
#include "temp_dir.hpp"

using namespace darray;
using darray::testing::all_ok;
using darray::testing::world_rank;
using fft_test::relative_error;
using fft_test::Serial;

namespace {

using C = Kokkos::complex<double>;
// Wisdom is FFTW's, and FFTW transforms host memory: every plan here is a host-memory plan, in GPU builds too (where
// plans on device memory use cuFFT, which has no planner to measure).
using Host = Kokkos::HostSpace;

// Temporary directories /tmp/darray-wisdom-<pid of process 0>-<n> on every process.
class TempDir : public darray::testing::TempDir {
 public:
  TempDir() : darray::testing::TempDir("darray-wisdom") {}
};

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

void write_on_root(const std::string& path, const std::string& text) {
  if (world_rank() == 0) std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  MPI_Barrier(MPI_COMM_WORLD);
}

// Process 0's string, on every process.
std::string from_root(std::string s) {
  long long n = static_cast<long long>(s.size());
  MPI_Bcast(&n, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  s.resize(static_cast<std::size_t>(n));
  if (n > 0) MPI_Bcast(&s[0], static_cast<int>(n), MPI_CHAR, 0, MPI_COMM_WORLD);
  return s;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The stage lines of a describe() text with the strategies' source `source` blanked.
std::string stage_lines(const std::string& described, const std::string& source) {
  std::istringstream in(described);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.rfind("  stage ", 0) != 0) continue;
    for (auto at = line.find(source); at != std::string::npos; at = line.find(source)) line.erase(at, source.size());
    out += line + "\n";
  }
  return out;
}

fft::Options measured(const std::string& wisdom, fft::OutputLayout layout = fft::OutputLayout::same) {
  fft::Options o;
  o.planner = fft::Planner::measure;
  o.wisdom_file = wisdom;
  o.output = layout;
  return o;
}

// A measured plan over shape and sharding saved to `path`; the file's text, on every process.
std::string saved_wisdom(const std::string& path, const Shape& shape, const NamedSharding& sharding) {
  { const fft::Plan<double, Host> p(shape, sharding, measured(path)); }
  return from_root(read_text(path));
}

// Whether `plan` transforms a random input (from `seed`) forward as serial FFTW does, within 1e-12, on every process.
bool forward_matches_fftw(const fft::Plan<double, Host>& plan, uint64_t seed) {
  const auto x = fft_test::random_array<C, Host>(plan.shape(), plan.input_sharding(), seed);
  return all_ok(relative_error(process_allgather(plan.forward(x)),
                               Serial<double>::c2c(process_allgather(x), plan.shape(), FFTW_FORWARD)) < 1e-12);
}

TEST_CASE("a plan from saved wisdom computes bit for bit what the measured plan did, without measuring", "[fft]") {
  TempDir dir;
  const std::string path = dir.file("fft.wisdom");
  // (20, 24, 18): 2-D stage 0, strided later stages; r2c on (20, 24, 18) -> (20, 24, 10).
  const Shape shape{20, 24, 18};
  for (auto layout : {fft::OutputLayout::same, fft::OutputLayout::transposed}) {
    fft::forget_wisdom();
    write_on_root(path, "");
    if (world_rank() == 0) std::filesystem::remove(path);
    MPI_Barrier(MPI_COMM_WORLD);
    const NamedSharding sharding = fft::auto_sharding(shape);
    INFO(sharding << " layout " << layout);
    const auto x = fft_test::random_array<C, Host>(shape, sharding, 61);
    const auto xr = fft_test::random_array<double, Host>(shape, sharding, 62);

    const fft::Plan<double, Host> first(shape, sharding, measured(path, layout));
    const fft::RealPlan<double, Host> rfirst(shape, sharding, measured(path, layout));
    const std::string d1 = first.describe();
    INFO(d1);
    REQUIRE(all_ok(contains(d1, "not found") && contains(d1, "saved") && contains(d1, "(measured)")));
    REQUIRE(all_ok(contains(rfirst.describe(), "(measured)")));
    const auto y1 = process_allgather(first.forward(x));
    const auto z1 = process_allgather(first.backward(first.forward(x)));
    const auto yr1 = process_allgather(rfirst.forward(xr));
    const auto zr1 = process_allgather(rfirst.backward(rfirst.forward(xr)));
    REQUIRE(all_ok(relative_error(y1, Serial<double>::c2c(process_allgather(x), shape, FFTW_FORWARD)) < 1e-12));
    REQUIRE(all_ok(relative_error(yr1, Serial<double>::r2c(process_allgather(xr), shape)) < 1e-12));
    const std::string text = from_root(read_text(path));
    REQUIRE(all_ok(text.rfind("(darray-fft-wisdom 1", 0) == 0 && contains(text, " fftw_wisdom ")));

    // As in a new run: nothing in memory, everything from the file.
    fft::forget_wisdom();
    const fft::Plan<double, Host> second(shape, sharding, measured(path, layout));
    const fft::RealPlan<double, Host> rsecond(shape, sharding, measured(path, layout));
    const std::string d2 = second.describe();
    INFO(d2);
    REQUIRE(all_ok(contains(d2, "wisdom loaded from") && !contains(d2, "(measured)") && contains(d2, "(wisdom)")));
    REQUIRE(all_ok(!contains(d2, "saved")));  // nothing new learnt: the file is left alone
    REQUIRE(all_ok(stage_lines(d2, "(wisdom)") == stage_lines(d1, "(measured)")));  // the same strategies
    REQUIRE(all_ok(process_allgather(second.forward(x)) == y1));
    REQUIRE(all_ok(process_allgather(second.backward(second.forward(x))) == z1));
    REQUIRE(all_ok(process_allgather(rsecond.forward(xr)) == yr1));
    REQUIRE(all_ok(process_allgather(rsecond.backward(rsecond.forward(xr))) == zr1));
    REQUIRE(all_ok(from_root(read_text(path)) == text));

    // An estimate plan uses measured wisdom too (as FFTW does): same strategies, same bits.
    fft::Options estimate = measured(path, layout);
    estimate.planner = fft::Planner::estimate;
    const fft::Plan<double, Host> third(shape, sharding, estimate);
    REQUIRE(all_ok(contains(third.describe(), "(wisdom)")));
    REQUIRE(all_ok(process_allgather(third.forward(x)) == y1));
  }
  fft::forget_wisdom();
}

TEST_CASE("load_wisdom / save_wisdom / forget_wisdom by hand", "[fft]") {
  TempDir dir;
  const std::string path = dir.file("hand.wisdom");
  fft::forget_wisdom();
  const fft::WisdomReport none = fft::load_wisdom(path);
  REQUIRE(all_ok(none.status == fft::WisdomStatus::missing && contains(none.message, "not found")));
  const Shape shape{12, 10, 8};
  const NamedSharding sharding = fft::auto_sharding(shape);
  fft::Options o;
  o.planner = fft::Planner::measure;
  const fft::Plan<double, Host> plan(shape, sharding, o);
  REQUIRE(all_ok(contains(plan.describe(), "(measured)")));
  fft::save_wisdom(path);
  const std::string text = from_root(read_text(path));
  REQUIRE(all_ok(contains(text, "darray-fft-wisdom") && contains(text, "/s0f ")));
  // No leftover temporary beside it.
  int files = 0;
  if (world_rank() == 0)
    for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path())) {
      (void)e;
      ++files;
    }
  MPI_Bcast(&files, 1, MPI_INT, 0, MPI_COMM_WORLD);
  REQUIRE(all_ok(files == 1));

  fft::forget_wisdom();
  const fft::Plan<double, Host> forgot(shape, sharding, o);
  REQUIRE(all_ok(contains(forgot.describe(), "(measured)")));  // forgotten: measured again
  fft::forget_wisdom();
  const fft::WisdomReport back = fft::load_wisdom(path);
  REQUIRE(all_ok(back.status == fft::WisdomStatus::loaded));
  const fft::Plan<double, Host> wise(shape, sharding, o);
  REQUIRE(all_ok(contains(wise.describe(), "(wisdom)") && !contains(wise.describe(), "(measured)")));
  fft::forget_wisdom();
}

// The entries of FFTW's double-precision wisdom in memory on this process (lines of its export), sorted.
std::vector<std::string> fftw_entries() {
  char* s = fftw_export_wisdom_to_string();
  std::istringstream in(s != nullptr ? s : "");
  std::free(s);
  std::vector<std::string> entries;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("  (", 0) == 0) entries.push_back(line);
  std::sort(entries.begin(), entries.end());
  return entries;
}

TEST_CASE("a wisdom file loaded again is imported once; after forget_wisdom it is imported again", "[fft]") {
  TempDir dir;
  const std::string path = dir.file("again.wisdom");
  fft::forget_wisdom();
  const Shape shape{12, 10, 8};
  const NamedSharding sharding = fft::auto_sharding(shape);
  { const fft::Plan<double, Host> plan(shape, sharding, measured(path)); }
  const std::vector<std::string> learnt = fftw_entries();
  REQUIRE(all_ok(!learnt.empty()));
  const std::string text = from_root(read_text(path));
  // No single-precision plan ran: that section is empty, and skipped on import (it would cost FFTW's fixed 0.2 ms).
  REQUIRE(all_ok(contains(text, " fftwf_wisdom ")));
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    fft::forget_wisdom();
    REQUIRE(all_ok(fftw_entries().empty()));
    // Loaded, and loaded again (the second import skipped): FFTW holds the file's entries; a plan naming the file
    // loads it a third time and measures nothing.
    REQUIRE(all_ok(fft::load_wisdom(path).status == fft::WisdomStatus::loaded));
    REQUIRE(all_ok(fft::load_wisdom(path).status == fft::WisdomStatus::loaded));
    const std::vector<std::string> loaded = fftw_entries();  // every process's: the file merges them
    REQUIRE(all_ok(std::includes(loaded.begin(), loaded.end(), learnt.begin(), learnt.end())));
    const fft::Plan<double, Host> wise(shape, sharding, measured(path));
    REQUIRE(all_ok(contains(wise.describe(), "(wisdom)") && !contains(wise.describe(), "(measured)")));
    REQUIRE(all_ok(fftw_entries() == loaded));  // nothing measured
  }
  // An empty section of another FFTW version is still refused (FFTW checks it), not skipped.
  std::string foreign = text;
  const auto at = foreign.find("(fftw-3");
  const auto next = foreign.find("(fftw-3", at + 1);
  REQUIRE(all_ok(next != std::string::npos));
  foreign.replace(next, foreign.find(' ', next) - next, "(fftw-2.9.9");
  const std::string foreign_path = dir.file("foreign-empty.wisdom");
  write_on_root(foreign_path, foreign);
  fft::forget_wisdom();
  const fft::WisdomReport r = fft::load_wisdom(foreign_path);
  INFO(r.message);
  REQUIRE(all_ok(r.status == fft::WisdomStatus::rejected && contains(r.message, "another FFTW version or build")));
  fft::forget_wisdom();
}

TEST_CASE("a wisdom file is read again only when it changed since process 0 read it", "[fft]") {
  TempDir dir;
  const std::string path = dir.file("stamp.wisdom");
  fft::forget_wisdom();
  const Shape shape{12, 10, 8};
  const NamedSharding sharding = fft::auto_sharding(shape);
  const std::string text = saved_wisdom(path, shape, sharding);
  // The files process 0 has read whole, on every process.
  auto reads = [] {
    long long n = static_cast<long long>(fft::detail::wisdom_file_reads());
    MPI_Bcast(&n, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    return n;
  };
  auto status = [&] { return fft::load_wisdom(path).status; };
  const long long before = reads();
  REQUIRE(all_ok(status() == fft::WisdomStatus::loaded));
  REQUIRE(all_ok(reads() == before + 1));
  // Unchanged: loaded from the text read then, by load_wisdom and by plans naming the file.
  REQUIRE(all_ok(status() == fft::WisdomStatus::loaded));
  {
    const fft::Plan<double, Host> wise(shape, sharding, measured(path));
    REQUIRE(all_ok(contains(wise.describe(), "(wisdom)")));
  }
  REQUIRE(all_ok(reads() == before + 1));
  // Written in place, another size: read again (rejected), then the good text again (loaded).
  write_on_root(path, "this is not wisdom\n");
  REQUIRE(all_ok(status() == fft::WisdomStatus::rejected));
  REQUIRE(all_ok(reads() == before + 2));
  write_on_root(path, text);
  REQUIRE(all_ok(status() == fft::WisdomStatus::loaded));
  REQUIRE(all_ok(reads() == before + 3));
  // Written in place, the same size, its modification time another (as a write a timestamp tick later sets it).
  std::string damaged = text;
  damaged[0] = 'x';
  write_on_root(path, damaged);
  if (world_rank() == 0) {
    struct timespec times[2];
    times[0].tv_sec = times[1].tv_sec = 1000000000;
    times[0].tv_nsec = times[1].tv_nsec = 0;
    REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  REQUIRE(all_ok(status() == fft::WisdomStatus::rejected));
  REQUIRE(all_ok(reads() == before + 4));
  // Replaced (save_wisdom renames a new file over it): read again.
  fft::save_wisdom(path);
  REQUIRE(all_ok(status() == fft::WisdomStatus::loaded));
  REQUIRE(all_ok(reads() == before + 5));
  REQUIRE(all_ok(status() == fft::WisdomStatus::loaded));
  REQUIRE(all_ok(reads() == before + 5));
  // Gone: missing, nothing read; back: read again.
  const std::string saved = from_root(read_text(path));
  if (world_rank() == 0) std::remove(path.c_str());
  MPI_Barrier(MPI_COMM_WORLD);
  REQUIRE(all_ok(status() == fft::WisdomStatus::missing));
  REQUIRE(all_ok(reads() == before + 5));
  write_on_root(path, saved);
  REQUIRE(all_ok(status() == fft::WisdomStatus::loaded));
  REQUIRE(all_ok(reads() == before + 6));
  // forget_wisdom forgets the text read too: the next load reads the file as a new run would.
  fft::forget_wisdom();
  REQUIRE(all_ok(status() == fft::WisdomStatus::loaded));
  REQUIRE(all_ok(reads() == before + 7));
  fft::forget_wisdom();
}

TEST_CASE("processes that build different FFT plans at once: the same InvalidArgument everywhere, no hang", "[fft]") {
  if (process_count() < 2) return;  // one process cannot disagree with itself
  TempDir dir;
  fft::forget_wisdom();
  const Shape shape{12, 10, 8};
  const NamedSharding sharding = fft::auto_sharding(shape);
  const bool first = world_rank() == 0;
  auto with = [](auto set) {
    fft::Options o;
    set(o);
    return o;
  };
  struct Case {
    std::string name;
    fft::Options first, others;
    Shape first_shape;
  };
  const fft::Options plain;
  const std::vector<Case> cases = {
      // Process 0 loads a wisdom file and measures while the others plan at once: hung before.
      {"a wisdom file and the measuring planner on process 0 only", measured(dir.file("mixed.wisdom")), plain, shape},
      {"the measuring planner on process 0 only", with([](fft::Options& o) { o.planner = fft::Planner::measure; }),
       plain, shape},
      {"another output layout", with([](fft::Options& o) { o.output = fft::OutputLayout::transposed; }), plain, shape},
      {"another normalisation", with([](fft::Options& o) { o.normalization = fft::Normalization::ortho; }), plain,
       shape},
      {"another shape", plain, plain, Shape{12, 10, 6}},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    std::string message;
    try {
      const fft::Plan<double, Host> plan(first ? c.first_shape : shape, sharding, first ? c.first : c.others);
    } catch (const InvalidArgument& e) {
      message = e.what();
    }
    INFO(message);
    REQUIRE(all_ok(contains(message, "different FFT plans") && contains(message, "process 0: c2c") &&
                   contains(message, "process 1: c2c")));
    REQUIRE(all_ok(from_root(message) == message));
  }
  // A real plan on process 0, complex ones elsewhere.
  std::string message;
  try {
    if (first) {
      const fft::RealPlan<double, Host> plan(shape, sharding, plain);
    } else {
      const fft::Plan<double, Host> plan(shape, sharding, plain);
    }
  } catch (const InvalidArgument& e) {
    message = e.what();
  }
  INFO(message);
  REQUIRE(all_ok(contains(message, "process 0: r2c") && contains(message, "process 1: c2c")));
  // Wisdom files of other names elsewhere are no error (process 0's is the one read and written), and the processes
  // go on together.
  const fft::Plan<double, Host> plan(shape, sharding, measured(dir.file(first ? "mine.wisdom" : "theirs.wisdom")));
  REQUIRE(forward_matches_fftw(plan, 73));
  fft::forget_wisdom();
}

TEST_CASE("missing, corrupt, truncated and foreign wisdom: reported alike everywhere, transforms unharmed", "[fft]") {
  TempDir dir;
  fft::forget_wisdom();
  const Shape shape{10, 12, 6};
  const NamedSharding sharding = fft::auto_sharding(shape);

  // A valid file to damage.
  const std::string good = dir.file("good.wisdom");
  const std::string text = saved_wisdom(good, shape, sharding);
  REQUIRE(all_ok(contains(text, "(fftw-") && contains(text, " fftw_wisdom ")));
  std::string foreign = text;
  const auto at = foreign.find("(fftw-");
  const auto blank = foreign.find(' ', at);
  foreign.replace(at, blank - at, "(fftw-2.9.9");
  // FFTW's entries read "(NAME REG_ID #xL #xU #xT #xS0 #xS1 #xS2 #xS3)"; FFTW keeps L and U in 20 bits, T in 9, and
  // its import aborts the process (an assertion) on a value that does not fit.
  auto with_field = [&](int field, const std::string& value) {
    std::string damaged = text;
    const auto entry = damaged.find("\n  (", damaged.find(" fftw_wisdom #x")) + 4;  // after the "("
    auto from = entry;
    for (int k = 0; k < field; ++k) from = damaged.find(' ', from) + 1;
    damaged.replace(from, damaged.find_first_of(" )", from) - from, value);
    return damaged;
  };

  struct Case {
    std::string name, contents, reason;
  };
  const std::vector<Case> cases = {
      {"garbage", "this is not wisdom\n", "unexpected text at byte 0"},
      {"empty", "", "holds no wisdom"},
      {"truncated", text.substr(0, text.size() / 2), "truncated"},
      {"foreign", foreign, "another FFTW version or build"},
      {"bad-entry", "(darray-fft-wisdom 1\n  (key strategy notanumber)\n)\n", "malformed darray entry"},
      {"bad-level", "(darray-fft-wisdom 1\n  (key strategy 3)\n)\n", "malformed darray entry"},
      {"short-entry", "(darray-fft-wisdom 1\n  (key strategy)\n)\n", "malformed darray entry"},
      {"long-entry", "(darray-fft-wisdom 1\n  (key strategy 1 more)\n)\n", "malformed darray entry"},
      {"unknown", "(something-else 3\n)\n", "unknown section"},
      {"fftw-l-overflow", with_field(2, "#x100000"), "an FFTW entry this FFTW cannot take"},
      {"fftw-u-overflow", with_field(3, "#xfffffff"), "an FFTW entry this FFTW cannot take"},
      {"fftw-t-overflow", with_field(4, "#x200"), "an FFTW entry this FFTW cannot take"},
      {"fftw-long-hash", with_field(5, "#x123456789"), "an FFTW entry this FFTW cannot take"},
      {"fftw-short-entry", with_field(8, ""), "an FFTW entry this FFTW cannot take"},
      {"fftw-name-blank", with_field(0, "fftw_codelet\vn1fv_8"), "an FFTW entry this FFTW cannot take"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    fft::forget_wisdom();
    const std::string path = dir.file(c.name + ".wisdom");
    write_on_root(path, c.contents);
    const fft::WisdomReport r = fft::load_wisdom(path);
    INFO(r.message);
    REQUIRE(all_ok(r.status == fft::WisdomStatus::rejected && contains(r.message, c.reason)));
    REQUIRE(all_ok(from_root(r.message) == r.message));
    // A plan over the same file: warned, planned without it, and the bad file replaced by good wisdom.
    const fft::Plan<double, Host> plan(shape, sharding, measured(path));
    INFO(plan.describe());
    REQUIRE(all_ok(contains(plan.describe(), "ignored: ") && contains(plan.describe(), "saved")));
    REQUIRE(forward_matches_fftw(plan, 71));
    fft::forget_wisdom();
    REQUIRE(all_ok(fft::load_wisdom(path).status == fft::WisdomStatus::loaded));
  }

  // Missing, under estimate: planned, nothing written.
  fft::forget_wisdom();
  const std::string missing = dir.file("never.wisdom");
  fft::Options estimate;
  estimate.wisdom_file = missing;
  const fft::Plan<double, Host> plain(shape, sharding, estimate);
  REQUIRE(all_ok(contains(plain.describe(), "not found") && contains(plain.describe(), "(heuristic)")));
  REQUIRE(forward_matches_fftw(plain, 71));
  int exists = world_rank() == 0 ? static_cast<int>(std::filesystem::exists(missing)) : 0;
  MPI_Bcast(&exists, 1, MPI_INT, 0, MPI_COMM_WORLD);
  REQUIRE(all_ok(exists == 0));
  fft::forget_wisdom();
}

TEST_CASE("damaged wisdom files, hundreds at random: loaded or rejected alike everywhere, never a crash", "[fft]") {
  TempDir dir;
  fft::forget_wisdom();
  const Shape shape{8, 6, 10};
  const NamedSharding sharding = fft::auto_sharding(shape);
  const std::string good = dir.file("good.wisdom");
  const std::string text = saved_wisdom(good, shape, sharding);
  REQUIRE(all_ok(contains(text, "(darray-fft-wisdom 1") && contains(text, " fftw_wisdom ")));
  // Process 0 damages the text (the others read what it wrote): a byte replaced by one that matters to the parsers,
  // a range deleted, a range doubled, or the end cut.
  std::mt19937_64 rng(20261128);
  const std::string alphabet = "()# \n\tx0123456789abcdef_-/.";
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  int loaded = 0, rejected = 0;
  for (int round = 0; round < 300; ++round) {
    std::string damaged = text;
    for (int edits = 1 + static_cast<int>(pick(3)); edits > 0 && !damaged.empty(); --edits) {
      const std::size_t at = pick(damaged.size()), length = 1 + pick(std::min<std::size_t>(40, damaged.size() - at));
      switch (pick(4)) {
        case 0:
          damaged[at] = alphabet[pick(alphabet.size())];
          break;
        case 1:
          damaged.erase(at, length);
          break;
        case 2:
          damaged.insert(at, damaged.substr(at, length));
          break;
        default:
          damaged.resize(at);
          break;
      }
    }
    INFO("round " << round << ", damaged text:\n" << from_root(damaged));
    fft::forget_wisdom();
    const std::string path = dir.file("damaged.wisdom");
    write_on_root(path, world_rank() == 0 ? damaged : std::string());
    const fft::WisdomReport r = fft::load_wisdom(path);
    INFO(r.message);
    REQUIRE(all_ok(r.status != fft::WisdomStatus::missing && from_root(r.message) == r.message));
    (r.status == fft::WisdomStatus::loaded ? loaded : rejected) += 1;
  }
  // Both outcomes occur (edits inside a hash or a key still parse; broken parentheses do not).
  CHECK(loaded > 0);
  CHECK(rejected > 0);
  // Planning goes on after the last of them, from the good file.
  fft::forget_wisdom();
  const fft::Plan<double, Host> plan(shape, sharding, measured(good));
  REQUIRE(all_ok(contains(plan.describe(), "(wisdom)")));
  REQUIRE(forward_matches_fftw(plan, 5));
  fft::forget_wisdom();
}

TEST_CASE("wisdom whose FFTW entries name another entry's solver: loaded, and plans from it transform right", "[fft]") {
  TempDir dir;
  fft::forget_wisdom();
  const Shape shape{8, 6, 10};
  const NamedSharding sharding = fft::auto_sharding(shape);
  const std::string good = dir.file("good.wisdom");
  const std::string text = saved_wisdom(good, shape, sharding);
  // The entries of the double-precision FFTW section, each "(NAME REG_ID #xL ...)" on a line of its own.
  std::vector<std::string> entries;
  std::size_t at = text.find(" fftw_wisdom #x");
  REQUIRE(at != std::string::npos);
  const std::size_t end = text.find("\n)", at);
  while ((at = text.find("\n  (", at)) != std::string::npos && at < end) {
    entries.push_back(text.substr(at + 3, text.find(')', at) - at - 2));
    at += 3;
  }
  REQUIRE(entries.size() >= 2);
  // Entry i with entry j's solver (name and registration) for its problem: well formed, so FFTW imports it; planning
  // that problem finds a solver that does not apply, which FFTW must survive (it forgets its wisdom and plans anew).
  int swaps = 0;
  for (std::size_t i = 0; i < entries.size() && swaps < 12; ++i) {
    const std::size_t j = (i + 1 + entries.size() / 2) % entries.size();
    const std::string name_i = entries[i].substr(0, entries[i].find(' ', entries[i].find(' ') + 1));
    const std::string name_j = entries[j].substr(0, entries[j].find(' ', entries[j].find(' ') + 1));
    if (name_i == name_j) continue;
    std::string swapped = text;
    swapped.replace(swapped.find(entries[i]), name_i.size(), name_j);
    INFO("entry " << entries[i] << " given the solver of " << entries[j]);
    const std::string path = dir.file("swapped.wisdom");
    write_on_root(path, swapped);
    fft::forget_wisdom();
    const fft::Plan<double, Host> plan(shape, sharding, measured(path));
    INFO(plan.describe());
    REQUIRE(all_ok(contains(plan.describe(), "wisdom loaded")));
    REQUIRE(forward_matches_fftw(plan, 9));
    ++swaps;
  }
  CHECK(swaps > 0);
  fft::forget_wisdom();
}

// The header of the first "(fftw-... fftw_wisdom #x..." section of a wisdom text: FFTW's version, precision and the
// checksum of the solvers it had registered.
std::string fftw_header(const std::string& text) {
  const auto at = text.find(" fftw_wisdom #x");
  if (at == std::string::npos) return "";
  const auto open = text.rfind('(', at);
  return text.substr(open + 1, text.find('\n', at) - open - 1);
}

TEST_CASE("wisdom of another FFTW solver configuration is kept beside this one's, not refused", "[fft]") {
  // FFTW signs its wisdom with a checksum of the solvers it has registered, which depends on more than its version:
  // FFTW-MPI or FFTW's threads set up in one program and not in the other, another CPU's SIMD. A file written under
  // one configuration and loaded under another was refused, and the plan's save then replaced it, so programs of the
  // two kinds sharing one file measured in every run. The other configuration here is this file with its checksum
  // changed, which is all FFTW sees of it.
  TempDir dir;
  fft::forget_wisdom();
  const Shape shape{8, 12, 10};
  const NamedSharding sharding = fft::auto_sharding(shape);
  const std::string path = dir.file("other-solvers.wisdom");
  std::string text = saved_wisdom(path, shape, sharding);
  const std::string ours = fftw_header(text);
  REQUIRE(all_ok(!ours.empty()));
  const auto digit = text.find(" fftw_wisdom #x") + std::string(" fftw_wisdom #x").size();
  text[digit] = text[digit] == '0' ? '1' : '0';
  const std::string theirs = fftw_header(text);
  write_on_root(path, text);

  fft::forget_wisdom();
  const fft::WisdomReport r = fft::load_wisdom(path);
  INFO(r.message);
  REQUIRE(all_ok(r.status == fft::WisdomStatus::loaded && contains(r.message, "another FFTW solver configuration")));
  REQUIRE(all_ok(from_root(r.message) == r.message));
  // A plan over it takes darray's choices from the file (nothing of darray's measured), FFTW plans for this
  // configuration, and saves: the file then holds both configurations' FFTW sections.
  fft::forget_wisdom();
  const fft::Plan<double, Host> plan(shape, sharding, measured(path));
  INFO(plan.describe());
  REQUIRE(all_ok(contains(plan.describe(), "(wisdom)") && !contains(plan.describe(), "(measured)") &&
                 !contains(plan.describe(), "ignored") && contains(plan.describe(), "saved")));
  REQUIRE(forward_matches_fftw(plan, 73));
  const std::string both = from_root(read_text(path));
  INFO(both);
  REQUIRE(all_ok(contains(both, "(" + ours + "\n") && contains(both, "(" + theirs + "\n")));
  // In a later run of this configuration: its section imported, the other one kept, nothing measured or written.
  fft::forget_wisdom();
  const fft::Plan<double, Host> later(shape, sharding, measured(path));
  INFO(later.describe());
  REQUIRE(all_ok(contains(later.describe(), "(wisdom)") && !contains(later.describe(), "saved")));
  REQUIRE(all_ok(from_root(read_text(path)) == both));
  fft::forget_wisdom();
}

TEST_CASE("a spec with or without its trailing Nones finds the same wisdom", "[fft]") {
  // P("x") and P("x", None, None) place the blocks alike (the same plan): a plan over one takes what a plan over the
  // other measured, instead of measuring again (fft::auto_sharding gives the second form, users often write the
  // first).
  TempDir dir;
  fft::forget_wisdom();
  const Shape shape{8, 12, 10};
  const Mesh mesh = make_mesh({device_count()}, {"x"});
  const std::string path = dir.file("trailing.wisdom");
  { const fft::Plan<double, Host> p(shape, NamedSharding(mesh, P("x", none, none)), measured(path)); }
  fft::forget_wisdom();
  const fft::Plan<double, Host> short_spec(shape, NamedSharding(mesh, P("x")), measured(path));
  INFO(short_spec.describe());
  REQUIRE(all_ok(contains(short_spec.describe(), "(wisdom)") && !contains(short_spec.describe(), "(measured)")));
  fft::forget_wisdom();
}

TEST_CASE("wisdom paths that cannot be read or written", "[fft]") {
  TempDir dir;
  fft::forget_wisdom();
  const Shape shape{8, 6, 4};
  const NamedSharding sharding = fft::auto_sharding(shape);
  // A directory is no wisdom file: the same IoError everywhere, from loads and from plans.
  DARRAY_REQUIRE_THROWS_ALL(IoError, fft::load_wisdom(dir.file("")), "is a directory, not a regular file");
  using HostPlan = fft::Plan<double, Host>;  // one macro argument
  DARRAY_REQUIRE_THROWS_ALL(IoError, HostPlan(shape, sharding, measured(dir.file(""))), "is a directory");
  DARRAY_REQUIRE_THROWS_ALL(IoError, fft::load_wisdom(""), "path is empty");
  // An unwritable place: save_wisdom throws, a plan warns and works.
  const std::string nowhere = dir.file("no/such/dir/fft.wisdom");
  DARRAY_REQUIRE_THROWS_ALL(IoError, fft::save_wisdom(nowhere), "cannot create the temporary file");
  const fft::Plan<double, Host> plan(shape, sharding, measured(nowhere));
  INFO(plan.describe());
  REQUIRE(all_ok(contains(plan.describe(), "not saved: ")));
  REQUIRE(forward_matches_fftw(plan, 81));
  fft::forget_wisdom();
}

// A wisdom text with every strategy of its darray section replaced by `strategy`; its FFTW sections kept, or
// dropped where `fftw_sections` is false.
std::string with_strategy(const std::string& text, const std::string& strategy, bool fftw_sections = true) {
  std::istringstream in(text);
  std::ostringstream out;
  std::string line;
  bool darray_section = false;
  while (std::getline(in, line)) {
    if (line.rfind("(darray-fft-wisdom", 0) == 0) darray_section = true;
    if (darray_section && line.rfind("  (", 0) == 0) {
      std::istringstream fields(line.substr(3));
      std::string key, old, level;
      fields >> key >> old >> level;
      line = "  (" + key + " " + strategy + " " + level;
    }
    if (darray_section || fftw_sections) out << line << "\n";
    if (line == ")") darray_section = false;
  }
  return out.str();
}

TEST_CASE(
    "estimate plans copy the input of c2c stage 0; every strategy wisdom names, +copy included, computes the same",
    "[fft]") {
  TempDir dir;
  const std::string path = dir.file("fft.wisdom");
  // Odd lengths and dims of one point too: planes' outer dim of one point is no split; a plane of one row.
  for (const Shape& shape : {Shape{12, 10, 8}, Shape{7, 1, 9}, Shape{9, 5, 3}, Shape{4, 6, 1}})
    for (const Mesh& mesh : fft_test::test_meshes()) {
      const NamedSharding sharding(mesh, mesh.ndim() == 1 ? P("x") : P("r", "c"));
      for (auto layout : {fft::OutputLayout::same, fft::OutputLayout::transposed}) {
        INFO(shape_to_string(shape) << " " << sharding << " layout " << layout);
        fft::forget_wisdom();
        fft::Options estimate;
        estimate.output = layout;
        const std::string heuristic = fft::Plan<double, Host>(shape, sharding, estimate).describe();
        INFO(heuristic);
        // FFTW's plans of c2c stage 0 run in place on a copy of the input made group by group (pipeline.hpp,
        // default_strategy): the input read in order.
        REQUIRE(all_ok(contains(heuristic, "stage 0 ") && contains(heuristic, "forward passes+copy (heuristic)")));

        write_on_root(path, "");
        if (world_rank() == 0) std::filesystem::remove(path);
        MPI_Barrier(MPI_COMM_WORLD);
        { const fft::Plan<double, Host> measured_plan(shape, sharding, measured(path, layout)); }
        { const fft::RealPlan<double, Host> measured_plan(shape, sharding, measured(path, layout)); }
        const std::string text = from_root(read_text(path));
        const auto x = fft_test::random_array<C, Host>(shape, sharding, 95);
        const auto gx = process_allgather(x);
        const auto expected = Serial<double>::c2c(gx, shape, FFTW_FORWARD);
        const auto xr = fft_test::random_array<double, Host>(shape, sharding, 96);
        const auto gxr = process_allgather(xr);
        const auto expected_r = Serial<double>::r2c(gxr, shape);
        for (const char* method : {"passes", "guru", "tiled", "planes", "estimate"})
          for (const char* copy : {"", "+copy"}) {
            const std::string strategy = std::string(method) + copy;
            INFO(strategy);
            write_on_root(path, with_strategy(text, strategy));
            fft::forget_wisdom();
            fft::Options wise = estimate;
            wise.wisdom_file = path;
            const fft::Plan<double, Host> plan(shape, sharding, wise);
            const std::string d = plan.describe();
            INFO(d);
            // Stage 0 forward reads the caller's array: it takes the copy variant too.
            REQUIRE(all_ok(contains(d, "stage 0 ") && contains(d, " forward " + strategy + " (wisdom)")));
            const auto y = plan.forward(x);
            REQUIRE(all_ok(relative_error(process_allgather(y), expected) < 1e-12));
            REQUIRE(all_ok(relative_error(process_allgather(plan.backward(y)), gx) < 1e-12));
            if (*copy != '\0') continue;  // r2c and c2r stages read and write different arrays: no copy variant
            const fft::RealPlan<double, Host> rplan(shape, sharding, wise);
            const std::string rd = rplan.describe();
            INFO(rd);
            REQUIRE(all_ok(contains(rd, "stage 0 ") && contains(rd, " forward " + strategy + " (wisdom)")));
            const auto yr = rplan.forward(xr);
            REQUIRE(all_ok(relative_error(process_allgather(yr), expected_r) < 1e-12));
            REQUIRE(all_ok(relative_error(process_allgather(rplan.backward(yr)), gxr) < 1e-12));
          }
      }
    }
  fft::forget_wisdom();
}

TEST_CASE("a real backward transform leaves its input as it was under every strategy, at one stage too", "[fft]") {
  TempDir dir;
  const std::string path = dir.file("fft.wisdom");
  // Under `passes` on one device: (12, 10, 8) FFTW's plans (rows of 8: no half-length rows); (64, 64, 128) a
  // whole-block tiled pass along dim 0 (4.3 MB), then half-length rows; (4, 96, 200) dim 0 over the whole block, dim 1
  // tiled plane by plane (155 KB), FFTW's c2r of dim 2. FFTW's c2r overwrites what it reads: at one stage the plan
  // reads the caller's blocks.
  for (const Shape& shape : {Shape{12, 10, 8}, Shape{64, 64, 128}, Shape{4, 96, 200}}) {
    const NamedSharding sharding(make_mesh({device_count()}, {"x"}), P("x"));
    INFO(shape_to_string(shape) << " " << sharding);
    fft::forget_wisdom();
    write_on_root(path, "");
    if (world_rank() == 0) std::filesystem::remove(path);
    MPI_Barrier(MPI_COMM_WORLD);
    { const fft::RealPlan<double, Host> measured_plan(shape, sharding, measured(path)); }
    const std::string text = from_root(read_text(path));
    const auto xr = fft_test::random_array<double, Host>(shape, sharding, 97);
    const auto gxr = process_allgather(xr);
    for (const char* method : {"passes", "guru", "tiled", "planes", "estimate"}) {
      INFO(method);
      write_on_root(path, with_strategy(text, method));
      fft::forget_wisdom();
      fft::Options wise;
      wise.wisdom_file = path;
      const fft::RealPlan<double, Host> plan(shape, sharding, wise);
      INFO(plan.describe());
      REQUIRE(all_ok(contains(plan.describe(), std::string(" backward ") + method + " (wisdom)")));
      const auto y = plan.forward(xr);
      const auto before = process_allgather(y);
      const auto back = plan.backward(y);
      REQUIRE(all_ok(process_allgather(y) == before));
      REQUIRE(all_ok(relative_error(process_allgather(back), gxr) < 1e-12));
      auto kept = plan.backward(y);
      plan.backward(y, kept);  // into a kept output
      REQUIRE(all_ok(process_allgather(y) == before));
      REQUIRE(all_ok(process_allgather(kept) == process_allgather(back)));
    }
  }
  fft::forget_wisdom();
}

// Every "candidates" line of a describe() text, and whether each names `candidate`.
std::pair<int, bool> candidate_lines(const std::string& described, const std::string& candidate) {
  std::istringstream in(described);
  std::string line;
  int lines = 0;
  bool every = true;
  while (std::getline(in, line))
    if (contains(line, "candidates (ms")) {
      ++lines;
      every = every && contains(line + " ", " " + candidate + " ");
    }
  return {lines, every};
}

TEST_CASE(
    "the measuring planner times the estimate planner's own plan; a plan that takes it computes what the "
    "estimate planner's computes",
    "[fft]") {
  TempDir dir;
  const std::string path = dir.file("fft.wisdom");
  // (16, 40, 36): tiled passes differ from FFTW's strided plans; (8, 32, 256): r2c rows of 256 points, half-length
  // rows under FFTW_ESTIMATE only (half_rows); (9, 5, 3): odd lengths.
  for (const Shape& shape : {Shape{16, 40, 36}, Shape{8, 32, 256}, Shape{9, 5, 3}})
    for (const Mesh& mesh : fft_test::test_meshes()) {
      const NamedSharding sharding(mesh, mesh.ndim() == 1 ? P("x") : P("r", "c"));
      for (auto layout : {fft::OutputLayout::same, fft::OutputLayout::transposed}) {
        INFO(shape_to_string(shape) << " " << sharding << " layout " << layout);
        fft::forget_wisdom();
        write_on_root(path, "");
        if (world_rank() == 0) std::filesystem::remove(path);
        MPI_Barrier(MPI_COMM_WORLD);
        {
          const fft::Plan<double, Host> m(shape, sharding, measured(path, layout));
          const fft::RealPlan<double, Host> rm(shape, sharding, measured(path, layout));
          INFO(m.describe() << rm.describe());
          // Every measured slot timed the candidate, and each plan measured one slot at least.
          const auto [lines, every] = candidate_lines(m.describe(), "estimate");
          const auto [rlines, revery] = candidate_lines(rm.describe(), "estimate");
          REQUIRE(all_ok(lines > 0 && every && rlines > 0 && revery));
        }
        // darray's choices alone, every slot's `estimate`: FFTW has no wisdom, so the plans under either planner
        // make their FFTW plans from nothing.
        write_on_root(path, with_strategy(from_root(read_text(path)), "estimate", /*fftw_sections=*/false));
        fft::Options estimate;
        estimate.output = layout;
        estimate.wisdom_file = path;
        const auto x = fft_test::random_array<C, Host>(shape, sharding, 98);
        const auto xr = fft_test::random_array<double, Host>(shape, sharding, 99);
        fft::forget_wisdom();
        const fft::Plan<double, Host> est(shape, sharding, estimate);
        const fft::RealPlan<double, Host> rest(shape, sharding, estimate);
        const auto y = est.forward(x);
        const auto yr = rest.forward(xr);
        const auto expected = process_allgather(y), expected_back = process_allgather(est.backward(y));
        const auto expected_r = process_allgather(yr);
        const auto expected_rback = process_allgather(rest.backward(yr));
        fft::forget_wisdom();
        const fft::Plan<double, Host> plan(shape, sharding, measured(path, layout));
        const fft::RealPlan<double, Host> rplan(shape, sharding, measured(path, layout));
        const std::string d = plan.describe() + rplan.describe();
        INFO(est.describe() << rest.describe() << d);
        REQUIRE(all_ok(contains(d, " forward estimate (wisdom)") && !contains(d, "(measured)")));
        // The same FFTW plans of the same split, whatever the planner: the same bits. A fused stage's tiles are
        // planned at the planner's effort (FFTW_MEASURE here): there, the same transform within rounding.
        const auto got = process_allgather(plan.forward(x));
        const auto got_back = process_allgather(plan.backward(plan.forward(x)));
        const auto got_r = process_allgather(rplan.forward(xr));
        const auto got_rback = process_allgather(rplan.backward(rplan.forward(xr)));
        if (!contains(d, "fused")) {
          REQUIRE(all_ok(got == expected && got_back == expected_back));
          REQUIRE(all_ok(got_r == expected_r && got_rback == expected_rback));
        } else {
          REQUIRE(all_ok(relative_error(got, expected) < 1e-12 && relative_error(got_back, expected_back) < 1e-12));
          REQUIRE(
              all_ok(relative_error(got_r, expected_r) < 1e-12 && relative_error(got_rback, expected_rback) < 1e-12));
        }
      }
    }
  fft::forget_wisdom();
}

// plan's c2c forward transform of a random array against serial FFTW, and its round trip.
void check_c2c(const fft::Plan<double, Host>& plan, const Shape& shape, const NamedSharding& sharding,
               std::uint64_t seed) {
  const auto x = fft_test::random_array<C, Host>(shape, sharding, seed);
  const auto gx = process_allgather(x);
  const auto y = plan.forward(x);
  REQUIRE(all_ok(relative_error(process_allgather(y), Serial<double>::c2c(gx, shape, FFTW_FORWARD)) < 1e-12));
  REQUIRE(all_ok(relative_error(process_allgather(plan.backward(y)), gx) < 1e-12));
}

TEST_CASE("measured strategies: every candidate computes the same transform, the choice is agreed", "[fft]") {
  fft::forget_wisdom();
  // Big enough for tiled passes to differ from FFTW's strided plans.
  const Shape shape{16, 40, 36};
  for (const Mesh& mesh : fft_test::test_meshes()) {
    const NamedSharding sharding(mesh, mesh.ndim() == 1 ? P("x") : P("r", "c"));
    for (auto planner : {fft::Planner::measure, fft::Planner::patient}) {
      fft::Options o;
      o.planner = planner;
      const fft::Plan<double, Host> plan(shape, sharding, o);
      INFO(plan.describe());
      REQUIRE(all_ok(from_root(plan.describe()) == plan.describe()));
      check_c2c(plan, shape, sharding, 91);
      const fft::RealPlan<float, Host> rplan(shape, sharding, o);
      const auto xr = fft_test::random_array<float, Host>(shape, sharding, 92);
      const auto gxr = process_allgather(xr);
      const auto yr = rplan.forward(xr);
      REQUIRE(all_ok(relative_error(process_allgather(yr), Serial<float>::r2c(gxr, shape)) < 1e-5));
      REQUIRE(all_ok(relative_error(process_allgather(rplan.backward(yr)), gxr) < 1e-5));
    }
  }
  fft::forget_wisdom();
}

// One stage of a describe() text: its strategies and which candidate lines and notes follow it.
struct DescribedStage {
  std::string forward, backward;
  bool forward_times = false, backward_times = false, as_forward = false;
};

std::vector<DescribedStage> described_stages(const std::string& described) {
  std::vector<DescribedStage> out;
  std::istringstream in(described);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("  stage ", 0) == 0) {
      DescribedStage s;
      const std::size_t f = line.find(" forward ") + 9, b = line.find(", backward ") + 11;
      s.forward = line.substr(f, line.find(' ', f) - f);
      s.backward = line.substr(b, line.find(' ', b) - b);
      out.push_back(s);
    } else if (!out.empty()) {
      out.back().forward_times |= contains(line, "forward candidates");
      out.back().backward_times |= contains(line, "backward candidates");
      out.back().as_forward |= contains(line, "backward: the forward's choice");
    }
  }
  return out;
}

TEST_CASE("a measured plan's backward c2c stage takes its forward twin's choice, measured once", "[fft]") {
  // A stage whose backward local problems are the forward ones but for the sign (one device: stage 0, both read
  // the caller's array; a slab's stage 1 in the same layout, in place both ways) is measured forward only.
  const Shape shape{16, 40, 36};
  for (const Mesh& mesh : fft_test::test_meshes()) {
    const NamedSharding sharding(mesh, mesh.ndim() == 1 ? P("x") : P("r", "c"));
    fft::forget_wisdom();
    fft::Options o;
    o.planner = fft::Planner::measure;
    const fft::Plan<double, Host> plan(shape, sharding, o);
    const std::string d = plan.describe();
    INFO(d);
    REQUIRE(all_ok(from_root(d) == d));
    const std::vector<DescribedStage> stages = described_stages(d);
    REQUIRE(all_ok(!stages.empty()));
    int following = 0, fused = 0;
    for (const DescribedStage& s : stages) {
      if (s.forward == "fused") {  // a slab's second stage on one node (fft/detail/fused.hpp): nothing to measure
        ++fused;
        REQUIRE(all_ok(s.backward == "fused" && !s.forward_times && !s.backward_times));
        continue;
      }
      REQUIRE(all_ok(s.forward_times));
      if (s.as_forward) {
        ++following;
        REQUIRE(all_ok(s.backward == s.forward && !s.backward_times));
      } else {
        REQUIRE(all_ok(s.backward_times));
      }
    }
    // Stage 0 reads the caller's array forward and writes into the output backward, but for one device; the
    // later stages transform in place in both directions.
    const bool one_device = mesh.size() == 1;
    REQUIRE(all_ok(stages[0].as_forward == one_device));
    REQUIRE(all_ok(following + fused == (one_device ? 1 : static_cast<int>(stages.size()) - 1)));
    check_c2c(plan, shape, sharding, 93);
  }
  fft::forget_wisdom();
}

}  // namespace
