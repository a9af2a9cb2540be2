// The pipeline behind fft::Plan and fft::RealPlan: stages, local axis orders, transposes, local FFT plans, work
// buffers, and the forward and backward passes through them. Arrays the caller sees are row-major; the work buffers
// of later stages may hold their blocks in another axis order.
#pragma once

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>
#include <type_traits>
#include <utility>
#include <vector>

#include "darray/array/detail/block_io.hpp"
#include "darray/array/detail/blocks.hpp"
#include "darray/array/distributed_array.hpp"
#include "darray/comm/check.hpp"
#include "darray/core/error.hpp"
#include "darray/fft/detail/local.hpp"
#include "darray/fft/detail/transpose.hpp"
#include "darray/fft/options.hpp"
#include "darray/fft/stages.hpp"
#include "darray/redistribute/reshard.hpp"
#include "darray/runtime/detail/agree.hpp"
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

// a *= factor on every shard, in the memory space's execution space (a kernel on GPUs).
template <class T, class R, class M>
void scale(const DistributedArray<T, 3, M>& a, R factor) {
  if (factor == R(1)) return;
  using Exec = typename M::execution_space;
  for (const auto& s : a.addressable_shards()) {
    T* p = s.data.data();
    Kokkos::parallel_for(
        "darray::fft::scale", Kokkos::RangePolicy<Exec, Kokkos::IndexType<int64_t>>(0, volume(s.index)),
        KOKKOS_LAMBDA(const int64_t i) { p[i] *= factor; });
  }
  Exec().fence();
}

