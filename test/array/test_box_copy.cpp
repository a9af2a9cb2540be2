// Host box copies: stream_copy, evict_from_cache (the bytes asked for, none past them), copy_small (rows of a scatter,
// plain or streaming) and copy_bytes against memcpy for every length and alignment around their thresholds (guard bytes
// untouched), copy_box with and without streaming stores against an element-by-element reference on random boxes,
// strided_copy_host (assign, streaming, add) and for_each_run on geometries with permuted strides, contiguous_offset,
// and the device copy kernel (run on the default execution space: the GPU in CUDA builds, the host's otherwise) on the
// same geometries.
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include "darray/array/detail/box_copy.hpp"
#include "darray/array/detail/strided_copy.hpp"

using namespace darray;
using darray::detail::contiguous_offset;
using darray::detail::copy_box;
using darray::detail::copy_bytes;
using darray::detail::copy_small;
using darray::detail::stream_copy;

namespace {

// The reference of the strided copies: every (source, destination) element offset pair of g's region, point by point.
std::vector<std::pair<int64_t, int64_t>> region_pairs(const darray::detail::CopyGeometry& g) {
  std::vector<std::pair<int64_t, int64_t>> pairs;
  if (g.elements() == 0) return pairs;
  int64_t at[8] = {};
  while (true) {
    int64_t s = g.src_offset, t = g.dst_offset;
    for (int d = 0; d < g.rank; ++d) {
      s += at[d] * g.src_stride[d];
      t += at[d] * g.dst_stride[d];
    }
    pairs.emplace_back(s, t);
    int d = g.rank;
    while (d > 0 && ++at[d - 1] == g.extent[d - 1]) at[--d] = 0;
    if (d == 0) break;
  }
  return pairs;
}

}  // namespace

TEST_CASE("stream_copy copies exactly the bytes asked for, at every alignment") {
  std::vector<unsigned char> src(4096 + 64), dst(4096 + 128);
  std::iota(src.begin(), src.end(), static_cast<unsigned char>(1));
  for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{15}, std::size_t{63}, std::size_t{255},
                            std::size_t{256}, std::size_t{257}, std::size_t{1000}, std::size_t{4095}}) {
    for (std::size_t s_off = 0; s_off < 17; s_off += 3) {
      for (std::size_t d_off = 0; d_off < 33; d_off += 5) {
        std::fill(dst.begin(), dst.end(), static_cast<unsigned char>(0xEE));
        stream_copy(dst.data() + d_off, src.data() + s_off, bytes);
        darray::detail::stream_fence();
        INFO("bytes " << bytes << " src offset " << s_off << " dst offset " << d_off);
        REQUIRE(std::memcmp(dst.data() + d_off, src.data() + s_off, bytes) == 0);
        for (std::size_t i = 0; i < d_off; ++i) REQUIRE(dst[i] == 0xEE);
        for (std::size_t i = d_off + bytes; i < dst.size(); ++i) REQUIRE(dst[i] == 0xEE);
      }
    }
  }
}

TEST_CASE("evict_from_cache keeps the data and touches no byte past the range, at every alignment") {
  // Two pages, the second inaccessible: the ranges end where the first ends, so a flush past the end faults.
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  void* map = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(map != MAP_FAILED);
  REQUIRE(mprotect(static_cast<char*>(map) + page, page, PROT_NONE) == 0);
  auto* bytes = static_cast<unsigned char*>(map);
  for (std::size_t k = 0; k < page; ++k) bytes[k] = static_cast<unsigned char>(k * 7 + 3);
  for (std::size_t length : {std::size_t{0}, std::size_t{1}, std::size_t{63}, std::size_t{64}, std::size_t{65},
                             std::size_t{127}, std::size_t{1000}, page - 1, page})
    for (std::size_t short_of_end : {std::size_t{0}, std::size_t{1}, std::size_t{17}, std::size_t{63}}) {
      if (length + short_of_end > page) continue;
      INFO("length " << length << ", ending " << short_of_end << " bytes before the page's end");
      darray::detail::evict_from_cache(bytes + page - short_of_end - length, length);
    }
  for (std::size_t k = 0; k < page; ++k) REQUIRE(bytes[k] == static_cast<unsigned char>(k * 7 + 3));
  munmap(map, 2 * page);
}

