// darray-info: what every process of a job sees — the libdarray counterpart of the device query scripts of the JAX
// cluster tutorials (print jax.devices() / jax.local_devices() per process), plus how the process was launched.
// Run it first on a new cluster or allocation:   srun -n 4 darray-info     mpirun -np 2 darray-info --json
//
// Every process formats its own lines; process 0 gathers them and prints them in process order, so the output of
// a multi-process run is never interleaved.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "darray/darray.hpp"

namespace {

// Long device lists (thousands of simulated host devices) are shortened unless --all-devices is given.
constexpr std::size_t max_listed_devices = 32;

std::string device_list(const std::vector<darray::Device>& ds, bool all) {
  std::ostringstream os;
  if (all || ds.size() <= max_listed_devices) {
    os << ds;
    return os.str();
  }
  os << "[";
  for (std::size_t i = 0; i < 4; ++i) os << ds[i] << ", ";
  os << "..., " << ds[ds.size() - 2] << ", " << ds.back() << "]";
  return os.str();
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// -1 means "the launcher did not say": null in JSON, "?" in text.
std::string json_int(int v) { return v < 0 ? "null" : std::to_string(v); }
std::string text_int(int v) { return v < 0 ? "?" : std::to_string(v); }

// SLURM_PROCID / SLURM_LOCALID / SLURM_NODEID exactly as the process received them (null when unset), so a test can
// compare them with MPI's numbering without trusting libdarray's own launcher detection.
std::string json_env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "null" : json_string(v);
}

std::string host_name() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  return std::string(name, static_cast<std::size_t>(len));
}

std::string kokkos_description() {
  std::ostringstream os;
  os << KOKKOS_VERSION / 10000 << "." << KOKKOS_VERSION / 100 % 100 << "." << KOKKOS_VERSION % 100 << " ("
     << Kokkos::DefaultExecutionSpace::name() << ")";
  return os.str();
}

std::string text_report(bool all_devices) {
  const int p = darray::process_index(), n = darray::process_count();
  const darray::LauncherInfo& l = darray::launcher();
  const auto local = darray::local_devices();
  std::ostringstream os;
  const std::string tag = "# Process " + std::to_string(p) + "/" + std::to_string(n);
  // The global table is the same on every process (it comes from one allgather): print it once.
  if (p == 0)
    os << tag << " global devices: [ " << darray::device_count() << " ] " << device_list(darray::devices(), all_devices)
       << "\n";
  os << tag << " local devices: [ " << local.size() << " ] " << device_list(local, all_devices) << "\n";
  os << tag << " host " << host_name() << ", MPI rank " << p << " local rank " << darray::local_process_index() << "/"
     << darray::local_process_count() << ", launcher " << darray::to_string(l.kind) << " rank " << text_int(l.rank)
     << " local rank " << text_int(l.local_rank) << ", backend " << darray::backend() << ", Kokkos "
     << kokkos_description();
  // The GPUs the launcher bound to this process (srun --gpus-per-task / --gpu-bind): the first thing to check when
  // processes of a node end up sharing a GPU.
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) os << ", CUDA_VISIBLE_DEVICES=" << v;
  os << "\n";
  return os.str();
}

std::string json_report() {
  const darray::LauncherInfo& l = darray::launcher();
  std::ostringstream os;
  os << "{\"process\": " << darray::process_index() << ", \"process_count\": " << darray::process_count()
     << ", \"launcher\": " << json_string(darray::to_string(l.kind)) << ", \"launcher_rank\": " << json_int(l.rank)
     << ", \"launcher_size\": " << json_int(l.size) << ", \"launcher_local_rank\": " << json_int(l.local_rank)
     << ", \"local_rank\": " << darray::local_process_index()
     << ", \"local_process_count\": " << darray::local_process_count()
     << ", \"slurm_procid\": " << json_env("SLURM_PROCID") << ", \"slurm_localid\": " << json_env("SLURM_LOCALID")
     << ", \"slurm_nodeid\": " << json_env("SLURM_NODEID")
     << ", \"cuda_visible_devices\": " << json_env("CUDA_VISIBLE_DEVICES")
     << ", \"hostname\": " << json_string(host_name())
     << ", \"backend\": " << json_string(darray::to_string(darray::backend()))
     << ", \"kokkos\": " << json_string(kokkos_description()) << ", \"local_devices\": [";
  const auto local = darray::local_devices();
  for (std::size_t i = 0; i < local.size(); ++i) {
    const darray::Device& d = local[i];
    os << (i ? ", " : "") << "{\"id\": " << d.id << ", \"kind\": " << json_string(darray::to_string(d.kind))
       << ", \"local_index\": " << d.local_index << ", \"gpu_ordinal\": " << json_int(d.gpu_ordinal) << "}";
  }
  os << "], \"global_device_count\": " << darray::device_count() << "}\n";
  return os.str();
}

// Collects every process's text on process 0, in process order. Returns the whole text there, nothing elsewhere.
std::optional<std::string> gather_to_process_0(const std::string& mine) {
  const int p = darray::process_index(), n = darray::process_count();
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(static_cast<std::size_t>(n)), offsets(static_cast<std::size_t>(n));
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  int total = 0;
  for (int i = 0; i < n; ++i) {
    offsets[static_cast<std::size_t>(i)] = total;
    total += lens[static_cast<std::size_t>(i)];
  }
  std::string all(static_cast<std::size_t>(p == 0 ? total : 0), '\0');
  MPI_Gatherv(mine.data(), len, MPI_CHAR, p == 0 ? &all[0] : nullptr, lens.data(), offsets.data(), MPI_CHAR, 0,
              MPI_COMM_WORLD);
  if (p != 0) return std::nullopt;
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"darray-info: per process, the devices libdarray sees and how the process was launched"};
  bool json = false, all_devices = false;
  app.add_flag("--json", json,
               "one JSON object per process, one per line, in process order (keys: process, process_count, launcher, "
               "launcher_rank, launcher_size, launcher_local_rank, local_rank, local_process_count, slurm_procid, "
               "slurm_localid, slurm_nodeid, cuda_visible_devices, hostname, backend, kokkos, local_devices, "
               "global_device_count)");
  app.add_flag("--all-devices", all_devices, "list every device even when there are more than 32");
  CLI11_PARSE(app, argc, argv);

  try {
    darray::Environment env(argc, argv);
    const std::string mine = json ? json_report() : text_report(all_devices);
    if (const auto all = gather_to_process_0(mine)) std::cout << *all << std::flush;
  } catch (const std::exception& e) {
    std::cerr << "darray-info: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
