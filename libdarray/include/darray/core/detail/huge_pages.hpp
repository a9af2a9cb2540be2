// Transparent huge pages for large host allocations. A fresh host page costs a page fault on first touch; where the
// kernel runs under a hypervisor that fault can cost 10 us per 4 KiB page (bench/README, "Huge pages for large host
// blocks"), and strided copies across many 4 KiB pages miss the TLB. Asking for transparent huge pages
// (madvise(MADV_HUGEPAGE)) on a range before it is first touched makes the kernel back its 2 MiB-aligned interior
// with 2 MiB pages where it has them: one fault and one TLB entry per 2 MiB. The pages are still placed where they are
// first touched (NUMA first touch keeps working), and a kernel without huge pages, or with them off ("never"), simply
// keeps 4 KiB pages. Only ranges that hold a whole aligned 2 MiB page are advised: smaller ones could not use one.
// DARRAY_HUGE_PAGES=0 turns the advice off (where the kernel's compaction for huge pages stalls a job, say).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

#include "darray/core/env_vars.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace darray {
namespace detail {

constexpr std::size_t huge_page_bytes = std::size_t(2) << 20;

// The host's page size: what the kernel maps and advises in. Read once; 4 KiB where the system cannot tell.
inline std::size_t host_page_bytes() noexcept {
#if defined(__linux__)
  static const std::size_t page = [] {
    const long p = ::sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<std::size_t>(p) : std::size_t(4096);
  }();
  return page;
#else
  return 4096;
#endif
}

// a rounded up and down to a multiple of `align`, a power of two (rounding up must not pass the type's top).
inline std::uintptr_t align_up(std::uintptr_t a, std::size_t align) noexcept {
  return (a + align - 1) & ~(std::uintptr_t(align) - 1);
}
inline std::uintptr_t align_down(std::uintptr_t a, std::size_t align) noexcept {
  return a & ~(std::uintptr_t(align) - 1);
}

// The part of [p, p + bytes) made of whole `align`-aligned pages (align a power of two): {begin, length}, length 0
// where there is none or the range passes the top of the address space.
struct PageSpan {
  std::uintptr_t begin = 0;
  std::size_t bytes = 0;
};
inline PageSpan page_span(const void* p, std::size_t bytes, std::size_t align) noexcept {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  if (bytes < align || a > UINTPTR_MAX - bytes) return {};  // bytes >= align: align_up cannot wrap either
  const std::uintptr_t begin = align_up(a, align), end = align_down(a + bytes, align);
  if (end <= begin) return {};
  return {begin, static_cast<std::size_t>(end - begin)};
}

// The whole 2 MiB-aligned pages of a range: what can be advised to huge pages.
inline PageSpan huge_page_span(const void* p, std::size_t bytes) noexcept {
  return page_span(p, bytes, huge_page_bytes);
}

// Whether a host range of `bytes` is to be advised: it can hold a huge page and DARRAY_HUGE_PAGES is not 0. Read per
// call (only ranges of 2 MiB and more ask); a malformed value is an InvalidArgument, which the Environment reports
// at start-up on every process. Ask before allocating, so that a throw loses nothing.
inline bool huge_pages_wanted(std::size_t bytes) { return bytes >= huge_page_bytes && env_huge_pages(); }

// Advise transparent huge pages for the aligned interior of a host range not yet touched. True where the kernel took
// the advice; false where the range holds no whole huge page or the kernel has no transparent huge pages (the range
// is left as it was either way: this is a hint, never an error).
inline bool advise_huge_pages(void* p, std::size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const PageSpan span = huge_page_span(p, bytes);
  if (span.bytes == 0) return false;
  return ::madvise(reinterpret_cast<void*>(span.begin), span.bytes, MADV_HUGEPAGE) == 0;
#else
  (void)p;
  (void)bytes;
  return false;
#endif
}

// Host memory for a block of `bytes` (at least huge_page_bytes) mapped fresh from the kernel at a 2 MiB boundary, its
// whole pages advised to huge pages where `advise`. malloc would hand back memory it has recycled, whose pages are
// already there as 4 KiB pages, which no advice changes any more. std::bad_alloc where the kernel has no room.
inline std::size_t mapped_block_bytes(std::size_t bytes) noexcept {
  return static_cast<std::size_t>(align_up(bytes, host_page_bytes()));
}
inline void* map_block(std::size_t bytes, bool advise) {
#if defined(__linux__)
  const std::size_t len = mapped_block_bytes(bytes), extra = huge_page_bytes;
  void* raw = ::mmap(nullptr, len + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto a = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t b = align_up(a, huge_page_bytes);
  if (b > a) ::munmap(raw, b - a);
  if (a + len + extra > b + len) ::munmap(reinterpret_cast<void*>(b + len), a + len + extra - (b + len));
  if (advise) advise_huge_pages(reinterpret_cast<void*>(b), len);
  return reinterpret_cast<void*>(b);
#else
  (void)advise;
  void* p = std::malloc(bytes);
  if (p == nullptr) throw std::bad_alloc();
  return p;
#endif
}
inline void unmap_block(void* p, std::size_t bytes) noexcept {
#if defined(__linux__)
  ::munmap(p, mapped_block_bytes(bytes));
#else
  (void)bytes;
  std::free(p);
#endif
}

// Fault in the whole 4 KiB pages of a host range in one system call (madvise(MADV_POPULATE_WRITE), Linux 5.14 and
// later) instead of one fault per page at first touch: what is left of a large vector's storage around its huge
// pages (up to 2 MiB at each end) costs about half. The contents are untouched, and so is memory outside the range's
// whole pages; the thread that calls it places the pages (NUMA), so only storage its caller writes next is populated.
// False where the kernel lacks it (the pages then fault as before).
inline bool populate_pages(void* p, std::size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
  const PageSpan span = page_span(p, bytes, host_page_bytes());
  if (span.bytes == 0) return false;
  return ::madvise(reinterpret_cast<void*>(span.begin), span.bytes, MADV_POPULATE_WRITE) == 0;
#else
  (void)p;
  (void)bytes;
  return false;
#endif
}

// Room for n elements in `v`, its storage advised before anything is written to it where it can hold a huge page, and
// then populated: how the project asks for a large host vector its caller fills next (the device table, the
// runtime's per-process counts, their copies).
template <class T>
void reserve_advised(std::vector<T>& v, std::size_t n) {
  const bool advise = huge_pages_wanted(n * sizeof(T));  // may throw: before anything is allocated
  v.reserve(n);
  if (!advise || n <= v.size()) return;
  void* const room = v.data() + v.size();
  const std::size_t bytes = (n - v.size()) * sizeof(T);
  advise_huge_pages(room, bytes);
  populate_pages(room, bytes);  // huge pages where advised, the ends' 4 KiB pages in the same call
}

// n copies of `value` in advised storage: a process table of a million processes is 4 MiB per int column, whose
// 4 KiB pages would otherwise cost a fault each (about 10 ms under a hypervisor).
template <class T>
std::vector<T> filled_advised(std::size_t n, const T& value) {
  std::vector<T> out;
  reserve_advised(out, n);
  out.assign(n, value);
  return out;
}

// A copy of `v` whose storage is advised before it is written: what a large table (the device table of a
// million-device job: 20 MiB) pays for its copy is then mostly the copy, not the page faults.
template <class T>
std::vector<T> copy_advised(const std::vector<T>& v) {
  std::vector<T> out;
  reserve_advised(out, v.size());
  out.insert(out.end(), v.begin(), v.end());
  return out;
}

}  // namespace detail
}  // namespace darray
