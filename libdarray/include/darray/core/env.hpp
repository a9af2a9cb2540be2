// Parsing of DARRAY_* environment variables and other user strings. A malformed value is never ignored: it is an
// InvalidArgument naming the variable, the value and what is accepted.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "darray/core/error.hpp"

namespace darray {
namespace detail {

inline std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  return parts;
}

// The words of s: runs of characters other than blanks, tabs and line ends.
inline std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> words;
  std::size_t i = 0;
  for (;;) {
    i = s.find_first_not_of(" \t\r\n", i);
    if (i == std::string::npos) return words;
    const std::size_t end = std::min(s.find_first_of(" \t\r\n", i), s.size());
    words.push_back(s.substr(i, end - i));
    i = end;
  }
}

// Strict decimal integer: optional sign, digits only, within [lo, hi]. `what` names the source for messages
// (e.g. "DARRAY_HOST_DEVICE_COUNT"), `accepted` says what is accepted.
inline int64_t parse_int(const std::string& what, const std::string& text, int64_t lo, int64_t hi,
                         const std::string& accepted) {
  const std::string t = trim(text);
  bool ok = !t.empty();
  std::size_t i = (ok && (t[0] == '-' || t[0] == '+')) ? 1 : 0;
  if (i == t.size()) ok = false;
  for (std::size_t j = i; ok && j < t.size(); ++j) ok = t[j] >= '0' && t[j] <= '9';
  long long v = 0;
  if (ok) {
    errno = 0;
    v = std::strtoll(t.c_str(), nullptr, 10);
    ok = errno != ERANGE;
  }
  DARRAY_THROW_IF(!ok || v < lo || v > hi, InvalidArgument, what,
                  "invalid value \"" << text << "\"; expected " << accepted);
  return v;
}

// A byte count: a whole number with an optional binary suffix K, M, G or T (KiB, MiB, GiB, TiB; "KiB" etc. also
// accepted), e.g. "0", "1048576", "512M", "4GiB". The result is within [lo, hi].
inline int64_t parse_bytes(const std::string& what, const std::string& text, int64_t lo, int64_t hi,
                           const std::string& accepted) {
  std::string t = trim(text);
  int shift = 0;
  const std::pair<const char*, int> suffixes[] = {{"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40},
                                                  {"K", 10},   {"M", 20},   {"G", 30},   {"T", 40}};
  for (const auto& [suffix, bits] : suffixes) {
    const std::string sfx(suffix);
    if (t.size() > sfx.size() && t.compare(t.size() - sfx.size(), sfx.size(), sfx) == 0) {
      t = trim(t.substr(0, t.size() - sfx.size()));
      shift = bits;
      break;
    }
  }
  int64_t v = 0;
  bool ok = true;
  try {
    v = parse_int(what, t, 0, INT64_MAX >> shift, accepted);
  } catch (const InvalidArgument&) {
    ok = false;
  }
  if (ok) v <<= shift;
  DARRAY_THROW_IF(!ok || v < lo || v > hi, InvalidArgument, what,
                  "invalid value \"" << text << "\"; expected " << accepted);
  return v;
}

// Comma-separated list of integers in [lo, hi], e.g. "0,1,3"; duplicates rejected.
inline std::vector<int> parse_int_list(const std::string& what, const std::string& text, int lo, int hi,
                                       const std::string& accepted) {
  std::vector<int> out;
  DARRAY_THROW_IF(trim(text).empty(), InvalidArgument, what, "invalid value \"" << text << "\"; expected " << accepted);
  for (const std::string& part : split(text, ',')) {
    int v = 0;
    try {
      v = static_cast<int>(parse_int(what, part, lo, hi, accepted));
    } catch (const InvalidArgument&) {
      DARRAY_THROW(InvalidArgument, what,
                   "invalid value \"" << text << "\": entry \"" << part << "\" is not accepted; expected " << accepted);
    }
    for (int seen : out)
      DARRAY_THROW_IF(seen == v, InvalidArgument, what,
                      "invalid value \"" << text << "\": " << v << " appears twice; expected " << accepted);
    out.push_back(v);
  }
  return out;
}

// One of a fixed set of words (case-sensitive).
inline std::string parse_choice(const std::string& what, const std::string& text,
                                const std::vector<std::string>& choices) {
  const std::string t = trim(text);
  for (const auto& c : choices)
    if (t == c) return c;
  std::string list;
  for (std::size_t i = 0; i < choices.size(); ++i) list += (i ? "|" : "") + choices[i];
  DARRAY_THROW(InvalidArgument, what, "invalid value \"" << text << "\"; expected one of " << list);
}

inline std::optional<std::string> getenv_opt(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

// Integer environment variable, or fallback when unset. Set but empty is malformed.
inline int64_t env_int(const char* name, int64_t fallback, int64_t lo, int64_t hi, const std::string& accepted) {
  const auto v = getenv_opt(name);
  if (!v) return fallback;
  return parse_int(name, *v, lo, hi, accepted);
}

// Boolean environment variable: 0/1/true/false/on/off/yes/no.
inline bool env_bool(const char* name, bool fallback) {
  const auto v = getenv_opt(name);
  if (!v) return fallback;
  const std::string w =
      parse_choice(name, *v, {"0", "1", "true", "false", "on", "off", "yes", "no", "TRUE", "FALSE", "ON", "OFF"});
  return w == "1" || w == "true" || w == "on" || w == "yes" || w == "TRUE" || w == "ON";
}

}  // namespace detail
}  // namespace darray
