// Formatting of axis names and name lists for error messages and to_string(): ("x", "y") in messages, 'x' in
// JAX-style reprs. Shared by PartitionSpec, Mesh and NamedSharding so they all spell names alike.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "darray/core/error.hpp"

namespace darray {
namespace detail {

// An axis name given as a C string, for `api`: a null pointer (rather a name that was not found, such as a getenv's
// that found nothing, than an empty one) is an InvalidArgument naming it and what was expected, not std::string's
// std::logic_error.
inline std::string name_from(const char* name, const char* api, const std::string& expected) {
  DARRAY_THROW_IF(name == nullptr, InvalidArgument, api, "mesh axis name is a null const char*; expected " << expected);
  return name;
}

// Error messages quote user input, which may be huge (a 1 MiB spec) or hold control characters (a NUL would cut
// the message short in C APIs): they show at most this many characters of it, then "... (N more characters)".
inline constexpr std::size_t max_quoted_chars = 200;

// text as an error message shows it: control characters as \xNN, at most `limit` characters of text.
inline std::string printable(const std::string& text, std::size_t limit = max_quoted_chars) {
  static const char hex[] = "0123456789abcdef";
  std::string out;
  const std::size_t shown = text.size() < limit ? text.size() : limit;
  for (std::size_t i = 0; i < shown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (shown < text.size()) out += "... (" + std::to_string(text.size() - shown) + " more characters)";
  return out;
}

// Position of the first control character (below 0x20, or 0x7f) in name, or npos.
inline std::size_t first_control_char(const std::string& name) {
  for (std::size_t i = 0; i < name.size(); ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (c < 0x20 || c == 0x7f) return i;
  }
  return std::string::npos;
}

// ("x", "y"): the spelling of a list of axis names in error messages; long lists stop after max_quoted_chars
// characters with "... (N more)".
inline std::string quoted_list(const std::vector<std::string>& names) {
  std::string out = "(";
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (out.size() > max_quoted_chars) {
      out += ", ... (" + std::to_string(names.size() - i) + " more)";
      break;
    }
    out += (i ? ", \"" : "\"") + printable(names[i]) + "\"";
  }
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
