// The huge-page advice for large host allocations (core/detail/huge_pages.hpp): which part of a range is advised, that
// the kernel records the advice on exactly that part, and that advised memory keeps what is written to it.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "darray/core/detail/huge_pages.hpp"
#include "huge_page_flags.hpp"

using darray::detail::huge_page_bytes;
using darray::detail::huge_page_span;

namespace {
const void* at(std::uintptr_t a) { return reinterpret_cast<const void*>(a); }
}  // namespace

TEST_CASE("huge_page_span is the whole aligned 2 MiB pages inside a range") {
  const std::uintptr_t H = huge_page_bytes;
  CHECK(huge_page_span(at(4 * H), 2 * H).begin == 4 * H);
  CHECK(huge_page_span(at(4 * H), 2 * H).bytes == 2 * H);
  CHECK(huge_page_span(at(4 * H + 1), 2 * H).bytes == H);  // one page lost at each end
  CHECK(huge_page_span(at(4 * H + 1), 2 * H).begin == 5 * H);
  CHECK(huge_page_span(at(4 * H + 4096), 2 * H - 8192).bytes == 0);  // ends before the next boundary
  CHECK(huge_page_span(at(4 * H - 4096), H + 4096).bytes == H);
  CHECK(huge_page_span(at(4 * H), H - 1).bytes == 0);  // smaller than a huge page
  CHECK(huge_page_span(at(4 * H), 0).bytes == 0);
  CHECK(huge_page_span(at(UINTPTR_MAX - H), 2 * H).bytes == 0);  // would wrap: nothing
}

TEST_CASE("host_page_bytes, align_up, align_down and page_span agree with the kernel's page size") {
  const std::size_t page = darray::detail::host_page_bytes();
  CHECK(page == static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)));
  CHECK((page & (page - 1)) == 0);
  using darray::detail::align_down;
  using darray::detail::align_up;
  CHECK(align_up(0, page) == 0);
  CHECK(align_up(1, page) == page);
  CHECK(align_up(page, page) == page);
  CHECK(align_up(page + 1, 64) == page + 64);
  CHECK(align_down(2 * page - 1, page) == page);
  CHECK(align_down(2 * page, page) == 2 * page);
  const std::uintptr_t P = page;
  CHECK(darray::detail::page_span(at(3 * P + 5), 4 * P, page).begin == 4 * P);  // 3 whole pages of 4
  CHECK(darray::detail::page_span(at(3 * P + 5), 4 * P, page).bytes == 3 * P);
  CHECK(darray::detail::page_span(at(3 * P), 4 * P, page).bytes == 4 * P);
  CHECK(darray::detail::page_span(at(3 * P + 1), P, page).bytes == 0);  // straddles a boundary, holds no page
  CHECK(darray::detail::page_span(at(UINTPTR_MAX - P), 2 * P, page).bytes == 0);
  CHECK(darray::detail::mapped_block_bytes(1) == page);
  CHECK(darray::detail::mapped_block_bytes(page) == page);
  CHECK(darray::detail::mapped_block_bytes(page + 1) == 2 * page);
}

