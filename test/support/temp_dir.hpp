// A directory /tmp/<prefix>-<pid of process 0>-<n> that exists on every process while the object lives: created by
// process 0 before a barrier, removed by it after one. Collective to create and to destroy.
#pragma once

#include <mpi.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "mpi_test.hpp"

namespace darray {
namespace testing {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "darray-test") {
    static int counter = 0;
    long long pid = static_cast<long long>(getpid());
    MPI_Bcast(&pid, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    m_path = "/tmp/" + prefix + "-" + std::to_string(pid) + "-" + std::to_string(counter++);
    if (world_rank() == 0) {
      std::filesystem::remove_all(m_path);
      std::filesystem::create_directories(m_path);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == 0) {
      std::error_code ec;
      std::filesystem::remove_all(m_path, ec);
    }
  }
  std::string file(const std::string& name) const { return m_path + "/" + name; }
  const std::string& path() const { return m_path; }

 private:
  std::string m_path;
};

}  // namespace testing
}  // namespace darray
