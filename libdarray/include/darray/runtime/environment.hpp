// darray::Environment: RAII start-up and shut-down of MPI, Kokkos and the device table, plus the process and
// device queries of docs/api.md. MPI and Kokkos are initialised only if the caller has not done so, and finalised
// (in reverse order) only if this Environment initialised them.
#pragma once

#include "darray/config.hpp"

#include <mpi.h>
#include <unistd.h>

#include <cstdint>
#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "darray/core/detail/huge_pages.hpp"
#include "darray/core/env.hpp"
#include "darray/core/env_vars.hpp"
#include "darray/core/error.hpp"
#include "darray/runtime/detail/agree.hpp"
#include "darray/runtime/detail/gpu.hpp"
#include "darray/runtime/detail/kokkos_compat.hpp"
#include "darray/runtime/detail/mpi.hpp"
#include "darray/runtime/detail/shutdown.hpp"
#include "darray/runtime/detail/single_copy.hpp"
#include "darray/runtime/detail/single_copy_crossover.hpp"
#include "darray/runtime/detail/state.hpp"
#include "darray/runtime/device.hpp"
#include "darray/runtime/launcher.hpp"
#include "darray/runtime/log.hpp"

namespace darray {

struct EnvironmentOptions {
  int host_device_count = 0;          // 0: from DARRAY_HOST_DEVICE_COUNT, else 1
  std::vector<int> local_device_ids;  // empty: from DARRAY_LOCAL_DEVICE_IDS, else local rank modulo visible GPUs
  std::string backend;                // "", "mpi" or "nccl" (empty: DARRAY_BACKEND, else best available)
};

namespace detail {

// Everything decided from this process's environment before any device exists. Throws on bad input.
struct LocalSetup {
  DeviceKind kind = DeviceKind::cpu;
  int device_count = 1;
  int gpu_ordinal = -1;
  std::string backend = "mpi";
  bool backend_asked = false;  // set by DARRAY_BACKEND or the options, not the default
};

// The GPU a process drives: the one ordinal the ids give (DARRAY_LOCAL_DEVICE_IDS or the options), else its
// node-local rank modulo the GPUs it sees, so the processes of a node spread over its GPUs whatever node they are on.
inline int select_gpu_ordinal(const std::vector<int>& ids, const char* ids_name, int local_rank, int visible) {
  if (ids.empty()) return local_rank % visible;
  DARRAY_THROW_IF(ids.size() != 1, NotSupported, ids_name,
                  "selects " << ids.size()
                             << " GPUs; Kokkos drives one GPU per process, so give exactly one "
                                "ordinal per process (launch one process per GPU)");
  DARRAY_THROW_IF(ids[0] >= visible, InvalidArgument, ids_name,
                  "GPU " << ids[0] << " requested but only " << visible << " GPU(s) are visible (ordinals 0.."
                         << visible - 1 << ")");
  return ids[0];
}

// "processes A and B drive the same GPU of their node" for the first such pair of the job (by rank), the same text
// on every process; empty when every process of every node has a GPU of its own. Collective over world and node.
inline std::string shared_gpu_text(MPI_Comm world, MPI_Comm node, int rank, std::uint64_t gpu) {
  int n = 0;
  DARRAY_MPI_CHECK(MPI_Comm_size(node, &n));
  std::vector<std::uint64_t> ids(static_cast<std::size_t>(n));
  std::vector<int> ranks(static_cast<std::size_t>(n));
  DARRAY_MPI_CHECK(MPI_Allgather(&gpu, 1, MPI_UINT64_T, ids.data(), 1, MPI_UINT64_T, node));
  DARRAY_MPI_CHECK(MPI_Allgather(&rank, 1, MPI_INT, ranks.data(), 1, MPI_INT, node));
  const std::pair<int, int> p = first_shared_gpu(ranks, ids);
  // The job's first pair: the smallest (first, second) over the nodes, as one 64-bit number.
  auto pair = p.first < 0 ? INT64_MAX : (static_cast<int64_t>(p.first) << 32) | static_cast<int64_t>(p.second);
  DARRAY_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &pair, 1, MPI_INT64_T, MPI_MIN, world));
  if (pair == INT64_MAX) return {};
  return "processes " + std::to_string(pair >> 32) + " and " + std::to_string(pair & 0xffffffff) +
         " drive the same GPU of their node";
}

