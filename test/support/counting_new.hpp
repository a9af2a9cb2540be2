// The global operator new and delete replaced for one test executable (include this in exactly one of its files):
// while counting_allocations is set, each operator new call is counted, with its bytes; every block comes from
// malloc and goes back to free. The nothrow forms are replaced too: under AddressSanitizer an unreplaced one comes
// from its runtime, and what it hands out (Catch's test registry allocates with it) would be freed here,
// an alloc-dealloc-mismatch at exit. Not inlined: GCC would otherwise pair the inlined malloc with std::free at call
// sites and warn of a mismatch. nvcc compiles these for the device as well (where nothing calls them and nothing can
// throw): its device pass gets a plain malloc.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>

namespace darray_testing {

inline std::atomic<bool> counting_allocations{false};
inline std::atomic<long> counted_news{0};
inline std::atomic<std::size_t> counted_new_bytes{0};

inline void count_new(std::size_t n) {
  if (!counting_allocations.load(std::memory_order_relaxed)) return;
  counted_news.fetch_add(1, std::memory_order_relaxed);
  counted_new_bytes.fetch_add(n, std::memory_order_relaxed);
}

// False under valgrind: memcheck's preload library replaces operator new in the executable too, so nothing is counted
// (the counts then read zero whatever the code allocates).
inline bool replaced_new_counts() {
  const char* preload = std::getenv("LD_PRELOAD");
  return preload == nullptr || std::strstr(preload, "vgpreload") == nullptr;
}

// In a Catch test case (Catch included first): returns from it with a warning where operator new is not counted.
#define DARRAY_RETURN_UNLESS_NEW_COUNTED()                                                                 \
  do {                                                                                                     \
    if (!darray_testing::replaced_new_counts()) {                                                          \
      WARN("SKIP: under valgrind operator new is memcheck's; the counts read zero whatever is allocated"); \
      return;                                                                                              \
    }                                                                                                      \
  } while (false)

// operator new calls of `times` calls of fn.
template <class Fn>
long count_news(int times, Fn&& fn) {
  counted_news = 0;
  counting_allocations = true;
  for (int k = 0; k < times; ++k) fn();
  counting_allocations = false;
  return counted_news;
}

}  // namespace darray_testing

__attribute__((noinline)) void* operator new(std::size_t n) {
#if defined(__CUDA_ARCH__)
  return malloc(n > 0 ? n : 1);
#else
  darray_testing::count_new(n);
  if (void* p = std::malloc(n > 0 ? n : 1)) return p;
  throw std::bad_alloc();
#endif
}
__attribute__((noinline)) void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
#if !defined(__CUDA_ARCH__)
  darray_testing::count_new(n);
#endif
  return std::malloc(n > 0 ? n : 1);
}
__attribute__((noinline)) void operator delete(void* p) noexcept { std::free(p); }
__attribute__((noinline)) void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
__attribute__((noinline)) void operator delete(void* p, std::size_t) noexcept { std::free(p); }
