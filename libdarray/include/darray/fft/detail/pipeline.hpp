// The pipeline behind fft::Plan and fft::RealPlan: stages, local axis orders, transposes, local FFT plans, work
// buffers, and the forward and backward passes through them. Arrays the caller sees are row-major; the work buffers
// of later stages may hold their blocks in another axis order. Where the job's processes reach each other's memory
// (one node), a slab's second stage runs fused with the transposes around it (fused.hpp) instead.
#pragma once

#include "darray/config.hpp"

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "darray/array/detail/block_io.hpp"
#include "darray/array/detail/blocks.hpp"
#include "darray/array/detail/stream_copy.hpp"
#include "darray/array/distributed_array.hpp"
#include "darray/comm/check.hpp"
#include "darray/comm/detail/same_reduction.hpp"
#include "darray/core/error.hpp"
#include "darray/fft/detail/fused.hpp"
#include "darray/fft/detail/local.hpp"
#include "darray/fft/detail/transpose.hpp"
#include "darray/fft/detail/wisdom.hpp"
#include "darray/fft/options.hpp"
#include "darray/fft/stages.hpp"
#include "darray/redistribute/detail/engine.hpp"
#include "darray/redistribute/reshard.hpp"
#include "darray/runtime/detail/agree.hpp"
#include "darray/runtime/detail/arrival.hpp"
#include "darray/runtime/detail/kokkos_compat.hpp"
#include "darray/runtime/detail/node_shared.hpp"
#include "darray/runtime/detail/single_copy.hpp"
#include "darray/runtime/environment.hpp"

namespace darray {
namespace fft {
namespace detail {

// An uninitialised array: every element is written by the transform that fills it.
template <class T, class M>
DistributedArray<T, 3, M> allocate(const NamedSharding& sharding, const Shape& shape) {
  const auto devs = darray::detail::process_device_blocks(sharding, shape, process_index());
  auto shards = darray::detail::allocate_shards<T, 3, M>(devs, /*initialize=*/false);
  return darray::detail::adopt_shards<T, 3, M>(shape, sharding, std::move(shards));
}

// How one stage runs its local FFTs in one direction: the method (see Method) and, where the stage reads an array
// it may not overwrite (stage 0 forward, the single stage, the last stage backward of a transposed output), whether
// it first copies that array into the destination and transforms in place (copy) or transforms out of place.
struct Strategy {
  Method method = Method::passes;
  bool copy = false;
};

inline std::string to_string(const Strategy& s) { return std::string(to_string(s.method)) + (s.copy ? "+copy" : ""); }
inline bool parse_strategy(const std::string& text, Strategy* out) {
  const bool copy = text.size() > 5 && text.compare(text.size() - 5, 5, "+copy") == 0;
  const std::string name = copy ? text.substr(0, text.size() - 5) : text;
  for (Method m : all_methods)
    if (name == to_string(m)) {
      *out = Strategy{m, copy};
      return true;
    }
  return false;
}

// Everything a Plan and a RealPlan share: stages, local layouts, transposes, local plans, work buffers and the
// pipeline itself. Arrays the caller sees are row-major; the work buffers of stages after the first may store the
// block in another axis order (see stage_order).
template <class R, class M>
class PlanCore {
  static_assert(std::is_same<R, double>::value || std::is_same<R, float>::value,
                "fft plans take R = double (complex128) or float (complex64)");

 public:
  using complex_type = Kokkos::complex<R>;
  using complex_array = DistributedArray<complex_type, 3, M>;
  using real_array = DistributedArray<R, 3, M>;
  // Which backend serves M is known at compile time, so a build without one fails here, at the fft::Plan,
  // fft::RealPlan or fftn/rfftn the program uses, instead of throwing when it runs.
  static_assert(LocalPlans<R, M>::backend != Backend::none,
                "darray::fft: this build has no FFT backend for the array's memory space. Host memory needs FFTW 3: "
                "install it (Debian: libfftw3-dev) and configure libdarray with -DDARRAY_ENABLE_FFTW=AUTO or ON (or, "
                "include-only, compile with -DDARRAY_HAS_FFTW=1 and link -lfftw3 -lfftw3f). GPU memory needs cuFFT: a "
                "CUDA toolkit, a CUDA-enabled Kokkos and -DDARRAY_ENABLE_CUFFT=AUTO or ON");

