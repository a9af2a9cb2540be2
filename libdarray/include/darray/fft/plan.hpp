// fft::Plan (complex-to-complex) and fft::RealPlan (real-to-complex forward, complex-to-real backward): distributed
// 3-D FFTs of DistributedArrays on a slab (1-D mesh) or pencil (2-D mesh) decomposition. Built once per (shape,
// input sharding, options): the stage sequence, one cached ReshardPlan per transpose and one FFTW (CPU) or cuFFT
// (GPU) plan per distinct local block, then executed many times.
#pragma once

#include <Kokkos_Core.hpp>
#include <cmath>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "darray/array/detail/block_io.hpp"
#include "darray/array/detail/blocks.hpp"
#include "darray/array/distributed_array.hpp"
#include "darray/core/error.hpp"
#include "darray/fft/detail/local.hpp"
#include "darray/fft/options.hpp"
#include "darray/fft/stages.hpp"
#include "darray/redistribute/reshard.hpp"
#include "darray/runtime/detail/agree.hpp"
#include "darray/runtime/environment.hpp"

namespace darray {
namespace fft {
namespace detail {

// An uninitialised array: every element is written by the local FFT that fills it.
template <class T, class M>
DistributedArray<T, 3, M> allocate(const NamedSharding& sharding, const Shape& shape) {
  const auto devs = darray::detail::process_device_blocks(sharding, shape, process_index());
  auto shards = darray::detail::allocate_shards<T, 3, M>(devs, /*initialize=*/false);
  return DistributedArray<T, 3, M>(darray::detail::AdoptShards{}, shape, sharding, std::move(shards));
}

template <class T, class M>
DistributedArray<T, 3, M> copy_of(const DistributedArray<T, 3, M>& a) {
  auto out = allocate<T, M>(a.sharding(), a.shape());
  for (std::size_t i = 0; i < a.addressable_shards().size(); ++i)
    Kokkos::deep_copy(out.addressable_shards()[i].data, a.addressable_shards()[i].data);
  return out;
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

// Everything a Plan and a RealPlan share: stages, transposes, local plans, the pipeline itself.
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
    // Stage 0 is the caller's sharding itself (P("x") and P("x", none, none) partition alike but compare unequal).
    m_shardings.push_back(input);
    for (std::size_t s = 1; s < m_stages.size(); ++s) m_shardings.emplace_back(input.mesh(), m_stages[s].spec);
    const std::size_t n = m_stages.size();
    for (std::size_t s = 0; s + 1 < n; ++s) {
      m_forward_t.push_back(reshard_plan<complex_type>(m_shardings[s], m_shardings[s + 1], m_cshape));
      m_backward_t.push_back(reshard_plan<complex_type>(m_shardings[s + 1], m_shardings[s], m_cshape));
    }
    if (n > 1 && options.output == OutputLayout::same) {
      m_to_input = reshard_plan<complex_type>(m_shardings[n - 1], m_shardings[0], m_cshape);
      m_from_input = reshard_plan<complex_type>(m_shardings[0], m_shardings[n - 1], m_cshape);
    }
    // Planning is local, but FFTW may fail on one process only: agree, so every process throws the same error.
    darray::detail::run_agreed(darray::detail::world_comm(), [&] { prepare_local_plans(); });
  }

  const Shape& shape() const { return m_shape; }
  const Shape& complex_shape() const { return m_cshape; }
  const NamedSharding& input_sharding() const { return m_input; }
  const NamedSharding& output_sharding() const {
    return m_options.output == OutputLayout::same ? m_shardings.front() : m_shardings.back();
  }
  const std::vector<Stage>& stages() const { return m_stages; }
  const Options& options() const { return m_options; }
  // Transposes one forward (or backward) transform performs.
  int transposes() const {
    const int n = static_cast<int>(m_stages.size());
    return n - 1 + (m_to_input ? 1 : 0);
  }
  const char* backend() const { return to_string(LocalPlans<R, M>::backend); }
  std::size_t local_plan_count() const { return m_local.size(); }

  complex_array forward_c2c(const complex_array& in) const {
    check_input(in, m_shardings.front(), m_cshape, "forward");
    auto cur = allocate<complex_type, M>(m_shardings.front(), m_cshape);
    run_stage(0, Kind::c2c, true, in, cur);
    return finish_forward(std::move(cur));
  }

  complex_array forward_r2c(const real_array& in) const {
    check_input(in, m_input, m_shape, "forward");
    auto cur = allocate<complex_type, M>(m_shardings.front(), m_cshape);
    run_stage(0, Kind::r2c, true, in, cur);
    return finish_forward(std::move(cur));
  }

  complex_array backward_c2c(const complex_array& in) const {
    check_input(in, output_sharding(), m_cshape, "backward");
    auto [cur, owned] = backward_to_stage0(in);
    if (!owned) {
      auto out = allocate<complex_type, M>(m_shardings.front(), m_cshape);
      run_stage(0, Kind::c2c, false, cur, out);
      cur = std::move(out);
    } else {
      run_stage(0, Kind::c2c, false, cur, cur);
    }
    scale(cur, backward_factor());
    return std::move(cur);
  }

