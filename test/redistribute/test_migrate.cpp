// RaggedArray and migrate at 1-4 processes x 1-4 host devices: random particle sets, each row (id, origin device,
// payload...) built from its id alone, so every process can rebuild every device's rows and compute what each of its
// devices must hold afterwards: exactly the rows sent to it, grouped by source device id ascending and in their
// original order within a source. Particles go to the device owning their cell of a sharded grid, to random devices,
// all to one device; row widths 1 and 7; zero-row devices; the device-memory path; errors named alike everywhere.
#include <catch2/catch.hpp>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "darray/darray.hpp"
#include "mpi_test.hpp"
#include "random_layouts.hpp"
#include "split_sizes.hpp"

using namespace darray;
using darray::testing::all_ok;

namespace {

// A particle's values: 0: id, 1: origin device id, 2 and 3: position in [0, 1)^2, then payload.
template <class T>
std::vector<T> particle(int64_t id, int origin, int64_t width) {
  std::vector<T> row(static_cast<std::size_t>(width));
  std::mt19937_64 rng(static_cast<uint64_t>(id) * 7919u + 13u);
  for (int64_t k = 0; k < width; ++k) {
    T v = static_cast<T>(rng() % 1000) / static_cast<T>(1000);
    if (k == 0) v = static_cast<T>(id);
    if (k == 1) v = static_cast<T>(origin);
    row[static_cast<std::size_t>(k)] = v;
  }
  return row;
}

// Rows of device d: a count from 0 to max_rows (0 for about one device in four), ids unique across devices.
template <class T>
std::vector<std::vector<T>> device_rows(uint64_t seed, const Device& d, int64_t width, int64_t max_rows) {
  std::mt19937_64 rng(seed + static_cast<uint64_t>(d.id) * 1000003u);
  const int64_t n = rng() % 4 == 0 ? 0 : static_cast<int64_t>(rng() % static_cast<uint64_t>(max_rows + 1));
  std::vector<std::vector<T>> rows;
  for (int64_t i = 0; i < n; ++i) rows.push_back(particle<T>(int64_t(d.id) * 1000000 + i, d.id, width));
  return rows;
}

template <class T>
RaggedArray<T> make_particles(const Mesh& mesh, uint64_t seed, int64_t width, int64_t max_rows) {
  std::vector<typename RaggedArray<T>::view_type> views;
  const RaggedArray<T> empty(mesh, width);
  for (const Device& d : empty.local_devices()) {
    const auto rows = device_rows<T>(seed, d, width, max_rows);
    typename RaggedArray<T>::view_type v("particles", rows.size(), static_cast<std::size_t>(width));
    auto host = Kokkos::create_mirror_view(v);
    for (std::size_t i = 0; i < rows.size(); ++i)
      for (int64_t k = 0; k < width; ++k) host(i, static_cast<std::size_t>(k)) = rows[i][static_cast<std::size_t>(k)];
    Kokkos::deep_copy(v, host);
    views.push_back(v);
  }
  return RaggedArray<T>(mesh, width, views);
}

// Every local device holds exactly the rows `dest` sends it, grouped by source id ascending, in source order.
template <class T>
bool arrived_ok(const RaggedArray<T>& out, uint64_t seed, int64_t max_rows, const std::function<int(const T*)>& dest,
                std::string& why) {
  const Mesh& mesh = out.mesh();
  std::vector<Device> sources = mesh.devices();
  std::sort(sources.begin(), sources.end(), [](const Device& a, const Device& b) { return a.id < b.id; });
  for (std::size_t t = 0; t < out.local_devices().size(); ++t) {
    const Device& me = out.local_devices()[t];
    std::vector<std::vector<T>> want;
    for (const Device& s : sources)
      for (const auto& row : device_rows<T>(seed, s, out.row_width(), max_rows))
        if (dest(row.data()) == me.id) want.push_back(row);
    const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out.local_rows()[t]);
    std::ostringstream os;
    if (host.extent(0) != want.size() || static_cast<int64_t>(host.extent(1)) != out.row_width()) {
      os << me << " holds " << host.extent(0) << " rows of " << host.extent(1) << "; expected " << want.size() << " of "
         << out.row_width();
      why = os.str();
      return false;
    }
    for (std::size_t i = 0; i < want.size(); ++i)
      for (int64_t k = 0; k < out.row_width(); ++k)
        if (host(i, static_cast<std::size_t>(k)) != want[i][static_cast<std::size_t>(k)]) {
          os << me << " row " << i << " value " << k << ": got " << host(i, static_cast<std::size_t>(k))
             << ", expected " << want[i][static_cast<std::size_t>(k)];
          why = os.str();
          return false;
        }
  }
  return true;
}