  PlanCore(const char* api, const Shape& shape, const NamedSharding& input, const Options& options, bool real)
      : m_api(api),
        m_real(real),
        m_shape(shape),
        m_input(input),
        m_options(options),
        m_local(options.planner == Planner::estimate  ? 0
                : options.planner == Planner::measure ? 1
                                                      : 2) {
    DARRAY_THROW_IF(shape.size() != 3, InvalidArgument, api,
                    "shape " << shape_to_string(shape) << " has rank " << shape.size() << "; expected a 3-D shape");
    for (std::size_t d = 0; d < 3; ++d)
      DARRAY_THROW_IF(shape[d] < 1, InvalidArgument, api,
                      "shape " << shape_to_string(shape) << " has extent " << shape[d] << " in dim " << d
                               << "; an FFT needs at least one point per dim");
    input.check_shape(shape);
    m_cshape = shape;
    if (real) m_cshape[2] = shape[2] / 2 + 1;
    m_stages = plan_stages(input.spec(), input.mesh(), real, api);
    const std::size_t n = m_stages.size();
    // Stage 0 is the caller's sharding itself (P("x") and P("x", none, none) partition alike but compare unequal).
    m_shardings.push_back(input);
    for (std::size_t s = 1; s < n; ++s) m_shardings.emplace_back(input.mesh(), m_stages[s].spec);
    for (std::size_t s = 0; s < n; ++s) m_orders.push_back(stage_order(s));
    for (const Device& d : local_devices()) {
      if (!input.mesh().contains(d)) continue;
      m_devices.push_back(d);
      m_real_boxes.push_back(input.index(shape, d));
      std::vector<Index> per_stage;
      for (std::size_t s = 0; s < n; ++s) per_stage.push_back(m_shardings[s].index(m_cshape, d));
      m_last_boxes.push_back(per_stage.back());
      m_boxes.push_back(std::move(per_stage));
    }
    // role: direction (1 forward, 2 backward, 3 back to the input's layout, 4 from it) and step, see Transpose.
    auto transpose = [&](std::size_t from, std::size_t to, const AxisOrder& a, const AxisOrder& b, int64_t role) {
      return std::make_unique<Transpose<complex_type, M>>(
          reshard_plan<complex_type>(m_shardings[from], m_shardings[to], m_cshape), a, b, role);
    };
    for (std::size_t s = 0; s + 1 < n; ++s) {
      const auto step = static_cast<int64_t>(s);
      m_forward_t.push_back(transpose(s, s + 1, m_orders[s], m_orders[s + 1], 1024 + step));
      m_backward_t.push_back(transpose(s + 1, s, m_orders[s + 1], m_orders[s], 2048 + step));
    }
    if (n > 1 && options.output == OutputLayout::same) {
      m_to_input = transpose(n - 1, 0, m_orders[n - 1], row_major_order, 3072);
      m_from_input = transpose(0, n - 1, row_major_order, m_orders[n - 1], 4096);
    }
    // A slab's second stage fused with its transposes where the processes reach each other's memory (fused.hpp):
    // from stage 0's blocks back into them, or with a transposed output from stage 0's blocks into the output's
    // (the tiles' FFTs in place there) and backward from the input's blocks into stage 0's.
    if (LocalPlans<R, M>::backend == Backend::fftw && n == 2 && fused_stage_possible(m_shardings[1]))
      for (int dir = 0; dir < 2; ++dir) {
        const NamedSharding& last = transposed() ? m_shardings[1] : m_shardings[0];
        const std::uint64_t operation = darray::detail::operation_fingerprint(
            m_shardings[0], m_shardings[1], m_cshape,
            {5120 + dir, real ? 1 : 0, static_cast<int64_t>(sizeof(R)), transposed() ? 1 : 0});
        m_fused[dir] = std::make_unique<FusedStage<complex_type>>(dir == 0 ? m_shardings[0] : last, m_shardings[1],
                                                                  dir == 0 ? last : m_shardings[0], m_cshape,
                                                                  m_stages[1].dims, dir == 0, operation);
      }
    MPI_Comm comm = darray::detail::world_comm();
    // Under DARRAY_TIMEOUT_S a process that never builds this plan is an error here, not a hang in the agreements
    // below (whose waits for one process's planning have no deadline: measuring may take minutes).
    darray::detail::arrive_together(comm, api);
    // Processes that build different plans at once (another shape, sharding, element type or option: a program's
    // bug) would pair this plan's agreements and exchanges with unrelated ones, deciding on garbage or waiting for
    // good (one process loading a wisdom file while another plans without). They agree on the plan's arguments
    // first, in a record exchange that cannot block on a mismatch: the same InvalidArgument everywhere otherwise.
    if (!darray::detail::same_fingerprint(comm, arguments_fingerprint(), api))
      darray::detail::throw_disagreement(
          comm, api, describe_arguments(),
          "the processes built different FFT plans at the same time (every process must build the same plan: the "
          "same shape, sharding, element type and options): ");
    if (m_fused[0] && (transposed() || m_real)) share_work();  // the same layout's c2c never uses work buffer 0
    LoadedWisdom loaded;
    if (!options.wisdom_file.empty()) {
      loaded = load_wisdom_file(api, options.wisdom_file, comm);
      m_wisdom = loaded.report.message;
    }
    choose_strategies();
    // Saved when this plan measured something, or the file lacks what memory held (choices that came from the
    // file came with their FFTW wisdom: nothing to add, unless that wisdom was another solver configuration's and
    // FFTW measured its part here; a save that would add nothing writes nothing).
    if (!options.wisdom_file.empty() && m_local.level() > 0 &&
        (m_measured || loaded.report.status != WisdomStatus::loaded || loaded.kept > 0)) {
      // A wisdom file that cannot be written costs the next run a measurement, not this plan: warn, go on.
      const darray::detail::CapturedError error = darray::detail::capture_error([&] {
        const bool wrote = save_wisdom_file(
            api, options.wisdom_file, loaded.report.status == WisdomStatus::loaded ? &loaded.text : nullptr, comm);
        if (wrote) m_wisdom += "; saved";
      });
      if (error.kind != darray::detail::ErrorKind::none) {
        m_wisdom += "; not saved: " + error.message;
        if (process_index() == 0) DARRAY_LOG(warn, api << ": wisdom not saved: " << error.message);
      }
    }
  }

  // What every process's plan must have alike, as a fingerprint and as this process's line of the mismatch error.
  std::uint64_t arguments_fingerprint() const {
    // Whether a wisdom file is named, not which: only process 0's path is read and written.
    return darray::detail::mix_fingerprint(
        darray::detail::operation_fingerprint(
            m_input, m_input, m_shape,
            {6144, m_real ? 1 : 0, static_cast<int64_t>(sizeof(R)), static_cast<int64_t>(m_options.output),
             static_cast<int64_t>(m_options.normalization), static_cast<int64_t>(m_options.planner)}),
        m_options.wisdom_file.empty() ? 1 : 2);
  }
  std::string describe_arguments() const {
    std::ostringstream os;
    os << "process " << process_index() << ": " << (m_real ? "r2c " : "c2c ") << dtype_name<R>() << " "
       << shape_to_string(m_shape) << ", output " << m_options.output << ", normalization " << m_options.normalization
       << ", planner " << m_options.planner << ", wisdom file \"" << m_options.wisdom_file << "\", " << m_input;
    return os.str();
  }

  const Shape& shape() const { return m_shape; }
  const Shape& complex_shape() const { return m_cshape; }
  const NamedSharding& input_sharding() const { return m_input; }
  const NamedSharding& output_sharding() const { return transposed() ? m_shardings.back() : m_shardings.front(); }
  const std::vector<Stage>& stages() const { return m_stages; }
  const Options& options() const { return m_options; }
  // Transposes one forward (or backward) transform performs.
  int transposes() const { return static_cast<int>(m_stages.size()) - 1 + (m_to_input ? 1 : 0); }
  const char* backend() const { return to_string(LocalPlans<R, M>::backend); }

  // A readable account of the plan: stages, the local strategy of each stage and direction and where it came from
  // (heuristic, measured, wisdom), the wisdom file's fate. The same on every process.
  std::string describe() const {
    std::ostringstream os;
    os << m_api << " " << (m_real ? "r2c" : "c2c") << " " << dtype_name<R>() << " " << shape_to_string(m_shape)
       << " on " << m_input.mesh().to_string() << ", output " << m_options.output << ", planner " << m_options.planner
       << ", backend " << backend() << ", " << transposes() << " transposes\n";
    for (std::size_t s = 0; s < m_stages.size(); ++s) {
      os << "  stage " << s << " " << m_stages[s] << ":";
      if (fused(s)) {
        const bool in_blocks = m_fused[0]->home() != FusedStage<complex_type>::Home::buffer;
        os << " forward fused (single copies), backward fused (single copies)\n"
           << "    with the transposes around it, tile by tile (FFTW's plan of each tile, "
           << (in_blocks ? "in place in the blocks" : "in a tile buffer") << ")"
           << (m_shared ? "; work buffer 0 mapped by every process" : "") << "\n";
        continue;
      }
      for (int d = 0; d < 2; ++d)
        os << (d == 0 ? " forward " : ", backward ") << to_string(m_strategy[s][d]) << " (" << m_source[s][d] << ")";
      os << "\n";
      for (int d = 0; d < 2; ++d)
        if (!m_timings[s][d].empty())
          os << "    " << (d == 0 ? "forward" : "backward") << " candidates (ms, slowest process):" << m_timings[s][d]
             << "\n";
      if (m_as_forward[s]) os << "    backward: the forward's choice (the same local problems but for the sign)\n";
    }
    if (!m_wisdom.empty()) os << "  " << m_wisdom << "\n";
    return os.str();
  }

