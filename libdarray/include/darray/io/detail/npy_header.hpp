// The .npy header as bytes: a pure parser (magic, version, length field, then the Python dict literal numpy
// writes) and the matching writer, both over plain byte buffers with no MPI, Kokkos or file access, so the parser
// can be fuzzed. Every malformed input becomes a darray::IoError; the parser never reads outside [bytes, bytes+size).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "darray/core/error.hpp"
#include "darray/core/index.hpp"
#include "darray/io/npy_header.hpp"

namespace darray {
namespace detail {

inline constexpr char npy_magic[] = "\x93NUMPY";
inline constexpr std::size_t npy_magic_size = 6;
// Magic, two version bytes and the longest (4-byte) length field: what a reader needs before the header length.
inline constexpr std::size_t npy_max_preamble_size = 12;
// numpy aligns the data of the files it writes to this many bytes (ARRAY_ALIGN), so they can be memory-mapped.
inline constexpr std::size_t npy_alignment = 64;
// Real headers are ~128 bytes; a length field above this is corruption, refused before anything is allocated.
inline constexpr std::uint64_t npy_max_header_bytes = std::uint64_t(16) << 20;
// numpy 2 allows 64 dims; nesting beyond a few levels never occurs in a header, and the cap bounds recursion.
inline constexpr std::size_t npy_max_dims = 64;
inline constexpr int npy_max_nesting = 32;
// A real header holds about a dozen values; the cap keeps a hostile 16 MiB header of "1,1,1,..." from costing
// hundreds of MiB of parsed values.
inline constexpr std::size_t npy_max_values = 65536;
// numpy leaves room after the dict so a header can be rewritten in place when the growth axis gets more digits.
inline constexpr std::size_t npy_growth_axis_max_digits = 21;

// Bytes shown in messages: printable ASCII as is, the rest as \xNN, cut after max_chars.
inline std::string printable_bytes(const unsigned char* p, std::size_t n, std::size_t max_chars = 48) {
  static const char hex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    if (out.size() >= max_chars) return out + "...";
    const unsigned char c = p[i];
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

inline std::string printable_bytes(const std::string& s, std::size_t max_chars = 48) {
  return printable_bytes(reinterpret_cast<const unsigned char*>(s.data()), s.size(), max_chars);
}

// The quoted path every .npy message starts with.
inline std::string npy_where(const std::string& path) { return "\"" + path + "\""; }

// Magic, format version and header length: the fixed-size start of every .npy file.
struct NpyPreamble {
  int major = 1;
  int minor = 0;
  std::uint64_t header_length = 0;  // bytes of the dict literal including its padding and final '\n'
  std::size_t header_start = 10;    // 10 for version 1.0, 12 for 2.0 and 3.0
};

// Reads the preamble from the first min(size, 12) bytes. Throws IoError for a wrong magic, an unsupported version
// or a buffer too short to hold the length field.
inline NpyPreamble parse_npy_preamble(const unsigned char* bytes, std::size_t size, const char* api,
                                      const std::string& path) {
  const std::size_t magic_seen = size < npy_magic_size ? size : npy_magic_size;
  bool magic_ok = true;
  for (std::size_t i = 0; i < magic_seen; ++i)
    magic_ok = magic_ok && bytes[i] == static_cast<unsigned char>(npy_magic[i]);
  DARRAY_THROW_IF(!magic_ok, IoError, api,
                  npy_where(path) << " is not a .npy file: it starts with \"" << printable_bytes(bytes, magic_seen)
                                  << "\" instead of the magic \"\\x93NUMPY\"");
  DARRAY_THROW_IF(size < npy_magic_size + 2, IoError, api,
                  npy_where(path) << " is truncated: " << size << " bytes, too short for the .npy magic and version");
  NpyPreamble pre;
  pre.major = bytes[6];
  pre.minor = bytes[7];
  DARRAY_THROW_IF((pre.major < 1 || pre.major > 3) || pre.minor != 0, IoError, api,
                  npy_where(path) << " has .npy format version " << pre.major << "." << pre.minor
                                  << ", which is not supported; supported versions are 1.0, 2.0 and 3.0");
  // Version 1.0 has a 2-byte little-endian length; 2.0 and 3.0 (3.0 only changes the header's encoding to UTF-8)
  // a 4-byte one.
  const std::size_t length_bytes = pre.major == 1 ? 2 : 4;
  pre.header_start = npy_magic_size + 2 + length_bytes;
  DARRAY_THROW_IF(size < pre.header_start, IoError, api,
                  npy_where(path) << " is truncated: " << size << " bytes, too short for the header length field of a "
                                  << pre.major << ".0 file (" << pre.header_start << " bytes)");
  pre.header_length = 0;
  for (std::size_t i = length_bytes; i-- > 0;) pre.header_length = (pre.header_length << 8) | bytes[8 + i];
  return pre;
}

// A value of the Python literal subset numpy headers use (ast.literal_eval on the reading side).
struct PyValue {
  enum class Kind { string, integer, boolean, none, tuple, list, dict };
  Kind kind = Kind::none;
  std::string text;  // string contents, or an integer's digits as written (for messages)
  int64_t integer = 0;
  bool integer_fits = true;  // false when the integer does not fit int64
  bool boolean = false;
  std::vector<PyValue> items;  // tuple and list elements; dict: key, value, key, value, ...
  std::size_t position = 0;    // offset in the header text, for messages
};

inline const char* describe(PyValue::Kind k) {
  switch (k) {
    case PyValue::Kind::string:
      return "a string";
    case PyValue::Kind::integer:
      return "an integer";
    case PyValue::Kind::boolean:
      return "a bool";
    case PyValue::Kind::none:
      return "None";
    case PyValue::Kind::tuple:
      return "a tuple";
    case PyValue::Kind::list:
      return "a list";
    case PyValue::Kind::dict:
      return "a dict";
  }
  return "a value";
}

// Recursive descent over [begin, end). Every read is bounds-checked against end; nesting is capped, so hostile
// input can neither overrun the buffer nor the stack.
class PyLiteralParser {
 public:
  PyLiteralParser(const char* begin, const char* end, const char* api, const std::string& path)
      : m_begin(begin), m_pos(begin), m_end(end), m_api(api), m_path(path) {}

  // The whole text must be one literal, surrounded by whitespace only.
  PyValue parse_document() {
    skip_space();
    PyValue v = parse_value(0);
    skip_space();
    if (m_pos != m_end) fail("unexpected text after the header dict");
    return v;
  }

  [[noreturn]] void fail(const std::string& what) const { fail_at(static_cast<std::size_t>(m_pos - m_begin), what); }

  [[noreturn]] void fail_at(std::size_t position, const std::string& what) const {
    DARRAY_THROW(IoError, m_api,
                 npy_where(m_path) << " has a malformed .npy header: " << what << " at byte " << position
                                   << " of the header {" << snippet() << "}");
  }

  // The header text for messages, without its padding.
  std::string snippet() const {
    const char* e = m_end;
    while (e > m_begin && is_space(e[-1])) --e;
    const char* b = m_begin;
    while (b < e && is_space(*b)) ++b;
    if (b < e && *b == '{') ++b;
    if (e > b && e[-1] == '}') --e;
    return printable_bytes(reinterpret_cast<const unsigned char*>(b), static_cast<std::size_t>(e - b), 120);
  }

 private:
  static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
  static bool is_digit(char c) { return c >= '0' && c <= '9'; }
  static bool is_word(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || is_digit(c); }

  void skip_space() {
    while (m_pos < m_end && is_space(*m_pos)) ++m_pos;
  }

  std::string found() const {
    if (m_pos >= m_end) return "the end of the header";
    return "'" + printable_bytes(reinterpret_cast<const unsigned char*>(m_pos), 1) + "'";
  }

  PyValue parse_value(int depth) {
    if (depth > npy_max_nesting) fail("nesting deeper than " + std::to_string(npy_max_nesting) + " levels");
    if (++m_values > npy_max_values) fail("more than " + std::to_string(npy_max_values) + " values");
    if (m_pos >= m_end) fail("expected a value but found the end of the header");
    const char c = *m_pos;
    if (c == '\'' || c == '"') return parse_string();
    if (is_digit(c) || c == '-' || c == '+') return parse_integer();
    if (c == '(') return parse_sequence(PyValue::Kind::tuple, ')', depth);
    if (c == '[') return parse_sequence(PyValue::Kind::list, ']', depth);
    if (c == '{') return parse_dict(depth);
    if (is_word(c)) return parse_word();
    fail("expected a value but found " + found());
  }

  PyValue parse_string() {
    PyValue v;
    v.kind = PyValue::Kind::string;
    v.position = position();
    const char quote = *m_pos++;
    while (true) {
      if (m_pos >= m_end) fail_at(v.position, "unterminated string");
      const char c = *m_pos++;
      if (c == quote) break;
      if (c == '\n') fail_at(v.position, "unterminated string (line break inside the quotes)");
      if (c != '\\') {
        v.text += c;
        continue;
      }
      if (m_pos >= m_end) fail_at(v.position, "unterminated string (ends in a backslash)");
      const char e = *m_pos++;
      switch (e) {
        case 'n':
          v.text += '\n';
          break;
        case 't':
          v.text += '\t';
          break;
        case 'r':
          v.text += '\r';
          break;
        case '0':
          v.text += '\0';
          break;
        case '\\':
        case '\'':
        case '"':
          v.text += e;
          break;
        default:  // Python keeps unknown escapes verbatim
          v.text += '\\';
          v.text += e;
      }
    }
    return v;
  }

  PyValue parse_integer() {
    PyValue v;
    v.kind = PyValue::Kind::integer;
    v.position = position();
    bool negative = false;
    if (*m_pos == '-' || *m_pos == '+') {
      negative = *m_pos == '-';
      v.text += *m_pos++;
      skip_space();  // Python allows "- 3"
    }
    if (m_pos >= m_end || !is_digit(*m_pos)) fail("expected digits after a sign but found " + found());
    // Accumulate as a negative number so INT64_MIN fits too.
    int64_t acc = 0;
    while (m_pos < m_end && is_digit(*m_pos)) {
      const int digit = *m_pos - '0';
      v.text += *m_pos++;
      if (acc < (std::numeric_limits<int64_t>::min() + digit) / 10) v.integer_fits = false;
      if (v.integer_fits) acc = acc * 10 - digit;
    }
    // Python 2 era numpy wrote long integers with an L suffix; numpy still reads them.
    if (m_pos < m_end && (*m_pos == 'L' || *m_pos == 'l')) ++m_pos;
    if (m_pos < m_end && is_word(*m_pos)) fail("malformed number '" + v.text + "' followed by " + found());
    if (v.integer_fits) {
      if (!negative && acc == std::numeric_limits<int64_t>::min())
        v.integer_fits = false;
      else
        v.integer = negative ? acc : -acc;
    }
    return v;
  }

  PyValue parse_word() {
    PyValue v;
    v.position = position();
    std::string word;
    while (m_pos < m_end && is_word(*m_pos)) word += *m_pos++;
    if (word == "True" || word == "False") {
      v.kind = PyValue::Kind::boolean;
      v.boolean = word == "True";
    } else if (word == "None") {
      v.kind = PyValue::Kind::none;
    } else {
      fail_at(v.position, "unknown name '" + printable_bytes(word) +
                              "' (expected a string, a number, True, False, "
                              "None, a tuple, a list or a dict)");
    }
    return v;
  }

  // "(a, b)", "(a,)", "()" and "[...]"; "(a)" is just a in parentheses, as in Python.
  PyValue parse_sequence(PyValue::Kind kind, char close, int depth) {
    PyValue v;
    v.kind = kind;
    v.position = position();
    ++m_pos;
    bool trailing_comma = false;
    while (true) {
      skip_space();
      if (m_pos < m_end && *m_pos == close) {
        ++m_pos;
        break;
      }
      if (!v.items.empty() && !trailing_comma)
        fail(std::string("expected ',' or '") + close + "' in a " + (kind == PyValue::Kind::tuple ? "tuple" : "list") +
             " but found " + found());
      v.items.push_back(parse_value(depth + 1));
      skip_space();
      trailing_comma = m_pos < m_end && *m_pos == ',';
      if (trailing_comma) ++m_pos;
    }
    if (kind == PyValue::Kind::tuple && v.items.size() == 1 && !trailing_comma) {
      PyValue inner = std::move(v.items[0]);
      return inner;
    }
    return v;
  }

  PyValue parse_dict(int depth) {
    PyValue v;
    v.kind = PyValue::Kind::dict;
    v.position = position();
    ++m_pos;
    bool trailing_comma = false;
    while (true) {
      skip_space();
      if (m_pos < m_end && *m_pos == '}') {
        ++m_pos;
        break;
      }
      if (!v.items.empty() && !trailing_comma) fail("expected ',' or '}' after a dict entry but found " + found());
      v.items.push_back(parse_value(depth + 1));
      skip_space();
      if (m_pos >= m_end || *m_pos != ':') fail("expected ':' after a dict key but found " + found());
      ++m_pos;
      skip_space();
      v.items.push_back(parse_value(depth + 1));
      skip_space();
      trailing_comma = m_pos < m_end && *m_pos == ',';
      if (trailing_comma) ++m_pos;
    }
    return v;
  }

  std::size_t position() const { return static_cast<std::size_t>(m_pos - m_begin); }

  const char* m_begin;
  const char* m_pos;
  const char* m_end;
  const char* m_api;
  const std::string& m_path;
  std::size_t m_values = 0;
};

// Parses a whole header: bytes[0, size) must hold the preamble and the complete header (data may follow). Returns
// the header with data_offset set; throws IoError naming `path` for anything numpy would not load as a plain
// array, and for what libdarray cannot represent (negative extents, more than 2^63 elements).
inline io::NpyHeader parse_npy_header(const unsigned char* bytes, std::size_t size, const char* api,
                                      const std::string& path) {
  const NpyPreamble pre = parse_npy_preamble(bytes, size, api, path);
  const std::size_t available = size - pre.header_start;
  DARRAY_THROW_IF(pre.header_length > available, IoError, api,
                  npy_where(path) << " is truncated or corrupt: its header length field says " << pre.header_length
                                  << " bytes, but only " << available << " bytes follow the " << pre.header_start
                                  << "-byte preamble");
  const char* begin = reinterpret_cast<const char*>(bytes) + pre.header_start;
  const char* end = begin + pre.header_length;
  PyLiteralParser parser(begin, end, api, path);
  const PyValue dict = parser.parse_document();
  if (dict.kind != PyValue::Kind::dict)
    parser.fail_at(dict.position, std::string("the header is ") + describe(dict.kind) + ", not a dict");

  const PyValue* descr = nullptr;
  const PyValue* fortran = nullptr;
  const PyValue* shape = nullptr;
  for (std::size_t i = 0; i + 1 < dict.items.size(); i += 2) {
    const PyValue& key = dict.items[i];
    if (key.kind != PyValue::Kind::string)
      parser.fail_at(key.position, std::string("a dict key is ") + describe(key.kind) + "; expected a string");
    const PyValue** slot = key.text == "descr"           ? &descr
                           : key.text == "fortran_order" ? &fortran
                           : key.text == "shape"         ? &shape
                                                         : nullptr;
    if (slot == nullptr)
      parser.fail_at(key.position, "unexpected key '" + printable_bytes(key.text) +
                                       "'; a .npy header has exactly the keys 'descr', 'fortran_order' and 'shape'");
    if (*slot != nullptr) parser.fail_at(key.position, "key '" + key.text + "' appears twice");
    *slot = &dict.items[i + 1];
  }
  for (const auto& [value, name] :
       {std::make_pair(descr, "descr"), std::make_pair(fortran, "fortran_order"), std::make_pair(shape, "shape")})
    if (value == nullptr)
      parser.fail_at(dict.position, std::string("missing key '") + name +
                                        "'; a .npy header has exactly the keys 'descr', 'fortran_order' and 'shape'");

  if (descr->kind == PyValue::Kind::list || descr->kind == PyValue::Kind::tuple)
    parser.fail_at(descr->position, std::string("'descr' is ") + describe(descr->kind) +
                                        ", i.e. a structured dtype; only plain dtypes such as '<f8' are supported");
  if (descr->kind != PyValue::Kind::string)
    parser.fail_at(descr->position,
                   std::string("'descr' is ") + describe(descr->kind) + "; expected a dtype string such as '<f8'");
  if (descr->text.empty())
    parser.fail_at(descr->position, "'descr' is an empty string; expected a dtype such as '<f8'");
  if (fortran->kind != PyValue::Kind::boolean)
    parser.fail_at(fortran->position,
                   std::string("'fortran_order' is ") + describe(fortran->kind) + "; expected True or False");
  if (shape->kind != PyValue::Kind::tuple)
    parser.fail_at(shape->position, std::string("'shape' is ") + describe(shape->kind) +
                                        "; expected a tuple of integers such as (3, 4), (5,) or ()");
  if (shape->items.size() > npy_max_dims)
    parser.fail_at(shape->position, "'shape' has " + std::to_string(shape->items.size()) + " dims; at most " +
                                        std::to_string(npy_max_dims) + " are supported");

  io::NpyHeader h;
  h.version_major = pre.major;
  h.version_minor = pre.minor;
  h.dtype = descr->text;
  h.fortran_order = fortran->boolean;
  h.data_offset = pre.header_start + pre.header_length;
  for (std::size_t d = 0; d < shape->items.size(); ++d) {
    const PyValue& e = shape->items[d];
    if (e.kind != PyValue::Kind::integer)
      parser.fail_at(e.position,
                     "'shape' entry " + std::to_string(d) + " is " + describe(e.kind) + "; expected an integer");
    if (!e.integer_fits || e.integer < 0)
      parser.fail_at(e.position,
                     "'shape' entry " + std::to_string(d) + " is " + e.text + "; expected an extent from 0 to 2^63-1");
    h.shape.push_back(e.integer);
  }
  // Element counts are int64_t everywhere; an extent of 0 anywhere makes the count 0 whatever the others are.
  bool any_zero = false;
  for (int64_t n : h.shape) any_zero = any_zero || n == 0;
  int64_t elements = 1;
  for (std::size_t d = 0; !any_zero && d < h.shape.size(); ++d) {
    if (elements > std::numeric_limits<int64_t>::max() / h.shape[d])
      parser.fail_at(shape->position, "'shape' " + numpy_shape_string(h.shape) + " has more than 2^63-1 elements");
    elements *= h.shape[d];
  }
  return h;
}

inline io::NpyHeader parse_npy_header(const std::vector<unsigned char>& bytes, const char* api,
                                      const std::string& path) {
  return parse_npy_header(bytes.data(), bytes.size(), api, path);
}

// Python's repr of a plain string, as numpy writes 'descr'.
inline std::string python_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  return out + "'";
}

// The preamble and header numpy's np.save would write for this dtype string and shape, byte for byte: the dict
// with sorted keys, room for the growth axis to gain digits, spaces up to a multiple of 64 bytes, '\n' last.
// Version 1.0 when the header fits its 2-byte length field, else 2.0.
inline std::string format_npy_header(const std::string& descr, const Shape& shape, bool fortran_order = false) {
  std::string dict = "{'descr': " + python_quote(descr) + ", 'fortran_order': " + (fortran_order ? "True" : "False") +
                     ", 'shape': " + numpy_shape_string(shape) + ", }";
  if (!shape.empty()) {
    const std::string growth = std::to_string(fortran_order ? shape.back() : shape.front());
    if (growth.size() < npy_growth_axis_max_digits) dict.append(npy_growth_axis_max_digits - growth.size(), ' ');
  }
  for (int major = 1; major <= 2; ++major) {
    const std::size_t length_bytes = major == 1 ? 2 : 4;
    const std::size_t prefix = npy_magic_size + 2 + length_bytes;
    const std::size_t with_newline = dict.size() + 1;
    const std::size_t pad = npy_alignment - (prefix + with_newline) % npy_alignment;
    const std::uint64_t header_length = with_newline + pad;
    if (header_length > (major == 1 ? std::uint64_t(0xffff) : std::uint64_t(0xffffffff))) continue;
    std::string out(npy_magic, npy_magic_size);
    out += static_cast<char>(major);
    out += '\0';
    for (std::size_t i = 0; i < length_bytes; ++i) out += static_cast<char>((header_length >> (8 * i)) & 0xff);
    out += dict;
    out.append(pad, ' ');
    out += '\n';
    return out;
  }
  DARRAY_THROW(InvalidArgument, "io::format_npy_header",
               "the header for dtype '" << printable_bytes(descr) << "' is " << dict.size()
                                        << " bytes, more than a 2.0 header can hold");
}

}  // namespace detail
}  // namespace darray