// Builds particles, migrates them with `dest`, checks every device and the global count.
template <class T>
void migrate_case(const Mesh& mesh, uint64_t seed, int64_t width, int64_t max_rows,
                  const std::function<int(const T*)>& dest) {
  const auto a = make_particles<T>(mesh, seed, width, max_rows);
  const auto b = migrate(a, dest);
  REQUIRE(all_ok(b.row_width() == width && b.local_devices() == a.local_devices()));
  std::string why;
  const bool ok = arrived_ok<T>(b, seed, max_rows, dest, why);
  INFO(why);
  REQUIRE(all_ok(ok));
  const int64_t after = b.global_row_count(), before = a.global_row_count();
  REQUIRE(all_ok(after == before));
}

// Rows a little larger than the forced split limit so messages are cut (test_migrate_split).
int64_t max_rows_for(int64_t width, std::size_t bytes) {
  return 40 + darray::testing::split_extent(1, static_cast<std::size_t>(width) * bytes, 3.0 * device_count());
}

TEST_CASE("particles go to the device that owns their cell of a sharded grid", "[migrate]") {
  std::mt19937_64 rng(11);
  for (int k = 0; k < 8; ++k) {
    const Mesh mesh = darray::testing::random_mesh(rng, devices(), 2, true, 'x');
    // A 2-D grid of cells sharded over both axes, so every cell has exactly one owner.
    const Shape cells{static_cast<int64_t>(1 + rng() % 9), static_cast<int64_t>(1 + rng() % 9)};
    const NamedSharding grid(mesh, rng() % 2 ? P("x", "y") : P("y", "x"));
    const auto boxes = grid.devices_indices_map(cells);
    const std::function<int(const double*)> owner = [&](const double* row) {
      const auto i = static_cast<int64_t>(row[2] * static_cast<double>(cells[0]));
      const auto j = static_cast<int64_t>(row[3] * static_cast<double>(cells[1]));
      for (const auto& [dev, box] : boxes)
        if (i >= box[0].start && i < box[0].stop && j >= box[1].start && j < box[1].stop) return dev.id;
      return -1;
    };
    INFO(grid << " cells " << shape_to_string(cells));
    migrate_case<double>(mesh, rng(), 7, max_rows_for(7, sizeof(double)), owner);
  }
}

TEST_CASE("random destinations, row widths 1 and 7, zero-row devices", "[migrate]") {
  std::mt19937_64 rng(12);
  for (int k = 0; k < 8; ++k) {
    const Mesh mesh = darray::testing::random_mesh(rng, devices(), 0, true);
    const auto& devs = mesh.devices();
    const uint64_t salt = rng();
    const std::function<int(const double*)> random7 = [&](const double* row) {
      return devs[(static_cast<uint64_t>(row[0]) * 2654435761u + salt) % devs.size()].id;
    };
    migrate_case<double>(mesh, rng(), 7, max_rows_for(7, sizeof(double)), random7);
    const std::function<int(const int64_t*)> random1 = [&](const int64_t* row) {
      return devs[(static_cast<uint64_t>(row[0]) * 40503u + salt) % devs.size()].id;
    };
    migrate_case<int64_t>(mesh, rng(), 1, max_rows_for(1, sizeof(int64_t)), random1);
    // Nobody moves: every row stays on its origin.
    const std::function<int(const double*)> stay = [](const double* row) { return static_cast<int>(row[1]); };
    migrate_case<double>(mesh, rng(), 7, 30, stay);
  }
}

TEST_CASE("destinations in runs: most rows stay, or move in blocks, to local and remote devices", "[migrate]") {
  // Runs of one destination are counted and copied run by run; rows bound for other processes go
  // through a send buffer holding only them.
  std::mt19937_64 rng(14);
  for (int k = 0; k < 6; ++k) {
    const Mesh mesh = darray::testing::random_mesh(rng, devices(), 0, true);
    const auto& devs = mesh.devices();
    const uint64_t salt = rng();
    const int64_t block = 4 + static_cast<int64_t>(rng() % 40);
    // Blocks of `block` consecutive rows of a device share a destination.
    const std::function<int(const double*)> blocks = [&](const double* row) {
      const auto id = static_cast<uint64_t>(row[0]);
      return devs[((id % 1000000) / static_cast<uint64_t>(block) * 2654435761u + id / 1000000 + salt) % devs.size()].id;
    };
    migrate_case<double>(mesh, rng(), 7, max_rows_for(7, sizeof(double)), blocks);
    // One row in 50 leaves for a random device, the others stay: long runs with short breaks.
    const auto few = [&](const auto* row) {
      const auto id = static_cast<uint64_t>(row[0]);
      if ((id * 40503u + salt) % 50 != 0) return static_cast<int>(row[1]);
      return devs[(id * 2654435761u + salt) % devs.size()].id;
    };
    migrate_case<double>(mesh, rng(), 8, max_rows_for(8, sizeof(double)), few);
    migrate_case<float>(mesh, rng(), 3, 300, few);
  }
}

