// How the array layer moves bytes: host staging buffers that are counted (ArrayTransferStats), and messages and
// broadcasts of any size_t length on the library's communicator through the comm layer's chunked helpers, so no
// MPI count ever exceeds INT_MAX.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "darray/array/transfer_stats.hpp"
#include "darray/comm/chunked_collectives.hpp"
#include "darray/comm/limits.hpp"
#include "darray/comm/p2p.hpp"
#include "darray/runtime/detail/state.hpp"

namespace darray {
namespace detail {

// Tags of the array layer's point-to-point messages on world_comm(). Operations are collective and issued in the
// same order everywhere, and MPI does not overtake messages of one (source, tag), so one tag per kind suffices.
inline constexpr int scatter_tag = 0x5a01;
inline constexpr int gather_tag = 0x5a02;

// Uninitialised host memory for count elements, counted as staging. Default-initialised (not zeroed) because every
// byte is overwritten by a pack or a receive.
template <class T>
class StagingBuffer {
 public:
  StagingBuffer() = default;
  explicit StagingBuffer(int64_t count, const char* api) { reserve(count, api); }
  // Grows to at least count elements (contents are not kept).
  void reserve(int64_t count, const char* api) {
    if (count <= m_count) return;
    const std::size_t bytes = byte_count(count, sizeof(T), api);
    m_data.reset(new T[static_cast<std::size_t>(count)]);
    m_count = count;
    note_staging(bytes);
  }
  T* data() { return m_data.get(); }
  const T* data() const { return m_data.get(); }

 private:
  std::unique_ptr<T[]> m_data;
  int64_t m_count = 0;
};

template <class T>
void send_elements(const T* data, int64_t count, int dest, int tag, const char* api) {
  const std::size_t bytes = byte_count(count, sizeof(T), api);
  ::darray::send(world_comm(), data, bytes, dest, tag);
  auto& s = transfer_stats_ref();
  ++s.messages_sent;
  s.bytes_sent += bytes;
}

template <class T>
void recv_elements(T* data, int64_t count, int source, int tag, const char* api) {
  const std::size_t bytes = byte_count(count, sizeof(T), api);
  ::darray::recv(world_comm(), data, bytes, source, tag);
  auto& s = transfer_stats_ref();
  ++s.messages_received;
  s.bytes_received += bytes;
}

template <class T>
void bcast_elements(T* data, int64_t count, int root, const char* api) {
  ::darray::detail::bcast(world_comm(), data, byte_count(count, sizeof(T), api), root);
  ++transfer_stats_ref().broadcasts;
}

}  // namespace detail
}  // namespace darray