inline LocalSetup resolve_local_setup(const EnvironmentOptions& opt, int local_rank) {
  LocalSetup s;
  // Every variable is checked, even those the options override: a malformed value is never ignored.
  for (const EnvVar& v : env_vars()) v.validate();
  if (opt.host_device_count != 0) {
    DARRAY_THROW_IF(
        opt.host_device_count < 1 || opt.host_device_count > max_host_device_count, InvalidArgument,
        "EnvironmentOptions",
        "host_device_count = " << opt.host_device_count << "; expected an integer from 1 to " << max_host_device_count);
    s.device_count = opt.host_device_count;
  } else {
    s.device_count = env_host_device_count();
  }
  std::string backend =
      opt.backend.empty() ? env_backend() : parse_choice("EnvironmentOptions.backend", opt.backend, {"mpi", "nccl"});

  std::vector<int> ids = opt.local_device_ids;
  const bool ids_from_env = ids.empty() && getenv_opt("DARRAY_LOCAL_DEVICE_IDS").has_value();
  if (ids_from_env) ids = env_local_device_ids();
  const char* ids_name = ids_from_env ? "DARRAY_LOCAL_DEVICE_IDS" : "EnvironmentOptions.local_device_ids";

  if (kokkos_uses_gpu()) {
    const int visible = gpu_count();
    DARRAY_THROW_IF(
        visible < 1, NotSupported, "Environment",
        "this build runs on GPUs (Kokkos " << kokkos_gpu_backend_name() << ") but no GPU is visible to process");
    s.kind = DeviceKind::cuda;
    s.device_count = 1;
    s.gpu_ordinal = select_gpu_ordinal(ids, ids_name, local_rank, visible);
    s.backend = backend.empty() ? (nccl_compiled() ? "nccl" : "mpi") : backend;
    s.backend_asked = !backend.empty();
  } else {
    DARRAY_THROW_IF(!ids.empty(), NotSupported, ids_name,
                    "selects GPU ordinals, but this build runs host devices only (Kokkos without a GPU backend); "
                    "use DARRAY_HOST_DEVICE_COUNT to choose the number of host devices");
    DARRAY_THROW_IF(
        backend == "nccl", NotSupported, "DARRAY_BACKEND",
        "\"nccl\" requested, but "
            << (nccl_compiled()
                    ? "this build's Kokkos has no GPU backend, so arrays live in host memory that NCCL cannot use"
                    : "libdarray was built without NCCL (DARRAY_HAS_NCCL unset)")
            << "; use \"mpi\"");
    s.backend = "mpi";
  }
  return s;
}

}  // namespace detail

class Environment {
 public:
  Environment() : Environment(nullptr, nullptr, EnvironmentOptions{}) {}
  explicit Environment(const EnvironmentOptions& options) : Environment(nullptr, nullptr, options) {}
  Environment(int& argc, char**& argv, const EnvironmentOptions& options = {}) : Environment(&argc, &argv, options) {}

  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;

  ~Environment() {
    auto& s = detail::state();
    int finalized = 0;
    MPI_Finalized(&finalized);
    // Before MPI_Finalize (which would wait forever for processes stuck in a collective this one skipped), every
    // process waits for the others to reach their end; see runtime/detail/shutdown.hpp.
    if (m_mpi_owned && s.active && s.size > 1 && !finalized) {
      const bool unwinding = std::uncaught_exceptions() > m_uncaught_at_start;
      double waited = 0;
      if (!detail::all_arrive_within(s.comm, s.shutdown_timeout_s, &waited)) {
        detail::abort_job(
            MPI_COMM_WORLD,
            detail::early_exit_message(
                s.rank, s.size,
                unwinding ? "its darray::Environment was destroyed by an exception propagating through it"
                          : "its darray::Environment ended: main returned or the Environment went out of scope",
                s.shutdown_timeout_s));
      }
      DARRAY_LOG(debug, "shutdown agreement: all processes arrived after " << waited * 1e6 << " us");
    }
    // Cached communicators and plans go first: they hold MPI and Kokkos resources.
    ++detail::environment_generation();
    while (!s.finalizers.empty()) {
      auto fn = std::move(s.finalizers.back());
      s.finalizers.pop_back();
      try {
        fn();
      } catch (...) {
      }
    }
    if (m_kokkos_owned && Kokkos::is_initialized()) Kokkos::finalize();
    if (!finalized && s.sync_comm != MPI_COMM_NULL) MPI_Comm_free(&s.sync_comm);
    if (!finalized && s.comm != MPI_COMM_NULL) MPI_Comm_free(&s.comm);
    s = detail::RuntimeState{};
    if (m_mpi_owned && !finalized) MPI_Finalize();
  }

  bool owns_mpi() const { return m_mpi_owned; }
  bool owns_kokkos() const { return m_kokkos_owned; }

