// What /proc/self/smaps says of the mapping that holds an address: whether it carries the huge-page advice
// (madvise(MADV_HUGEPAGE): "hg" among its VmFlags). Linux only; elsewhere nothing is found.
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace darray {
namespace testing {

// Whether this kernel has transparent huge pages at all (else madvise(MADV_HUGEPAGE) is refused).
inline bool kernel_has_huge_pages() { return std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled").good(); }

struct MappingFlags {
  bool found = false;
  std::uintptr_t start = 0, end = 0;
  bool huge_advised = false;  // "hg" in VmFlags
};

inline MappingFlags mapping_flags(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  MappingFlags m;
  bool inside = false;
  while (std::getline(smaps, line)) {
    // A mapping's first line is "start-end perms offset dev inode [path]"; its other lines are "Name: value".
    std::istringstream head(line);
    std::string first;
    head >> first;
    const std::size_t dash = first.find('-');
    if (!first.empty() && first.back() != ':' && dash != std::string::npos) {
      if (inside) return m;
      const auto s = static_cast<std::uintptr_t>(std::stoull(first.substr(0, dash), nullptr, 16));
      const auto e = static_cast<std::uintptr_t>(std::stoull(first.substr(dash + 1), nullptr, 16));
      inside = a >= s && a < e;
      if (inside) m = MappingFlags{true, s, e, false};
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) {
      std::istringstream flags(line.substr(8));
      std::string f;
      while (flags >> f) m.huge_advised = m.huge_advised || f == "hg";
    }
  }
  return m;
}

}  // namespace testing
}  // namespace darray