  complex_array allocate_complex_input() const { return allocate<complex_type, M>(m_input, m_cshape); }
  real_array allocate_real_input() const { return allocate<R, M>(m_input, m_shape); }
  complex_array allocate_output() const { return allocate<complex_type, M>(output_sharding(), m_cshape); }

  void forward_c2c(const complex_array& in, const complex_array& out) const {
    check(in, m_input, m_cshape, "forward", "input");
    check(out, output_sharding(), m_cshape, "forward", "output");
    check_consistent_call("forward");
    forward_pipeline(Kind::c2c, pointers(in, 0), pointers(out, 1), forward_factor());
  }

  void forward_r2c(const real_array& in, const complex_array& out) const {
    check(in, m_input, m_shape, "forward", "input");
    check(out, output_sharding(), m_cshape, "forward", "output");
    check_consistent_call("forward");
    forward_pipeline(Kind::r2c, pointers(in, 0), pointers(out, 1), forward_factor());
  }

  void backward_c2c(const complex_array& in, const complex_array& out) const {
    check(in, output_sharding(), m_cshape, "backward", "input");
    check(out, m_input, m_cshape, "backward", "output");
    check_consistent_call("backward");
    backward_pipeline(Kind::c2c, pointers(in, 0), pointers(out, 1), backward_factor());
  }

  void backward_c2r(const complex_array& in, const real_array& out) const {
    check(in, output_sharding(), m_cshape, "backward", "input");
    check(out, m_input, m_shape, "backward", "output");
    check_consistent_call("backward");
    backward_pipeline(Kind::c2r, pointers(in, 0), pointers(out, 1), backward_factor());
  }

 private:
  bool transposed() const { return m_options.output == OutputLayout::transposed; }

  // How stage s stores a block: row-major, except that a stage transforming only dim 0 keeps it in the middle,
  // (n1, n0, n2) as FFTW-MPI's transposed slabs, so its FFTs stride by one row of n2 instead of a whole plane
  // (power-of-two plane strides thrash the cache). Dim 2 stays innermost, so every copy moves runs of n2. The last
  // stage of a transposed-output plan is row-major all the same: the transpose writes it straight into the
  // caller's array (in any order, through MPI datatypes), and a tiled pass along dim 0 there costs less than the
  // local reorder of the whole block that the (n1, n0, n2) order would need (bench/fft, 128^3 at 2 processes: ratio
  // 0.92-0.97 against 1.02-1.05). Where every process of the job can read every other's memory (one node, single
  // copies: runtime/detail/single_copy.hpp), every stage is row-major: the transposes' pieces then have long runs
  // in the same order on both sides and go by one kernel copy instead of MPI's two (bench/fft at 2 processes, 128^3
  // r2c 8.2-8.4 -> 6.7 ms, c2c 16.1-16.5 -> 13.5-14.2 ms).
  AxisOrder stage_order(std::size_t s) const {
    const auto& dims = m_stages[s].dims;
    if (transposed() && s + 1 == m_stages.size()) return row_major_order;
    if (s > 0 && dims.size() == 1 && dims[0] == 0 && !darray::detail::single_copy_reaches_all())
      return AxisOrder{1, 0, 2};
    return row_major_order;
  }

  R forward_factor() const {
    switch (m_options.normalization) {
      case Normalization::forward:
        return R(1) / static_cast<R>(volume(m_shape));
      case Normalization::ortho:
        return R(1) / std::sqrt(static_cast<R>(volume(m_shape)));
      default:
        return R(1);
    }
  }
  R backward_factor() const {
    switch (m_options.normalization) {
      case Normalization::backward:
        return R(1) / static_cast<R>(volume(m_shape));
      case Normalization::ortho:
        return R(1) / std::sqrt(static_cast<R>(volume(m_shape)));
      default:
        return R(1);
    }
  }

  // Under DARRAY_CHECK=1: every process is about to run the same transform (else report who diverged).
  void check_consistent_call(const char* call) const {
    if (!consistency_checks_enabled()) return;
    std::ostringstream os;
    os << m_api << "::" << call << " shape " << shape_to_string(m_shape) << " input " << m_input << " output "
       << output_sharding() << " dtype " << dtype_name<R>() << " layout " << m_options.output << " norm "
       << m_options.normalization;
    check_consistent(darray::detail::world_comm(), os.str());
  }

  template <class T>
  void check(const DistributedArray<T, 3, M>& a, const NamedSharding& expected, const Shape& shape, const char* call,
             const char* what) const {
    DARRAY_THROW_IF(a.shape() != shape, InvalidArgument, m_api,
                    call << "() got an " << what << " array of shape " << shape_to_string(a.shape()) << "; this plan's "
                         << what << " has shape " << shape_to_string(shape));
    DARRAY_THROW_IF(a.sharding() != expected, InvalidArgument, m_api,
                    call << "() got an " << what << " array sharded as " << a.sharding() << "; this plan's " << what
                         << " is sharded as " << expected << " (reshard it first, or build the plan for its sharding)");
  }

