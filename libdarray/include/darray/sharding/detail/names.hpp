// Formatting of axis names and name lists for error messages and to_string(): ("x", "y") in messages, 'x' in
// JAX-style reprs. Shared by PartitionSpec, Mesh and NamedSharding so they all spell names alike.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace darray {
namespace detail {

// ("x", "y"): the spelling of a list of axis names in error messages.
inline std::string quoted_list(const std::vector<std::string>& names) {
  std::string out = "(";
  for (std::size_t i = 0; i < names.size(); ++i) out += (i ? ", \"" : "\"") + names[i] + "\"";
  return out + ")";
}

// 'x': Python's repr of a string, as JAX prints axis names. A name holding a single quote is printed in double
// quotes, so the repr can be read back by PartitionSpec::parse.
inline std::string python_repr(const std::string& name) {
  const char q = name.find('\'') == std::string::npos ? '\'' : '"';
  return q + name + q;
}

}  // namespace detail
}  // namespace darray
