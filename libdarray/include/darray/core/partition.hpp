// Balanced block partition of n elements into k parts: part i has n/k elements plus one if i < n%k (remainder to
// the first parts, as 2DECOMP&FFT and cuDecomp do). When k divides n this is exactly JAX's layout.
#pragma once

#include <cstdint>

#include "darray/core/error.hpp"
#include "darray/core/index.hpp"

// block_owner also runs in device kernels (array/owner_map.hpp: particle -> device lookups).
#if defined(__CUDACC__) || defined(__HIPCC__)
#define DARRAY_HOST_DEVICE __host__ __device__
#else
#define DARRAY_HOST_DEVICE
#endif

namespace darray {

inline int64_t block_start(int64_t n, int64_t k, int64_t i) {
  const int64_t q = n / k, r = n % k;
  return i * q + (i < r ? i : r);
}

inline int64_t block_size(int64_t n, int64_t k, int64_t i) { return n / k + (i < n % k ? 1 : 0); }

inline Slice block_slice(int64_t n, int64_t k, int64_t i) {
  return Slice{block_start(n, k, i), block_start(n, k, i + 1)};
}

// The part that holds element x (0 <= x < n). O(1).
DARRAY_HOST_DEVICE inline int64_t block_owner(int64_t n, int64_t k, int64_t x) {
  const int64_t q = n / k, r = n % k;
  const int64_t big = r * (q + 1);  // elements held by the first r parts
  if (x < big) return x / (q + 1);
  return r + (x - big) / q;  // q > 0 here, since x < n and x >= big means parts of size q exist
}

// Parts [first, last) whose blocks intersect [s.start, s.stop); empty range when s is empty.
inline Slice blocks_overlapping(int64_t n, int64_t k, const Slice& s) {
  if (s.empty() || n == 0) return Slice{0, 0};
  const int64_t first = block_owner(n, k, s.start);
  const int64_t last = block_owner(n, k, s.stop - 1) + 1;
  return Slice{first, last};
}

}  // namespace darray
