// Halo exchange: each device holds its block in a padded view with its neighbours' border cells around it, corners
// included. HaloExchange is built once and refreshes the halos in place every time step, one phase per dim, each
// message going only to a device within the halo width along that dim (no all-to-all). accumulate() is the reverse:
// ghost cells' values are added into the cells they stand for (a particle-mesh deposit, DMLocalToGlobal ADD_VALUES).
#pragma once

#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "darray/array/detail/block_io.hpp"
#include "darray/array/detail/blocks.hpp"
#include "darray/array/detail/box_copy.hpp"
#include "darray/array/detail/view.hpp"
#include "darray/array/distributed_array.hpp"
#include "darray/comm/check.hpp"
#include "darray/comm/limits.hpp"
#include "darray/core/error.hpp"
#include "darray/halo/detail/kernels.hpp"
#include "darray/halo/plan.hpp"
#include "darray/redistribute/detail/engine.hpp"
#include "darray/runtime/detail/kokkos_compat.hpp"
#include "darray/runtime/detail/state.hpp"
#include "darray/runtime/environment.hpp"

namespace darray {

// One device's block with its halo: data has extents index + 2 * width per dim, and the block itself starts at
// (width0, width1, ...). Cells outside the domain along open dims hold the exchange's fill value.
template <class T, int N, class M = DefaultMemorySpace>
struct PaddedShard {
  using view_type = detail::ShardView<T, N, M>;
  Device device;
  Index index;         // the block, global coordinates
  Index padded_index;  // the block widened by the widths, global coordinates (may reach outside [0, n))
  view_type data;
};

// The block of a padded shard without its halo: a strided subview of shard.data.
template <class T, int N, class M>
auto interior(const PaddedShard<T, N, M>& shard) {
  return detail::interior_impl(shard.data, shard.index, shard.padded_index, std::make_index_sequence<N>{});
}

template <class T, int N, class M = DefaultMemorySpace>
class HaloExchange {
  using Exec = typename M::execution_space;

 public:
  using shard_type = PaddedShard<T, N, M>;

  // widths[d] cells of halo on each side of dim d, boundaries[d] periodic or open; halo cells outside the domain
  // along open dims hold `fill`. A width wider than a neighbour's block (uneven or empty blocks, thin slabs) is
  // served correctly from the devices beyond it, several hops away along that dim; along a periodic dim the halo
  // may even be wider than the dim (cells repeat). Not collective (planning needs no communication).
  HaloExchange(const Shape& shape, const NamedSharding& sharding, std::vector<int64_t> widths,
               std::vector<Boundary> boundaries, const T& fill = T{})
      : m_plan(shape, sharding, std::move(widths), std::move(boundaries), process_index()), m_fill(fill) {
    DARRAY_THROW_IF(shape.size() != static_cast<std::size_t>(N), InvalidArgument, "HaloExchange",
                    "shape " << shape_to_string(shape) << " has rank " << shape.size() << "; expected rank " << N);
    const auto& devs = m_plan.local_devices();
    for (std::size_t i = 0; i < devs.size(); ++i) {
      m_slot.emplace(devs[i].id, i);
      const Index padded = m_plan.padded_index(devs[i]);
      std::array<Slice, N> box;
      std::copy(padded.begin(), padded.end(), box.begin());
      m_padded_boxes.push_back(box);
    }
    for (const HaloFill& f : m_plan.fills()) {
      const std::size_t slot = m_slot.at(f.device.id);
      const Index whole = full_index(box_shape(padded_box(slot)));
      m_fills.push_back(Fill{slot, darray::detail::box_copy_geometry(whole, whole, f.region)});
    }
    // One engine per phase; buffers are the padded blocks in local-device order, both source and destination.
    for (const HaloPhase& ph : m_plan.phases()) m_engines.push_back(phase_engine(ph, false));
    // The halo of each padded block as disjoint slabs: along dim d, the cells outside the block along d, inside it
    // along earlier dims and anywhere along later ones. accumulate() zeroes them.
    for (std::size_t slot = 0; slot < devs.size(); ++slot) {
      const Index whole = full_index(box_shape(padded_box(slot)));
      const Index block = m_plan.sharding().index(m_plan.shape(), devs[slot]);
      Index slab = whole;
      for (std::size_t d = 0; d < static_cast<std::size_t>(N); ++d) {
        const int64_t w = m_plan.widths()[d], stop = whole[d].stop;
        for (const Slice side : {Slice{0, std::min(w, stop)}, Slice{std::min(w + block[d].size(), stop), stop}}) {
          slab[d] = side;
          if (volume(slab) > 0)
            m_halo_cells.push_back(Fill{slot, darray::detail::box_copy_geometry(whole, whole, slab)});
        }
        slab[d] = Slice{w, w + block[d].size()};
      }
    }
  }

