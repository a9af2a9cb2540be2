// Baseline buffers that do not 4K-alias: on x86 a copy from one buffer into another whose address is a little above
// the source's modulo 4 KiB runs several times slower (every load looks dependent on a recent store: 1 ms against
// 5 ms for a 14.7 MB MPI_Alltoallv to self, measured). Two vectors of equal size allocated one after the other land
// exactly that way, so a baseline would be slow by accident; a benchmark's baseline places its receive buffer half a
// page away from its send buffer instead, so it measures the best case an MPI code gets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace darray_bench {

// n elements in `storage` (resized to hold them and a page more), starting 2 KiB away from `other` modulo 4 KiB.
template <class T>
T* unaliased(std::vector<T>& storage, std::size_t n, const void* other) {
  static_assert(2048 % sizeof(T) == 0, "element size must divide 2 KiB");
  storage.assign(n + 4096 / sizeof(T), T{});
  const auto base = reinterpret_cast<std::uintptr_t>(storage.data()) % 4096;
  const auto want = (reinterpret_cast<std::uintptr_t>(other) + 2048) % 4096;
  return storage.data() + ((want + 4096 - base) % 4096) / sizeof(T);
}

}  // namespace darray_bench