  real_array backward_c2r(const complex_array& in) const {
    check_input(in, output_sharding(), m_cshape, "backward");
    auto [cur, owned] = backward_to_stage0(in);
    if (!owned) cur = copy_of(cur);  // c2r overwrites its input, which belongs to the caller here
    auto out = allocate<R, M>(m_input, m_shape);
    run_stage(0, Kind::c2r, false, cur, out);
    scale(out, backward_factor());
    return out;
  }

 private:
  // N in the normalisation: points of the (real) transform.
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

  template <class T>
  void check_input(const DistributedArray<T, 3, M>& a, const NamedSharding& expected, const Shape& shape,
                   const char* what) const {
    DARRAY_THROW_IF(a.shape() != shape, InvalidArgument, m_api,
                    what << "() got an array of shape " << shape_to_string(a.shape()) << "; this plan transforms "
                         << shape_to_string(shape));
    DARRAY_THROW_IF(a.sharding() != expected, InvalidArgument, m_api,
                    what << "() got an array sharded as " << a.sharding() << "; this plan takes " << expected
                         << " (reshard it first, or build the plan for its sharding)");
  }

  // Stages 1.. of a forward transform, the way back to the input layout when asked, and the scaling.
  complex_array finish_forward(complex_array cur) const {
    for (std::size_t s = 1; s < m_stages.size(); ++s) {
      cur = darray::execute(*m_forward_t[s - 1], cur);
      run_stage(static_cast<int>(s), Kind::c2c, true, cur, cur);
    }
    if (m_to_input) cur = darray::execute(*m_to_input, cur);
    scale(cur, forward_factor());
    return cur;
  }

  // Backward stages S-1 .. 1 and their transposes; returns the stage-0 array and whether this plan owns it (the
  // caller's input is never overwritten).
  std::pair<complex_array, bool> backward_to_stage0(const complex_array& in) const {
    complex_array cur = in;
    bool owned = false;
    if (m_from_input) {
      cur = darray::execute(*m_from_input, in);
      owned = true;
    }
    for (std::size_t s = m_stages.size() - 1; s >= 1; --s) {
      if (owned) {
        run_stage(static_cast<int>(s), Kind::c2c, false, cur, cur);
      } else {
        auto out = allocate<complex_type, M>(m_shardings[s], m_cshape);
        run_stage(static_cast<int>(s), Kind::c2c, false, cur, out);
        cur = std::move(out);
        owned = true;
      }
      cur = darray::execute(*m_backward_t[s - 1], cur);
    }
    return {std::move(cur), owned};
  }

  LocalProblem problem(int s, Kind kind, bool forward, const Shape& in_block, const Shape& out_block,
                       bool in_place) const {
    LocalProblem p;
    p.kind = kind;
    p.forward = kind == Kind::c2c ? forward : kind == Kind::r2c;
    p.in_block = in_block;
    p.out_block = out_block;
    p.dims = m_stages[static_cast<std::size_t>(s)].dims;
    p.in_place = kind == Kind::c2c && in_place;
    return p;
  }

  // The local FFTs of stage s on every addressable shard (in and out hold the same devices in the same order).
  template <class TI, class TO>
  void run_stage(int s, Kind kind, bool forward, const DistributedArray<TI, 3, M>& in,
                 const DistributedArray<TO, 3, M>& out) const {
    using Exec = typename M::execution_space;
    Exec().fence();  // FFTW reads on the host what kernels may still be writing
    const auto& is = in.addressable_shards();
    const auto& os = out.addressable_shards();
    for (std::size_t i = 0; i < is.size(); ++i) {
      void* src = const_cast<void*>(static_cast<const void*>(is[i].data.data()));
      void* dst = static_cast<void*>(os[i].data.data());
      m_local.execute(problem(s, kind, forward, box_shape(is[i].index), box_shape(os[i].index), src == dst), src, dst);
    }
    Exec().fence();  // cuFFT runs asynchronously; MPI reads the result next
  }

  // Every local problem execution will meet, for this process's devices.
  void prepare_local_plans() {
    const std::size_t n = m_stages.size();
    const bool owned_backward = static_cast<bool>(m_from_input);
    for (const Device& dev : local_devices()) {
      if (!m_input.mesh().contains(dev)) continue;
      for (std::size_t s = 0; s < n; ++s) {
        const int st = static_cast<int>(s);
        const Shape cb = box_shape(m_shardings[s].index(m_cshape, dev));
        if (s == 0 && m_real) {
          const Shape rb = box_shape(m_input.index(m_shape, dev));
          m_local.prepare(problem(st, Kind::r2c, true, rb, cb, false));
          m_local.prepare(problem(st, Kind::c2r, false, cb, rb, false));
          continue;
        }
        m_local.prepare(problem(st, Kind::c2c, true, cb, cb, s > 0));
        const bool backward_in_place = s + 1 == n ? owned_backward : true;
        m_local.prepare(problem(st, Kind::c2c, false, cb, cb, backward_in_place));
      }
    }
  }

