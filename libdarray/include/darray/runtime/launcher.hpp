// Launcher detection: which launcher started this process (Slurm, Open MPI, MPICH/Hydra, PMIx) and what it says
// about rank, size and local rank. Reads only environment variables; the runtime cross-checks with MPI.
#pragma once

#include <optional>
#include <string>

#include "darray/core/env.hpp"

namespace darray {

enum class LauncherKind { none, slurm, openmpi, mpich, pmix };

inline const char* to_string(LauncherKind k) {
  switch (k) {
    case LauncherKind::slurm:
      return "slurm";
    case LauncherKind::openmpi:
      return "openmpi";
    case LauncherKind::mpich:
      return "mpich";
    case LauncherKind::pmix:
      return "pmix";
    default:
      return "none";
  }
}

struct LauncherInfo {
  LauncherKind kind = LauncherKind::none;
  int rank = -1;  // -1: the launcher did not say
  int size = -1;
  int local_rank = -1;
  int local_size = -1;
};

namespace detail {
inline int env_rank_value(const char* name) {
  const auto v = getenv_opt(name);
  if (!v) return -1;
  return static_cast<int>(parse_int(name, *v, 0, 1 << 30, "a non-negative integer set by the launcher"));
}
}  // namespace detail

// Slurm first: an srun step inside an allocation is what the user launched, even when Open MPI's or PMIx's
// variables are also present (srun --mpi=pmix sets both).
inline LauncherInfo detect_launcher() {
  using detail::env_rank_value;
  using detail::getenv_opt;
  LauncherInfo info;
  if (getenv_opt("SLURM_PROCID") && getenv_opt("SLURM_STEP_ID")) {
    info.kind = LauncherKind::slurm;
    info.rank = env_rank_value("SLURM_PROCID");
    info.size = env_rank_value("SLURM_NTASKS");
    if (info.size < 0) info.size = env_rank_value("SLURM_NPROCS");
    info.local_rank = env_rank_value("SLURM_LOCALID");
    // SLURM_TASKS_PER_NODE is a compressed list like "2(x2),1": the local size comes from MPI instead.
  } else if (getenv_opt("OMPI_COMM_WORLD_RANK")) {
    info.kind = LauncherKind::openmpi;
    info.rank = env_rank_value("OMPI_COMM_WORLD_RANK");
    info.size = env_rank_value("OMPI_COMM_WORLD_SIZE");
    info.local_rank = env_rank_value("OMPI_COMM_WORLD_LOCAL_RANK");
    info.local_size = env_rank_value("OMPI_COMM_WORLD_LOCAL_SIZE");
  } else if (getenv_opt("PMI_RANK") || getenv_opt("MPI_LOCALRANKID")) {
    info.kind = LauncherKind::mpich;
    info.rank = env_rank_value("PMI_RANK");
    info.size = env_rank_value("PMI_SIZE");
    info.local_rank = env_rank_value("MPI_LOCALRANKID");
    info.local_size = env_rank_value("MPI_LOCALNRANKS");
  } else if (getenv_opt("PMIX_RANK")) {
    info.kind = LauncherKind::pmix;
    info.rank = env_rank_value("PMIX_RANK");
    info.local_rank = env_rank_value("PMIX_LOCAL_RANK");
    info.local_size = env_rank_value("PMIX_LOCAL_SIZE");
  }
  return info;
}

}  // namespace darray
