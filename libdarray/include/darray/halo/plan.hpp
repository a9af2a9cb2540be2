// HaloPlan: which cells every device of one process receives from which device to fill the halo of its padded
// block, dim after dim, plus the out-of-domain cells to set to the fill value. Built from replicated metadata only
// (no communication), so sender and receiver derive the same pieces; usable offline for any process.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "darray/core/error.hpp"
#include "darray/core/index.hpp"
#include "darray/core/partition.hpp"
#include "darray/runtime/device.hpp"
#include "darray/sharding/named_sharding.hpp"

namespace darray {

// What lies beyond the edge of a dim: the other end of the domain, or nothing (halo cells keep the fill value).
enum class Boundary { periodic, open };

inline const char* to_string(Boundary b) { return b == Boundary::periodic ? "periodic" : "open"; }
inline std::ostream& operator<<(std::ostream& os, Boundary b) { return os << to_string(b); }

// One box of cells copied from a source device's padded block into a destination device's padded block.
struct HaloPiece {
  Device src;
  Device dst;
  Index region;     // the cells, in the destination's padded coordinates (0 = its first halo cell)
  Index src_frame;  // the source's whole padded block placed in those same coordinates (region lies inside it)
  int64_t elements() const { return volume(region); }
};

// All pieces between this process and one peer process in one phase, in the order both sides derive.
struct HaloPeer {
  int process = -1;
  std::vector<HaloPiece> pieces;
  int64_t elements = 0;
};

// The exchange along one dim: pieces inside this process, and those sent to / received from each peer process.
struct HaloPhase {
  int dim = 0;
  std::vector<HaloPiece> local;
  std::vector<HaloPeer> sends;
  std::vector<HaloPeer> recvs;
};

// Cells of a padded block outside the domain along an open dim: they hold the fill value.
struct HaloFill {
  Device device;
  Index region;  // padded coordinates
};

class HaloPlan {
 public:
  // widths[d] halo cells on each side of dim d; boundaries[d] periodic or open. A width may exceed a neighbour's
  // block: the halo then takes cells from the next devices along that dim as well (several hops, still only the
  // devices within `width` cells), and along a periodic dim it may even exceed the dim (cells repeat; the plan
  // then grows with log(width), not width).
  HaloPlan(Shape shape, NamedSharding sharding, std::vector<int64_t> widths, std::vector<Boundary> boundaries,
           int process)
      : m_shape(std::move(shape)),
        m_sharding(std::move(sharding)),
        m_widths(std::move(widths)),
        m_boundaries(std::move(boundaries)),
        m_process(process) {
    validate();
    // This process's devices only (a lookup in the Mesh), not a scan of the whole mesh.
    const Mesh& mesh = m_sharding.mesh();
    for (const int64_t pos : mesh.process_positions(m_process))
      m_local_devices.push_back(mesh.devices()[static_cast<std::size_t>(pos)]);
    std::sort(m_local_devices.begin(), m_local_devices.end(),
              [](const Device& a, const Device& b) { return a.local_index < b.local_index; });
    for (std::size_t d = 0; d < m_shape.size(); ++d) {
      if (m_widths[d] == 0) continue;
      m_phases.push_back(build_phase(static_cast<int>(d)));
      add_period_phases(static_cast<int>(d));
    }
    build_fills();
  }

  const Shape& shape() const { return m_shape; }
  const NamedSharding& sharding() const { return m_sharding; }
  const std::vector<int64_t>& widths() const { return m_widths; }
  const std::vector<Boundary>& boundaries() const { return m_boundaries; }
  int process() const { return m_process; }
  // This process's devices of the mesh, in local-device order (the order of addressable shards).
  const std::vector<Device>& local_devices() const { return m_local_devices; }
  // One phase per dim with a non-zero width, in dim order: each copies the halos already filled in earlier dims
  // along with the block, so corner cells arrive without diagonal messages. A periodic dim whose width w exceeds its
  // extent n exchanges only the n cells next to each block; then ceil(log2(w / n)) local phases double the filled
  // part by copying whole periods inside each padded block, so the plan stays O(log w) however wide the halo.
  const std::vector<HaloPhase>& phases() const { return m_phases; }
  const std::vector<HaloFill>& fills() const { return m_fills; }

  // The device's block widened by the halo widths, in global coordinates (may reach below 0 or beyond the shape).
  Index padded_index(const Device& d) const {
    Index box = m_sharding.index(m_shape, d);
    for (std::size_t k = 0; k < box.size(); ++k) box[k] = Slice{box[k].start - m_widths[k], box[k].stop + m_widths[k]};
    return box;
  }

