// The transport interface the redistribute and collectives layers program against: a set of processes that can
// run an ExchangePlan, and cached sub-transports for process groups. Backends: MPI (always) and NCCL (GPU builds).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "darray/comm/exchange_plan.hpp"
#include "darray/core/env.hpp"
#include "darray/core/error.hpp"
#include "darray/runtime/backend.hpp"

// cudaStream_t is `CUstream_st*`; naming the struct keeps CUDA headers out of host-only builds.
struct CUstream_st;

namespace darray {

// A CUDA stream (cudaStream_t), or nullptr for the default stream. Ignored by the MPI backend.
using GpuStream = ::CUstream_st*;

class Transport {
 public:
  Transport() = default;
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;
  virtual ~Transport() = default;

  virtual Backend backend() const = 0;
  virtual int rank() const = 0;  // this process's rank among the transport's processes
  virtual int size() const = 0;

  // Collective over the transport's processes: moves the plan's byte ranges (peers are ranks of this transport).
  // MPI: host buffers, options select the method. NCCL: device buffers, ordered on `stream`; returns once the
  // stream has finished the transfer, so recv is ready for any stream.
  void exchange(const ExchangePlan& plan, const std::byte* send, std::byte* recv, const ExchangeOptions& options = {},
                GpuStream stream = nullptr) {
    do_exchange(plan, send, recv, options, stream);
  }

  // The transport of this process's group, one color per process of this transport (identical on every process):
  // this transport itself when every process has the same color. Otherwise collective over this transport the
  // first time a partition is seen, cached afterwards (colors are relabelled by
  // first appearance, so equal partitions share one sub-transport). Valid as long as this transport.
  Transport& group(const std::vector<int>& color_of_process) {
    DARRAY_THROW_IF(static_cast<int>(color_of_process.size()) != size(), InvalidArgument, "Transport::group",
                    "got " << color_of_process.size() << " colors; expected one per process (" << size() << ")");
    std::map<int, int> relabel;
    std::vector<int> key(color_of_process.size());
    for (std::size_t p = 0; p < key.size(); ++p) {
      DARRAY_THROW_IF(color_of_process[p] < 0, InvalidArgument, "Transport::group",
                      "color " << color_of_process[p] << " for process " << p << "; expected 0 or more");
      key[p] = relabel.emplace(color_of_process[p], static_cast<int>(relabel.size())).first->second;
    }
    // One color: the group is every process of this transport, which is itself (nothing to create: a creation is
    // collective and has no deadline, so a process absent from a first use would hold the others there).
    if (relabel.size() <= 1) return *this;
    auto it = m_groups.find(key);
    if (it == m_groups.end()) {
      std::unique_ptr<Transport> g = make_group(key);
      it = m_groups.emplace(std::move(key), std::move(g)).first;
    }
    return *it->second;
  }

 protected:
  virtual void do_exchange(const ExchangePlan& plan, const std::byte* send, std::byte* recv,
                           const ExchangeOptions& options, GpuStream stream) = 0;
  // Builds the sub-transport for canonical colors (0, 1, ... by first appearance).
  virtual std::unique_ptr<Transport> make_group(const std::vector<int>& canonical_colors) = 0;
  // Backends whose groups must go before their own resources call this first in their destructor.
  void clear_groups() { m_groups.clear(); }

 private:
  std::map<std::vector<int>, std::unique_ptr<Transport>> m_groups;
};

}  // namespace darray
