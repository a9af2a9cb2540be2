// The one place that bridges Kokkos 3.4 and 4.x: initialisation settings, finalisation queries, fences.
// 3.4 lacks InitializationSettings, is_finalized and labelled fences; 4.x removed InitArguments.
#pragma once

#include <Kokkos_Core.hpp>
#include <string>

#if !defined(KOKKOS_VERSION)
#error "libdarray needs Kokkos (KOKKOS_VERSION undefined)"
#endif

#define DARRAY_KOKKOS_VERSION_AT_LEAST(major, minor) (KOKKOS_VERSION >= ((major)*10000 + (minor)*100))

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

// Fence before MPI or NCCL touch a buffer a kernel wrote (Kokkos 4 no longer syncs the default stream implicitly).
template <class ExecSpace = Kokkos::DefaultExecutionSpace>
inline void fence(const ExecSpace& space = ExecSpace()) {
  space.fence();
}

inline std::string kokkos_version_string() {
  return std::to_string(KOKKOS_VERSION / 10000) + "." + std::to_string(KOKKOS_VERSION / 100 % 100) + "." +
         std::to_string(KOKKOS_VERSION % 100);
}

}  // namespace detail
}  // namespace darray