  // A device's work block: room for its block of every stage.
  int64_t work_elements(const Device& d) const {
    int64_t n = 0;
    for (const NamedSharding& s : m_shardings) n = std::max(n, volume(s.index(m_cshape, d)));
    return n;
  }
  // Where each work block of work buffer 0 lies in its process's shared buffer (bytes, local-device order).
  static constexpr std::size_t work_alignment = 64;
  std::vector<std::vector<std::size_t>> shared_work_offsets(std::vector<std::size_t>* bytes) const {
    const std::vector<Device> devs = devices_by_process(m_input.mesh());
    std::vector<std::vector<std::size_t>> offsets(static_cast<std::size_t>(process_count()));
    bytes->assign(offsets.size(), 0);
    for (const Device& d : devs) {
      const auto p = static_cast<std::size_t>(d.process_index);
      offsets[p].push_back((*bytes)[p]);
      const std::size_t b = static_cast<std::size_t>(work_elements(d)) * sizeof(complex_type);
      (*bytes)[p] += (b + work_alignment - 1) / work_alignment * work_alignment;
    }
    return offsets;
  }
  // Work buffer 0 of a fused plan in memory every process maps (runtime/detail/node_shared.hpp), where it is a side of
  // the fused stage (the transposed output's forward reads stage 0 there, the backwards of a transposed output and
  // of c2r write it there): the stage copies its peers' blocks by plain copies instead of single copies. Collective;
  // where any process cannot share, the buffer stays private and the peers go by single copies.
  void share_work() {
    std::vector<std::size_t> bytes;
    const std::vector<std::vector<std::size_t>> offsets = shared_work_offsets(&bytes);
    auto shared = std::make_unique<darray::detail::NodeSharedBuffer>(darray::detail::world_comm(),
                                                                     bytes[static_cast<std::size_t>(process_index())]);
    if (!shared->ok()) return;
    std::vector<std::vector<complex_type*>> blocks(offsets.size());
    for (std::size_t p = 0; p < offsets.size(); ++p)
      for (std::size_t off : offsets[p])
        blocks[p].push_back(reinterpret_cast<complex_type*>(shared->of(static_cast<int>(p)) + off));
    const auto me = static_cast<std::size_t>(process_index());
    for (std::size_t i = 0; i < m_boxes.size(); ++i)
      m_work[0].emplace_back(blocks[me][i], static_cast<std::size_t>(work_elements(m_devices[i])));
    m_shared_blocks = std::move(blocks);
    m_shared = std::move(shared);
  }
  // Work buffer k (0 or 1), one block per local device, each large enough for the device's block at any stage;
  // allocated on first use, so a slab transform with the output in the input layout needs only buffer 0.
  // Its blocks' pointers are made once with the blocks.
  const std::vector<void*>& work(std::size_t k) const {
    auto& buffers = m_work[k];
    if (buffers.empty())
      for (const Device& d : m_devices)
        buffers.emplace_back(Kokkos::view_alloc("darray::fft work", Kokkos::WithoutInitializing),
                             static_cast<std::size_t>(work_elements(d)));
    std::vector<void*>& out = m_work_pointers[k];
    if (out.size() != buffers.size()) {
      out.clear();
      for (const auto& v : buffers) out.push_back(static_cast<void*>(v.data()));
    }
    return out;
  }
  // The pointers the pipeline passes around live in vectors of the plan, filled in place, so that a transform into
  // kept arrays allocates nothing (one plan runs one transform at a time). side 0: the input's, 1: the output's.
  template <class T>
  const std::vector<void*>& pointers(const DistributedArray<T, 3, M>& a, std::size_t side) const {
    std::vector<void*>& out = m_pointers[side];
    out.clear();
    for (const auto& s : a.addressable_shards()) out.push_back(static_cast<void*>(s.data.data()));
    return out;
  }
  template <class P>
  static const std::vector<P*>& typed(const std::vector<void*>& ptrs, std::vector<P*>& out) {
    out.clear();
    for (void* p : ptrs) out.push_back(static_cast<P*>(p));
    return out;
  }
  void transpose(const Transpose<complex_type, M>& t, const std::vector<void*>& src,
                 const std::vector<void*>& dst) const {
    t.run(typed(src, m_const_typed), typed(dst, m_typed), m_staging);
  }
  const Blocks<complex_type>& blocks(const std::vector<void*>& ptrs, const AxisOrder& order, std::size_t side) const {
    Blocks<complex_type>& b = m_blocks[side];
    typed(ptrs, b.ptrs);
    b.order = order;
    return b;
  }
  // Every local device's block of the last stage.
  const std::vector<Index>& last_boxes() const { return m_last_boxes; }

  // Made once per argument set and kept (the pipeline asks for the same few problems on every transform).
  const LocalProblem& problem(std::size_t s, Kind kind, bool forward, std::size_t device, bool in_place) const {
    const auto key = std::make_tuple(s, kind, forward, device, in_place);
    auto it = m_problems.find(key);
    if (it == m_problems.end()) it = m_problems.emplace(key, make_problem(s, kind, forward, device, in_place)).first;
    return it->second;
  }
  LocalProblem make_problem(std::size_t s, Kind kind, bool forward, std::size_t device, bool in_place) const {
    const AxisOrder& order = m_orders[s];
    const Index& cbox = m_boxes[device][s];
    LocalProblem p;
    p.kind = kind;
    p.forward = kind == Kind::c2c ? forward : kind == Kind::r2c;
    p.in_block = memory_extents(kind == Kind::r2c ? m_real_boxes[device] : cbox, order);
    p.out_block = memory_extents(kind == Kind::c2r ? m_real_boxes[device] : cbox, order);
    for (int k = 0; k < 3; ++k)
      for (int d : m_stages[s].dims)
        if (order[static_cast<std::size_t>(k)] == d) p.dims.push_back(k);
    p.in_place = kind == Kind::c2c && in_place;
    return p;
  }

  bool fused(std::size_t s) const { return s == 1 && m_fused[0] != nullptr; }
  // The fused stage 1 (forward or backward) from the blocks `from` to the blocks `to`.
  void run_fused(bool forward, const std::vector<void*>& from, const std::vector<void*>& to) const {
    const FusedStage<complex_type>& stage = *m_fused[forward ? 0 : 1];
    if (m_tile.extent(0) < static_cast<std::size_t>(stage.max_tile_elements()))
      m_tile = Kokkos::View<complex_type*, M>(Kokkos::view_alloc("darray::fft tile", Kokkos::WithoutInitializing),
                                              static_cast<std::size_t>(stage.max_tile_elements()));
    const std::vector<const complex_type*>& a = typed(from, m_const_typed);
    const std::vector<complex_type*>& b = typed(to, m_typed);
    // Work buffer 0's blocks on the peers as mapped here, where that buffer is a side of the stage.
    typename FusedStage<complex_type>::Mapped mapped;
    auto is_shared = [&](const std::vector<void*>& blocks) {
      return m_shared && !blocks.empty() && blocks[0] == static_cast<void*>(m_work[0][0].data());
    };
    if (is_shared(from)) mapped.from = &m_shared_blocks;
    if (is_shared(to)) mapped.to = &m_shared_blocks;
    stage.run(
        m_api, a, b, m_tile.data(),
        [&](const typename FusedStage<complex_type>::Tile& t, const complex_type* in, complex_type* out) {
          m_local.execute(t.problem, Method::guru, const_cast<complex_type*>(in), out);
        },
        mapped);
  }

