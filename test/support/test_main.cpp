// The shared Catch2 main of every MPI test. Starts MPI + Kokkos (through darray::Environment unless built with
// DARRAY_TEST_BARE, where tests create their own Environments), runs the session on every process, and combines
// the results: after each test case the processes agree on who failed, process 0 names them, and every process
// exits non-zero when any one failed. Processes other than 0 write their report to a file and print it only when
// they failed, so the log shows each failure once with the process that saw it.
#define CATCH_CONFIG_RUNNER
#include <mpi.h>
#include <unistd.h>

#include <Kokkos_Core.hpp>
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#ifndef DARRAY_TEST_BARE
#include "darray/runtime/environment.hpp"
#endif

namespace {

struct MpiListener : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int failed = stats.totals.assertions.failed > 0 ? 1 : 0;
    std::vector<int> all(static_cast<std::size_t>(size));
    MPI_Allgather(&failed, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
    if (rank != 0) return;
    std::ostringstream who;
    int count = 0;
    for (int p = 0; p < size; ++p)
      if (all[static_cast<std::size_t>(p)]) who << (count++ ? ", " : "") << p;
    if (count > 0)
      std::cerr << "[mpi] test case \"" << stats.testInfo.name << "\" failed on process(es) " << who.str() << " of "
                << size << "\n";
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(MpiListener)

int main(int argc, char** argv) {
  int failed = 0;
  int rank = 0, size = 1;
  {
#ifndef DARRAY_TEST_BARE
    darray::Environment env(argc, argv);
#else
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    Kokkos::initialize(argc, argv);
#endif
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    Catch::Session session;
    int rc = session.applyCommandLine(argc, argv);
    if (rc != 0) {
      failed = rc;
    } else {
      // Open MPI hands ranks a pseudo-terminal, so Catch would colour logs that end up in files.
      session.configData().useColour = Catch::UseColour::No;
      std::string report;
      if (rank != 0) {
        report = "/tmp/darray-test-" + std::to_string(getpid()) + "-p" + std::to_string(rank) + ".txt";
        session.configData().outputFilename = report;
      }
      failed = session.run();
      if (rank != 0) {
        if (failed != 0) {
          std::ifstream in(report);
          std::stringstream text;
          text << in.rdbuf();
          std::cerr << "----- report of process " << rank << " -----\n" << text.str() << std::flush;
        }
        std::remove(report.c_str());
      }
    }
    int any = 0;
    int mine = failed != 0 ? 1 : 0;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && any && !failed) std::cerr << "[mpi] failures on other processes (see their reports above)\n";
    failed = any ? 1 : 0;
#ifdef DARRAY_TEST_BARE
    Kokkos::finalize();
    MPI_Finalize();
#endif
  }
  return failed;
}