 private:
  void validate() const {
    const std::size_t n = m_shape.size();
    m_sharding.check_shape(m_shape);
    DARRAY_THROW_IF(m_widths.size() != n, InvalidArgument, "halo",
                    m_widths.size() << " halo widths given for a rank-" << n << " array of shape "
                                    << shape_to_string(m_shape) << "; expected one width per dim");
    DARRAY_THROW_IF(m_boundaries.size() != n, InvalidArgument, "halo",
                    m_boundaries.size() << " boundaries given for a rank-" << n << " array of shape "
                                        << shape_to_string(m_shape) << "; expected one per dim");
    for (std::size_t d = 0; d < n; ++d) {
      DARRAY_THROW_IF(m_widths[d] < 0, InvalidArgument, "halo",
                      "halo width " << m_widths[d] << " for dim " << d << "; expected 0 or more");
      DARRAY_THROW_IF(m_widths[d] > 0 && m_shape[d] == 0 && m_boundaries[d] == Boundary::periodic, InvalidArgument,
                      "halo",
                      "dim " << d << " is periodic with extent 0, so it has no cells for a halo of width "
                             << m_widths[d] << "; use width 0 or an open boundary");
    }
  }

  // The device at `d`'s mesh coordinates, except that its coordinates along dim's axes make part `part`.
  Device with_part(const Device& d, int dim, int64_t part) const {
    const Mesh& mesh = m_sharding.mesh();
    int64_t pos = mesh.position(d);
    const auto& spec = m_sharding.spec();
    if (static_cast<std::size_t>(dim) >= spec.size()) return d;
    const auto& axes = spec[static_cast<std::size_t>(dim)];
    int64_t rest = part;
    for (std::size_t k = axes.size(); k-- > 0;) {
      const auto a = static_cast<std::size_t>(mesh.axis_position(axes[k]));
      const int64_t size = mesh.shape()[a];
      pos += (rest % size - mesh.coord(pos, static_cast<int>(a))) * mesh.strides()[a];
      rest /= size;
    }
    return mesh.devices()[static_cast<std::size_t>(pos)];
  }

  // The pieces device `dst` receives in the phase of `dim`: its halo cells on both sides of dim, spanning the
  // padded extent of earlier dims and the block of later ones, each cell from the device whose block holds it.
  std::vector<HaloPiece> receive_pieces(const Device& dst, int dim) const {
    std::vector<HaloPiece> out;
    const auto dd = static_cast<std::size_t>(dim);
    const Index block = m_sharding.index(m_shape, dst);
    Index region(m_shape.size());
    for (std::size_t k = 0; k < m_shape.size(); ++k) {
      const int64_t w = m_widths[k];
      // Padded coordinates: global x sits at x - (block.start - w).
      region[k] = k < dd ? Slice{0, block[k].size() + 2 * w} : Slice{w, w + block[k].size()};
      if (k != dd && region[k].empty()) return out;
    }
    const int64_t n = m_shape[dd], parts = m_sharding.num_parts(dim), w = m_widths[dd];
    const int64_t origin = block[dd].start - w;  // global coordinate of padded cell 0 along dim
    const bool periodic = m_boundaries[dd] == Boundary::periodic;
    // Along a periodic dim only the nearest period is exchanged; add_period_phases repeats it locally.
    const int64_t e = periodic ? std::min(w, n) : w;
    for (const Slice halo : {Slice{block[dd].start - e, block[dd].start}, Slice{block[dd].stop, block[dd].stop + e}}) {
      int64_t x = halo.start;
      while (x < halo.stop) {
        if (!periodic && x < 0) {  // below the domain: fill
          x = std::min<int64_t>(0, halo.stop);
          continue;
        }
        if (!periodic && x >= n) break;  // beyond the domain: fill
        const int64_t wrapped = ((x % n) + n) % n;
        const int64_t part = block_owner(n, parts, wrapped);
        const Slice owner = block_slice(n, parts, part);
        const int64_t len = std::min(halo.stop - x, owner.stop - wrapped);
        HaloPiece piece;
        piece.src = with_part(dst, dim, part);
        piece.dst = dst;
        piece.region = region;
        piece.region[dd] = Slice{x - origin, x - origin + len};
        // The source's padded block in the destination's coordinates: equal offsets in every other dim (both
        // hold the same block there); along dim its padded cell 0 is global owner.start - w, which sits at
        // (x - wrapped) + owner.start - w - origin here.
        piece.src_frame.resize(m_shape.size());
        for (std::size_t k = 0; k < m_shape.size(); ++k)
          piece.src_frame[k] = Slice{0, block[k].size() + 2 * m_widths[k]};
        const int64_t shift = (x - wrapped) + owner.start - w - origin;
        piece.src_frame[dd] = Slice{shift, shift + owner.size() + 2 * w};
        out.push_back(std::move(piece));
        x += len;
      }
    }
    return out;
  }

