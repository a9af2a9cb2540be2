// What every collective does before planning: the DARRAY_CHECK=1 comparison of the call across processes (so a
// program whose processes call different collectives fails with a message instead of hanging), and the string that
// describes a call.
#pragma once

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "darray/array/distributed_array.hpp"
#include "darray/array/dtype.hpp"
#include "darray/collectives/detail/block_checks.hpp"
#include "darray/comm/check.hpp"
#include "darray/runtime/detail/state.hpp"

namespace darray {
namespace detail {

// Collective over all processes when DARRAY_CHECK is on, nothing otherwise. args: the call's arguments as text.
template <class T, int N, class M>
void check_collective_call(const char* api, const DistributedArray<T, N, M>& a, const std::string& args) {
  if (!consistency_checks_enabled()) return;
  check_consistent(world_comm(), std::string(api) + "(" + args + ") on " + describe_operand(a.shape(), a.sharding()) +
                                     " dtype " + dtype_name<T>());
}

inline std::string perm_text(const std::vector<std::pair<int, int>>& perm) {
  std::ostringstream os;
  os << "[";
  for (std::size_t k = 0; k < perm.size(); ++k)
    os << (k ? ", " : "") << "(" << perm[k].first << ", " << perm[k].second << ")";
  return os.str() + "]";
}

}  // namespace detail
}  // namespace darray
