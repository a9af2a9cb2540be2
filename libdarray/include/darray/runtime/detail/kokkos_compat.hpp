// The one place that bridges Kokkos 3.4 and 4.x: initialisation settings, finalisation queries, fences, and the
// allocation record of memory libdarray manages itself. 3.4 lacks InitializationSettings, is_finalized and labelled
// fences; 4.x removed InitArguments; 3.6 moved the label into the base allocation record.
#pragma once

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>

#if !defined(KOKKOS_VERSION)
#error "libdarray needs Kokkos (KOKKOS_VERSION undefined)"
#endif

#define DARRAY_KOKKOS_VERSION_AT_LEAST(major, minor) (KOKKOS_VERSION >= ((major)*10000 + (minor)*100))

// cudaStream_t is `CUstream_st*` (as in comm/transport.hpp's GpuStream).
struct CUstream_st;

namespace darray {
namespace detail {

// Initialises Kokkos for device `device_id` (-1: Kokkos' default) unless it already runs.
// Returns true when this call did initialise it, so the caller knows to finalise it.
inline bool kokkos_initialize_if_needed(int device_id) {
  if (Kokkos::is_initialized()) return false;
#if DARRAY_KOKKOS_VERSION_AT_LEAST(3, 7)
  Kokkos::InitializationSettings settings;
  if (device_id >= 0) settings.set_device_id(device_id);
  Kokkos::initialize(settings);
#else
  Kokkos::InitArguments args;
  args.device_id = device_id;
  Kokkos::initialize(args);
#endif
  return true;
}

inline bool kokkos_is_finalized() {
#if DARRAY_KOKKOS_VERSION_AT_LEAST(3, 7)
  return Kokkos::is_finalized();
#else
  return false;  // 3.4 cannot tell; callers only finalise what they initialised
#endif
}

// What Kokkos costs per call on the host heap, and how libdarray avoids it on its per-call paths (a kept-output
// collective allocates nothing once its plan is cached: test/collectives/test_allocations.cpp; on an H200 with
// Kokkos 4.6 it made 252 operator new calls in 3 rounds before these rules):
//  - An execution space instance made with ExecSpace() (Kokkos 4) allocates a shared-pointer control block:
//    default_instance<ExecSpace>() is made once, and copies of it only count references.
//  - Fence names and kernel labels are const std::string&; Kokkos::Tools::beginFence copies the fence name by value,
//    and unnamed fences default to long literals: fence() and fence_all() pass a name built once that fits
//    std::string's inline buffer (15 characters in libstdc++), and kernels take their labels from a function-local
//    `static const std::string`, never from a literal. Kokkos 3.4 fences take no name.
//  - Under nvcc a KOKKOS_LAMBDA is an extended __host__ __device__ lambda, a type-erased wrapper that allocates when
//    made and each time Kokkos copies it: kernels on per-call paths are functors.
//  - Kokkos::deep_copy fences with long literal names: per-call paths fill and copy with their own kernels.
//  - A RangePolicy left to choose its chunk size asks `m_space.concurrency()`, which with Kokkos 4's deprecated code
//    on (the default) is the static `concurrency(const Exec& = Exec())`: its default argument makes an instance, and
//    an OpenMP instance allocates (4 operator new calls a round of test_allocations' kept psum, pmax and psum_scatter
//    under Kokkos 4.6.1 OpenMP at 72 KiB a block): range_policy() gives host spaces their chunk size itself.
//  - Kokkos 4's parallel_reduce makes its fence label, a 67-character literal, a std::string on every call, and a
//    scalar result fences with it (two operator new calls a reduction): the ops' host reductions run as a
//    parallel_for over chunks (ops/detail/reduce.hpp).
template <class ExecSpace>
const ExecSpace& default_instance() {
  static const ExecSpace space;  // destroyed at exit, after Kokkos::finalize: a reference count, nothing more
  return space;
}

// The threads of a host execution space, asked once per process (at least 1): asking Kokkos 4 allocates (above).
template <class ExecSpace>
int64_t host_concurrency(const ExecSpace& space) {
  static const int64_t concurrency = std::max<int64_t>(1, static_cast<int64_t>(space.concurrency()));
  return concurrency;
}

// A RangePolicy over [begin, end) on `space`. On a host execution space (OpenMP, Threads, Serial) with the chunk
// size Kokkos would choose itself, computed from the space's concurrency asked once per process (Kokkos 4 cannot be
// initialised again after finalize), so that making the policy allocates nothing (see above); elsewhere (CUDA)
// Kokkos' own policy as it is.
template <class ExecSpace, class I>
Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<I>> range_policy(const ExecSpace& space, I begin, I end) {
  using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<I>>;
  if constexpr (Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible) {
    const int64_t concurrency = host_concurrency(space);
    // Kokkos' rule: the smallest power of two giving each thread at most 100 chunks; below 128, the smallest giving
    // at most 40, at most 128.
    const auto n = static_cast<int64_t>(end - begin);
    int64_t chunk = 1;
    while (chunk * 100 * concurrency < n) chunk *= 2;
    if (chunk < 128) {
      chunk = 1;
      while (chunk * 40 * concurrency < n && chunk < 128) chunk *= 2;
    }
    return Policy(space, begin, end, Kokkos::ChunkSize(static_cast<int>(chunk)));
  } else {
    return Policy(space, begin, end);
  }
}

// The CUDA stream `space`'s kernels run on (a Kokkos::Cuda instance's), null for every other execution space: NCCL
// calls go on it, so they follow the kernels that wrote their buffers and precede those that read them, without a
// fence between.
template <class ExecSpace>
::CUstream_st* gpu_stream(const ExecSpace& space) {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) return space.cuda_stream();
#endif
  (void)space;
  return nullptr;
}

// Whether kernels of ExecSpace may still run after their launch returned (GPU spaces, HPX, OpenMPTarget). Serial,
// OpenMP and Threads finish a kernel before its launch returns: a fence of one of their instances waits for nothing.
template <class ExecSpace>
constexpr bool runs_asynchronously() {
#if defined(KOKKOS_ENABLE_SERIAL)
  if constexpr (std::is_same<ExecSpace, Kokkos::Serial>::value) return false;
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
  if constexpr (std::is_same<ExecSpace, Kokkos::OpenMP>::value) return false;
#endif
#if defined(KOKKOS_ENABLE_THREADS)
  if constexpr (std::is_same<ExecSpace, Kokkos::Threads>::value) return false;
#endif
  return true;
}

// Fences: before MPI touches a buffer a kernel wrote (Kokkos 4 no longer syncs the default stream implicitly), and
// before the host reads one. NCCL needs none: its calls run on the kernels' stream (gpu_stream). Nothing for an
// instance of a synchronous space (runs_asynchronously), whose kernels are done.
template <class ExecSpace>
inline void fence(const ExecSpace& space) {
  if constexpr (runs_asynchronously<ExecSpace>()) {
#if DARRAY_KOKKOS_VERSION_AT_LEAST(3, 5)
    static const std::string name = "darray::fence";  // inline in std::string: no copy of it allocates
    space.fence(name);
#else
    space.fence();
#endif
  } else {
    (void)space;
  }
}

inline void fence_all() {
#if DARRAY_KOKKOS_VERSION_AT_LEAST(3, 5)
  static const std::string name = "darray::fence";
  Kokkos::fence(name);
#else
  Kokkos::fence();
#endif
}

// Whether a kernel may still be writing memory of space M after its launch returned: some execution space of this
// build that runs kernels asynchronously (CUDA, HIP, SYCL, HPX, OpenMPTarget) can reach M. The host backends
// (Serial, OpenMP, Threads) finish a kernel before its launch returns, so host memory of a build without such a
// space (or whose asynchronous spaces cannot reach it, as HostSpace on a CUDA build) is never written behind the
// caller's back. CudaUVMSpace and CudaHostPinnedSpace are reachable from both sides: written asynchronously.
template <class M>
constexpr bool written_asynchronously() {
#if defined(KOKKOS_ENABLE_HIP) || defined(KOKKOS_ENABLE_SYCL) || defined(KOKKOS_ENABLE_HPX) || \
    defined(KOKKOS_ENABLE_OPENMPTARGET)
  return true;  // not told apart here: fence every space
#elif defined(KOKKOS_ENABLE_CUDA)
  return Kokkos::SpaceAccessibility<Kokkos::Cuda, M>::accessible;
#else
  return false;
#endif
}

// fence_all() where kernels may still be writing blocks of M (written_asynchronously<M>), nothing otherwise: before
// MPI or the host reads blocks that kernels wrote, and after a call's own kernels wrote a result MPI may read next.
// On a host-only build this is free: a full fence walks every execution space and the tools' hooks (about 95
// instructions, 5 ns of a 60 ns small collective).
template <class M>
void fence_writers_of() {
  if constexpr (written_asynchronously<M>()) fence_all();
}

// The Kokkos allocation record of a block libdarray allocated itself (the shard memory cache). Views built on it
// count references exactly like views Kokkos allocated, so a copy of a view keeps the block alive; when the last
// view goes, Kokkos calls `release` (instead of freeing), which must delete the record. `data` must be preceded by
// sizeof(SharedAllocationHeader) bytes of the same allocation, zeroed: Kokkos may read the header in error reports.
// Kokkos >= 3.6 takes the label in the base constructor; Kokkos built with KOKKOS_ENABLE_DEBUG links every record
// into a list under a root record (ours: one per process, never printed). Kokkos 5's mdspan-based View no longer
// builds views from a record and a mapping; this header supports 3.4 to 4.x.
class ExternalAllocationRecord : public Kokkos::Impl::SharedAllocationRecord<void, void> {
  using Base = Kokkos::Impl::SharedAllocationRecord<void, void>;