TEST_CASE("copy_small copies exactly the bytes asked for, plain or streaming, at every alignment") {
  std::vector<unsigned char> src(1024 + 64), dst(1024 + 128);
  std::iota(src.begin(), src.end(), static_cast<unsigned char>(3));
  // Multiples of 8 and 16 (the inline paths, 8-byte tails included) and others (memcpy), rows of 1-130 bytes and a
  // run of many rows.
  for (std::size_t bytes :
       {std::size_t{0}, std::size_t{4}, std::size_t{8}, std::size_t{12}, std::size_t{16}, std::size_t{24},
        std::size_t{56}, std::size_t{64}, std::size_t{72}, std::size_t{130}, std::size_t{1000}}) {
    for (const bool streaming : {false, true}) {
      for (std::size_t s_off = 0; s_off < 17; s_off += 4) {
        for (std::size_t d_off = 0; d_off < 33; d_off += 4) {
          std::fill(dst.begin(), dst.end(), static_cast<unsigned char>(0xEE));
          copy_small(dst.data() + d_off, src.data() + s_off, bytes, streaming);
          darray::detail::stream_fence();
          INFO("bytes " << bytes << " streaming " << streaming << " src offset " << s_off << " dst offset " << d_off);
          REQUIRE(std::memcmp(dst.data() + d_off, src.data() + s_off, bytes) == 0);
          for (std::size_t i = 0; i < d_off; ++i) REQUIRE(dst[i] == 0xEE);
          for (std::size_t i = d_off + bytes; i < dst.size(); ++i) REQUIRE(dst[i] == 0xEE);
        }
      }
    }
  }
}

namespace {

Index random_box_within(std::mt19937_64& rng, const Shape& shape) {
  Index box;
  for (int64_t n : shape) {
    const int64_t a = static_cast<int64_t>(rng() % static_cast<uint64_t>(n + 1));
    const int64_t b = static_cast<int64_t>(rng() % static_cast<uint64_t>(n + 1));
    box.push_back(Slice{std::min(a, b), std::max(a, b)});
  }
  return box;
}

Index overlap(const Index& a, const Index& b) {
  Index r;
  for (std::size_t d = 0; d < a.size(); ++d) {
    const int64_t lo = std::max(a[d].start, b[d].start), hi = std::min(a[d].stop, b[d].stop);
    r.push_back(Slice{lo, std::max(lo, hi)});
  }
  return r;
}

// Flat offset of global point `at` in the row-major buffer of `box`.
int64_t offset_in(const Index& box, const std::vector<int64_t>& at) {
  int64_t off = 0;
  for (std::size_t d = 0; d < box.size(); ++d) off = off * box[d].size() + (at[d] - box[d].start);
  return off;
}

}  // namespace

TEST_CASE("copy_bytes copies exactly the bytes asked for, at every gap near a 4 KiB multiple") {
  // The destination 0-70 bytes above or below the source modulo 4 KiB (the 16-byte loop inside 64 of a multiple,
  // memcpy outside), lengths around aliasing_min_bytes and odd tails.
  std::vector<unsigned char> src(40000), dst(40000);
  std::iota(src.begin(), src.end(), static_cast<unsigned char>(5));
  const auto page = [](std::vector<unsigned char>& v) {
    const auto at = reinterpret_cast<std::uintptr_t>(v.data());
    return v.data() + (4096 - at % 4096) % 4096;
  };
  unsigned char* const s0 = page(src) + 4096;  // room below for negative gaps
  unsigned char* const d0 = page(dst);
  for (std::size_t bytes : {std::size_t{0}, std::size_t{7}, std::size_t{2047}, std::size_t{2048}, std::size_t{2049},
                            std::size_t{4096 + 13}, std::size_t{20000}}) {
    for (long gap = -70; gap <= 70; ++gap) {
      // dst - src == gap (mod 4096): the destination 4 KiB + gap bytes into dst's pages, the source 4 KiB into src's.
      unsigned char* const d = d0 + 4096 + gap;
      const unsigned char* const s = s0;
      std::fill(dst.begin(), dst.end(), static_cast<unsigned char>(0xEE));
      copy_bytes(d, s, bytes);
      INFO("bytes " << bytes << " gap " << gap);
      REQUIRE(std::memcmp(d, s, bytes) == 0);
      REQUIRE(std::all_of(dst.data(), d, [](unsigned char c) { return c == 0xEE; }));
      REQUIRE(std::all_of(d + bytes, dst.data() + dst.size(), [](unsigned char c) { return c == 0xEE; }));
    }
  }
}

