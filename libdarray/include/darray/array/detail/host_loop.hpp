// Whether a loop over n elements runs right here, on the calling thread, rather than as a Kokkos kernel: always on
// Kokkos::Serial (the kernel would run the same loop, after building its label string and calling the profiling
// hooks), and for small loops (32 KiB of elements or less) on other host spaces, where starting threads costs more
// than the work. Never for device spaces.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace darray {
namespace detail {

template <class Exec>
inline constexpr bool host_execution_space_v = Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible;

template <class T, class Exec>
bool loop_inline(int64_t n) {
  if constexpr (!host_execution_space_v<Exec>) {
    (void)n;
    return false;
  } else {
#if defined(KOKKOS_ENABLE_SERIAL)
    if constexpr (std::is_same<Exec, Kokkos::Serial>::value) return true;
#endif
    return static_cast<std::size_t>(n) * sizeof(T) <= std::size_t(32) << 10;
  }
}

}  // namespace detail
}  // namespace darray
