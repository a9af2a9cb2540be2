// The NCCL backend of Transport (GPU builds with DARRAY_HAS_NCCL): one NCCL communicator over all processes, built
// from a unique id that process 0 creates and MPI broadcasts; groups via ncclCommSplit; exchange() as grouped
// ncclSend/ncclRecv on the caller's stream, watched by the DARRAY_NCCL_TIMEOUT_S watchdog.
#pragma once

#include "darray/config.hpp"

#if defined(DARRAY_HAS_NCCL)

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <memory>
#include <string>
#include <vector>

#include "darray/comm/detail/exchange_layout.hpp"
#include "darray/comm/detail/nccl.hpp"
#include "darray/comm/exchange.hpp"
#include "darray/comm/limits.hpp"
#include "darray/comm/transport.hpp"
#include "darray/runtime/detail/agree.hpp"
#include "darray/runtime/detail/gpu.hpp"
#include "darray/runtime/detail/mpi.hpp"
#include "darray/runtime/detail/state.hpp"

namespace darray {

class NcclTransport final : public Transport {
 public:
  // Collective over the library communicator. Every process must see a GPU: otherwise all of them throw
  // NotSupported (the check is agreed, so nobody waits in the NCCL initialisation).
  static std::unique_ptr<NcclTransport> create_world() {
    const auto& s = detail::active_state("NcclTransport");
    const MPI_Comm world = s.comm;
    ncclUniqueId id{};
    int ordinal = -1;
    detail::run_agreed(world, [&] {
      DARRAY_THROW_IF(!s.gpu_sharing.empty(), NotSupported, "transport",
                      "the NCCL transport was requested, but " << s.gpu_sharing << detail::nccl_one_gpu_advice);
      const int visible = detail::gpu_count();
      DARRAY_THROW_IF(visible < 1, NotSupported, "transport",
                      "the NCCL transport needs a CUDA GPU, but process "
                          << s.rank
                          << " sees none (cudaGetDeviceCount "
                             "found 0); use Backend::mpi (DARRAY_BACKEND=mpi)");
      // Kokkos CUDA builds already chose this process's GPU; host builds pick by local rank like the runtime does.
      ordinal = !s.local_devices.empty() && s.local_devices[0].gpu_ordinal >= 0 ? s.local_devices[0].gpu_ordinal
                                                                                : s.local_rank % visible;
      DARRAY_CUDA_CHECK(cudaSetDevice(ordinal));
      if (s.rank == 0) DARRAY_NCCL_CHECK(ncclGetUniqueId(&id));
    });
    DARRAY_MPI_CHECK(MPI_Bcast(&id, static_cast<int>(sizeof(id)), MPI_BYTE, 0, world));
    std::unique_ptr<NcclTransport> t(new NcclTransport());
    t->m_rank = s.rank;
    t->m_size = s.size;
    t->m_device = ordinal;
    ncclConfig_t config = detail::nonblocking_nccl_config();
    detail::NcclWatchdog dog("ncclCommInitRankConfig", nccl_timeout_seconds());
    DARRAY_NCCL_CHECK_ASYNC(ncclCommInitRankConfig(&t->m_comm, s.size, id, s.rank, &config));
    dog.wait_ready(t->m_comm);
    return t;
  }

  ~NcclTransport() override {
    clear_groups();  // split communicators go before their parent
    detail::nccl_destroy_noexcept(m_comm, nccl_timeout_seconds());
  }

  Backend backend() const override { return Backend::nccl; }
  int rank() const override { return m_rank; }
  int size() const override { return m_size; }
  int cuda_device() const { return m_device; }
  ncclComm_t nccl_comm() const { return m_comm; }

 protected:
  void do_exchange(const ExchangePlan& plan, const std::byte* send, std::byte* recv, const ExchangeOptions&,
                   GpuStream stream) override {
    // Everything that can throw on bad input is checked before ncclGroupStart, so no group is left open.
    detail::validate_plan(plan, m_rank, m_size);
    detail::check_exchange_buffers(plan, send, recv);
    const int timeout = nccl_timeout_seconds();
    const auto s = static_cast<cudaStream_t>(stream);
    detail::NcclWatchdog dog("exchange (NCCL)", timeout);
    dog.poll(m_comm);  // throws if an earlier error aborted the communicator
    DARRAY_CUDA_CHECK(cudaSetDevice(m_device));
    DARRAY_NCCL_CHECK_ASYNC(ncclGroupStart());
    try {
      for (const PeerBytes& e : plan.sends)
        if (e.peer != m_rank && e.bytes > 0)
          DARRAY_NCCL_CHECK_ASYNC(ncclSend(send + e.offset, e.bytes, ncclInt8, e.peer, m_comm, s));
      for (const PeerBytes& e : plan.recvs)
        if (e.peer != m_rank && e.bytes > 0)
          DARRAY_NCCL_CHECK_ASYNC(ncclRecv(recv + e.offset, e.bytes, ncclInt8, e.peer, m_comm, s));
    } catch (...) {
      // The group must be closed; the communicator's state is unknown after a failed enqueue, so it is aborted.
      ncclGroupEnd();
      ncclCommAbort(m_comm);
      m_comm = nullptr;
      throw;
    }
    DARRAY_NCCL_CHECK_ASYNC(ncclGroupEnd());
    dog.wait_ready(m_comm);
    // Self messages: a device copy on the same stream, no NCCL.
    detail::for_each_self_pair(plan, m_rank, [&](std::size_t si, std::size_t ri) {
      const PeerBytes &a = plan.sends[si], &b = plan.recvs[ri];
      if (a.bytes > 0)
        DARRAY_CUDA_CHECK(cudaMemcpyAsync(recv + b.offset, send + a.offset, a.bytes, cudaMemcpyDefault, s));
    });
    dog.wait_stream(m_comm, s);
  }

  std::unique_ptr<Transport> make_group(const std::vector<int>& colors) override {
    check_alive("Transport::group (NCCL)");
    std::unique_ptr<NcclTransport> g(new NcclTransport());
    g->m_device = m_device;
    ncclConfig_t config = detail::nonblocking_nccl_config();
    detail::NcclWatchdog dog("ncclCommSplit", nccl_timeout_seconds());
    DARRAY_CUDA_CHECK(cudaSetDevice(m_device));
    // key = rank in this transport, so group ranks follow the same order as the MPI backend's groups.
    DARRAY_NCCL_CHECK_ASYNC(
        ncclCommSplit(m_comm, colors[static_cast<std::size_t>(m_rank)], m_rank, &g->m_comm, &config));
    dog.wait_ready(m_comm);
    dog.wait_ready(g->m_comm);
    DARRAY_NCCL_CHECK(ncclCommUserRank(g->m_comm, &g->m_rank));
    DARRAY_NCCL_CHECK(ncclCommCount(g->m_comm, &g->m_size));
    return g;
  }

 private:
  NcclTransport() = default;

  void check_alive(const char* what) const {
    if (m_comm == nullptr)
      throw NcclError(what, "the NCCL communicator was aborted by an earlier error", static_cast<int>(ncclInvalidUsage),
                      __FILE__, __LINE__);
  }

  ncclComm_t m_comm = nullptr;
  int m_rank = 0;
  int m_size = 1;
  int m_device = 0;
};

}  // namespace darray

#endif  // DARRAY_HAS_NCCL
