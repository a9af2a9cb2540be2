// Minimal levelled logging to stderr, controlled by DARRAY_LOG=warn|info|debug (default warn).
#pragma once

#include <iostream>
#include <sstream>
#include <string>

#include "darray/core/env.hpp"
#include "darray/core/env_vars.hpp"

namespace darray {

enum class LogLevel { warn = 0, info = 1, debug = 2 };

namespace detail {
inline LogLevel parse_log_level() {
  const std::string w = env_log_level();
  return w == "debug" ? LogLevel::debug : w == "info" ? LogLevel::info : LogLevel::warn;
}
inline LogLevel& log_level_ref() {
  static LogLevel level = LogLevel::warn;
  return level;
}
inline int& log_rank_ref() {
  static int rank = -1;
  return rank;
}
}  // namespace detail

inline LogLevel log_level() { return detail::log_level_ref(); }

inline void log(LogLevel level, const std::string& message) {
  if (static_cast<int>(level) > static_cast<int>(log_level())) return;
  static const char* names[] = {"warn", "info", "debug"};
  std::ostringstream os;
  os << "[darray " << names[static_cast<int>(level)];
  if (detail::log_rank_ref() >= 0) os << " p" << detail::log_rank_ref();
  os << "] " << message << "\n";
  std::cerr << os.str() << std::flush;
}

}  // namespace darray

#define DARRAY_LOG(level, stream_expr)                                                            \
  do {                                                                                            \
    if (static_cast<int>(::darray::LogLevel::level) <= static_cast<int>(::darray::log_level())) { \
      std::ostringstream darray_log_os_;                                                          \
      darray_log_os_ << stream_expr;                                                              \
      ::darray::log(::darray::LogLevel::level, darray_log_os_.str());                             \
    }                                                                                             \
  } while (false)