 public:
  using Header = Kokkos::Impl::SharedAllocationHeader;
  using release_function = Base::function_type;

  std::string get_label() const override { return m_long_label.empty() ? std::string(m_label) : m_long_label; }

 protected:
  ExternalAllocationRecord(void* data, std::size_t bytes, release_function release, std::string_view label)
      : Base(
#if defined(KOKKOS_ENABLE_DEBUG)
            debug_root(),
#endif
            static_cast<Header*>(data) - 1, bytes + sizeof(Header), release
#if DARRAY_KOKKOS_VERSION_AT_LEAST(3, 6)
            ,
            unlabelled()  // the base keeps a std::string copy: get_label() answers from ours instead
#endif
        ) {
    // Labels up to 47 characters are kept inline: no heap allocation per record (one per call that takes a block).
    if (label.size() < sizeof(m_label))
      std::memcpy(m_label, label.data(), label.size());  // m_label is zeroed: the copy stays terminated
    else
      m_long_label.assign(label.data(), label.size());
  }

 private:
  static const std::string& unlabelled() {
    static const std::string none;
    return none;
  }
#if defined(KOKKOS_ENABLE_DEBUG)
  static Base* debug_root() {
    static Base root;
    return &root;
  }
#endif
  char m_label[48] = {};
  std::string m_long_label;
};

// A tracker holding one reference to `record` (use count 0 on entry): the views place_view makes from it share the
// record, and it drops its own reference when it goes.
template <class Record>
Kokkos::Impl::SharedAllocationTracker tracker_on_record(Record* record) {
  Kokkos::Impl::SharedAllocationTracker track;
  track.assign_allocated_record_to_uninitialized(record);
  return track;
}

// `slot` becomes a managed view over `data` (extents `extents...`) counted in track's record: one reference count
// increment. Built in place, since Kokkos 3.4 moves a view by copying its tracker (an increment and a decrement).
template <class View, class... Extents>
void place_view(View& slot, const Kokkos::Impl::SharedAllocationTracker& track, typename View::pointer_type data,
                Extents... extents) {
  using Unmanaged = Kokkos::View<typename View::data_type, typename View::array_layout, typename View::memory_space,
                                 Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  const Unmanaged wrapped(data, typename View::array_layout(extents...));  // the layout form skips a rank check
  slot.~View();
  new (&slot) View(track, wrapped.impl_map());
}

inline std::string kokkos_version_string() {
  return std::to_string(KOKKOS_VERSION / 10000) + "." + std::to_string(KOKKOS_VERSION / 100 % 100) + "." +
         std::to_string(KOKKOS_VERSION % 100);
}

}  // namespace detail
}  // namespace darray
