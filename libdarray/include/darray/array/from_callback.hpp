// make_array_from_callback: each process loads only the blocks its devices hold (jax.make_array_from_callback).
// Collective over all processes only to agree on errors: a callback that throws or returns the wrong size on one
// process makes every process throw the same InvalidArgument instead of leaving some waiting.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "darray/array/detail/block_io.hpp"
#include "darray/array/detail/blocks.hpp"
#include "darray/array/detail/checks.hpp"
#include "darray/array/distributed_array.hpp"
#include "darray/runtime/detail/agree.hpp"
#include "darray/runtime/detail/state.hpp"

namespace darray {

// callback(const Index& block) returns the block's elements in row-major order as any contiguous host container
// (std::vector<T>, std::array, a HostSpace LayoutRight view, ...) of exactly volume(block) elements of type T.
// It is called once per distinct non-empty block of this process's devices, in local-device order: replicas of a
// block on several local devices share one call (the result is copied device to device), and empty blocks
// (uneven shapes with more parts than elements) are never asked for. Blocks of other processes are never asked for.
template <class T, int N, class MemorySpace = DefaultMemorySpace, class Callback>
DistributedArray<T, N, MemorySpace> make_array_from_callback(const Shape& shape, const NamedSharding& sharding,
                                                             Callback&& callback) {
  constexpr const char* api = "make_array_from_callback";
  detail::check_array_args<N>(api, shape, sharding);
  using Result = std::decay_t<std::invoke_result_t<Callback&, const Index&>>;
  detail::check_element_type<T, detail::container_element_t<Result>>(api, "the callback's result");
  detail::check_collective<T, N>(api, shape, sharding);

  const auto devs = detail::process_device_blocks(sharding, shape, process_index());
  auto shards = detail::allocate_shards_agreed<T, N, MemorySpace>(devs, /*initialize=*/false);
  const auto blocks = detail::distinct_blocks(devs);
  detail::run_agreed(detail::world_comm(), [&] {
    for (const detail::Block& b : blocks) {
      auto&& data = callback(static_cast<const Index&>(b.index));
      const auto [ptr, count] = detail::host_span<T>(api, "the callback's result", data);
      DARRAY_THROW_IF(count != b.volume, InvalidArgument, api,
                      "the callback returned " << count << " elements for block " << b.index << " of shape "
                                               << numpy_shape_string(box_shape(b.index)) << "; expected " << b.volume
                                               << " (the block's elements in row-major order)");
      detail::copy_host_to_view<N>(ptr, shards[b.holders[0]].data);
      detail::fill_replicas(shards, b);
    }
  });
  return detail::adopt_shards<T, N, MemorySpace>(shape, sharding, std::move(shards));
}

}  // namespace darray