TEST_CASE("copy_bytes copies up to 16 bytes inline exactly, at every size and alignment") {
  // Two overlapping 8-byte loads and stores from 8 to 16 bytes, a byte loop below: neither may touch a byte outside
  // [dst, dst + bytes), whatever the sizes and alignments.
  std::vector<unsigned char> src(64), dst(96);
  std::iota(src.begin(), src.end(), static_cast<unsigned char>(11));
  for (std::size_t bytes = 0; bytes <= 17; ++bytes)
    for (std::size_t s_off = 0; s_off < 16; ++s_off)
      for (std::size_t d_off = 0; d_off < 16; ++d_off) {
        std::fill(dst.begin(), dst.end(), static_cast<unsigned char>(0xEE));
        copy_bytes(dst.data() + 32 + d_off, src.data() + s_off, bytes);
        INFO("bytes " << bytes << " src offset " << s_off << " dst offset " << d_off);
        REQUIRE(std::memcmp(dst.data() + 32 + d_off, src.data() + s_off, bytes) == 0);
        REQUIRE(std::all_of(dst.data(), dst.data() + 32 + d_off, [](unsigned char c) { return c == 0xEE; }));
        REQUIRE(std::all_of(dst.data() + 32 + d_off + bytes, dst.data() + dst.size(),
                            [](unsigned char c) { return c == 0xEE; }));
      }
}

TEST_CASE("copy_box with and without streaming stores matches an element-by-element copy") {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 400; ++trial) {
    const std::size_t rank = 1 + rng() % 4;
    Shape shape(rank);
    for (auto& n : shape) n = static_cast<int64_t>(1 + rng() % (rank == 1 ? 3000 : rank == 2 ? 90 : 14));
    const Index src_box = random_box_within(rng, shape), dst_box = random_box_within(rng, shape);
    const Index region = overlap(src_box, dst_box);
    std::vector<double> src(static_cast<std::size_t>(volume(src_box)));
    std::iota(src.begin(), src.end(), 1.0);
    const bool streaming = trial % 2 == 1;
    std::vector<double> got(static_cast<std::size_t>(volume(dst_box)), -1.0), want = got;
    copy_box(src.data(), src_box, got.data(), dst_box, region, streaming);
    darray::detail::stream_fence();
    // Reference: walk the region point by point.
    if (volume(region) > 0) {
      std::vector<int64_t> at(rank);
      for (std::size_t d = 0; d < rank; ++d) at[d] = region[d].start;
      while (true) {
        want[static_cast<std::size_t>(offset_in(dst_box, at))] = src[static_cast<std::size_t>(offset_in(src_box, at))];
        std::size_t d = rank;
        while (d > 0 && ++at[d - 1] == region[d - 1].stop) {
          at[d - 1] = region[d - 1].start;
          --d;
        }
        if (d == 0) break;
      }
    }
    INFO("trial " << trial << " src " << darray::to_string(src_box) << " dst " << darray::to_string(dst_box)
                  << " streaming " << streaming);
    REQUIRE(got == want);
  }
}