  // The local FFTs of stage s on every local device's block, in the stage's axis order; in place where in and out
  // are the same blocks, or where `copy`: then in's blocks are copied into out's first (LocalProblem::in_place).
  // The results are scaled by `factor` (the transform's normalisation, in stage 0: LocalPlans::execute).
  void fft(std::size_t s, Kind kind, bool forward, const std::vector<void*>& in, const std::vector<void*>& out,
           bool copy = false, R factor = R(1)) const {
    const auto& space = darray::detail::default_instance<typename M::execution_space>();
    const Method method = m_strategy[s][forward ? 0 : 1].method;
    // FFTW reads on the host what kernels may still be writing; cuFFT follows them on their instance's stream.
    if (darray::detail::host_accessible_v<M>) darray::detail::fence(space);
    for (std::size_t i = 0; i < in.size(); ++i) {
      m_local.execute(problem(s, kind, forward, i, copy || in[i] == out[i]), method, in[i], out[i], factor);
    }
    darray::detail::fence(space);  // cuFFT runs asynchronously; MPI reads the result next
  }

  // Copies every local block of `from` into `to` (the blocks of stage s's complex array), then the FFTs in place.
  // FFTW's plans copy themselves, plane by plane right before each plane's FFTs where they run planes (FftwPlan).
  void copy_then_fft(std::size_t s, bool forward, const std::vector<void*>& from, const std::vector<void*>& to,
                     R factor = R(1)) const {
    if constexpr (LocalPlans<R, M>::backend == Backend::fftw) {
      fft(s, Kind::c2c, forward, from, to, /*copy=*/true, factor);
    } else {
      for (std::size_t i = 0; i < from.size(); ++i)
        copy_block(static_cast<const complex_type*>(from[i]), static_cast<complex_type*>(to[i]), volume(m_boxes[i][s]));
      fft(s, Kind::c2c, forward, to, to, /*copy=*/false, factor);
    }
  }

  // Stage 0 from the input, then per stage a transpose and the local FFTs in place; the result ends in `out`.
  // Stage 0 runs in `out` itself when the output keeps the input's sharding (its blocks are stage 0's). Stage 0's
  // local FFTs scale what they write by `factor` (every later step is linear: the result is scaled the same, and
  // no pass of its own reads and writes it again).
  void forward_pipeline(Kind first, const std::vector<void*>& in, const std::vector<void*>& out, R factor) const {
    const std::size_t n = m_stages.size();
    const bool copy = first == Kind::c2c && m_strategy[0][0].copy;
    if (n == 1) {
      if (copy && in != out)
        copy_then_fft(0, true, in, out, factor);
      else
        fft(0, first, true, in, out, /*copy=*/false, factor);
      return;
    }
    int cur_index = transposed() ? 0 : -1;  // -1: `out`
    const std::vector<void*>* cur = transposed() ? &work(0) : &out;
    if (copy && in != *cur) {
      copy_then_fft(0, true, in, *cur, factor);
    } else {
      fft(0, first, true, in, *cur, /*copy=*/false, factor);
    }
    if (fused(1)) {
      run_fused(true, *cur, out);
      return;
    }
    for (std::size_t s = 1; s < n; ++s) {
      // The last stage of a transposed-output plan in row-major order lands in `out` without a final copy.
      const bool direct = s + 1 == n && transposed() && m_orders[s] == row_major_order;
      const int target_index = cur_index == 0 ? 1 : 0;
      const std::vector<void*>& target = direct ? out : work(static_cast<std::size_t>(target_index));
      transpose(*m_forward_t[s - 1], *cur, target);
      fft(s, Kind::c2c, true, target, target);
      if (direct) return;
      cur = &target;
      cur_index = target_index;
    }
    if (transposed())
      reorder<complex_type, M>(last_boxes(), blocks(*cur, m_orders[n - 1], 0), blocks(out, row_major_order, 1));
    else
      transpose(*m_to_input, *cur, out);
  }

  // The forward pipeline run backwards; the caller's input is only read, the c2r input is a work buffer. Stage 0's
  // local FFTs write `out` last, scaled by `factor` as they write.
  void backward_pipeline(Kind last, const std::vector<void*>& in, const std::vector<void*>& out, R factor) const {
    const std::size_t n = m_stages.size();
    // A fused stage 1 straight into stage 0's blocks: those of `out` where the output keeps the input's layout (a
    // c2c then runs stage 0 in place there: the stage wrote back the lines it read, still in cache), else those of
    // work buffer 0, which the peers map where they can (the stage writes them by plain copies).
    if (fused(1)) {
      if (last == Kind::c2c && !transposed()) {
        run_fused(false, in, out);
        fft(0, Kind::c2c, false, out, out, /*copy=*/false, factor);
        return;
      }
      const std::vector<void*>& half = work(0);
      run_fused(false, in, half);
      if (last == Kind::c2r)
        fft(0, Kind::c2r, false, half, out, /*copy=*/false, factor);
      else if (m_strategy[0][1].copy)
        copy_then_fft(0, false, half, out, factor);
      else
        fft(0, Kind::c2c, false, half, out, /*copy=*/false, factor);
      return;
    }
    const std::vector<void*>* cur = &work(0);
    if (n == 1) {
      if (last == Kind::c2c) {
        if (m_strategy[0][1].copy && in != out)
          copy_then_fft(0, false, in, out, factor);
        else
          fft(0, Kind::c2c, false, in, out, /*copy=*/false, factor);
      } else if constexpr (LocalPlans<R, M>::backend == Backend::fftw) {
        // The caller's input is only read: FFTW's plans read it in their first pass and go on in work buffer 0.
        darray::detail::fence(darray::detail::default_instance<typename M::execution_space>());
        for (std::size_t i = 0; i < in.size(); ++i)
          m_local.execute_c2r(problem(0, Kind::c2r, false, i, false), m_strategy[0][1].method, in[i], (*cur)[i], out[i],
                              factor);
      } else {  // cuFFT's c2r overwrites its input
        for (std::size_t i = 0; i < in.size(); ++i)
          copy_block(static_cast<const complex_type*>(in[i]), static_cast<complex_type*>((*cur)[i]),
                     volume(m_boxes[i][0]));
        fft(0, Kind::c2r, false, *cur, out, /*copy=*/false, factor);
      }
      return;
    }
    if (transposed()) {
      if (m_orders[n - 1] == row_major_order) {
        if (m_strategy[n - 1][1].copy)
          copy_then_fft(n - 1, false, in, *cur);
        else
          fft(n - 1, Kind::c2c, false, in, *cur);
      } else {
        reorder<complex_type, M>(last_boxes(), blocks(in, row_major_order, 0), blocks(*cur, m_orders[n - 1], 1));
        fft(n - 1, Kind::c2c, false, *cur, *cur);
      }
    } else {
      transpose(*m_from_input, in, *cur);
      fft(n - 1, Kind::c2c, false, *cur, *cur);
    }
    std::size_t cur_index = 0;
    for (std::size_t s = n - 1; s >= 1; --s) {
      if (s == 1 && last == Kind::c2c) {  // stage 0 is row-major: transpose straight into `out`
        transpose(*m_backward_t[0], *cur, out);
        fft(0, Kind::c2c, false, out, out, /*copy=*/false, factor);
        return;
      }
      const std::size_t target_index = 1 - cur_index;
      const std::vector<void*>& target = work(target_index);
      transpose(*m_backward_t[s - 1], *cur, target);
      if (s == 1) {
        fft(0, Kind::c2r, false, target, out, /*copy=*/false, factor);
        return;
      }
      fft(s - 1, Kind::c2c, false, target, target);
      cur = &target;
      cur_index = target_index;
    }
  }