  // The same boundary along every dim.
  HaloExchange(const Shape& shape, const NamedSharding& sharding, std::vector<int64_t> widths, Boundary boundary,
               const T& fill = T{})
      : HaloExchange(shape, sharding, std::move(widths), std::vector<Boundary>(shape.size(), boundary), fill) {}

  const HaloPlan& plan() const { return m_plan; }
  const T& fill() const { return m_fill; }

  // Padded shards for this process's devices, in local-device order, every cell at the fill value.
  std::vector<shard_type> allocate() const {
    std::vector<shard_type> out;
    for (const Device& d : m_plan.local_devices()) {
      const Index padded = m_plan.padded_index(d);
      auto view =
          darray::detail::allocate_view<T, N, M>("darray::halo(" + to_string(d) + ")", box_shape(padded), false);
      Kokkos::deep_copy(view, m_fill);
      out.push_back(shard_type{d, m_plan.sharding().index(m_plan.shape(), d), padded, std::move(view)});
    }
    return out;
  }

  // Padded copies of a's shards with their halos filled. Collective.
  std::vector<shard_type> pad(const DistributedArray<T, N, M>& a) const {
    DARRAY_THROW_IF(a.shape() != m_plan.shape() || a.sharding() != m_plan.sharding(), InvalidArgument,
                    "HaloExchange::pad",
                    "array of shape " << shape_to_string(a.shape()) << " sharded as " << a.sharding()
                                      << " given to an exchange for shape " << shape_to_string(m_plan.shape())
                                      << " sharded as " << m_plan.sharding());
    auto out = allocate();
    const Exec& space = detail::default_instance<Exec>();
    if (detail::host_accessible_v<M>) detail::fence(space);  // kernels may still be writing a (see exchange())
    for (std::size_t i = 0; i < out.size(); ++i) {
      const Index region = interior_region(out[i]);
      darray::detail::copy_box_any<T, M>(a.addressable_shards()[i].data.data(), region, out[i].data.data(),
                                         full_index(box_shape(out[i].padded_index)), region, space);
    }
    exchange(out);
    return out;
  }

  // Refreshes every halo cell from the current blocks (and sets out-of-domain cells to the fill value). The shards
  // are those allocate() or pad() returned. Collective over the processes of the job.
  void exchange(const std::vector<shard_type>& shards) const {
    check(shards);
    if (consistency_checks_enabled())  // DARRAY_CHECK=1: every process runs the same exchange, or who diverged
      check_consistent(darray::detail::world_comm(), "halo exchange shape " + shape_to_string(m_plan.shape()) +
                                                         " sharding " + m_plan.sharding().to_string() + " widths " +
                                                         shape_to_string(m_plan.widths()) + " dtype " +
                                                         dtype_name<T>());
    // Where the host reads and writes the blocks (fills, copies, MPI), it waits for the kernels that may still be
    // writing them, and then for the fills (fence(): nothing for a synchronous host space). On a device the fills,
    // the engines' kernels and their copies to the host follow those kernels on the same instance, and the engines
    // fence before MPI reads device memory.
    const Exec& space = detail::default_instance<Exec>();
    if (detail::host_accessible_v<M>) detail::fence(space);
    if (!m_fills.empty()) {
      for (const Fill& f : m_fills) detail::fill_region(space, shards[f.slot].data.data(), f.geometry, m_fill);
      if (detail::host_accessible_v<M>) detail::fence(space);  // the phases send cells next to the ones the fills wrote
    }
    set_buffers(shards);
    // Phase after phase: a later dim's pieces carry the corners an earlier phase filled.
    for (const auto& engine : m_engines) engine->run<T, M>(m_src, m_dst, m_buffers);
  }