TEST_CASE("destinations whose runs end partway: long runs then scattered rows, and the reverse", "[migrate]") {
  // The count goes run by run while the runs are long and row by row from where they prove short; the scatter then
  // takes the whole chunk row by row. Both orders, with the switch at varying rows.
  std::mt19937_64 rng(15);
  for (int k = 0; k < 6; ++k) {
    const Mesh mesh = darray::testing::random_mesh(rng, devices(), 0, true);
    const auto& devs = mesh.devices();
    const uint64_t salt = rng();
    const auto cut = static_cast<uint64_t>(rng() % 200);
    for (const bool runs_first : {true, false}) {
      const std::function<int(const double*)> mixed = [&](const double* row) {
        const auto id = static_cast<uint64_t>(row[0]);
        if ((id % 1000000 < cut) == runs_first) return static_cast<int>(row[1]);
        return devs[(id * 2654435761u + salt) % devs.size()].id;
      };
      INFO("first " << cut << " rows " << (runs_first ? "stay" : "scatter"));
      migrate_case<double>(mesh, rng(), 7, 400, mixed);
    }
  }
}

TEST_CASE("all rows to one device, and a mesh of some devices only", "[migrate]") {
  const Mesh all = make_mesh({device_count()}, {"x"});
  const int last = device_count() - 1;
  migrate_case<double>(all, 5, 7, max_rows_for(7, sizeof(double)), [&](const double*) { return last; });
  // A mesh of device 0 alone: the other processes hold nothing and still take part.
  const Mesh one({devices()[0]}, {1}, {"x"});
  migrate_case<double>(one, 6, 3, 50, [](const double*) { return 0; });
  // Width 0: rows without values still arrive, counted.
  const auto a = make_particles<double>(all, 7, 0, 20);
  const auto b = migrate(a, [](const double*) { return 0; });
  const int64_t after = b.global_row_count(), before = a.global_row_count();
  REQUIRE(all_ok(after == before));
  const int64_t total = a.global_row_count();  // collective: never inside a condition on the process
  const int64_t expect = process_index() == 0 ? total : 0;
  REQUIRE(all_ok(b.local_row_count() == expect));
}

TEST_CASE("destinations as views, and the device-memory path of the engine", "[migrate]") {
  std::mt19937_64 rng(13);
  const darray::detail::StageAsIfOnDevice device_path;
  for (int k = 0; k < 4; ++k) {
    const Mesh mesh = darray::testing::random_mesh(rng, devices(), 0, true);
    const auto& devs = mesh.devices();
    const uint64_t seed = rng(), salt = rng();
    const int64_t max_rows = max_rows_for(7, sizeof(double));
    const std::function<int(const double*)> f = [&](const double* row) {
      return devs[(static_cast<uint64_t>(row[0]) * 97u + salt) % devs.size()].id;
    };
    const auto a = make_particles<double>(mesh, seed, 7, max_rows);
    std::vector<Kokkos::View<const int*, DefaultMemorySpace>> dest;
    for (const auto& rows : a.local_rows()) {
      Kokkos::View<int*, DefaultMemorySpace> d("dest", rows.extent(0));
      auto host = Kokkos::create_mirror_view(d);
      const auto r = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), rows);
      for (std::size_t i = 0; i < r.extent(0); ++i) host(i) = f(&r(i, 0));
      Kokkos::deep_copy(d, host);
      dest.push_back(d);
    }
    const auto b = migrate(a, dest);
    std::string why;
    const bool ok = arrived_ok<double>(b, seed, max_rows, f, why);
    INFO(why);
    REQUIRE(all_ok(ok));
  }
}