  static void copy_block(const complex_type* src, complex_type* dst, int64_t n) {
    using View = Kokkos::View<complex_type*, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    Kokkos::deep_copy(View(dst, static_cast<std::size_t>(n)),
                      Kokkos::View<const complex_type*, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                          src, static_cast<std::size_t>(n)));
  }

  // One stage and direction: the local FFTs it runs (kind) and whether it has a copy variant (see Strategy).
  struct Slot {
    std::size_t stage;
    Kind kind;
    bool forward;
    bool variant;
  };
  std::vector<Slot> slots() const {
    const std::size_t n = m_stages.size();
    std::vector<Slot> out;
    for (std::size_t s = 0; s < n; ++s) {
      if (fused(s)) continue;  // its tiles' plans: prepare_fused()
      if (s == 0 && m_real) {
        out.push_back({0, Kind::r2c, true, false});
        out.push_back({0, Kind::c2r, false, false});
        continue;
      }
      out.push_back({s, Kind::c2c, true, s == 0});
      // Backward, the variants read another array: the caller's, or work buffer 0 after a fused stage 1.
      out.push_back({s, Kind::c2c, false,
                     n == 1 || (s == 0 && fused(1) && transposed()) ||
                         (s + 1 == n && transposed() && m_orders[s] == row_major_order)});
    }
    return out;
  }
  // What the estimate planner runs: darray's passes, and where a c2c stage reads an array it may not overwrite (a
  // variant slot) with FFTW, the +copy variant: where FFTW's plans run group by group (plane by plane), each group is
  // copied right before them and they run in place on it in cache, so the caller's array is read in order, once,
  // where FFTW's out-of-place plans read it (out of cache in a loop of transforms) in their own strided order.
  // bench/fft, FFTW_ESTIMATE, forward ms out of place -> +copy (this AMD EPYC, old and new builds in turns): 2
  // processes c2c 64^3 transposed 0.61-0.62 -> 0.51-0.52, same 0.71-0.73 -> 0.66-0.69, 128^3 transposed 7.4-7.6
  // -> 6.5-6.9; one process 64^3 1.06-1.12 -> 0.91-0.95, 128^3 13.3 -> 11.5; 256^3 alike (144 ms at one process). Timed
  // back to back in cache, the two tie (0.253 / 0.254 ms for 2 processes' stage 0 of 64^3). Before the copies went
  // plane by plane (whole blocks first), out of place was the faster (c2c 128^3 at 2 processes, 0.64-0.70 against
  // 0.73-0.76x FFTW-MPI). cuFFT: out of place, as before (no GPU here to time the copy on).
  Strategy default_strategy(const Slot& slot) const {
    return Strategy{Method::passes, LocalPlans<R, M>::backend == Backend::fftw && slot.variant};  // variants: c2c
  }
  // The local problem of a slot's device i under strategy st: in place on the work buffers, out of place where
  // it reads the caller's array without a copy, r2c and c2r always out of place.
  const LocalProblem& slot_problem(const Slot& slot, const Strategy& st, std::size_t i) const {
    const bool in_place = slot.kind == Kind::c2c && (!slot.variant || st.copy);
    return problem(slot.stage, slot.kind, slot.forward, i, in_place);
  }
  // Identifies a slot across processes and runs: everything that shapes the local problems of every process.
  std::string choice_key(const Slot& slot) const {
    // The input's spec at rank 3: P("x") and P("x", None, None) place the blocks alike and share their wisdom (the
    // second form is fft::auto_sharding's, so keys written before read the same).
    std::ostringstream os;
    os << (m_real ? "r2c" : "c2c") << "/" << dtype_name<R>() << "/" << shape_to_string(m_shape) << "/p"
       << process_count() << "d" << local_device_count() << "/" << m_input.mesh().to_string() << "/"
       << PartitionSpec(darray::detail::entries_at_rank(m_input.spec(), 3)) << "/" << m_options.output << "/s"
       << slot.stage << (slot.forward ? "f" : "b");
    return wisdom_token(os.str());
  }

  // The fused stage's tile plans (FFTW's plan of each distinct tile, forward and backward), planned with the slots'.
  template <class F>
  void for_each_tile_problem(F&& f) const {
    for (int dir = 0; dir < 2 && m_fused[0]; ++dir)
      for (const auto& t : m_fused[dir]->tiles()) f(t.problem);
  }
  void prepare_fused() {
    for_each_tile_problem([&](const LocalProblem& p) { m_local.prepare(p, Method::guru); });
  }

