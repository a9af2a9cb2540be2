// Turning an error seen by some processes into the same error on all of them. Used where a check depends on
// process-local input (environment variables, file headers read by one rank), so nobody is left waiting in a
// collective that the failing process never reaches.
#pragma once

#include <mpi.h>

#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "darray/core/error.hpp"
#include "darray/runtime/detail/mpi.hpp"

namespace darray {
namespace detail {

enum class ErrorKind : int { none = 0, generic = 1, invalid_argument = 2, not_supported = 3, io = 4, mpi = 5 };

struct CapturedError {
  ErrorKind kind = ErrorKind::none;
  std::string api;
  std::string message;
};

// Runs fn; a darray::Error (or std::exception) it throws is captured instead of propagated.
inline CapturedError capture_error(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const InvalidArgument& e) {
    return {ErrorKind::invalid_argument, e.api(), e.message()};
  } catch (const NotSupported& e) {
    return {ErrorKind::not_supported, e.api(), e.message()};
  } catch (const IoError& e) {
    return {ErrorKind::io, e.api(), e.message()};
  } catch (const MpiError& e) {
    return {ErrorKind::mpi, e.api(), e.message()};
  } catch (const Error& e) {
    return {ErrorKind::generic, e.api(), e.message()};
  } catch (const std::exception& e) {
    return {ErrorKind::generic, "internal", e.what()};
  }
  return {};
}

[[noreturn]] inline void rethrow_captured(const CapturedError& e, const std::string& prefix) {
  const std::string msg = prefix + e.message;
  switch (e.kind) {
    case ErrorKind::invalid_argument:
      throw InvalidArgument(e.api, msg);
    case ErrorKind::not_supported:
      throw NotSupported(e.api, msg);
    case ErrorKind::io:
      throw IoError(e.api, msg);
    case ErrorKind::mpi:
      throw MpiError(e.api, msg, -1);
    default:
      throw Error(e.api, msg);
  }
}

// Collective over comm. If any process captured an error, every process throws the error of the lowest such rank,
// prefixed by "process P: " when more than one process takes part.
inline void agree_on_error(MPI_Comm comm, const CapturedError& local) {
  int rank = 0, size = 1;
  DARRAY_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  DARRAY_MPI_CHECK(MPI_Comm_size(comm, &size));
  int mine = local.kind == ErrorKind::none ? size : rank;
  int first = size;
  DARRAY_MPI_CHECK(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm));
  if (first == size) return;
  // Ship kind, api and message from the first failing rank.
  std::string packed;
  if (rank == first) packed = std::to_string(static_cast<int>(local.kind)) + '\n' + local.api + '\n' + local.message;
  long long len = static_cast<long long>(packed.size());
  DARRAY_MPI_CHECK(MPI_Bcast(&len, 1, MPI_LONG_LONG, first, comm));
  packed.resize(static_cast<std::size_t>(len));
  DARRAY_MPI_CHECK(MPI_Bcast(&packed[0], static_cast<int>(len), MPI_CHAR, first, comm));
  CapturedError e;
  const auto a = packed.find('\n'), b = packed.find('\n', a + 1);
  e.kind = static_cast<ErrorKind>(std::stoi(packed.substr(0, a)));
  e.api = packed.substr(a + 1, b - a - 1);
  e.message = packed.substr(b + 1);
  rethrow_captured(e, size > 1 ? "process " + std::to_string(first) + ": " : "");
}

// Runs fn on every process; if it throws anywhere, it throws the same error everywhere.
inline void run_agreed(MPI_Comm comm, const std::function<void()>& fn) { agree_on_error(comm, capture_error(fn)); }

}  // namespace detail
}  // namespace darray
