// darray-shard: plan a sharding offline. For a mesh, a PartitionSpec and a global shape it prints each device's
// index box, shard shape and replica id, then the picture visualize_sharding draws:
//   darray-shard --mesh 4x2 --axes a,b --spec "a,b" --shape 128x128
//   darray-shard --mesh 2x4 --axes x,y --spec "P(None, ('x', 'y'))" --shape 1000x10 --processes 2 --gpu
// It needs no MPI launch: the devices are simulated with make_device_table and no Environment is created, so it
// runs on a login node. Bad flags print one line on stderr and exit with status 2.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "darray/core/env.hpp"
#include "darray/core/error.hpp"
#include "darray/core/index.hpp"
#include "darray/core/partition.hpp"
#include "darray/redistribute/plan.hpp"
#include "darray/runtime/device.hpp"
#include "darray/sharding/mesh.hpp"
#include "darray/sharding/named_sharding.hpp"
#include "darray/sharding/partition_spec.hpp"
#include "darray/sharding/visualize.hpp"

namespace {

constexpr int bad_usage = 2;
// The device table is materialised, one entry per device: beyond this a mesh is more likely a typo than a plan.
constexpr int64_t max_devices = int64_t(1) << 20;

// "4x2", "4,2" or "(4, 2)" -> {4, 2}; "()" -> {} when allow_scalar (a rank-0 array).
std::vector<int64_t> parse_dims(const std::string& flag, const std::string& text, int64_t min, bool allow_scalar) {
  const std::string accepted = "integers >= " + std::to_string(min) + " separated by 'x', e.g. " +
                               (min > 0 ? "4x2" : "128x64") + (allow_scalar ? " (\"()\" for a rank-0 array)" : "");
  std::string t = darray::detail::trim(text);
  if (t.size() >= 2 && t.front() == '(' && t.back() == ')') t = darray::detail::trim(t.substr(1, t.size() - 2));
  if (t.empty() && allow_scalar && darray::detail::trim(text) == "()") return {};
  for (char& c : t)
    if (c == ',') c = 'x';
  std::vector<int64_t> dims;
  try {
    for (const std::string& part : darray::detail::split(t, 'x'))
      dims.push_back(darray::detail::parse_int(flag, part, min, INT64_MAX, accepted));
  } catch (const darray::InvalidArgument&) {
    // Name the whole value, not just the piece that failed.
    DARRAY_THROW(InvalidArgument, flag, "invalid value \"" << text << "\"; expected " << accepted);
  }
  return dims;
}

// "a,b" -> {"a", "b"}; names may be quoted as in Python: "'a', 'b'".
std::vector<std::string> parse_names(const std::string& text) {
  std::vector<std::string> names;
  for (std::string part : darray::detail::split(text, ',')) {
    part = darray::detail::trim(part);
    if (part.size() >= 2 && (part.front() == '\'' || part.front() == '"') && part.back() == part.front())
      part = part.substr(1, part.size() - 2);
    names.push_back(part);
  }
  return names;
}

// The plan of a reshard to `to`, built offline for every process: per device the bytes it keeps (moved within its
// process), sends and receives across processes, and its peer processes.
void print_reshard_plan(const darray::NamedSharding& from, const darray::NamedSharding& to,
                        const std::vector<int64_t>& shape, int processes, std::size_t itemsize) {
  struct Traffic {
    int64_t kept = 0, sent = 0, received = 0;
    std::set<int> peers;
  };
  std::map<int, Traffic> per_device;
  bool sub_communicator = false;
  std::vector<std::string> moving;
  int64_t kept = 0, crossing = 0;
  const auto eb = static_cast<int64_t>(itemsize);
  for (int p = 0; p < processes; ++p) {
    const darray::ReshardPlan plan(from, to, shape, itemsize, p);
    sub_communicator = plan.stats().sub_communicator;
    moving = plan.stats().moving_axes;
    for (const auto& piece : plan.local_pieces()) {
      per_device[piece.dst.id].kept += piece.elements() * eb;
      kept += piece.elements() * eb;
    }
    for (const auto& peer : plan.sends())
      for (const auto& piece : peer.pieces) {
        per_device[piece.src.id].sent += piece.elements() * eb;
        per_device[piece.src.id].peers.insert(peer.process);
        crossing += piece.elements() * eb;
      }
    for (const auto& peer : plan.recvs())
      for (const auto& piece : peer.pieces) {
        per_device[piece.dst.id].received += piece.elements() * eb;
        per_device[piece.dst.id].peers.insert(peer.process);
      }
  }
  std::string axes;
  for (const auto& a : moving) axes += (axes.empty() ? "" : ", ") + a;
  std::cout << "\nreshard to " << to.spec() << " (" << itemsize << "-byte elements)\n"
            << "moving mesh axes: " << (axes.empty() ? "none" : axes) << "; exchange on "
            << (sub_communicator ? "mesh-axis-group sub-communicators" : "the whole job's communicator") << "\n\n"
            << std::flush;
  std::printf("%-11s %-8s %14s %14s %14s %6s\n", "device", "process", "kept[B]", "sent[B]", "received[B]", "peers");
  for (const darray::Device& d : from.mesh().devices()) {
    const Traffic& t = per_device[d.id];
    std::printf("%-11s %-8d %14lld %14lld %14lld %6zu\n", darray::to_string(d).c_str(), d.process_index,
                static_cast<long long>(t.kept), static_cast<long long>(t.sent), static_cast<long long>(t.received),
                t.peers.size());
  }
  std::cout << "total: " << kept << " bytes kept within processes, " << crossing << " bytes cross processes\n";
}

int run(const std::string& mesh_text, const std::string& axes_text, const std::string& spec_text,
        const std::string& shape_text, int processes, bool gpu, const darray::VisualizeOptions& picture,
        const std::string& to_text, std::size_t itemsize) {
  const std::vector<int64_t> mesh_shape = parse_dims("--mesh", mesh_text, 1, false);
  const std::vector<int64_t> shape = parse_dims("--shape", shape_text, 0, true);
  int64_t device_count = 1;
  for (int64_t n : mesh_shape)
    if (__builtin_mul_overflow(device_count, n, &device_count) || device_count > max_devices) device_count = INT64_MAX;
  DARRAY_THROW_IF(device_count > max_devices, InvalidArgument, "--mesh",
                  "mesh \"" << mesh_text << "\" has more than " << max_devices << " devices; expected at most that");
  DARRAY_THROW_IF(picture.max_width < 1, InvalidArgument, "--width", picture.max_width << "; expected >= 1");
  DARRAY_THROW_IF(picture.height < 1, InvalidArgument, "--height", picture.height << "; expected >= 1");
  DARRAY_THROW_IF(processes < 1 || processes > device_count, InvalidArgument, "--processes",
                  processes << " processes for " << device_count << " devices; expected 1 to " << device_count
                            << " (each process owns at least one device)");
  // Devices spread over the processes as evenly as possible, the first processes taking one more.
  std::vector<int> counts;
  for (int p = 0; p < processes; ++p)
    counts.push_back(static_cast<int>(darray::block_size(device_count, processes, p)));
  const darray::Mesh mesh(darray::make_device_table(counts, gpu ? darray::DeviceKind::cuda : darray::DeviceKind::cpu),
                          mesh_shape, parse_names(axes_text));
  const darray::NamedSharding sharding(mesh, darray::PartitionSpec::parse(spec_text));
  sharding.check_shape(shape);
  // The target is checked before anything is printed, so a bad --to leaves stdout empty.
  std::optional<darray::NamedSharding> to;
  if (!to_text.empty()) {
    DARRAY_THROW_IF(itemsize < 1, InvalidArgument, "--itemsize", itemsize << "; expected bytes per element >= 1");
    to.emplace(mesh, darray::PartitionSpec::parse(to_text));
    to->check_shape(shape);
  }

  int64_t blocks = 1;
  for (std::size_t d = 0; d < shape.size(); ++d) blocks *= sharding.num_parts(static_cast<int>(d));
  std::cout << "mesh:    " << mesh << ", " << device_count << " " << (gpu ? "cuda" : "cpu") << " devices on "
            << processes << (processes == 1 ? " process" : " processes") << "\n"
            << "spec:    " << sharding.spec() << "\n"
            << "shape:   " << darray::shape_to_string(shape) << " in " << blocks << (blocks == 1 ? " block" : " blocks")
            << " of at most " << darray::shape_to_string(sharding.shard_shape(shape)) << ", " << sharding.num_replicas()
            << (sharding.num_replicas() == 1 ? " copy" : " copies") << " each"
            << (sharding.is_fully_replicated() ? " (fully replicated)" : "") << "\n\n"
            << darray::sharding_table(sharding, shape);
  // Ranks 1 and 2 get a picture; for the others visualize_sharding would only repeat the table.
  if (shape.size() == 1 || shape.size() == 2) std::cout << "\n" << darray::visualize_sharding(sharding, shape, picture);
  if (to) print_reshard_plan(sharding, *to, shape, processes, itemsize);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "darray-shard: show how a NamedSharding lays a global array out over a device mesh, offline (no MPI "
      "launch needed). Prints each device's index box, shard shape and replica id, then a picture."};
  std::string mesh_text, axes_text, spec_text, shape_text;
  int processes = 1;
  bool gpu = false;
  darray::VisualizeOptions picture;
  std::string to_text;
  std::size_t itemsize = 8;
  app.add_option("--mesh", mesh_text, "mesh shape, sizes >= 1 separated by 'x', e.g. 4x2")->required();
  app.add_option("--axes", axes_text, "mesh axis names, one per mesh dim, comma-separated, e.g. a,b")->required();
  app.add_option("--spec", spec_text,
                 "PartitionSpec in JAX's spelling, quotes optional: \"a,b\", \"x, None, (y, z)\", "
                 "\"P('x', None, ('y', 'z'))\" (default: fully replicated)");
  app.add_option("--shape", shape_text, "global array shape, sizes >= 0 separated by 'x', e.g. 128x128; () for rank 0")
      ->required();
  app.add_option("--processes", processes,
                 "number of processes the devices are spread over, evenly, in device order (default 1)");
  app.add_flag("--gpu", gpu, "label the devices as GPUs (cuda) instead of host devices (cpu)");
  app.add_option("--width", picture.max_width, "widest picture, in characters (default 80)");
  app.add_option("--height", picture.height, "rows of text for a 2-D array's picture (default 10)");
  app.add_option("--to", to_text,
                 "plan a reshard to this PartitionSpec over the same mesh: per device the bytes kept, sent and "
                 "received, peer processes, and whether the exchange runs on mesh-axis-group sub-communicators");
  app.add_option("--itemsize", itemsize, "bytes per element for --to (default 8)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "darray-shard: error: " << e.what() << " (see --help)\n";
    return bad_usage;
  }
  try {
    return run(mesh_text, axes_text, spec_text, shape_text, processes, gpu, picture, to_text, itemsize);
  } catch (const darray::Error& e) {
    std::cerr << "darray-shard: error: " << e.api() << ": " << e.message() << "\n";
    return bad_usage;
  }
}
