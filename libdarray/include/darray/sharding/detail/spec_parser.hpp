// Reader for PartitionSpec::parse: JAX's spelling of a spec, "P('x', None, ('y', 'z'))", with or without the
// P(...)/PartitionSpec(...) wrapper and with or without quotes. Returns the entries; PartitionSpec validates them.
#pragma once

#include <cctype>
#include <cstddef>
#include <string>
#include <vector>

#include "darray/core/error.hpp"
#include "darray/sharding/detail/names.hpp"

namespace darray {
namespace detail {

class SpecParser {
 public:
  explicit SpecParser(const std::string& text) : m_text(text) {}

  // spec := [wrapper '('] entries [')'];  entries := [entry {',' entry} [',']]
  // entry := 'None' | name | '(' [name {',' name} [',']] ')';  name := word | 'quoted' | "quoted"
  std::vector<std::vector<std::string>> parse() {
    std::vector<std::vector<std::string>> entries;
    skip_space();
    const std::size_t start = m_pos;
    const std::string first = word();
    skip_space();
    const bool wrapped = is_wrapper(first) && peek() == '(';
    if (wrapped) {
      ++m_pos;
    } else {
      m_pos = start;  // the word was the first axis name: read it again as an entry
    }
    const char close = wrapped ? ')' : '\0';
    skip_space();
    while (peek() != close) {
      entries.push_back(entry());
      skip_space();
      if (peek() == ',') {
        ++m_pos;
        skip_space();
      } else if (peek() != close) {
        fail(wrapped ? "',' or ')'" : "',' or the end");
      }
    }
    if (wrapped) {
      ++m_pos;
      skip_space();
      if (peek() != '\0') fail("the end after the closing ')'");
    }
    return entries;
  }

 private:
  std::vector<std::string> entry() {
    if (peek() == '(') {
      ++m_pos;
      std::vector<std::string> names;
      skip_space();
      while (peek() != ')') {
        const std::size_t at = m_pos;
        if (!is_quote(peek()) && word() == "None") {
          m_pos = at;
          fail("an axis name (None cannot appear inside a tuple of axes)");
        }
        m_pos = at;
        names.push_back(name());
        skip_space();
        if (peek() == ',') {
          ++m_pos;
          skip_space();
        } else if (peek() != ')') {
          fail("',' or ')' in a tuple of axes");
        }
      }
      ++m_pos;
      return names;
    }
    const std::size_t at = m_pos;
    if (!is_quote(peek()) && word() == "None") return {};
    m_pos = at;
    return {name()};
  }

  std::string name() {
    const char q = peek();
    if (is_quote(q)) {
      const std::size_t open = m_pos++;
      const std::size_t end = m_text.find(q, m_pos);
      if (end == std::string::npos) {
        m_pos = open;
        fail(std::string("a closing ") + q + " for the quoted axis name");
      }
      std::string n = m_text.substr(m_pos, end - m_pos);
      if (n.empty()) fail("a non-empty axis name");
      m_pos = end + 1;
      return n;
    }
    std::string n = word();
    if (n.empty()) fail("an axis name, None or '('");
    return n;
  }

  // An unquoted name: any run of characters other than space, separators and quotes, so names like "dp-0" or
  // "x.y" need no quotes.
  std::string word() {
    const std::size_t b = m_pos;
    while (m_pos < m_text.size() && !std::isspace(static_cast<unsigned char>(m_text[m_pos])) &&
           std::string("(),'\"").find(m_text[m_pos]) == std::string::npos)
      ++m_pos;
    return m_text.substr(b, m_pos - b);
  }

  static bool is_wrapper(const std::string& w) {
    auto ends_with = [&](const std::string& tail) {
      return w.size() > tail.size() && w.compare(w.size() - tail.size(), tail.size(), tail) == 0;
    };
    // P, PartitionSpec, or a qualified name such as jax.sharding.PartitionSpec.
    return w == "P" || w == "PartitionSpec" || ends_with(".P") || ends_with(".PartitionSpec");
  }

  static bool is_quote(char c) { return c == '\'' || c == '"'; }
  char peek() const { return m_pos < m_text.size() ? m_text[m_pos] : '\0'; }
  void skip_space() {
    while (m_pos < m_text.size() && std::isspace(static_cast<unsigned char>(m_text[m_pos]))) ++m_pos;
  }

  // The message quotes the text, or for long texts (up to 1 MiB have been seen) an excerpt around the column.
  [[noreturn]] void fail(const std::string& expected) const {
    const std::string found =
        m_pos < m_text.size() ? "'" + printable(std::string(1, m_text[m_pos])) + "'" : std::string("the end");
    const std::size_t context = max_quoted_chars / 2;
    std::string quoted;
    if (m_text.size() <= max_quoted_chars) {
      quoted = "\"" + printable(m_text) + "\"";
    } else {
      const std::size_t from = m_pos > context ? m_pos - context : 0;
      quoted = "\"" + std::string(from > 0 ? "..." : "") + printable(m_text.substr(from, 2 * context), 2 * context) +
               (from + 2 * context < m_text.size() ? "...\" (" : "\" (") + std::to_string(m_text.size()) +
               " characters in all, shown from column " + std::to_string(from + 1) + ")";
    }
    DARRAY_THROW(InvalidArgument, "PartitionSpec::parse",
                 "cannot parse " << quoted << ": at column " << m_pos + 1 << " expected " << expected << ", found "
                                 << found << " (example: \"P('x', None, ('y', 'z'))\" or \"x, None, (y, z)\")");
  }

  const std::string& m_text;
  std::size_t m_pos = 0;
};

inline std::vector<std::vector<std::string>> parse_spec_entries(const std::string& text) {
  return SpecParser(text).parse();
}

}  // namespace detail
}  // namespace darray
