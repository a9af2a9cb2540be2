// How one block of a C-order array maps onto the data section of its file, cut into pieces MPI-IO can describe
// with int counts: each piece is contiguous in the block's row-major memory, at most max_piece_bytes long, and
// lies in the file as an MPI subarray of a frame whose every extent fits an int. Pure index math, no MPI.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "darray/core/index.hpp"

namespace darray {
namespace detail {

struct FilePiece {
  int64_t memory_offset = 0;  // elements from the block's first element (row-major in the block)
  int64_t count = 0;          // elements, contiguous in memory
  int64_t file_offset = 0;    // bytes from the start of the data to the frame's origin (or the run, when contiguous)
  // The piece as an MPI subarray of the frame, in bytes along the last dim. Empty when the piece is one contiguous
  // run in the file: then a plain byte view at file_offset does, with no derived datatype.
  std::vector<int> frame_sizes;
  std::vector<int> frame_subsizes;
  std::vector<int> frame_starts;
};

// Pieces of `block` (global coordinates, non-empty) of an array of `shape`, in memory order.
//
// The split dim k is the first dim whose trailing block volume fits max_piece_bytes, moved right past any dim
// whose global extent (in bytes for the last dim) exceeds max_int. Pieces fix one index in each dim before k,
// take a run of dim k, and the whole block in the dims after k; their frame is the global array from dim k on,
// with dim k shortened to the run and the origin moved to the run's start, so no frame extent exceeds max_int.
// A block that fits in one piece (the common case) yields exactly one.
inline std::vector<FilePiece> plan_file_pieces(const Shape& shape, const Index& block, int64_t item_size,
                                               int64_t max_piece_bytes, int64_t max_int = INT_MAX) {
  std::vector<FilePiece> pieces;
  const std::size_t n = shape.size();
  if (volume(block) == 0) return pieces;
  const int64_t max_elements = max_piece_bytes / item_size > 0 ? max_piece_bytes / item_size : 1;
  if (n == 0) {  // a 0-d array: one element at the start of the data
    pieces.push_back(FilePiece{0, 1, 0, {}, {}, {}});
    return pieces;
  }
  const Shape bshape = box_shape(block);
  const Shape gstrides = row_major_strides(shape);
  const Shape bstrides = row_major_strides(bshape);

  std::size_t k = 0;
  while (k + 1 < n && bstrides[k] > max_elements) ++k;
  for (std::size_t d = k + 1; d < n; ++d) {
    const int64_t extent = d + 1 == n ? shape[d] * item_size : shape[d];
    if (extent > max_int) k = d;
  }
  const int64_t inner = bstrides[k];  // elements of the block after dim k
  const int64_t run = max_elements / inner > 0 ? max_elements / inner : 1;

  // Is a piece one contiguous run in the file? After its first dim with more than one index, every dim must be
  // whole in the global array.
  const auto contiguous_in_file = [&](int64_t run_length) {
    bool seen_multi = run_length > 1;
    for (std::size_t d = k + 1; d < n; ++d) {
      if (seen_multi && bshape[d] != shape[d]) return false;
      seen_multi = seen_multi || bshape[d] > 1;
    }
    return true;
  };

  std::vector<int64_t> fixed(k, 0);  // odometer over the dims before k, block-local
  while (true) {
    for (int64_t a = 0; a < bshape[k]; a += run) {
      const int64_t len = a + run <= bshape[k] ? run : bshape[k] - a;
      FilePiece p;
      p.count = len * inner;
      int64_t origin = 0;  // global flat index of the frame origin
      for (std::size_t d = 0; d < k; ++d) {
        p.memory_offset += fixed[d] * bstrides[d];
        origin += (block[d].start + fixed[d]) * gstrides[d];
      }
      p.memory_offset += a * bstrides[k];
      origin += (block[k].start + a) * gstrides[k];
      if (contiguous_in_file(len)) {
        int64_t first = origin;
        for (std::size_t d = k + 1; d < n; ++d) first += block[d].start * gstrides[d];
        p.file_offset = first * item_size;
      } else {
        p.file_offset = origin * item_size;
        for (std::size_t d = k; d < n; ++d) {
          const int64_t scale = d + 1 == n ? item_size : 1;
          p.frame_sizes.push_back(static_cast<int>((d == k ? len : shape[d]) * scale));
          p.frame_subsizes.push_back(static_cast<int>((d == k ? len : bshape[d]) * scale));
          p.frame_starts.push_back(static_cast<int>((d == k ? 0 : block[d].start) * scale));
        }
      }
      pieces.push_back(std::move(p));
    }
    std::size_t d = k;
    while (d > 0) {
      --d;
      if (++fixed[d] < bshape[d]) break;
      fixed[d] = 0;
      if (d == 0) return pieces;
    }
    if (k == 0) return pieces;
  }
}

}  // namespace detail
}  // namespace darray