TEST_CASE("advise_huge_pages marks exactly the aligned interior, and the memory stays usable") {
  const std::size_t H = huge_page_bytes, bytes = 5 * H;
  void* m = ::mmap(nullptr, bytes + 2 * H, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(m != MAP_FAILED);
  // A range that starts 12 KiB past a 2 MiB boundary: its first and last partial pages stay unadvised.
  char* base = static_cast<char*>(m);
  char* p = base + (H - reinterpret_cast<std::uintptr_t>(base) % H) + 3 * 4096;
  const darray::detail::PageSpan span = huge_page_span(p, bytes);
  REQUIRE(span.bytes == 4 * H);
  const bool advised = darray::detail::advise_huge_pages(p, bytes);
  if (darray::testing::kernel_has_huge_pages()) {
    REQUIRE(advised);
    const auto inner = darray::testing::mapping_flags(reinterpret_cast<void*>(span.begin));
    REQUIRE(inner.found);
    CHECK(inner.huge_advised);
    CHECK(inner.start == span.begin);
    CHECK(inner.end == span.begin + span.bytes);
    const auto before = darray::testing::mapping_flags(p);
    REQUIRE(before.found);
    CHECK(!before.huge_advised);
    CHECK(before.end == span.begin);
  }
  for (std::size_t i = 0; i < bytes; i += 512) p[i] = static_cast<char>(i / 512);
  bool same = true;
  for (std::size_t i = 0; i < bytes; i += 512) same = same && p[i] == static_cast<char>(i / 512);
  CHECK(same);
  CHECK(!darray::detail::advise_huge_pages(p, H - 1));  // too small for a huge page: left alone
  ::munmap(m, bytes + 2 * H);
}

TEST_CASE("copy_advised copies every element") {
  std::vector<int> v(3 * huge_page_bytes / sizeof(int));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int>(i * 7);
  CHECK(darray::detail::copy_advised(v) == v);
  CHECK(darray::detail::copy_advised(std::vector<int>{}).empty());
  CHECK(darray::detail::copy_advised(std::vector<int>{1, 2}) == std::vector<int>{1, 2});
}

TEST_CASE("populate_pages faults in a range's whole pages and keeps what they hold") {
  const std::size_t page = darray::detail::host_page_bytes(), bytes = 16 * page;
  void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(m != MAP_FAILED);
  char* p = static_cast<char*>(m);
  p[5 * page + 17] = 42;  // one page written before
  std::vector<unsigned char> resident(16);
  REQUIRE(::mincore(m, bytes, resident.data()) == 0);
  CHECK(!(resident[3] & 1));  // untouched: not resident yet
  // From the middle of page 2 to the middle of page 12: pages 3..11 are whole, 2 and 12 partial.
  const bool populated = darray::detail::populate_pages(p + 2 * page + 100, 10 * page);
#if defined(MADV_POPULATE_WRITE)
  if (populated) {
    REQUIRE(::mincore(m, bytes, resident.data()) == 0);
    for (int i = 3; i <= 11; ++i) CHECK((resident[static_cast<std::size_t>(i)] & 1));
    CHECK(!(resident[2] & 1));
    CHECK(!(resident[12] & 1));
  }
#endif
  (void)populated;
  CHECK(p[5 * page + 17] == 42);
  CHECK(p[7 * page] == 0);
  CHECK(!darray::detail::populate_pages(p + 100, page));  // no whole page: nothing
  ::munmap(m, bytes);
}

TEST_CASE("map_block: fresh memory at a 2 MiB boundary, advised, untouched until written, gone when unmapped") {
  const std::size_t bytes = 5 * huge_page_bytes + 12345;
  void* p = darray::detail::map_block(bytes, /*advise=*/true);
  REQUIRE(p != nullptr);
  CHECK(reinterpret_cast<std::uintptr_t>(p) % huge_page_bytes == 0);
  const std::size_t len = darray::detail::mapped_block_bytes(bytes);
  CHECK(len >= bytes);
  std::vector<unsigned char> resident(len / darray::detail::host_page_bytes());
  REQUIRE(::mincore(p, len, resident.data()) == 0);
  CHECK(std::count_if(resident.begin(), resident.end(), [](unsigned char r) { return (r & 1) != 0; }) == 0);
  if (darray::testing::kernel_has_huge_pages()) {
    const auto m = darray::testing::mapping_flags(p);
    REQUIRE(m.found);
    CHECK(m.huge_advised);
  }
  auto* c = static_cast<char*>(p);
  std::memset(c, 3, bytes);
  CHECK(c[0] == 3);
  CHECK(c[bytes - 1] == 3);
  darray::detail::unmap_block(p, bytes);
  CHECK(::mincore(p, darray::detail::host_page_bytes(), resident.data()) == -1);  // no longer mapped (ENOMEM)
  void* plain = darray::detail::map_block(huge_page_bytes, /*advise=*/false);
  if (darray::testing::kernel_has_huge_pages()) CHECK(!darray::testing::mapping_flags(plain).huge_advised);
  darray::detail::unmap_block(plain, huge_page_bytes);
}

TEST_CASE("filled_advised: a large vector's storage is advised before it is written, and holds the value") {
  const auto saved = darray::detail::getenv_opt("DARRAY_HUGE_PAGES");
  ::unsetenv("DARRAY_HUGE_PAGES");
  // 3 huge pages of ints: the runtime's per-process counts at a few million processes.
  const std::size_t n = 3 * huge_page_bytes / sizeof(int);
  const std::vector<int> v = darray::detail::filled_advised(n, 7);
  REQUIRE(v.size() == n);
  CHECK(std::count(v.begin(), v.end(), 7) == static_cast<std::ptrdiff_t>(n));
  const darray::detail::PageSpan span = huge_page_span(v.data(), n * sizeof(int));
  REQUIRE(span.bytes >= huge_page_bytes);
  if (darray::testing::kernel_has_huge_pages()) {
    const auto inner = darray::testing::mapping_flags(reinterpret_cast<void*>(span.begin));
    REQUIRE(inner.found);
    CHECK(inner.huge_advised);
  }
  CHECK(darray::detail::filled_advised<int>(0, 1).empty());
  CHECK(darray::detail::filled_advised<int>(3, 1) == std::vector<int>{1, 1, 1});
  // reserve_advised keeps what a vector holds, and advises only the room it adds.
  std::vector<int> w{4, 5};
  darray::detail::reserve_advised(w, n);
  CHECK(w.capacity() >= n);
  CHECK(w == std::vector<int>{4, 5});
  if (saved)
    ::setenv("DARRAY_HUGE_PAGES", saved->c_str(), 1);
  else
    ::unsetenv("DARRAY_HUGE_PAGES");
}

TEST_CASE("huge_pages_wanted: ranges of a huge page and more, unless DARRAY_HUGE_PAGES=0; a bad value is an error") {
  const auto saved = darray::detail::getenv_opt("DARRAY_HUGE_PAGES");
  ::unsetenv("DARRAY_HUGE_PAGES");
  CHECK(darray::detail::huge_pages_wanted(huge_page_bytes));
  CHECK(!darray::detail::huge_pages_wanted(huge_page_bytes - 1));
  ::setenv("DARRAY_HUGE_PAGES", "0", 1);
  CHECK(!darray::detail::huge_pages_wanted(huge_page_bytes * 8));
  ::setenv("DARRAY_HUGE_PAGES", "on", 1);
  CHECK(darray::detail::huge_pages_wanted(huge_page_bytes * 8));
  ::setenv("DARRAY_HUGE_PAGES", "sometimes", 1);
  CHECK_THROWS_AS(darray::detail::huge_pages_wanted(huge_page_bytes), darray::InvalidArgument);
  CHECK_NOTHROW(darray::detail::huge_pages_wanted(4096));  // too small to ask
  if (saved)
    ::setenv("DARRAY_HUGE_PAGES", saved->c_str(), 1);
  else
    ::unsetenv("DARRAY_HUGE_PAGES");
}
