// The DARRAY_* environment variables in one table: how each is parsed and what it accepts. The Environment checks
// them all at start-up on every process (a malformed value fails every process alike, before any collective can
// hang on it) and warns about DARRAY_* names it does not know, which are usually typos.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "darray/core/env.hpp"

namespace darray {

// INT_MAX rounded down to a multiple of 64, so every chunk but the last keeps 64-byte alignment of the buffer.
inline constexpr std::size_t default_max_message_bytes = static_cast<std::size_t>(INT_MAX) / 64 * 64;
// The smallest DARRAY_MPI_MAX_MESSAGE_BYTES accepted. The variable exists to force the split paths in tests; below a
// page per message the cost is all per-message overhead (1 byte made a 512x512 float64 reshard take 11.5 s), and 4096
// still splits any test array of a few KiB into several chunks.
inline constexpr std::size_t min_max_message_bytes = 4096;
inline constexpr int default_nccl_timeout_seconds = 600;
inline constexpr int max_host_device_count = 4096;
// How long a process whose Environment ends waits for the others before it aborts the job (DARRAY_SHUTDOWN_TIMEOUT_S).
// 300 s, the shutdown-barrier timeout of JAX's distributed runtime: long enough for ordinary end-of-run imbalance
// (one process writing a report while the others finish), short enough that a job whose processes wait on a
// process that left early is ended within minutes instead of burning its whole allocation. 0 waits forever.
inline constexpr int default_shutdown_timeout_seconds = 300;
// Deadline of blocking waits inside the library (DARRAY_TIMEOUT_S): off by default, because a legitimate wait (a
// peer computing for hours between two collectives) has no natural bound; set it to turn a hang into an error.
inline constexpr int default_wait_timeout_seconds = 0;
inline constexpr int max_timeout_seconds = 31536000;

namespace detail {

inline std::size_t env_max_message_bytes() {
  // Read by every exchange: the text is built once.
  static const std::string accepted = "an integer from " + std::to_string(min_max_message_bytes) +
                                      " (the minimum) to " + std::to_string(default_max_message_bytes) +
                                      " (bytes per MPI message)";
  return static_cast<std::size_t>(
      env_int("DARRAY_MPI_MAX_MESSAGE_BYTES", static_cast<int64_t>(default_max_message_bytes),
              static_cast<int64_t>(min_max_message_bytes), static_cast<int64_t>(default_max_message_bytes), accepted));
}

inline int env_nccl_timeout_seconds() {
  // Read by every NCCL operation: the text is built once (a literal would be a heap string per call).
  static const std::string accepted = "a whole number of seconds from 1 to 31536000";
  return static_cast<int>(env_int("DARRAY_NCCL_TIMEOUT_S", default_nccl_timeout_seconds, 1, 31536000, accepted));
}

inline int env_shutdown_timeout_seconds() {
  return static_cast<int>(
      env_int("DARRAY_SHUTDOWN_TIMEOUT_S", default_shutdown_timeout_seconds, 0, max_timeout_seconds,
              "a whole number of seconds from 0 (wait forever) to " + std::to_string(max_timeout_seconds)));
}

inline int env_wait_timeout_seconds() {
  return static_cast<int>(
      env_int("DARRAY_TIMEOUT_S", default_wait_timeout_seconds, 0, max_timeout_seconds,
              "a whole number of seconds from 0 (no deadline) to " + std::to_string(max_timeout_seconds)));
}

inline int env_host_device_count() {
  return static_cast<int>(env_int("DARRAY_HOST_DEVICE_COUNT", 1, 1, max_host_device_count,
                                  "an integer from 1 to " + std::to_string(max_host_device_count)));
}

inline std::vector<int> env_local_device_ids() {
  const auto v = getenv_opt("DARRAY_LOCAL_DEVICE_IDS");
  if (!v) return {};
  return parse_int_list("DARRAY_LOCAL_DEVICE_IDS", *v, 0, 1 << 20,
                        "a comma-separated list of distinct GPU ordinals, e.g. \"0\" or \"0,1\"");
}

inline std::string env_backend() {
  const auto v = getenv_opt("DARRAY_BACKEND");
  return v ? parse_choice("DARRAY_BACKEND", *v, {"mpi", "nccl"}) : std::string();
}

inline std::string env_log_level() {
  const auto v = getenv_opt("DARRAY_LOG");
  return v ? parse_choice("DARRAY_LOG", *v, {"warn", "info", "debug"}) : std::string("warn");
}

inline bool env_check() { return env_bool("DARRAY_CHECK", false); }

// DARRAY_SINGLE_COPY: whether processes of one node may read each other's blocks directly (process_vm_readv)
// instead of sending large messages through MPI; on unless set to 0 (and then only where the system allows it).
inline bool env_single_copy() { return env_bool("DARRAY_SINGLE_COPY", true); }

// DARRAY_HUGE_PAGES: whether large host blocks and tables are advised to transparent huge pages before their first
// touch (core/detail/huge_pages.hpp); on unless set to 0 (and then only where the kernel has them).
inline bool env_huge_pages() { return env_bool("DARRAY_HUGE_PAGES", true); }

// DARRAY_CACHE_BYTES: the bound of the shard memory cache per memory space (0 turns the cache off); unset: nullopt,
// and the array layer picks its default (see darray/array/memory.hpp).
inline std::optional<std::size_t> env_cache_bytes() {
  const auto v = getenv_opt("DARRAY_CACHE_BYTES");
  if (!v) return std::nullopt;
  return static_cast<std::size_t>(parse_bytes("DARRAY_CACHE_BYTES", *v, 0, INT64_MAX,
                                              "a byte count: a whole number >= 0 with an optional suffix K, M, G or T "
                                              "(binary units), e.g. 0 (cache off), 1073741824 or 4G"));
}

struct EnvVar {
  const char* name;
  const char* meaning;
  std::function<void()> validate;  // throws InvalidArgument on a malformed value
};

// Every variable libdarray reads.
inline const std::vector<EnvVar>& env_vars() {
  static const std::vector<EnvVar> vars = {
      {"DARRAY_HOST_DEVICE_COUNT", "host devices per process (CPU simulation)", [] { (void)env_host_device_count(); }},
      {"DARRAY_LOCAL_DEVICE_IDS", "GPU ordinal of this process", [] { (void)env_local_device_ids(); }},
      {"DARRAY_BACKEND", "transport: mpi or nccl", [] { (void)env_backend(); }},
      {"DARRAY_CHECK", "collective consistency checks", [] { (void)env_check(); }},
      {"DARRAY_LOG", "log level: warn, info or debug", [] { (void)env_log_level(); }},
      {"DARRAY_MPI_MAX_MESSAGE_BYTES", "largest MPI message", [] { (void)env_max_message_bytes(); }},
      {"DARRAY_NCCL_TIMEOUT_S", "NCCL operation timeout", [] { (void)env_nccl_timeout_seconds(); }},
      {"DARRAY_CACHE_BYTES", "bound of the shard memory cache per memory space (0: off)",
       [] { (void)env_cache_bytes(); }},
      {"DARRAY_SHUTDOWN_TIMEOUT_S", "how long an ending process waits for the others before aborting the job",
       [] { (void)env_shutdown_timeout_seconds(); }},
      {"DARRAY_TIMEOUT_S", "deadline of blocking waits inside the library (0: none)",
       [] { (void)env_wait_timeout_seconds(); }},
      {"DARRAY_SINGLE_COPY", "large transfers between processes of a node read the peer's memory directly (0: off)",
       [] { (void)env_single_copy(); }},
      {"DARRAY_HUGE_PAGES", "large host blocks advised to transparent huge pages (0: off)",
       [] { (void)env_huge_pages(); }},
  };
  return vars;
}

inline std::string known_env_var_names() {
  std::string names;
  for (const auto& v : env_vars()) names += (names.empty() ? "" : ", ") + std::string(v.name);
  return names;
}

// Names of DARRAY_* variables set in `environ` that libdarray does not read.
inline std::vector<std::string> unknown_env_vars(char** environ_list) {
  std::vector<std::string> unknown;
  for (char** e = environ_list; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    if (entry.rfind("DARRAY_", 0) != 0) continue;
    const std::string name = entry.substr(0, entry.find('='));
    bool known = false;
    for (const auto& v : env_vars()) known = known || name == v.name;
    // Test and benchmark helpers use their own DARRAY_TEST_/DARRAY_BENCH_ prefixes.
    if (!known && name.rfind("DARRAY_TEST_", 0) != 0 && name.rfind("DARRAY_BENCH_", 0) != 0) unknown.push_back(name);
  }
  return unknown;
}

}  // namespace detail
}  // namespace darray
