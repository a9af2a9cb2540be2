// Device: one GPU, or one host device (a slice of a CPU process under a forced host device count). Global ids are
// dense and process-major. Plain value type with no MPI or Kokkos dependency, so sharding math can use it offline.
#pragma once

#include <cstddef>
#include <functional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "darray/core/detail/huge_pages.hpp"

namespace darray {

enum class DeviceKind { cpu, cuda };

inline const char* to_string(DeviceKind kind) { return kind == DeviceKind::cuda ? "cuda" : "cpu"; }

struct Device {
  int id = 0;             // global id, dense, process-major
  int process_index = 0;  // the MPI rank that owns it
  int local_index = 0;    // position among its process's devices
  DeviceKind kind = DeviceKind::cpu;
  int gpu_ordinal = -1;  // CUDA device ordinal for cuda devices, -1 for host devices

  friend bool operator==(const Device& a, const Device& b) {
    return a.id == b.id && a.process_index == b.process_index && a.local_index == b.local_index && a.kind == b.kind &&
           a.gpu_ordinal == b.gpu_ordinal;
  }
  friend bool operator!=(const Device& a, const Device& b) { return !(a == b); }
  friend bool operator<(const Device& a, const Device& b) { return a.id < b.id; }
};

// "cpu(id=3)" / "cuda(id=5)", as JAX prints devices.
inline std::ostream& operator<<(std::ostream& os, const Device& d) {
  return os << to_string(d.kind) << "(id=" << d.id << ")";
}

inline std::string to_string(const Device& d) {
  std::ostringstream os;
  os << d;
  return os.str();
}

// "[cpu(id=0), cpu(id=1)]", as JAX prints device lists.
inline std::ostream& operator<<(std::ostream& os, const std::vector<Device>& ds) {
  os << "[";
  for (std::size_t i = 0; i < ds.size(); ++i) os << (i ? ", " : "") << ds[i];
  return os << "]";
}

// Devices for a process table: counts[p] devices on process p, ids dense and process-major. Used by the runtime
// after its allgather, and by offline planners (darray-shard) that simulate a layout without MPI. A large table's
// storage is advised to huge pages before it is written (20 MiB at a million devices: detail/huge_pages.hpp).
inline std::vector<Device> make_device_table(const std::vector<int>& counts, DeviceKind kind = DeviceKind::cpu) {
  std::size_t total = 0;
  for (int c : counts) total += c > 0 ? static_cast<std::size_t>(c) : 0;
  std::vector<Device> table;
  detail::reserve_advised(table, total);
  int id = 0;
  for (std::size_t p = 0; p < counts.size(); ++p)
    for (int l = 0; l < counts[p]; ++l)
      table.push_back(Device{id++, static_cast<int>(p), l, kind, kind == DeviceKind::cuda ? l : -1});
  return table;
}

}  // namespace darray

template <>
struct std::hash<darray::Device> {
  std::size_t operator()(const darray::Device& d) const noexcept { return std::hash<int>{}(d.id); }
};
