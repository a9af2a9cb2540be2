// The MPI backend of Transport: exchange() on an MPI communicator (Alltoallv or chunked Isend/Irecv, see
// exchange.hpp). The world transport uses the library communicator; its groups come from the process_group cache.
#pragma once

#include <mpi.h>

#include <memory>
#include <vector>

#include "darray/comm/exchange.hpp"
#include "darray/comm/group.hpp"
#include "darray/comm/transport.hpp"
#include "darray/runtime/detail/mpi.hpp"
#include "darray/runtime/detail/state.hpp"

namespace darray {

class MpiTransport final : public Transport {
 public:
  // A transport over comm. With owned = true the communicator is freed with the transport.
  explicit MpiTransport(MPI_Comm comm, bool owned = false) : m_comm(comm), m_owned(owned) {
    DARRAY_THROW_IF(comm == MPI_COMM_NULL, InvalidArgument, "MpiTransport", "communicator is MPI_COMM_NULL");
    DARRAY_MPI_CHECK(MPI_Comm_rank(comm, &m_rank));
    DARRAY_MPI_CHECK(MPI_Comm_size(comm, &m_size));
  }
  ~MpiTransport() override {
    clear_groups();
    int finalized = 1;
    MPI_Finalized(&finalized);
    if (m_owned && !finalized && m_comm != MPI_COMM_NULL) MPI_Comm_free(&m_comm);
  }

  Backend backend() const override { return Backend::mpi; }
  int rank() const override { return m_rank; }
  int size() const override { return m_size; }
  // The communicator, for callers that need exchange_with_callback or other MPI calls on the same processes.
  MPI_Comm comm() const { return m_comm; }

 protected:
  void do_exchange(const ExchangePlan& plan, const std::byte* send, std::byte* recv, const ExchangeOptions& options,
                   GpuStream) override {
    darray::exchange(m_comm, plan, send, recv, options);
  }

  std::unique_ptr<Transport> make_group(const std::vector<int>& colors) override {
    if (m_comm == detail::world_comm()) return std::make_unique<MpiTransport>(group_comm(colors), false);
    // A group of a group: split this communicator directly (the process_group cache covers the world only).
    check_consistent(m_comm, detail::describe_colors(colors));
    MPI_Comm sub = MPI_COMM_NULL;
    DARRAY_MPI_CHECK(MPI_Comm_split(m_comm, colors[static_cast<std::size_t>(m_rank)], m_rank, &sub));
    return std::make_unique<MpiTransport>(sub, true);
  }

 private:
  MPI_Comm m_comm = MPI_COMM_NULL;
  bool m_owned = false;
  int m_rank = 0;
  int m_size = 1;
};

}  // namespace darray