  const char* m_api;
  bool m_real;
  Shape m_shape;   // the transform's points (the real shape for a RealPlan)
  Shape m_cshape;  // the complex arrays' shape (dim 2 halved + 1 for a RealPlan)
  NamedSharding m_input;
  Options m_options;
  std::vector<Stage> m_stages;
  std::vector<NamedSharding> m_shardings;  // of the complex arrays, one per stage
  std::vector<std::shared_ptr<const ReshardPlan>> m_forward_t, m_backward_t;
  std::shared_ptr<const ReshardPlan> m_to_input, m_from_input;  // only for OutputLayout::same with transposes
  mutable LocalPlans<R, M> m_local;
};

}  // namespace detail

// Complex-to-complex 3-D FFT of DistributedArray<Kokkos::complex<R>, 3, M> arrays, R = double or float.
//   fft::Plan<double> plan(shape, NamedSharding(mesh, P("x", none, none)));
//   auto spectrum = plan.forward(a);     // sharded as plan.output_sharding()
//   auto back = plan.backward(spectrum); // sharded as plan.input_sharding(); equals a to rounding
// Uneven shapes work (blocks differ by one). Building the plan is collective; forward() and backward() are
// collective and never modify their argument. One plan object must not run two transforms at once.
template <class R, class M = DefaultMemorySpace>
class Plan {
 public:
  using complex_type = Kokkos::complex<R>;
  using array_type = DistributedArray<complex_type, 3, M>;

  Plan(const Shape& shape, const NamedSharding& input, const Options& options = {})
      : m_core(std::make_shared<detail::PlanCore<R, M>>("fft::Plan", shape, input, options, false)) {}

  // Sign -1: X[k] = sum_j x[j] exp(-2 pi i j.k / n), times the forward factor of options().normalization.
  array_type forward(const array_type& a) const { return m_core->forward_c2c(a); }
  // Sign +1, times the backward factor; takes output_sharding(), returns input_sharding().
  array_type backward(const array_type& a) const { return m_core->backward_c2c(a); }

  const Shape& shape() const { return m_core->shape(); }
  const NamedSharding& input_sharding() const { return m_core->input_sharding(); }
  const NamedSharding& output_sharding() const { return m_core->output_sharding(); }
  const std::vector<Stage>& stages() const { return m_core->stages(); }
  const Options& options() const { return m_core->options(); }
  int transposes() const { return m_core->transposes(); }
  const char* backend() const { return m_core->backend(); }  // "fftw" or "cufft"

 private:
  std::shared_ptr<detail::PlanCore<R, M>> m_core;
};

// Real-to-complex forward / complex-to-real backward 3-D FFT, as numpy's rfftn / irfftn: a real array of shape
// (n0, n1, n2) maps to the complex half spectrum of shape (n0, n1, n2 / 2 + 1) (the last dim halved). The input
// sharding must hold dim 2 whole (e.g. P("x", none, none) or P("r", "c", none)). N in the normalisation is
// n0 * n1 * n2. The imaginary parts of the k2 = 0 (and, for even n2, k2 = n2 / 2) planes of a backward input are
// taken as Hermitian-symmetric, as FFTW's and numpy's c2r do.
template <class R, class M = DefaultMemorySpace>
class RealPlan {
 public:
  using complex_type = Kokkos::complex<R>;
  using real_array = DistributedArray<R, 3, M>;
  using complex_array = DistributedArray<complex_type, 3, M>;

  RealPlan(const Shape& real_shape, const NamedSharding& input, const Options& options = {})
      : m_core(std::make_shared<detail::PlanCore<R, M>>("fft::RealPlan", real_shape, input, options, true)) {}

  complex_array forward(const real_array& a) const { return m_core->forward_r2c(a); }
  real_array backward(const complex_array& a) const { return m_core->backward_c2r(a); }

  const Shape& shape() const { return m_core->shape(); }                              // real
  const Shape& complex_shape() const { return m_core->complex_shape(); }              // (n0, n1, n2 / 2 + 1)
  const NamedSharding& input_sharding() const { return m_core->input_sharding(); }    // of the real array
  const NamedSharding& output_sharding() const { return m_core->output_sharding(); }  // of the half spectrum
  const std::vector<Stage>& stages() const { return m_core->stages(); }
  const Options& options() const { return m_core->options(); }
  int transposes() const { return m_core->transposes(); }
  const char* backend() const { return m_core->backend(); }

 private:
  std::shared_ptr<detail::PlanCore<R, M>> m_core;
};

}  // namespace fft
}  // namespace darray