  // The reverse of exchange(): every halo cell's value is added into the cell of the domain it stands for (wrapped
  // along periodic dims, on whichever device's block holds it, its own block included), halo cells outside the
  // domain along open dims are dropped, and then every halo cell is set to T{}, so a deposit into the padded shards
  // can be accumulated again next step. The adjoint of exchange() with fill T{}: <exchange(x), y> = <x,
  // accumulate(y)>. The phases of exchange() run in reverse order with sources and destinations swapped, which
  // carries corner cells home through the edges. Collective over the processes of the job.
  void accumulate(const std::vector<shard_type>& shards) const {
    static_assert(darray::detail::addable_v<T>, "HaloExchange::accumulate adds elements: T needs +=");
    check(shards);
    if (consistency_checks_enabled())
      check_consistent(darray::detail::world_comm(), "halo accumulate shape " + shape_to_string(m_plan.shape()) +
                                                         " sharding " + m_plan.sharding().to_string() + " widths " +
                                                         shape_to_string(m_plan.widths()) + " dtype " +
                                                         dtype_name<T>());
    if (m_reverse_engines.empty() && !m_plan.phases().empty())  // built on first use: many programs never call it
      for (auto it = m_plan.phases().rbegin(); it != m_plan.phases().rend(); ++it)
        m_reverse_engines.push_back(phase_engine(*it, true));
    const Exec& space = detail::default_instance<Exec>();
    if (detail::host_accessible_v<M>) detail::fence(space);  // kernels may still be writing the halos (see exchange())
    set_buffers(shards);
    for (const auto& engine : m_reverse_engines) engine->run<T, M>(m_src, m_dst, m_buffers);
    for (const Fill& f : m_halo_cells) detail::fill_region(space, shards[f.slot].data.data(), f.geometry, T{});
    detail::fence(space);
  }

  // The blocks of padded shards as a DistributedArray (a copy without the halos), e.g. to gather or save them.
  DistributedArray<T, N, M> unpad(const std::vector<shard_type>& shards) const {
    check(shards);
    const auto devs = darray::detail::process_device_blocks(m_plan.sharding(), m_plan.shape(), process_index());
    auto out = darray::detail::allocate_shards<T, N, M>(devs, /*initialize=*/false);
    const Exec& space = detail::default_instance<Exec>();
    detail::fence(space);  // kernels may still be writing the padded blocks
    for (std::size_t i = 0; i < out.size(); ++i) {
      const Index region = interior_region(shards[i]);
      darray::detail::copy_box_any<T, M>(shards[i].data.data(), full_index(box_shape(shards[i].padded_index)),
                                         out[i].data.data(), region, region, space);
    }
    detail::fence(space);
    return darray::detail::adopt_shards<T, N, M>(m_plan.shape(), m_plan.sharding(), std::move(out));
  }

 private:
  // The block inside the padded coordinates: [w, w + block size) per dim.
  static Index interior_region(const shard_type& s) {
    Index r(s.index.size());
    for (std::size_t k = 0; k < r.size(); ++k) {
      const int64_t w = s.index[k].start - s.padded_index[k].start;
      r[k] = Slice{w, w + s.index[k].size()};
    }
    return r;
  }

  void set_buffers(const std::vector<shard_type>& shards) const {
    m_src.resize(shards.size());
    m_dst.resize(shards.size());
    for (std::size_t k = 0; k < shards.size(); ++k) {
      m_src[k] = shards[k].data.data();
      m_dst[k] = shards[k].data.data();
    }
  }

  // The engine of one phase. Forward: each piece copied from its source block's cells into the destination's halo.
  // Reverse (accumulate): the destination's halo cells added into the source block's cells, sends and receives
  // swapped (each side derives the same pieces in the same order, so the k-th move still matches the peer's k-th).
  std::shared_ptr<const darray::detail::MoveEngine> phase_engine(const HaloPhase& ph, bool reverse) const {
    darray::detail::MoveList list;
    std::vector<int64_t> arguments(m_plan.widths());  // the widths, boundaries and phase every process states alike
    for (const Boundary b : m_plan.boundaries()) arguments.push_back(static_cast<int64_t>(b));
    arguments.push_back(ph.dim);
    list.operation =
        darray::detail::operation_fingerprint(m_plan.sharding(), m_plan.sharding(), m_plan.shape(), arguments);
    auto src_region = [&](const HaloPiece& p) {
      return darray::detail::row_major_region(static_cast<int>(m_slot.at(p.src.id)), p.src_frame, p.region);
    };
    auto dst_region = [&](const HaloPiece& p) {
      return darray::detail::row_major_region(static_cast<int>(m_slot.at(p.dst.id)),
                                              full_index(box_shape(m_plan.padded_index(p.dst))), p.region);
    };
    for (const HaloPiece& p : ph.local)
      list.local.push_back(reverse ? darray::detail::make_move(p.region, dst_region(p), src_region(p))
                                   : darray::detail::make_move(p.region, src_region(p), dst_region(p)));
    for (const HaloPeer& peer : ph.sends)
      for (const HaloPiece& p : peer.pieces)
        darray::detail::add_peer_move(reverse ? list.recvs : list.sends, peer.process,
                                      reverse ? darray::detail::make_move(p.region, {}, src_region(p))
                                              : darray::detail::make_move(p.region, src_region(p), {}));
    for (const HaloPeer& peer : ph.recvs)
      for (const HaloPiece& p : peer.pieces)
        darray::detail::add_peer_move(reverse ? list.sends : list.recvs, peer.process,
                                      reverse ? darray::detail::make_move(p.region, dst_region(p), {})
                                              : darray::detail::make_move(p.region, {}, dst_region(p)));
    if (!reverse)
      return std::make_shared<const darray::detail::MoveEngine>(std::move(list), sizeof(T), "halo exchange");
    return std::make_shared<const darray::detail::MoveEngine>(std::move(list), sizeof(T), "halo accumulate",
                                                              darray::detail::CopyOp::add);
  }

