// The transposes of a distributed FFT: a ReshardPlan's pieces executed by the exchange engine between buffers the
// FFT plan owns, whose local axis order may differ from row-major (the dim-0 stage is stored as (n1, n0, n2), as
// FFTW-MPI does, so its FFTs stride by one pencil instead of a whole plane). On the mesh-axis group's communicator
// when there is one. Host memory: every remote piece travels straight between the blocks as an MPI datatype built
// once per plan; device memory: pack kernels, NCCL (or MPI), unpack kernels, with staging kept by the FFT plan.
#pragma once

#include <Kokkos_Core.hpp>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "darray/array/detail/strided_copy.hpp"
#include "darray/core/index.hpp"
#include "darray/redistribute/detail/engine.hpp"
#include "darray/redistribute/detail/reshard_moves.hpp"
#include "darray/redistribute/plan.hpp"
#include "darray/redistribute/reshard.hpp"
#include "darray/runtime/detail/kokkos_compat.hpp"
#include "darray/runtime/environment.hpp"

namespace darray {
namespace fft {
namespace detail {

using AxisOrder = std::array<int, 3>;  // global dims from outermost to innermost in memory
inline constexpr AxisOrder row_major_order{0, 1, 2};

// Element strides of each global dim for a block of extents `box` stored in `order`.
inline std::array<int64_t, 3> layout_strides(const Index& box, const AxisOrder& order) {
  std::array<int64_t, 3> strides{};
  int64_t s = 1;
  for (int k = 2; k >= 0; --k) {
    const auto d = static_cast<std::size_t>(order[static_cast<std::size_t>(k)]);
    strides[d] = s;
    s *= box[d].size();
  }
  return strides;
}

// The box's extents in memory order.
inline Shape memory_extents(const Index& box, const AxisOrder& order) {
  return {box[static_cast<std::size_t>(order[0])].size(), box[static_cast<std::size_t>(order[1])].size(),
          box[static_cast<std::size_t>(order[2])].size()};
}

// The copy of `region` between two blocks of the global array, each stored in its own axis order.
inline darray::detail::CopyGeometry copy_geometry(const Index& src_box, const AxisOrder& src_order,
                                                  const Index& dst_box, const AxisOrder& dst_order,
                                                  const Index& region) {
  darray::detail::CopyGeometry g;
  g.rank = 3;
  const auto ss = layout_strides(src_box, src_order), ds = layout_strides(dst_box, dst_order);
  for (std::size_t d = 0; d < 3; ++d) {
    g.extent[d] = region[d].size();
    g.src_stride[d] = ss[d];
    g.dst_stride[d] = ds[d];
    g.src_offset += (region[d].start - src_box[d].start) * ss[d];
    g.dst_offset += (region[d].start - dst_box[d].start) * ds[d];
  }
  return g;
}

// A set of per-device blocks: what a transpose reads or writes. ptrs follow the local devices of the mesh in
// local-device order (the order of a DistributedArray's addressable shards).
template <class T>
struct Blocks {
  std::vector<T*> ptrs;
  AxisOrder order = row_major_order;
};

// Send and receive buffers, shared by all transposes of one FFT plan (they run one at a time); grown on demand.
template <class T, class M>
using Staging = darray::detail::EngineBuffers<T, M>;

// One ReshardPlan executed between Blocks of the plan's source and destination shardings, in the given axis orders.
// `role`: which of its FFT plan's transposes it is (direction and step), mixed into its messages' fingerprint: the
// forward and backward transforms run transposes between the same shardings, so a process calling forward() while
// another calls backward() is an error rather than blocks exchanged at different stages. Collective over the
// processes of the job.
template <class T, class M>
class Transpose {
 public:
  Transpose(std::shared_ptr<const ReshardPlan> plan, AxisOrder src_order, AxisOrder dst_order, int64_t role = 0)
      : m_plan(std::move(plan)), m_src_order(src_order), m_dst_order(dst_order) {
    auto layout = [](const AxisOrder& order) {
      return [order](const Index& box, int64_t* strides) {
        const auto s = layout_strides(box, order);
        for (std::size_t d = 0; d < 3; ++d) strides[d] = s[d];
      };
    };
    darray::detail::ReshardMoves moves = darray::detail::reshard_moves(*m_plan, layout(src_order), layout(dst_order));
    std::size_t operation = static_cast<std::size_t>(moves.list.operation);
    darray::detail::hash_combine(operation, std::hash<int64_t>{}(role));
    moves.list.operation = operation;
    m_engine = std::make_unique<darray::detail::MoveEngine>(std::move(moves.list), sizeof(T), "fft transpose");
  }

  const AxisOrder& src_order() const { return m_src_order; }
  const AxisOrder& dst_order() const { return m_dst_order; }
  int64_t send_elements() const { return m_engine->send_elements(); }
  int64_t recv_elements() const { return m_engine->recv_elements(); }

  // src and dst: this process's blocks of the mesh in local-device order.
  void run(const std::vector<const T*>& src, const std::vector<T*>& dst, Staging<T, M>& staging) const {
    m_engine->run<T, M>(src, dst, staging);
  }

 private:
  std::shared_ptr<const ReshardPlan> m_plan;
  AxisOrder m_src_order, m_dst_order;
  std::unique_ptr<darray::detail::MoveEngine> m_engine;
};

// A local copy between two layouts of the same sharding (no communication): each device's block, reordered.
template <class T, class M>
void reorder(const std::vector<Index>& boxes, const Blocks<T>& src, const Blocks<T>& dst) {
  const auto& space = darray::detail::default_instance<typename M::execution_space>();
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    const darray::detail::CopyGeometry g = copy_geometry(boxes[i], src.order, boxes[i], dst.order, boxes[i]);
    darray::detail::strided_copy<T, M>(space, src.ptrs[i], dst.ptrs[i], g);
  }
  darray::detail::fence(space);
}

}  // namespace detail
}  // namespace fft
}  // namespace darray
