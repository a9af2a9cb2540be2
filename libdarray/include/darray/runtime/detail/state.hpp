// The process-wide runtime state that Environment fills and the query functions read. Higher layers register
// cleanup (cached communicators, plans) here so it runs before MPI and Kokkos are finalised.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "darray/core/error.hpp"
#include "darray/runtime/backend.hpp"
#include "darray/runtime/device.hpp"
#include "darray/runtime/launcher.hpp"

namespace darray {
namespace detail {

struct RuntimeState {
  bool active = false;
  std::thread::id thread;         // the thread that made the Environment (its end runs the finalizers there)
  MPI_Comm comm = MPI_COMM_NULL;  // the library's private duplicate of MPI_COMM_WORLD
  int rank = 0;
  int size = 1;
  int local_rank = 0;  // from MPI_Comm_split_type(SHARED)
  int local_size = 1;
  int thread_level = 0;
  LauncherInfo launcher;
  Backend backend = Backend::mpi;
  DeviceKind device_kind = DeviceKind::cpu;
  int host_device_count = 1;
  bool consistency_checks = false;     // DARRAY_CHECK, agreed across processes at start-up
  int shutdown_timeout_s = 300;        // DARRAY_SHUTDOWN_TIMEOUT_S, this process's own
  int wait_timeout_s = 0;              // DARRAY_TIMEOUT_S, agreed across processes at start-up (the largest)
  MPI_Comm sync_comm = MPI_COMM_NULL;  // barrier's messages when wait_timeout_s > 0, apart from all other traffic
  // Per process of the job: its process id when it shares this node and single copies between the node's
  // processes work (runtime/detail/single_copy.hpp), else -1; empty when no process shares this one's node.
  std::vector<int> single_copy_pids;
  // The smallest direction (bytes) the exchange engine moves by single copy: measured at start-up where single
  // copies work, the same on the processes of a node (runtime/detail/single_copy_crossover.hpp).
  std::size_t single_copy_min_bytes = std::size_t(64) << 10;
  // GPU builds: "processes A and B drive the same GPU of their node" when two processes of a node share one GPU
  // (NCCL refuses them), the same text on every process; empty otherwise.
  std::string gpu_sharing;
  // The global table, ordered by id; shared with the meshes make_mesh builds over it (20 MiB at a million devices:
  // one table per job, not one per mesh). Null until the Environment has built it, before it sets `active`: every
  // reader goes through active_state.
  std::shared_ptr<const std::vector<Device>> devices;
  std::vector<Device> local_devices;  // this process's, ordered by local index
  std::vector<std::function<void()>> finalizers;
};

inline RuntimeState& state() {
  static RuntimeState s;
  return s;
}

inline const RuntimeState& active_state(const char* api) {
  const RuntimeState& s = state();
  DARRAY_THROW_IF(!s.active, InvalidArgument, api,
                  "no darray::Environment is active; create one first (darray::Environment env(argc, argv);)");
  return s;
}

// The job's device table itself, shared rather than copied: what make_mesh builds its mesh over. api: the caller,
// for the error when no Environment is running.
inline std::shared_ptr<const std::vector<Device>> shared_device_table(const char* api) {
  return active_state(api).devices;
}

// Counts the Environments that ended in this process: a handle cached by a long-lived object (a communicator of the
// group cache, a transport) is valid only while this count is the one it was cached under.
inline unsigned long& environment_generation() {
  static unsigned long g = 0;
  return g;
}

// A value made from the active Environment (a process group, a transport, a plan that names their ranks) and kept
// while that Environment lasts and the key it was made for stays the same: lookups that are collective the first
// time, or cost O(processes), run once per Environment and key instead of once per call.
template <class V, class Key = int>
class PerEnvironment {
 public:
  template <class Make>
  V& get(const Key& key, Make&& make) {
    if (!m_made || m_generation != environment_generation() || !(m_key == key)) {
      m_made = false;
      m_value = make();
      m_key = key;
      m_generation = environment_generation();
      m_made = true;
    }
    return m_value;
  }

 private:
  V m_value{};
  Key m_key{};
  unsigned long m_generation = 0;
  bool m_made = false;
};

// Registers cleanup to run (last registered first) when the Environment ends, before MPI_Finalize.
inline void at_finalize(std::function<void()> fn) { state().finalizers.push_back(std::move(fn)); }

inline MPI_Comm world_comm() { return active_state("world_comm").comm; }

}  // namespace detail
}  // namespace darray