  // Each slot's strategy: recorded wisdom if any (measured at this planner level or above), else the heuristic
  // under estimate, else measured: every candidate planned (one process after the other, sharing FFTW wisdom, so
  // equal blocks get equal FFTW plans everywhere), timed on every process, the fastest on the slowest process taken.
  // A backward c2c slot whose local problems are its forward twin's but for the sign takes the twin's choice
  // instead of being measured: FFTW's codelets for the two signs are mirror images, so the candidates' times match
  // (1 process, 128^3: passes 15.0 / 14.8 ms, guru 16.0 / 15.8, tiled 16.1 / 15.7), and measuring both directions
  // doubled the planning. Its FFTW plans are still planned with the planner's flags.
  void choose_strategies() {
    MPI_Comm comm = darray::detail::world_comm();
    const std::vector<Slot> all = slots();
    const int level = m_local.level();
    m_strategy.assign(m_stages.size(), std::array<Strategy, 2>{});
    m_source.assign(m_stages.size(), std::array<std::string, 2>{"heuristic", "heuristic"});
    m_timings.assign(m_stages.size(), std::array<std::string, 2>{"", ""});
    m_as_forward.assign(m_stages.size(), false);
    std::vector<std::size_t> open;  // slots to measure
    for (std::size_t k = 0; k < all.size(); ++k) {
      const Slot& slot = all[k];
      Strategy& st = m_strategy[slot.stage][slot.forward ? 0 : 1];
      st = default_strategy(slot);
      Choice recorded;
      Strategy parsed;
      if (LocalPlans<R, M>::backend == Backend::fftw && find_choice(choice_key(slot), level, &recorded) &&
          parse_strategy(recorded.strategy, &parsed) && (slot.variant || !parsed.copy)) {
        st = parsed;
        m_source[slot.stage][slot.forward ? 0 : 1] = "wisdom";
      } else if (level > 0 && LocalPlans<R, M>::backend == Backend::fftw) {
        open.push_back(k);
      }
    }
    // Backward slots that follow their forward twin (both open, the same placement): not measured.
    std::vector<std::size_t> follow;
    for (std::size_t k : open) {
      const Slot& b = all[k];
      if (b.forward || b.kind != Kind::c2c) continue;
      for (std::size_t j : open)
        if (all[j].forward && all[j].kind == Kind::c2c && all[j].stage == b.stage && all[j].variant == b.variant)
          follow.push_back(k);
    }
    for (std::size_t k : follow) open.erase(std::find(open.begin(), open.end(), k));
    auto candidates = [&](const Slot& slot) {
      std::vector<Strategy> c;
      for (bool copy : {false, true}) {
        if (copy && !slot.variant) continue;
        for (Method m : all_methods) c.push_back(Strategy{m, copy});
      }
      return c;
    };
    // Planning is local, but FFTW may fail on one process only: agree, so every process throws the same error.
    // What to plan: every slot's strategy, the open slots' candidates and the others' strategies but for the
    // followers', or the followers' strategies once their twins have chosen.
    enum class Build { every_slot, open_candidates, followers };
    auto build = [&](Build what) {
      if (what != Build::followers) prepare_fused();
      // `estimate` plans in a second sweep, after every other: FFTW_ESTIMATE takes the measured wisdom in memory, and
      // planned after the measured candidates it meets the measured wisdom that a plan from the saved file loads, so
      // that plan, choosing `estimate`, gets these FFTW plans and computes what this one computes.
      for (const bool estimate_sweep : {false, true})
        for (std::size_t k = 0; k < all.size(); ++k) {
          const Slot& slot = all[k];
          const bool following = std::find(follow.begin(), follow.end(), k) != follow.end();
          if (what != Build::every_slot && following != (what == Build::followers)) continue;
          const bool measured = std::find(open.begin(), open.end(), k) != open.end();
          const std::vector<Strategy> list = measured && what == Build::open_candidates
                                                 ? candidates(slot)
                                                 : std::vector<Strategy>{m_strategy[slot.stage][slot.forward ? 0 : 1]};
          for (const Strategy& st : list)
            if ((st.method == Method::estimate) == estimate_sweep)
              for (std::size_t i = 0; i < m_boxes.size(); ++i) m_local.prepare(slot_problem(slot, st, i), st.method);
        }
    };
    if (open.empty()) {
      darray::detail::run_agreed(comm, [&] { build(Build::every_slot); });
      return;
    }
#if defined(DARRAY_HAS_FFTW)
    // One process after the other plans (measures) its candidates and passes its FFTW wisdom on, so each distinct
    // local problem is measured once, by the first process that has it, and equal blocks get equal FFTW plans on
    // every process: the wisdom saved afterwards holds one answer per problem, and a plan built from it computes
    // bit for bit what this one computes.
    auto in_turn = [&](Build what) {
      for (int p = 0; p < process_count(); ++p) {
        const bool mine = process_index() == p;
        darray::detail::agree_on_error(
            comm, mine ? darray::detail::capture_error([&] { build(what); }) : darray::detail::CapturedError{});
        if (p + 1 == process_count()) break;
        std::string shared;
        if (mine) shared = FftwWisdom<R>::exported();
        bcast_string(comm, shared, p);
        if (process_index() > p) FftwWisdom<R>::import(shared);  // a failure costs only a measurement
      }
    };
    in_turn(Build::open_candidates);
    measure_open_slots(all, open, candidates);
    m_measured = true;
    if (!follow.empty()) {
      for (std::size_t k : follow) {
        const Slot& slot = all[k];
        m_strategy[slot.stage][1] = m_strategy[slot.stage][0];
        m_source[slot.stage][1] = "measured";
        m_as_forward[slot.stage] = true;
        record_choice(choice_key(slot), Choice{to_string(m_strategy[slot.stage][1]), level});
      }
      in_turn(Build::followers);
    }
    std::set<std::pair<LocalProblem, Method>> keep;
    for_each_tile_problem([&](const LocalProblem& p) { keep.emplace(p, Method::guru); });
    for (const Slot& slot : all) {
      const Strategy& st = m_strategy[slot.stage][slot.forward ? 0 : 1];
      for (std::size_t i = 0; i < m_boxes.size(); ++i) keep.emplace(slot_problem(slot, st, i), st.method);
    }
    m_local.retain([&](const LocalProblem& p, Method m) { return keep.count({p, m}) != 0; });
#endif
  }

#if defined(DARRAY_HAS_FFTW)
  // Seconds of timed rounds after which a slot's measurement stops at the next round boundary (after two at least).
  static constexpr double measure_budget_s = 0.25;