  // Periodic dim with width w > extent n: after build_phase filled the n cells on each side of every block, each
  // phase here copies the f cells filled so far on each side (f = n, 2n, 4n, ...; always whole periods, so a cell
  // and its copy hold the same global cell) to the next f cells outwards, inside the same padded block. One phase
  // per doubling, since a step reads what the one before wrote.
  void add_period_phases(int dim) {
    const auto dd = static_cast<std::size_t>(dim);
    const int64_t n = m_shape[dd], w = m_widths[dd];
    if (m_boundaries[dd] != Boundary::periodic || w <= n) return;
    for (int64_t f = n; f < w; f = std::min(w, 2 * f)) {
      const int64_t len = std::min(w, 2 * f) - f;  // cells this step fills on each side
      HaloPhase phase;
      phase.dim = dim;
      for (const Device& dev : m_local_devices) {
        const Index block = m_sharding.index(m_shape, dev);
        Index frame(m_shape.size()), region(m_shape.size());
        bool empty = false;
        for (std::size_t k = 0; k < m_shape.size(); ++k) {
          frame[k] = Slice{0, block[k].size() + 2 * m_widths[k]};
          region[k] = k < dd ? frame[k] : Slice{m_widths[k], m_widths[k] + block[k].size()};
          empty = empty || (k != dd && region[k].empty());
        }
        if (empty) continue;
        // Left: padded cells [w - f - len, w - f) from f cells to their right. Right: the mirror image.
        const int64_t right = w + block[dd].size() + f;
        for (const auto& [start, shift] : {std::pair<int64_t, int64_t>{w - f - len, -f}, {right, f}}) {
          HaloPiece piece{dev, dev, region, frame};
          piece.region[dd] = Slice{start, start + len};
          piece.src_frame[dd] = Slice{shift, shift + frame[dd].size()};
          phase.local.push_back(std::move(piece));
        }
      }
      m_phases.push_back(std::move(phase));
    }
  }

  HaloPhase build_phase(int dim) const {
    HaloPhase phase;
    phase.dim = dim;
    std::map<int, HaloPeer> sends, recvs;
    auto add = [](std::map<int, HaloPeer>& peers, int process, HaloPiece&& p) {
      HaloPeer& peer = peers[process];
      peer.process = process;
      peer.elements += p.elements();
      peer.pieces.push_back(std::move(p));
    };
    for (const Device& dst : m_local_devices)
      for (HaloPiece& p : receive_pieces(dst, dim)) {
        if (p.src.process_index == m_process)
          phase.local.push_back(std::move(p));
        else
          add(recvs, p.src.process_index, std::move(p));
      }
    // Sends: the devices that differ from a local device only along dim's axes and draw cells from it.
    const int64_t parts = m_sharding.num_parts(dim);
    for (const Device& src : m_local_devices)
      for (int64_t q = 0; q < parts; ++q) {
        const Device dst = with_part(src, dim, q);
        if (dst.process_index == m_process) continue;
        for (HaloPiece& p : receive_pieces(dst, dim))
          if (p.src.id == src.id) add(sends, dst.process_index, std::move(p));
      }
    // Canonical order, identical on both sides: by destination, source, then position along dim.
    const auto dd = static_cast<std::size_t>(dim);
    auto order = [dd](const HaloPiece& a, const HaloPiece& b) {
      if (a.dst.id != b.dst.id) return a.dst.id < b.dst.id;
      if (a.src.id != b.src.id) return a.src.id < b.src.id;
      return a.region[dd].start < b.region[dd].start;
    };
    for (auto* peers : {&sends, &recvs})
      for (auto& [process, peer] : *peers) {
        std::sort(peer.pieces.begin(), peer.pieces.end(), order);
        (peers == &sends ? phase.sends : phase.recvs).push_back(std::move(peer));
      }
    std::sort(phase.local.begin(), phase.local.end(), order);
    return phase;
  }

  void build_fills() {
    for (const Device& dev : m_local_devices) {
      const Index block = m_sharding.index(m_shape, dev);
      Index padded(m_shape.size());
      for (std::size_t k = 0; k < m_shape.size(); ++k) padded[k] = Slice{0, block[k].size() + 2 * m_widths[k]};
      if (volume(padded) == 0) continue;
      for (std::size_t d = 0; d < m_shape.size(); ++d) {
        if (m_boundaries[d] != Boundary::open || m_widths[d] == 0) continue;
        const int64_t origin = block[d].start - m_widths[d];
        const int64_t below = std::min(-origin, padded[d].stop);          // cells with x < 0
        const int64_t above = std::max<int64_t>(m_shape[d] - origin, 0);  // first cell with x >= n
        if (below > 0) {
          Index r = padded;
          r[d] = Slice{0, below};
          m_fills.push_back(HaloFill{dev, std::move(r)});
        }
        if (above < padded[d].stop) {
          Index r = padded;
          r[d] = Slice{above, padded[d].stop};
          m_fills.push_back(HaloFill{dev, std::move(r)});
        }
      }
    }
  }

  Shape m_shape;
  NamedSharding m_sharding;
  std::vector<int64_t> m_widths;
  std::vector<Boundary> m_boundaries;
  int m_process;
  std::vector<Device> m_local_devices;
  std::vector<HaloPhase> m_phases;
  std::vector<HaloFill> m_fills;
};

}  // namespace darray
