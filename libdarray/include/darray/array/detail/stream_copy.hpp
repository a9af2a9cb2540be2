// Byte copies with streaming (non-temporal) stores: for large copies whose target will not be read again soon, such
// as the same-process pieces of a big reshard, they skip the read-for-ownership of every destination line that a
// plain store costs, which is the difference between 1.7x and 1.1x memcpy time for a blocked transpose on x86-64.
// On other targets they are plain memcpy. And the eviction of a buffer from the caches (evict_from_cache).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#define DARRAY_HAS_STREAMING_STORES 1
#else
#define DARRAY_HAS_STREAMING_STORES 0
#endif

namespace darray {
namespace detail {

// Copies below this size are not worth streaming: the partly written lines at both ends dominate.
inline constexpr std::size_t streaming_min_run_bytes = 256;

// Total bytes above which a copy phase streams its stores: beyond a share of the last-level cache the destination
// is evicted before it is read again anyway.
inline constexpr std::size_t streaming_min_total_bytes = std::size_t{16} << 20;

#if DARRAY_HAS_STREAMING_STORES
// The first n bytes of [0, bytes), n the largest multiple of 64 that fits, copied in 16-byte loads and 16-byte
// stores (streaming ones when Stream, into a 16-byte aligned d); returns n.
template <bool Stream>
inline std::size_t copy_64_byte_blocks(unsigned char* d, const unsigned char* s, std::size_t bytes) {
  std::size_t i = 0;
  for (; i + 64 <= bytes; i += 64) {
    __m128i v[4];
    for (int k = 0; k < 4; ++k) v[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16 * k));
    for (int k = 0; k < 4; ++k) {
      if constexpr (Stream)
        _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16 * k), v[k]);
      else
        _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i + 16 * k), v[k]);
    }
  }
  return i;
}
#endif

inline void stream_copy(void* dst, const void* src, std::size_t bytes) {
#if DARRAY_HAS_STREAMING_STORES
  if (bytes < streaming_min_run_bytes) {
    std::memcpy(dst, src, bytes);
    return;
  }
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  // Plain stores up to the first 16-byte boundary of the destination.
  const std::size_t head = (16 - (reinterpret_cast<std::uintptr_t>(d) & 15)) & 15;
  std::memcpy(d, s, head);
  d += head;
  s += head;
  bytes -= head;
  const std::size_t i = copy_64_byte_blocks<true>(d, s, bytes);
  std::memcpy(d + i, s + i, bytes - i);
#else
  std::memcpy(dst, src, bytes);
#endif
}

// Copies from this size up are where x86-64 glibc's memcpy may use `rep movsb` (from 2-4 KiB up to its
// non-temporal threshold).
inline constexpr std::size_t aliasing_min_bytes = 2048;

// memcpy, except into a destination within 64 bytes of the source modulo 4 KiB (but not at the same offset), where
// `rep movsb` runs 10-12x slower on some x86-64 cores (4K aliasing; measured on AMD EPYC: 16 KiB copies with the
// destination 1-31 bytes above the source 350 us per MiB against 28 us, 8 bytes below 1.7x): such copies go through
// 16-byte loads and stores, as fast as memcpy elsewhere. Copies of rows or runs at varying offsets (box copies,
// scatters) meet those gaps by chance, a few in every 500.
// A copy of at most 16 bytes inline: two 8-byte loads and stores that overlap when bytes < 16, or a byte loop below
// 8. A memcpy call costs more than such a copy: a ppermute of 8-byte blocks over 8 devices of one process took 75 ns
// through a held plan with eight memcpy calls, 54 ns with these.
inline void copy_up_to_16_bytes(void* dst, const void* src, std::size_t bytes) {
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  if (bytes >= 8) {
    std::uint64_t first, last;
    std::memcpy(&first, s, 8);
    std::memcpy(&last, s + bytes - 8, 8);
    std::memcpy(d, &first, 8);
    std::memcpy(d + bytes - 8, &last, 8);
  } else {
    for (std::size_t i = 0; i < bytes; ++i) d[i] = s[i];
  }
}

inline void copy_bytes(void* dst, const void* src, std::size_t bytes) {
  if (bytes <= 16) {
    copy_up_to_16_bytes(dst, src, bytes);
    return;
  }
#if DARRAY_HAS_STREAMING_STORES
  const std::uintptr_t gap = (reinterpret_cast<std::uintptr_t>(dst) - reinterpret_cast<std::uintptr_t>(src)) & 4095u;
  if (bytes >= aliasing_min_bytes && gap != 0 && (gap < 64 || gap > 4096 - 64)) {
    auto* d = static_cast<unsigned char*>(dst);
    const auto* s = static_cast<const unsigned char*>(src);
    const std::size_t i = copy_64_byte_blocks<false>(d, s, bytes);
    std::memcpy(d + i, s + i, bytes - i);
    return;
  }
#endif
  std::memcpy(dst, src, bytes);
}

// A small copy (a row of a table, a few cache lines) inline when bytes is a multiple of 8 (a memcpy call per row
// costs more than the row): 16-byte units and an 8-byte tail, with streaming stores when `streaming` and dst is
// 8-byte aligned, as rows scattered over large arrays are (16-byte stores when dst is 16-byte aligned and bytes a
// multiple of 16, else 8-byte ones); memcpy otherwise. The caller issues stream_fence() once its streaming copies
// are done.
inline void copy_small(void* dst, const void* src, std::size_t bytes, bool streaming) {
#if DARRAY_HAS_STREAMING_STORES
  if (bytes % 8 == 0) {
    auto* d = static_cast<unsigned char*>(dst);
    const auto* s = static_cast<const unsigned char*>(src);
    const auto address = reinterpret_cast<std::uintptr_t>(dst);
    if (streaming && bytes % 16 == 0 && (address & 15) == 0) {
      for (std::size_t i = 0; i < bytes; i += 16)
        _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
      return;
    }
#if defined(__x86_64__)
    if (streaming && (address & 7) == 0) {
      for (std::size_t i = 0; i < bytes; i += 8) {
        long long v;
        std::memcpy(&v, s + i, 8);
        _mm_stream_si64(reinterpret_cast<long long*>(d + i), v);
      }
      return;
    }
#endif
    std::size_t i = 0;
    for (; i + 16 <= bytes; i += 16)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
    if (i < bytes) {
      std::uint64_t v;
      std::memcpy(&v, s + i, 8);
      std::memcpy(d + i, &v, 8);
    }
    return;
  }
#else
  (void)streaming;
#endif
  std::memcpy(dst, src, bytes);
}

// Orders the streaming stores issued so far before any later store (call once at the end of a copy phase, before
// the data is handed to another thread, process or device).
inline void stream_fence() {
#if DARRAY_HAS_STREAMING_STORES
  _mm_sfence();
#endif
}

// Writes back and evicts the lines of [p, p + bytes) from every cache level, so that what reads them next reads them
// from memory, as a transform in a loop meets an operand larger than the cache (the FFT planner's timings). A no-op
// on targets without SSE2: there the reader finds them where they are.
inline void evict_from_cache(const void* p, std::size_t bytes) {
#if defined(__SSE2__)
  const auto* c = static_cast<const char*>(p);
  for (std::size_t at = 0; at < bytes; at += 64) _mm_clflush(c + at);
  if (bytes != 0) _mm_clflush(c + bytes - 1);
  _mm_mfence();
#else
  (void)p;
  (void)bytes;
#endif
}

}  // namespace detail
}  // namespace darray