  // Times every candidate of the open slots on scratch blocks (see the rounds below, all local devices),
  // takes the maximum over processes and keeps the fastest; records the choice as wisdom.
  template <class Candidates>
  void measure_open_slots(const std::vector<Slot>& all, const std::vector<std::size_t>& open, Candidates candidates) {
    MPI_Comm comm = darray::detail::world_comm();
    std::vector<Kokkos::View<complex_type*, M>> a, b;
    for (const auto& boxes : m_boxes) {
      int64_t n = 0;
      for (const Index& box : boxes) n = std::max(n, volume(box));
      a.emplace_back("darray::fft measure a", static_cast<std::size_t>(n));
      b.emplace_back("darray::fft measure b", static_cast<std::size_t>(n));
    }
    for (std::size_t k : open) {
      const Slot& slot = all[k];
      const std::vector<Strategy> list = candidates(slot);
      // A candidate that splits every block as an earlier one does (on every process) is the same plan: not timed.
      std::vector<int> distinct(list.size(), 1), all_distinct(list.size(), 0);
      auto signature = [&](const Strategy& st) {
        std::vector<std::vector<int>> sig;
        for (std::size_t i = 0; i < m_boxes.size(); ++i) {
          std::vector<int> guru, fused, tiled;
          int outer = -1;
          const unsigned flags = fftw_flags(m_local.level());
          const bool halved =
              FftwPlan<R>::split(slot_problem(slot, st, i), st.method, flags, &guru, &fused, &tiled, &outer);
          // The FFTW flags too: `estimate` may split as another method does, its FFTW plans made otherwise.
          guru.push_back(static_cast<int>(FftwPlan<R>::planned_flags(st.method, flags)));
          guru.push_back(outer);
          guru.push_back(halved ? -2 : -1);
          guru.insert(guru.end(), fused.begin(), fused.end());
          guru.push_back(-1);
          guru.insert(guru.end(), tiled.begin(), tiled.end());
          sig.push_back(guru);
        }
        return sig;
      };
      for (std::size_t c = 0; c < list.size(); ++c)
        for (std::size_t e = 0; e < c && distinct[c]; ++e)
          if (list[e].copy == list[c].copy && signature(list[e]) == signature(list[c])) distinct[c] = 0;
      DARRAY_MPI_CHECK(
          MPI_Allreduce(distinct.data(), all_distinct.data(), static_cast<int>(list.size()), MPI_INT, MPI_MAX, comm));
      // A warm-up round, then timed rounds, the candidates taking turns so that a load spike hits them alike: best
      // of five, or of fewer (two at least) once the timed rounds have taken measure_budget_s. Large blocks' timing
      // dominated their plans: 256^3 at one process, candidates of 0.17-0.22 s, 14 of 24 s planning.
      std::vector<double> times(list.size(), std::numeric_limits<double>::max()), slowest(list.size(), 0.0);
      auto run = [&](const Strategy& st) {
        for (std::size_t i = 0; i < m_boxes.size(); ++i) {
          // As the pipeline runs it (copy_then_fft): a copy variant's plan copies from a itself.
          const LocalProblem p = slot_problem(slot, st, i);
          const bool from_a = !p.in_place || (slot.variant && st.copy);
          m_local.execute(p, st.method, from_a ? static_cast<void*>(a[i].data()) : static_cast<void*>(b[i].data()),
                          b[i].data());
        }
      };
      // A variant slot's candidates read the caller's array, which a transform in a loop meets out of cache: each
      // reads `a` from memory (in cache, out of place and +copy tie where +copy wins in a loop: default_strategy).
      auto evict_input = [&] {
        if (slot.variant)
          for (const auto& v : a) darray::detail::evict_from_cache(v.data(), v.size() * sizeof(complex_type));
      };
      double timed_s = 0;  // this process's time in timed rounds: processes may stop after different rounds
      for (int rep = 0; rep < 6 && !(rep > 2 && timed_s >= measure_budget_s); ++rep)
        for (std::size_t c = 0; c < list.size(); ++c) {
          if (all_distinct[c] == 0) continue;
          evict_input();
          const auto t0 = std::chrono::steady_clock::now();
          run(list[c]);
          const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          if (rep > 0) {  // rep 0 warms up
            times[c] = std::min(times[c], t);
            timed_s += t;
          }
        }
      DARRAY_MPI_CHECK(
          MPI_Allreduce(times.data(), slowest.data(), static_cast<int>(times.size()), MPI_DOUBLE, MPI_MAX, comm));
      const std::size_t pick =
          static_cast<std::size_t>(std::min_element(slowest.begin(), slowest.end()) - slowest.begin());
      m_strategy[slot.stage][slot.forward ? 0 : 1] = list[pick];
      m_source[slot.stage][slot.forward ? 0 : 1] = "measured";
      std::ostringstream timings;
      for (std::size_t c = 0; c < list.size(); ++c)
        if (all_distinct[c] != 0) timings << " " << to_string(list[c]) << " " << slowest[c] * 1e3;
      m_timings[slot.stage][slot.forward ? 0 : 1] = timings.str();
      record_choice(choice_key(slot), Choice{to_string(list[pick]), m_local.level()});
    }
  }
#endif

  const char* m_api;
  bool m_real;
  Shape m_shape;   // the transform's points (the real shape for a RealPlan)
  Shape m_cshape;  // the complex arrays' shape (dim 2 halved + 1 for a RealPlan)
  NamedSharding m_input;
  Options m_options;
  std::vector<Stage> m_stages;
  std::vector<NamedSharding> m_shardings;   // of the complex arrays, one per stage
  std::vector<AxisOrder> m_orders;          // local storage order of each stage's work buffers
  std::vector<Device> m_devices;            // this process's devices of the mesh, in local-device order
  std::vector<Index> m_real_boxes;          // per local device: its block of the real array (stage 0)
  std::vector<std::vector<Index>> m_boxes;  // per local device, per stage: its block of the complex array
  std::vector<std::unique_ptr<Transpose<complex_type, M>>> m_forward_t, m_backward_t;
  std::unique_ptr<Transpose<complex_type, M>> m_to_input, m_from_input;  // OutputLayout::same only
  mutable LocalPlans<R, M> m_local;
  std::vector<std::array<Strategy, 2>> m_strategy;    // per stage: forward, backward
  std::vector<std::array<std::string, 2>> m_source;   // per stage and direction: heuristic, measured or wisdom
  std::vector<std::array<std::string, 2>> m_timings;  // per stage and direction: the candidates' times, if measured
  std::vector<bool> m_as_forward;                     // per stage: backward took the measured forward choice
  bool m_measured = false;                            // choose_strategies() timed candidates
  std::string m_wisdom;                               // what happened to Options::wisdom_file
  mutable std::vector<Kokkos::View<complex_type*, M>> m_work[2];
  mutable Staging<complex_type, M> m_staging;
  std::unique_ptr<FusedStage<complex_type>> m_fused[2];  // forward, backward: stage 1 fused (fused.hpp), or none
  // A fused plan's work buffer 0 where every process maps it (share_work), and every process's blocks in it as
  // mapped here (per process, local-device order).
  std::unique_ptr<darray::detail::NodeSharedBuffer> m_shared;
  std::vector<std::vector<complex_type*>> m_shared_blocks;
  mutable Kokkos::View<complex_type*, M> m_tile;  // the fused stage's tile
  // What a transform's steps pass each other, kept so that a transform into kept arrays allocates nothing: the
  // arrays' pointers, the work buffers', typed copies for the transposes and the fused stage, reorder's blocks and
  // boxes (m_last_boxes, filled with m_boxes), and the local problems (problem()).
  mutable std::vector<void*> m_pointers[2];
  mutable std::vector<void*> m_work_pointers[2];
  mutable std::vector<const complex_type*> m_const_typed;
  mutable std::vector<complex_type*> m_typed;
  mutable Blocks<complex_type> m_blocks[2];
  std::vector<Index> m_last_boxes;  // every local device's block of the last stage
  mutable std::map<std::tuple<std::size_t, Kind, bool, std::size_t, bool>, LocalProblem> m_problems;
};

}  // namespace detail
}  // namespace fft
}  // namespace darray
