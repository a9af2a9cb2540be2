// Helpers for MPI tests on the shared Catch2 main: combine a pass flag across processes before asserting, so a
// REQUIRE never fails on some processes only between two collectives.
#pragma once

#include <mpi.h>

#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <vector>

#include "darray/core/error.hpp"

namespace darray {
namespace testing {

// True when ok holds on every process of MPI_COMM_WORLD. Collective.
inline bool all_ok(bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

inline int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// True when text is byte-for-byte the same on every process of MPI_COMM_WORLD (checked against process 0's).
// Collective.
inline bool same_on_all(const std::string& text) {
  int len = static_cast<int>(text.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string root = text;
  root.resize(static_cast<std::size_t>(len));
  MPI_Bcast(&root[0], len, MPI_CHAR, 0, MPI_COMM_WORLD);
  return all_ok(root == text);
}

// Runs fn and returns the darray::Error message it threw ("" when it threw nothing). Other exceptions propagate.
template <class ErrorType = darray::Error>
std::string error_message(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const ErrorType& e) {
    return e.what();
  }
  return "";
}

}  // namespace testing
}  // namespace darray

// Asserts that the expression throws ErrorType on every process and that the message contains every given fragment.
#define DARRAY_REQUIRE_THROWS_ALL(ErrorType, expr, ...)                                                 \
  do {                                                                                                  \
    const std::string darray_msg_ = ::darray::testing::error_message<ErrorType>([&] { (void)(expr); }); \
    bool darray_ok_ = !darray_msg_.empty();                                                             \
    /* Copied into strings while the arguments' temporaries are still alive. */                         \
    for (const std::string& darray_frag_ : std::vector<std::string>{__VA_ARGS__})                       \
      darray_ok_ = darray_ok_ && darray_msg_.find(darray_frag_) != std::string::npos;                   \
    INFO("message: " << darray_msg_);                                                                   \
    REQUIRE(::darray::testing::all_ok(darray_ok_));                                                     \
  } while (false)