TEST_CASE("strided_copy_host and for_each_run visit exactly the region of any strided geometry") {
  using darray::detail::CopyGeometry;
  using darray::detail::CopyOp;
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 600; ++trial) {
    // Source and destination: row-major buffers of one region's extents in independently permuted axis orders (a
    // transpose), each inside a larger buffer at an offset; some regions empty or a single element.
    CopyGeometry g;
    g.rank = 1 + static_cast<int>(rng() % 5);
    for (int d = 0; d < g.rank; ++d) g.extent[d] = static_cast<int64_t>(rng() % 9 == 0 ? rng() % 2 : 1 + rng() % 6);
    auto strides_in_order = [&](int64_t* stride, int64_t pad) {
      std::vector<int> order(static_cast<std::size_t>(g.rank));
      std::iota(order.begin(), order.end(), 0);
      if (rng() % 3 != 0) std::shuffle(order.begin(), order.end(), rng);
      int64_t s = 1 + (rng() % 2 == 0 ? 0 : 1);  // unit or stride-2 innermost
      for (std::size_t k = order.size(); k-- > 0;) {
        stride[order[k]] = s;
        s *= std::max<int64_t>(1, g.extent[order[k]]) + (rng() % 2 == 0 ? 0 : pad);
      }
      return s;
    };
    const int64_t src_size = strides_in_order(g.src_stride, 1), dst_size = strides_in_order(g.dst_stride, 2);
    g.src_offset = static_cast<int64_t>(rng() % 5);
    g.dst_offset = static_cast<int64_t>(rng() % 7);
    std::vector<double> src(static_cast<std::size_t>(src_size + g.src_offset));
    std::iota(src.begin(), src.end(), 1.0);
    std::vector<double> base(static_cast<std::size_t>(dst_size + g.dst_offset));
    std::iota(base.begin(), base.end(), 1000.0);
    std::vector<std::pair<int64_t, int64_t>> pairs = region_pairs(g);
    std::vector<double> assigned = base, added = base;
    for (const auto& p : pairs) {
      assigned[static_cast<std::size_t>(p.second)] = src[static_cast<std::size_t>(p.first)];
      added[static_cast<std::size_t>(p.second)] += src[static_cast<std::size_t>(p.first)];
    }
    const CopyGeometry simple = darray::detail::simplify(g);
    INFO("trial " << trial << " rank " << g.rank);
    for (const bool streaming : {false, true}) {
      std::vector<double> got = base;
      darray::detail::strided_copy_host<double>(src.data(), got.data(), simple, streaming);
      darray::detail::stream_fence();
      REQUIRE(got == assigned);
    }
    std::vector<double> got = base;
    darray::detail::strided_copy_host<double, CopyOp::add>(src.data(), got.data(), simple, false);
    REQUIRE(got == added);
    // for_each_run: runs contiguous on both sides that together cover the pairs, each once.
    std::vector<std::pair<int64_t, int64_t>> visited;
    darray::detail::for_each_run(simple, [&](int64_t s, int64_t t, int64_t run) {
      REQUIRE(run >= 1);
      for (int64_t k = 0; k < run; ++k) visited.emplace_back(s + k, t + k);
    });
    std::sort(pairs.begin(), pairs.end());
    std::sort(visited.begin(), visited.end());
    REQUIRE(visited == pairs);
  }
}