TEST_CASE("RaggedArray: counts, views, and bad construction", "[migrate]") {
  const Mesh mesh = make_mesh({device_count()}, {"x"});
  const RaggedArray<float> empty(mesh, 4);
  const int64_t none = empty.global_row_count();
  REQUIRE(all_ok(empty.local_row_count() == 0 && none == 0 && empty.row_width() == 4));
  REQUIRE(all_ok(empty.local_rows().size() == static_cast<std::size_t>(local_device_count()) &&
                 empty.local_devices() == local_devices() && empty.mesh() == mesh));
  const auto a = make_particles<float>(mesh, 3, 5, 10);
  int64_t mine = 0;
  for (const Device& d : local_devices()) mine += static_cast<int64_t>(device_rows<float>(3, d, 5, 10).size());
  int64_t total = 0;
  for (const Device& d : devices()) total += static_cast<int64_t>(device_rows<float>(3, d, 5, 10).size());
  const int64_t global = a.global_row_count();
  REQUIRE(all_ok(a.local_row_count() == mine && global == total));
  using V = RaggedArray<float>::view_type;
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, RaggedArray<float>(mesh, 4, std::vector<V>(a.local_rows().size() + 1)),
                            "views given but this process has", "expected one view per local device");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, RaggedArray<float>(mesh, 4, a.local_rows()), "rows of 5 values",
                            "expected row_width 4");
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, RaggedArray<float>(mesh, -1), "row_width -1");
}

TEST_CASE("invalid destinations and mismatched dest vectors: the same error on every process", "[migrate]") {
  const Mesh mesh = make_mesh({device_count()}, {"x"});
  const int n = device_count();
  // Only the last device's rows go astray: row 3 of 6 (rows counted one by one) or row 33 of 60 (inside a run of
  // one destination, counted run by run) names -1, or a device beyond the mesh.
  for (const auto& [rows, bad_row] : {std::pair<std::size_t, double>{6, 3.0}, std::pair<std::size_t, double>{60, 33.0}})
    for (const int bad : {-1, n + 5}) {
      const auto a = make_particles<double>(mesh, 21, 7, 0);  // all zero rows ...
      std::vector<RaggedArray<double>::view_type> views;
      for (const Device& d : a.local_devices()) {
        RaggedArray<double>::view_type v("p", rows, 7);
        auto host = Kokkos::create_mirror_view(v);
        for (std::size_t i = 0; i < rows; ++i) {
          host(i, 0) = static_cast<double>(i);
          host(i, 1) = static_cast<double>(d.id);
        }
        Kokkos::deep_copy(v, host);
        views.push_back(v);
      }
      const RaggedArray<double> p(mesh, 7, views);
      const auto f = [&, bad_row = bad_row](const double* row) {
        return static_cast<int>(row[1]) == n - 1 && row[0] >= bad_row && row[0] < bad_row + 2 ? bad : 0;
      };
      std::string msg = darray::testing::error_message<InvalidArgument>([&] { (void)migrate(p, f); });
      INFO(msg);
      std::ostringstream want;
      want << "row " << bad_row << " of device " << n - 1 << " has destination " << bad
           << ", which is not a device of the mesh";
      REQUIRE(all_ok(msg.find(want.str()) != std::string::npos &&
                     msg.find("0.." + std::to_string(n - 1)) != std::string::npos));
      REQUIRE(darray::testing::same_on_all(msg));
    }
  // A dest vector of the wrong size on process 0 only, and one of the wrong length.
  const auto a = make_particles<double>(mesh, 22, 7, 10);
  std::vector<Kokkos::View<const int*, DefaultMemorySpace>> dest;
  for (const auto& rows : a.local_rows()) {
    Kokkos::View<int*, DefaultMemorySpace> d("dest", rows.extent(0));
    Kokkos::deep_copy(d, 0);
    dest.push_back(d);
  }
  auto more = dest;
  if (process_index() == 0) more.push_back(Kokkos::View<const int*, DefaultMemorySpace>());
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, migrate(a, more), "destination views given but the array has",
                            "expected one view per local device");
  auto shorter = dest;
  if (process_index() == process_count() - 1)
    shorter.back() = Kokkos::View<int*, DefaultMemorySpace>("short", a.local_rows().back().extent(0) + 1);
  DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, migrate(a, shorter), "entries but it holds",
                            "expected one destination per row");
  // Every process still works afterwards.
  const int64_t after = migrate(a, dest).global_row_count(), before = a.global_row_count();
  REQUIRE(all_ok(after == before));
}

}  // namespace

// Run only by test_migrate_check (DARRAY_CHECK=1): a process migrating rows of another width is named everywhere.
TEST_CASE("DARRAY_CHECK=1: a process migrating another row width is named on every process", "[.check]") {
  REQUIRE(all_ok(consistency_checks_enabled()));
  const Mesh mesh = make_mesh({device_count()}, {"x"});
  const int64_t width = process_index() == process_count() - 1 ? 3 : 2;
  const RaggedArray<double> a(mesh, width);
  if (process_count() > 1)
    DARRAY_REQUIRE_THROWS_ALL(InvalidArgument, migrate(a, [](const double*) { return 0; }), "processes disagree",
                              "migrate row_width");
  else
    REQUIRE_NOTHROW(migrate(a, [](const double*) { return 0; }));
}