template <class T, class M>
std::vector<void*> pointers(const DistributedArray<T, 3, M>& a) {
  std::vector<void*> out;
  for (const auto& s : a.addressable_shards()) out.push_back(static_cast<void*>(s.data.data()));
  return out;
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

  PlanCore(const char* api, const Shape& shape, const NamedSharding& input, const Options& options, bool real)
      : m_api(api),
        m_real(real),
        m_shape(shape),
        m_input(input),
        m_options(options),
        m_local(options.planner == Planner::measure) {
    DARRAY_THROW_IF(shape.size() != 3, InvalidArgument, api,
                    "shape " << shape_to_string(shape) << " has rank " << shape.size() << "; expected a 3-D shape");
    for (std::size_t d = 0; d < 3; ++d)
      DARRAY_THROW_IF(shape[d] < 1, InvalidArgument, api,
                      "shape " << shape_to_string(shape) << " has extent " << shape[d] << " in dim " << d
                               << "; an FFT needs at least one point per dim");
    input.check_shape(shape);
    DARRAY_THROW_IF((LocalPlans<R, M>::backend == Backend::none), NotSupported, api,
                    "no FFT backend serves memory space " << M::name()
                                                          << " in this build; host memory needs FFTW, GPU memory cuFFT "
                                                             "with a CUDA-enabled Kokkos");
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
      m_real_boxes.push_back(input.index(shape, d));
      std::vector<Index> per_stage;
      for (std::size_t s = 0; s < n; ++s) per_stage.push_back(m_shardings[s].index(m_cshape, d));
      m_boxes.push_back(std::move(per_stage));
    }
    auto transpose = [&](std::size_t from, std::size_t to, const AxisOrder& a, const AxisOrder& b) {
      return std::make_unique<Transpose<complex_type, M>>(
          reshard_plan<complex_type>(m_shardings[from], m_shardings[to], m_cshape), a, b);
    };
    for (std::size_t s = 0; s + 1 < n; ++s) {
      m_forward_t.push_back(transpose(s, s + 1, m_orders[s], m_orders[s + 1]));
      m_backward_t.push_back(transpose(s + 1, s, m_orders[s + 1], m_orders[s]));
    }
    if (n > 1 && options.output == OutputLayout::same) {
      m_to_input = transpose(n - 1, 0, m_orders[n - 1], row_major_order);
      m_from_input = transpose(0, n - 1, row_major_order, m_orders[n - 1]);
    }
    // Planning is local, but FFTW may fail on one process only: agree, so every process throws the same error.
    darray::detail::run_agreed(darray::detail::world_comm(), [&] { prepare_local_plans(); });
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

  complex_array allocate_complex_input() const { return allocate<complex_type, M>(m_input, m_cshape); }
  real_array allocate_real_input() const { return allocate<R, M>(m_input, m_shape); }
  complex_array allocate_output() const { return allocate<complex_type, M>(output_sharding(), m_cshape); }

  void forward_c2c(const complex_array& in, const complex_array& out) const {
    check(in, m_input, m_cshape, "forward", "input");
    check(out, output_sharding(), m_cshape, "forward", "output");
    check_consistent_call("forward");
    forward_pipeline(Kind::c2c, pointers(in), pointers(out));
    scale(out, forward_factor());
  }

  void forward_r2c(const real_array& in, const complex_array& out) const {
    check(in, m_input, m_shape, "forward", "input");
    check(out, output_sharding(), m_cshape, "forward", "output");
    check_consistent_call("forward");
    forward_pipeline(Kind::r2c, pointers(in), pointers(out));
    scale(out, forward_factor());
  }

  void backward_c2c(const complex_array& in, const complex_array& out) const {
    check(in, output_sharding(), m_cshape, "backward", "input");
    check(out, m_input, m_cshape, "backward", "output");
    check_consistent_call("backward");
    backward_pipeline(Kind::c2c, pointers(in), pointers(out));
    scale(out, backward_factor());
  }

  void backward_c2r(const complex_array& in, const real_array& out) const {
    check(in, output_sharding(), m_cshape, "backward", "input");
    check(out, m_input, m_shape, "backward", "output");
    check_consistent_call("backward");
    backward_pipeline(Kind::c2r, pointers(in), pointers(out));
    scale(out, backward_factor());
  }

 private:
  bool transposed() const { return m_options.output == OutputLayout::transposed; }

  // How stage s stores a block: row-major, except that a stage transforming only dim 0 keeps it in the middle,
  // (n1, n0, n2) as FFTW-MPI's transposed slabs, so its FFTs stride by one row of n2 instead of a whole plane
  // (power-of-two plane strides thrash the cache). Dim 2 stays innermost, so every copy moves runs of n2. The last
  // stage of a transposed-output plan is row-major all the same: the transpose writes it straight into the
  // caller's array (in any order, through MPI datatypes), and a tiled pass along dim 0 there costs less than the
  // local reorder of the whole block that the (n1, n0, n2) order would need (bench/fft, 128^3 at 2 processes: ratio
  // 0.92-0.97 against 1.02-1.05).
  AxisOrder stage_order(std::size_t s) const {
    const auto& dims = m_stages[s].dims;
    if (transposed() && s + 1 == m_stages.size()) return row_major_order;
    if (s > 0 && dims.size() == 1 && dims[0] == 0) return AxisOrder{1, 0, 2};
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

  // Work buffer k (0 or 1), one block per local device, each large enough for the device's block at any stage;
  // allocated on first use, so a slab transform with the output in the input layout needs only buffer 0.
  std::vector<void*> work(std::size_t k) const {
    auto& buffers = m_work[k];
    if (buffers.empty())
      for (const auto& boxes : m_boxes) {
        int64_t n = 0;
        for (const Index& b : boxes) n = std::max(n, volume(b));
        buffers.emplace_back(Kokkos::view_alloc("darray::fft work", Kokkos::WithoutInitializing),
                             static_cast<std::size_t>(n));
      }
    std::vector<void*> out;
    for (const auto& v : buffers) out.push_back(static_cast<void*>(v.data()));
    return out;
  }
  void transpose(const Transpose<complex_type, M>& t, const std::vector<void*>& src,
                 const std::vector<void*>& dst) const {
    std::vector<complex_type*> s, d;
    for (void* p : src) s.push_back(static_cast<complex_type*>(p));
    for (void* p : dst) d.push_back(static_cast<complex_type*>(p));
    t.run(s, d, m_staging);
  }
  static Blocks<complex_type> blocks(const std::vector<void*>& ptrs, const AxisOrder& order) {
    Blocks<complex_type> b;
    for (void* p : ptrs) b.ptrs.push_back(static_cast<complex_type*>(p));
    b.order = order;
    return b;
  }

  LocalProblem problem(std::size_t s, Kind kind, bool forward, std::size_t device, bool in_place) const {
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

  // The local FFTs of stage s on every local device's block, in the stage's axis order.
  void fft(std::size_t s, Kind kind, bool forward, const std::vector<void*>& in, const std::vector<void*>& out) const {
    using Exec = typename M::execution_space;
    Exec().fence();  // FFTW reads on the host what kernels may still be writing
    for (std::size_t i = 0; i < in.size(); ++i)
      m_local.execute(problem(s, kind, forward, i, in[i] == out[i]), in[i], out[i]);
    Exec().fence();  // cuFFT runs asynchronously; MPI reads the result next
  }

  // Stage 0 from the input, then per stage a transpose and the local FFTs in place; the result ends in `out`.
  // Stage 0 runs in `out` itself when the output keeps the input's sharding (its blocks are stage 0's).
  void forward_pipeline(Kind first, const std::vector<void*>& in, const std::vector<void*>& out) const {
    const std::size_t n = m_stages.size();
    if (n == 1) {
      fft(0, first, true, in, out);
      return;
    }
    int cur_index = transposed() ? 0 : -1;  // -1: `out`
    std::vector<void*> cur = transposed() ? work(0) : out;
    if (first == Kind::c2c && in != cur) {
      // Copy, then transform in place: FFTW_ESTIMATE's out-of-place multi-dim plans are slower than that pair
      // (bench/fft at 128^3, 2 processes: ratio 0.82 against 0.87-1.01 out of place).
      for (std::size_t i = 0; i < in.size(); ++i)
        copy_block(static_cast<const complex_type*>(in[i]), static_cast<complex_type*>(cur[i]), volume(m_boxes[i][0]));
      fft(0, first, true, cur, cur);
    } else {
      fft(0, first, true, in, cur);
    }
    for (std::size_t s = 1; s < n; ++s) {
      // The last stage of a transposed-output plan in row-major order lands in `out` without a final copy.
      const bool direct = s + 1 == n && transposed() && m_orders[s] == row_major_order;
      const int target_index = cur_index == 0 ? 1 : 0;
      const std::vector<void*> target = direct ? out : work(static_cast<std::size_t>(target_index));
      transpose(*m_forward_t[s - 1], cur, target);
      fft(s, Kind::c2c, true, target, target);
      if (direct) return;
      cur = target;
      cur_index = target_index;
    }
    if (transposed()) {
      std::vector<Index> boxes;
      for (const auto& b : m_boxes) boxes.push_back(b[n - 1]);
      reorder<complex_type, M>(boxes, blocks(cur, m_orders[n - 1]), blocks(out, row_major_order));
    } else {
      transpose(*m_to_input, cur, out);
    }
  }

  // The forward pipeline run backwards; the caller's input is only read, the c2r input is a work buffer.
  void backward_pipeline(Kind last, const std::vector<void*>& in, const std::vector<void*>& out) const {
    const std::size_t n = m_stages.size();
    std::vector<void*> cur = work(0);
    if (n == 1) {
      if (last == Kind::c2c) {
        fft(0, Kind::c2c, false, in, out);
      } else {  // FFTW's and cuFFT's c2r overwrite their input
        for (std::size_t i = 0; i < in.size(); ++i)
          copy_block(static_cast<const complex_type*>(in[i]), static_cast<complex_type*>(cur[i]),
                     volume(m_boxes[i][0]));
        fft(0, Kind::c2r, false, cur, out);
      }
      return;
    }
    if (transposed()) {
      if (m_orders[n - 1] == row_major_order) {
        fft(n - 1, Kind::c2c, false, in, cur);
      } else {
        std::vector<Index> boxes;
        for (const auto& b : m_boxes) boxes.push_back(b[n - 1]);
        reorder<complex_type, M>(boxes, blocks(in, row_major_order), blocks(cur, m_orders[n - 1]));
        fft(n - 1, Kind::c2c, false, cur, cur);
      }
    } else {
      transpose(*m_from_input, in, cur);
      fft(n - 1, Kind::c2c, false, cur, cur);
    }
    std::size_t cur_index = 0;
    for (std::size_t s = n - 1; s >= 1; --s) {
      if (s == 1 && last == Kind::c2c) {  // stage 0 is row-major: transpose straight into `out`
        transpose(*m_backward_t[0], cur, out);
        fft(0, Kind::c2c, false, out, out);
        return;
      }
      const std::size_t target_index = 1 - cur_index;
      const std::vector<void*> target = work(target_index);
      transpose(*m_backward_t[s - 1], cur, target);
      if (s == 1) {
        fft(0, Kind::c2r, false, target, out);
        return;
      }
      fft(s - 1, Kind::c2c, false, target, target);
      cur = target;
      cur_index = target_index;
    }
  }

  static void copy_block(const complex_type* src, complex_type* dst, int64_t n) {
    using View = Kokkos::View<complex_type*, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    Kokkos::deep_copy(View(dst, static_cast<std::size_t>(n)),
                      Kokkos::View<const complex_type*, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                          src, static_cast<std::size_t>(n)));
  }

  // Every local problem the pipelines meet on this process's devices.
  void prepare_local_plans() {
    const std::size_t n = m_stages.size();
    for (std::size_t i = 0; i < m_boxes.size(); ++i)
      for (std::size_t s = 0; s < n; ++s) {
        if (s == 0 && m_real) {
          m_local.prepare(problem(0, Kind::r2c, true, i, false));
          m_local.prepare(problem(0, Kind::c2r, false, i, false));
          continue;
        }
        // Out of place where the caller's array is read (a single stage; the last stage backward when the
        // transposed output comes in row-major), in place on the work buffers otherwise (stage 0 forward copies
        // the input first).
        const bool single = n == 1;
        m_local.prepare(problem(s, Kind::c2c, true, i, !single));
        const bool backward_out_of_place = single || (s + 1 == n && transposed() && m_orders[s] == row_major_order);
        m_local.prepare(problem(s, Kind::c2c, false, i, !backward_out_of_place));
      }
  }

  const char* m_api;
  bool m_real;
  Shape m_shape;   // the transform's points (the real shape for a RealPlan)
  Shape m_cshape;  // the complex arrays' shape (dim 2 halved + 1 for a RealPlan)
  NamedSharding m_input;
  Options m_options;
  std::vector<Stage> m_stages;
  std::vector<NamedSharding> m_shardings;   // of the complex arrays, one per stage
  std::vector<AxisOrder> m_orders;          // local storage order of each stage's work buffers
  std::vector<Index> m_real_boxes;          // per local device: its block of the real array (stage 0)
  std::vector<std::vector<Index>> m_boxes;  // per local device, per stage: its block of the complex array
  std::vector<std::unique_ptr<Transpose<complex_type, M>>> m_forward_t, m_backward_t;
  std::unique_ptr<Transpose<complex_type, M>> m_to_input, m_from_input;  // OutputLayout::same only
  mutable LocalPlans<R, M> m_local;
  mutable std::vector<Kokkos::View<complex_type*, M>> m_work[2];
  mutable Staging<complex_type, M> m_staging;
};

}  // namespace detail
}  // namespace fft
}  // namespace darray
