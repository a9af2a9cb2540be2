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
#include <vector>

#include "darray/core/env_vars.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace darray {
namespace detail {

constexpr std::size_t huge_page_bytes = std::size_t(2) << 20;

// The part of [p, p + bytes) made of whole 2 MiB-aligned pages: {begin, length}, length 0 where there is none.
struct HugePageSpan {
  std::uintptr_t begin = 0;
  std::size_t bytes = 0;
};
inline HugePageSpan huge_page_span(const void* p, std::size_t bytes) noexcept {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  if (bytes < huge_page_bytes || a > UINTPTR_MAX - bytes) return {};
  const std::uintptr_t begin = (a + huge_page_bytes - 1) & ~(std::uintptr_t(huge_page_bytes) - 1);
  const std::uintptr_t end = (a + bytes) & ~(std::uintptr_t(huge_page_bytes) - 1);
  if (end <= begin) return {};
  return {begin, static_cast<std::size_t>(end - begin)};
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
  const HugePageSpan span = huge_page_span(p, bytes);
  if (span.bytes == 0) return false;
  return ::madvise(reinterpret_cast<void*>(span.begin), span.bytes, MADV_HUGEPAGE) == 0;
#else
  (void)p;
  (void)bytes;
  return false;
#endif
}

// A copy of `v` whose storage is advised before it is written: what a large table (the device table of a
// million-device job: 20 MiB) pays for its copy is then mostly the copy, not the page faults.
template <class T>
std::vector<T> copy_advised(const std::vector<T>& v) {
  const bool advise = huge_pages_wanted(v.size() * sizeof(T));
  std::vector<T> out;
  out.reserve(v.size());
  if (advise) advise_huge_pages(out.data(), v.size() * sizeof(T));
  out.insert(out.end(), v.begin(), v.end());
  return out;
}

}  // namespace detail
}  // namespace darray