 private:
  Environment(int* argc, char*** argv, const EnvironmentOptions& options) {
    auto& s = detail::state();
    DARRAY_THROW_IF(
        s.active, InvalidArgument, "Environment",
        "an Environment is already active in this process; create exactly one (usually at the top of main)");
    int initialized = 0;
    DARRAY_MPI_CHECK(MPI_Initialized(&initialized));
    if (!initialized) {
      DARRAY_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &s.thread_level));
      m_mpi_owned = true;
    } else {
      DARRAY_MPI_CHECK(MPI_Query_thread(&s.thread_level));
    }
    try {
      start(options);
    } catch (...) {
      if (s.sync_comm != MPI_COMM_NULL) MPI_Comm_free(&s.sync_comm);
      if (s.comm != MPI_COMM_NULL) MPI_Comm_free(&s.comm);
      s = detail::RuntimeState{};
      if (m_kokkos_owned && Kokkos::is_initialized()) Kokkos::finalize();
      if (m_mpi_owned) MPI_Finalize();
      throw;
    }
  }

  void start(const EnvironmentOptions& options) {
    auto& s = detail::state();
    DARRAY_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &s.comm));
    // MPI errors come back as codes and become darray::MpiError instead of aborting the job.
    DARRAY_MPI_CHECK(MPI_Comm_set_errhandler(s.comm, MPI_ERRORS_RETURN));
    DARRAY_MPI_CHECK(MPI_Comm_rank(s.comm, &s.rank));
    DARRAY_MPI_CHECK(MPI_Comm_size(s.comm, &s.size));
    detail::log_rank_ref() = s.rank;
    MPI_Comm node = MPI_COMM_NULL;
    DARRAY_MPI_CHECK(MPI_Comm_split_type(s.comm, MPI_COMM_TYPE_SHARED, s.rank, MPI_INFO_NULL, &node));
    DARRAY_MPI_CHECK(MPI_Comm_rank(node, &s.local_rank));
    DARRAY_MPI_CHECK(MPI_Comm_size(node, &s.local_size));
    struct FreeComm {
      MPI_Comm& c;
      ~FreeComm() { MPI_Comm_free(&c); }
    } free_node{node};

    // Everything read from this process's environment is checked on every process before any collective that
    // depends on it, so a malformed value on one rank fails all ranks alike.
    detail::LocalSetup setup;
    bool single_copy = false;
    detail::run_agreed(s.comm, [&] {
      detail::log_level_ref() = detail::parse_log_level();
      s.launcher = detect_launcher();
      setup = detail::resolve_local_setup(options, s.local_rank);
      s.consistency_checks = detail::env_check();
      s.shutdown_timeout_s = detail::env_shutdown_timeout_seconds();
      s.wait_timeout_s = detail::env_wait_timeout_seconds();
      single_copy = detail::env_single_copy();
    });
    if (s.rank == 0)
      for (const std::string& name : detail::unknown_env_vars(environ))
        DARRAY_LOG(warn, "environment variable " << name << " is not one libdarray reads (a typo?); known: "
                                                 << detail::known_env_var_names());
    // A check that only some processes run would itself hang: if any process asks for checks, all run them.
    int check_mine = s.consistency_checks ? 1 : 0, check_any = 0;
    DARRAY_MPI_CHECK(MPI_Allreduce(&check_mine, &check_any, 1, MPI_INT, MPI_MAX, s.comm));
    s.consistency_checks = check_any == 1;
    // Likewise the wait deadline changes how barrier() communicates: the largest value set anywhere applies.
    DARRAY_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &s.wait_timeout_s, 1, MPI_INT, MPI_MAX, s.comm));
    if (s.wait_timeout_s > 0) {
      DARRAY_MPI_CHECK(MPI_Comm_dup(s.comm, &s.sync_comm));
      DARRAY_MPI_CHECK(MPI_Comm_set_errhandler(s.sync_comm, MPI_ERRORS_RETURN));
    }
    if (s.launcher.kind != LauncherKind::none) {
      if (s.launcher.rank >= 0 && s.launcher.rank != s.rank)
        DARRAY_LOG(warn, "launcher " << to_string(s.launcher.kind) << " says rank " << s.launcher.rank
                                     << " but MPI says " << s.rank << "; using MPI's");
      if (s.launcher.local_rank >= 0 && s.launcher.local_rank != s.local_rank)
        DARRAY_LOG(warn, "launcher " << to_string(s.launcher.kind) << " says local rank " << s.launcher.local_rank
                                     << " but MPI_Comm_split_type(SHARED) says " << s.local_rank);
    }

    s.single_copy_pids = detail::probe_single_copy(s.comm, node, single_copy);
    if (!s.single_copy_pids.empty()) {
      std::vector<double> times;
      const double start = MPI_Wtime();
      s.single_copy_min_bytes = detail::measure_single_copy_min_bytes(node, &times);
      if (s.local_rank == 0)
        DARRAY_LOG(info, "single copies between this node's processes "
                             << detail::single_copy_crossover_text(s.single_copy_min_bytes, times) << ", "
                             << (MPI_Wtime() - start) * 1e3 << " ms");
    }

    detail::run_agreed(s.comm, [&] { m_kokkos_owned = detail::kokkos_initialize_if_needed(setup.gpu_ordinal); });

    // Processes of a node that drive one GPU (more processes than GPUs, or the same DARRAY_LOCAL_DEVICE_IDS): NCCL
    // refuses them ("Duplicate GPU detected"), so the default is then "mpi", and "nccl" asked for anywhere is
    // NotSupported on every process alike (every process decides from the same agreed pair).
    if (setup.kind == DeviceKind::cuda) {
      s.gpu_sharing = detail::shared_gpu_text(s.comm, node, s.rank, detail::gpu_identity(setup.gpu_ordinal));
      int asked = setup.backend_asked && setup.backend == "nccl" ? 1 : 0;
      DARRAY_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &asked, 1, MPI_INT, MPI_MAX, s.comm));
      DARRAY_THROW_IF(!s.gpu_sharing.empty() && asked == 1, NotSupported, "DARRAY_BACKEND",
                      "\"nccl\" requested, but " << s.gpu_sharing << detail::nccl_one_gpu_advice);
      if (!s.gpu_sharing.empty() && setup.backend == "nccl") {
        setup.backend = "mpi";
        if (s.rank == 0)
          DARRAY_LOG(info, s.gpu_sharing << ", so the backend is \"mpi\" (NCCL needs one GPU per process)");
      }
    }

    // Backends must agree: a mixed job cannot exchange data.
    int nccl_mine = setup.backend == "nccl" ? 1 : 0, nccl_min = 0, nccl_max = 0;
    DARRAY_MPI_CHECK(MPI_Allreduce(&nccl_mine, &nccl_min, 1, MPI_INT, MPI_MIN, s.comm));
    DARRAY_MPI_CHECK(MPI_Allreduce(&nccl_mine, &nccl_max, 1, MPI_INT, MPI_MAX, s.comm));
    DARRAY_THROW_IF(
        nccl_min != nccl_max, InvalidArgument, "Environment",
        "processes chose different backends (some \"nccl\", some \"mpi\"); set DARRAY_BACKEND alike on all");
    s.backend = parse_backend("darray::backend", setup.backend);
    s.device_kind = setup.kind;
    s.host_device_count = setup.device_count;

    // One int per process each (4 MiB at a million processes): advised storage, as the device table's (the variable
    // was checked above, on every process alike, so asking cannot throw here between two collectives).
    std::vector<int> counts = detail::filled_advised(static_cast<std::size_t>(s.size), 0);
    DARRAY_MPI_CHECK(MPI_Allgather(&setup.device_count, 1, MPI_INT, counts.data(), 1, MPI_INT, s.comm));
    std::vector<int> ordinals = detail::filled_advised(static_cast<std::size_t>(s.size), 0);
    DARRAY_MPI_CHECK(MPI_Allgather(&setup.gpu_ordinal, 1, MPI_INT, ordinals.data(), 1, MPI_INT, s.comm));
    std::vector<Device> table = make_device_table(counts, setup.kind);
    for (Device& d : table) {
      d.gpu_ordinal = setup.kind == DeviceKind::cuda ? ordinals[static_cast<std::size_t>(d.process_index)] : -1;
      if (d.process_index == s.rank) s.local_devices.push_back(d);
    }
    s.devices = std::make_shared<const std::vector<Device>>(std::move(table));
    s.thread = std::this_thread::get_id();
    s.active = true;
    DARRAY_LOG(info, "process " << s.rank << "/" << s.size << " launcher " << to_string(s.launcher.kind)
                                << " local rank " << s.local_rank << " backend " << s.backend << " devices "
                                << s.local_devices);
  }

  bool m_mpi_owned = false;
  bool m_kokkos_owned = false;
  int m_uncaught_at_start = std::uncaught_exceptions();  // more at destruction: an exception is unwinding through us
};

inline int process_index() { return detail::active_state("process_index").rank; }
inline int process_count() { return detail::active_state("process_count").size; }
inline std::vector<Device> devices() { return detail::copy_advised(*detail::active_state("devices").devices); }
inline std::vector<Device> local_devices() { return detail::active_state("local_devices").local_devices; }
inline int device_count() { return static_cast<int>(detail::active_state("device_count").devices->size()); }
inline int local_device_count() {
  return static_cast<int>(detail::active_state("local_device_count").local_devices.size());
}
// This process's rank among the processes of its node (MPI_COMM_TYPE_SHARED).
inline int local_process_index() { return detail::active_state("local_process_index").local_rank; }
inline int local_process_count() { return detail::active_state("local_process_count").local_size; }
// Backend::mpi or Backend::nccl: the transport redistribution and collectives use (agreed at start-up).
inline Backend backend() { return detail::active_state("backend").backend; }
// What the launcher's environment variables said about this process.
inline const LauncherInfo& launcher() { return detail::active_state("launcher").launcher; }

}  // namespace darray
