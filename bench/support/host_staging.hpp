// The hand-written baselines' access to the benchmarked arrays' blocks. On host memory a baseline works on the
// blocks themselves (memcpy, host loops, MPI on their pointers), at no extra cost. On device memory (a GPU build)
// it does what a program for an MPI library without CUDA support must do: device-to-device copies between blocks
// of one process, and MPI on host copies of the bytes, moved to and from the device around each call. The library's
// own calls pick NCCL or CUDA-aware MPI where they can, so on a GPU these baselines are the host-staged floor.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstddef>
#include <cstring>
#include <utility>
#include <vector>

namespace darray_bench {

// Whether the blocks of memory space M need host copies for memcpy, host loops and MPI.
template <class M>
constexpr bool staged_v = !Kokkos::SpaceAccessibility<Kokkos::HostSpace, M>::accessible;

template <class M>
using Bytes = Kokkos::View<char*, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// `bytes` from src in memory space From to dst in To: memcpy when the host addresses both, else a Kokkos copy (then
// a fence).
template <class To, class From>
void copy_between(void* dst, const void* src, std::size_t bytes) {
  if constexpr (!staged_v<To> && !staged_v<From>)
    std::memcpy(dst, src, bytes);
  else
    Kokkos::deep_copy(Bytes<To>(static_cast<char*>(dst), bytes),
                      Bytes<From>(static_cast<char*>(const_cast<void*>(src)), bytes));
}

// Within M, from M to the host, and back.
template <class M>
void copy_in_space(void* dst, const void* src, std::size_t bytes) {
  copy_between<M, M>(dst, src, bytes);
}
template <class M>
void copy_to_host(void* host, const void* src, std::size_t bytes) {
  copy_between<Kokkos::HostSpace, M>(host, src, bytes);
}
template <class M>
void copy_from_host(void* dst, const void* host, std::size_t bytes) {
  copy_between<M, Kokkos::HostSpace>(dst, host, bytes);
}

// Blocks of `count` elements each as a baseline reads and writes them: the blocks themselves on host memory, else
// host copies that pull() fills from the blocks and push() writes back (each a no-op on host memory).
template <class T, class M>
class HostBlocks {
 public:
  HostBlocks(std::vector<T*> blocks, std::size_t count) : m_blocks(std::move(blocks)), m_count(count) {
    if constexpr (staged_v<M>) {
      m_copies.resize(m_blocks.size(), std::vector<T>(count));
      for (auto& c : m_copies) m_host.push_back(c.data());
    } else {
      m_host = m_blocks;
    }
  }
  // What the baseline's host code reads and writes, one pointer per block.
  const std::vector<T*>& host() const { return m_host; }
  void pull() {
    if constexpr (staged_v<M>)
      for (std::size_t k = 0; k < m_blocks.size(); ++k) copy_to_host<M>(m_host[k], m_blocks[k], m_count * sizeof(T));
  }
  void push() {
    if constexpr (staged_v<M>)
      for (std::size_t k = 0; k < m_blocks.size(); ++k) copy_from_host<M>(m_blocks[k], m_host[k], m_count * sizeof(T));
  }

 private:
  std::vector<T*> m_blocks;
  std::size_t m_count;
  std::vector<std::vector<T>> m_copies;
  std::vector<T*> m_host;
};

}  // namespace darray_bench