  Index padded_box(std::size_t slot) const { return Index(m_padded_boxes[slot].begin(), m_padded_boxes[slot].end()); }

  void check(const std::vector<shard_type>& shards) const {
    const auto& devs = m_plan.local_devices();
    DARRAY_THROW_IF(shards.size() != devs.size(), InvalidArgument, "HaloExchange",
                    "got " << shards.size() << " padded shards but this process has " << devs.size()
                           << " devices in the mesh; pass the shards allocate() or pad() returned");
    for (std::size_t i = 0; i < shards.size(); ++i) {
      const std::array<Slice, N>& padded = m_padded_boxes[i];
      const Index& got = shards[i].padded_index;
      bool fits = shards[i].device.id == devs[i].id && got.size() == static_cast<std::size_t>(N);
      for (int d = 0; fits && d < N; ++d) {
        const Slice& want = padded[static_cast<std::size_t>(d)];
        fits = got[static_cast<std::size_t>(d)] == want &&
               static_cast<int64_t>(shards[i].data.extent(static_cast<unsigned>(d))) == want.size();
      }
      DARRAY_THROW_IF(!fits, InvalidArgument, "HaloExchange",
                      "padded shard " << i << " is for " << shards[i].device << " with padded box "
                                      << shards[i].padded_index << "; this exchange expects " << devs[i]
                                      << " with padded box " << padded_box(i));
    }
  }

  HaloPlan m_plan;
  T m_fill;
  // A region of a padded block outside the domain, set to the fill value on every exchange.
  struct Fill {
    std::size_t slot;                       // the block's position in local-device order
    darray::detail::CopyGeometry geometry;  // its destination side: the region in the padded block
  };

  std::unordered_map<int, std::size_t> m_slot;  // device id -> position in local-device order
  // The padded box of each local device, in one array each: check() compares them on every exchange, so they should
  // not cost a load per Index.
  std::vector<std::array<Slice, N>> m_padded_boxes;
  std::vector<Fill> m_fills;
  std::vector<Fill> m_halo_cells;       // every halo cell of each padded block, as disjoint slabs
  mutable std::vector<const T*> m_src;  // the blocks' pointers, kept so that an exchange allocates nothing
  mutable std::vector<T*> m_dst;
  std::vector<std::shared_ptr<const darray::detail::MoveEngine>> m_engines;                  // one per phase
  mutable std::vector<std::shared_ptr<const darray::detail::MoveEngine>> m_reverse_engines;  // accumulate's
  mutable darray::detail::EngineBuffers<T, M> m_buffers;  // staging of the device path
};

// One-shot: a's blocks padded by `widths` with their neighbours' cells (corners included). Collective. For a time
// loop, build a HaloExchange once and call exchange() on its padded shards every step instead.
template <class T, int N, class M>
std::vector<PaddedShard<T, N, M>> halo_exchange(const DistributedArray<T, N, M>& a, std::vector<int64_t> widths,
                                                std::vector<Boundary> boundaries, const T& fill = T{}) {
  return HaloExchange<T, N, M>(a.shape(), a.sharding(), std::move(widths), std::move(boundaries), fill).pad(a);
}

template <class T, int N, class M>
std::vector<PaddedShard<T, N, M>> halo_exchange(const DistributedArray<T, N, M>& a, std::vector<int64_t> widths,
                                                Boundary boundary, const T& fill = T{}) {
  return halo_exchange(a, std::move(widths), std::vector<Boundary>(static_cast<std::size_t>(N), boundary), fill);
}

}  // namespace darray
