// Test hook: while a SingleCopiesFrom lives, the exchange engines built move every same-node direction of at least
// the given size by single copy (runtime/detail/single_copy.hpp), whatever the Environment's start-up probe measured
// on this machine (runtime/detail/single_copy_crossover.hpp): for tests of the single-copy path whose pieces are
// sized for it. Engines built before or after keep the probe's size; give every test of one plan the same pin.
#pragma once

#include <cstddef>

#include "darray/runtime/detail/state.hpp"

namespace darray {
namespace testing {

class SingleCopiesFrom {
 public:
  explicit SingleCopiesFrom(std::size_t bytes) { darray::detail::state().single_copy_min_bytes = bytes; }
  ~SingleCopiesFrom() { darray::detail::state().single_copy_min_bytes = m_saved; }
  SingleCopiesFrom(const SingleCopiesFrom&) = delete;
  SingleCopiesFrom& operator=(const SingleCopiesFrom&) = delete;

 private:
  std::size_t m_saved = darray::detail::state().single_copy_min_bytes;
};

}  // namespace testing
}  // namespace darray