TEST_CASE("copy_rows_interleaved copies each member as strided_copy_host would, plain or streaming") {
  // Blocked transposes: a rows x cols source cut into column blocks (one member each, taken in shuffled order), each
  // written to one of several destination buffers at its own offset and row stride; some row lengths odd, some rows
  // empty of members' neighbours (padding between them).
  using darray::detail::CopyGeometry;
  using darray::detail::RowMember;
  std::mt19937_64 rng(17);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t rows = 1 + static_cast<int64_t>(rng() % 9), width = 1 + static_cast<int64_t>(rng() % 40);
    const int members = 1 + static_cast<int>(rng() % 6), buffers = 1 + static_cast<int>(rng() % 3);
    const int64_t cols = members * width + static_cast<int64_t>(rng() % 3);
    const int64_t dst_stride = width + static_cast<int64_t>(rng() % 3);
    std::vector<double> src(static_cast<std::size_t>(rows * cols + 5));
    std::iota(src.begin(), src.end(), 1.0);
    const int64_t src_start = static_cast<int64_t>(rng() % 5);
    CopyGeometry shape;
    shape.rank = 2;
    shape.extent[0] = rows;
    shape.extent[1] = width;
    shape.src_stride[0] = cols;
    shape.dst_stride[0] = dst_stride;
    shape.src_stride[1] = shape.dst_stride[1] = 1;
    std::vector<RowMember> list;
    std::vector<int64_t> used(static_cast<std::size_t>(buffers), 0);
    for (int m = 0; m < members; ++m) {
      const int b = static_cast<int>(rng() % static_cast<unsigned>(buffers));
      const int64_t at = used[static_cast<std::size_t>(b)] + static_cast<int64_t>(rng() % 4);
      used[static_cast<std::size_t>(b)] = at + rows * dst_stride;
      list.push_back(RowMember{b, src_start + m * width, at});
    }
    std::shuffle(list.begin(), list.end(), rng);
    std::vector<std::vector<double>> want(static_cast<std::size_t>(buffers));
    for (int b = 0; b < buffers; ++b) {
      want[static_cast<std::size_t>(b)].resize(static_cast<std::size_t>(used[static_cast<std::size_t>(b)] + 3));
      std::iota(want[static_cast<std::size_t>(b)].begin(), want[static_cast<std::size_t>(b)].end(), -1e6 * (b + 1));
    }
    for (const bool streaming : {false, true}) {
      std::vector<std::vector<double>> got = want;
      std::vector<double*> dst;
      for (auto& v : got) dst.push_back(v.data());
      darray::detail::copy_rows_interleaved(src.data(), shape, list.data(), list.data() + list.size(), dst, streaming);
      darray::detail::stream_fence();
      std::vector<std::vector<double>> expected = want;
      for (const RowMember& m : list) {
        CopyGeometry g = shape;
        g.src_offset = m.src_offset;
        g.dst_offset = m.dst_offset;
        darray::detail::strided_copy_host<double>(src.data(), expected[static_cast<std::size_t>(m.dst)].data(),
                                                  darray::detail::simplify(g), false);
      }
      INFO("trial " << trial << " rows " << rows << " width " << width << " members " << members << " streaming "
                    << streaming);
      REQUIRE(got == expected);
      REQUIRE(got != want);  // every trial moves something
    }
  }
}

TEST_CASE("contiguous_offset finds regions that are one range of their box") {
  const Index box{Slice{10, 20}, Slice{0, 8}, Slice{3, 7}};
  REQUIRE(contiguous_offset(box, box) == int64_t{0});
  REQUIRE(contiguous_offset(Index{Slice{12, 15}, Slice{0, 8}, Slice{3, 7}}, box) == int64_t{2 * 32});
  REQUIRE(contiguous_offset(Index{Slice{11, 12}, Slice{2, 5}, Slice{3, 7}}, box) == int64_t{32 + 2 * 4});
  REQUIRE(contiguous_offset(Index{Slice{11, 12}, Slice{2, 3}, Slice{4, 6}}, box) == int64_t{32 + 8 + 1});
  REQUIRE_FALSE(contiguous_offset(Index{Slice{11, 13}, Slice{2, 5}, Slice{3, 7}}, box).has_value());
  REQUIRE_FALSE(contiguous_offset(Index{Slice{11, 12}, Slice{2, 5}, Slice{4, 6}}, box).has_value());
}

