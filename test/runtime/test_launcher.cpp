#include <catch2/catch.hpp>
#include <cstdlib>
#include <map>
#include <string>

#include "darray/runtime/launcher.hpp"

namespace {
// Sets variables for one scope and restores the previous environment afterwards.
struct ScopedEnv {
  std::map<std::string, std::optional<std::string>> saved;
  void set(const std::string& k, const char* v) {
    if (!saved.count(k)) saved[k] = darray::detail::getenv_opt(k.c_str());
    if (v)
      ::setenv(k.c_str(), v, 1);
    else
      ::unsetenv(k.c_str());
  }
  ~ScopedEnv() {
    for (auto& [k, v] : saved) {
      if (v)
        ::setenv(k.c_str(), v->c_str(), 1);
      else
        ::unsetenv(k.c_str());
    }
  }
};
const char* all_vars[] = {"SLURM_PROCID",
                          "SLURM_STEP_ID",
                          "SLURM_NTASKS",
                          "SLURM_NPROCS",
                          "SLURM_LOCALID",
                          "OMPI_COMM_WORLD_RANK",
                          "OMPI_COMM_WORLD_SIZE",
                          "OMPI_COMM_WORLD_LOCAL_RANK",
                          "OMPI_COMM_WORLD_LOCAL_SIZE",
                          "PMI_RANK",
                          "PMI_SIZE",
                          "MPI_LOCALRANKID",
                          "MPI_LOCALNRANKS",
                          "PMIX_RANK",
                          "PMIX_LOCAL_RANK",
                          "PMIX_LOCAL_SIZE"};
void clear(ScopedEnv& e) {
  for (const char* v : all_vars) e.set(v, nullptr);
}
}  // namespace

TEST_CASE("launcher detection: Slurm wins over Open MPI and PMIx variables") {
  ScopedEnv e;
  clear(e);
  e.set("SLURM_PROCID", "3");
  e.set("SLURM_STEP_ID", "0");
  e.set("SLURM_NTASKS", "4");
  e.set("SLURM_LOCALID", "1");
  e.set("OMPI_COMM_WORLD_RANK", "0");
  e.set("PMIX_RANK", "3");
  const auto l = darray::detect_launcher();
  CHECK(l.kind == darray::LauncherKind::slurm);
  CHECK(l.rank == 3);
  CHECK(l.size == 4);
  CHECK(l.local_rank == 1);
}

TEST_CASE("launcher detection: Open MPI, MPICH/Hydra, PMIx, none") {
  ScopedEnv e;
  clear(e);
  CHECK(darray::detect_launcher().kind == darray::LauncherKind::none);
  e.set("PMIX_RANK", "2");
  CHECK(darray::detect_launcher().kind == darray::LauncherKind::pmix);
  CHECK(darray::detect_launcher().rank == 2);
  e.set("PMI_RANK", "5");
  e.set("PMI_SIZE", "8");
  e.set("MPI_LOCALRANKID", "1");
  auto l = darray::detect_launcher();
  CHECK(l.kind == darray::LauncherKind::mpich);
  CHECK(l.size == 8);
  CHECK(l.local_rank == 1);
  e.set("OMPI_COMM_WORLD_RANK", "1");
  e.set("OMPI_COMM_WORLD_SIZE", "2");
  e.set("OMPI_COMM_WORLD_LOCAL_RANK", "1");
  l = darray::detect_launcher();
  CHECK(l.kind == darray::LauncherKind::openmpi);
  CHECK(l.rank == 1);
  // SLURM_PROCID outside a step (salloc shell) is not a Slurm launch.
  e.set("SLURM_PROCID", "0");
  CHECK(darray::detect_launcher().kind == darray::LauncherKind::openmpi);
}

TEST_CASE("launcher detection rejects malformed launcher variables") {
  ScopedEnv e;
  clear(e);
  e.set("OMPI_COMM_WORLD_RANK", "one");
  CHECK_THROWS_WITH(darray::detect_launcher(), Catch::Contains("OMPI_COMM_WORLD_RANK") && Catch::Contains("\"one\""));
}