namespace {

// Random copies of elements of T through strided_copy_kernel on the default execution space against a point-by-point
// reference: half of them transposes at any strides and offsets, half of them rows whose innermost dim is contiguous
// on both sides with runs, strides and offsets of whole 16-byte units, most often (the kernel's widened path, which
// the count of widenable geometries shows was taken).
template <class T>
void check_kernel_copies(std::uint64_t seed, int trials) {
  using darray::detail::CopyGeometry;
  using Space = Kokkos::DefaultExecutionSpace;
  std::mt19937_64 rng(seed);
  constexpr auto k = static_cast<int64_t>(sizeof(T) < 16 ? 16 / sizeof(T) : 1);
  int widened = 0;
  for (int trial = 0; trial < trials; ++trial) {
    const bool lined = trial % 2 == 1;
    CopyGeometry g;
    g.rank = 1 + static_cast<int>(rng() % 4);
    for (int d = 0; d < g.rank; ++d) g.extent[d] = static_cast<int64_t>(1 + rng() % 6);
    if (lined) g.extent[g.rank - 1] = k * static_cast<int64_t>(1 + rng() % 4) + (rng() % 5 == 0 ? 1 : 0);
    std::vector<int> order(static_cast<std::size_t>(g.rank));
    std::iota(order.begin(), order.end(), 0);
    auto strides = [&](int64_t* stride, const std::vector<int>& ord) {
      int64_t st = lined ? 1 : 1 + static_cast<int64_t>(rng() % 2);
      for (std::size_t q = ord.size(); q-- > 0;) {
        stride[ord[q]] = st;
        st *= g.extent[ord[q]] + (rng() % 2 == 0 ? 0 : (lined ? k : 1 + static_cast<int64_t>(rng() % 3)));
      }
      return st;
    };
    const int64_t src_size = strides(g.src_stride, order);
    if (!lined) std::shuffle(order.begin(), order.end(), rng);
    const int64_t dst_size = strides(g.dst_stride, order);
    g.src_offset = lined && rng() % 4 != 0 ? k * static_cast<int64_t>(rng() % 3) : static_cast<int64_t>(rng() % 5);
    g.dst_offset = lined && rng() % 4 != 0 ? k * static_cast<int64_t>(rng() % 3) : static_cast<int64_t>(rng() % 7);
    std::vector<T> src(static_cast<std::size_t>(src_size + g.src_offset));
    std::vector<T> expect(static_cast<std::size_t>(dst_size + g.dst_offset));
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<T>(i + 1);
    for (std::size_t i = 0; i < expect.size(); ++i) expect[i] = static_cast<T>(100000 + i);
    const std::vector<T> base = expect;
    for (const auto& [so, to] : region_pairs(g))
      expect[static_cast<std::size_t>(to)] = src[static_cast<std::size_t>(so)];
    Kokkos::View<T*, Space::memory_space> s_dev("src", src.size()), t_dev("dst", base.size());
    Kokkos::deep_copy(s_dev, Kokkos::View<const T*, Kokkos::HostSpace>(src.data(), src.size()));
    Kokkos::deep_copy(t_dev, Kokkos::View<const T*, Kokkos::HostSpace>(base.data(), base.size()));
    const CopyGeometry simple = darray::detail::simplify(g);
    CopyGeometry w;
    widened += darray::detail::widen_geometry(simple, sizeof(T), w) ? 1 : 0;
    darray::detail::strided_copy_kernel(Space(), s_dev.data(), t_dev.data(), simple);
    Space().fence();
    std::vector<T> got(base.size());
    Kokkos::deep_copy(Kokkos::View<T*, Kokkos::HostSpace>(got.data(), got.size()), t_dev);
    INFO("element bytes " << sizeof(T) << " trial " << trial << " rank " << g.rank << " lined " << lined);
    REQUIRE(got == expect);
  }
  if (sizeof(T) < 16) REQUIRE(widened >= trials / 4);
}

}  // namespace

TEST_CASE(
    "strided_copy_kernel copies any strided geometry on the default execution space, narrow elements by 16 bytes") {
  check_kernel_copies<float>(21, 300);
  check_kernel_copies<double>(22, 300);
  check_kernel_copies<Kokkos::complex<double>>(24, 100);
}
