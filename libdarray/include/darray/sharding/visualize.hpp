// visualize_sharding: a text picture of which device holds which block, like jax.debug.visualize_array_sharding
// (boxes for 1-D and 2-D arrays, a per-device table otherwise), and sharding_table, the per-device listing that
// darray-shard prints.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "darray/core/error.hpp"
#include "darray/core/index.hpp"
#include "darray/core/partition.hpp"
#include "darray/runtime/device.hpp"
#include "darray/sharding/detail/box_drawing.hpp"
#include "darray/sharding/named_sharding.hpp"

namespace darray {

struct VisualizeOptions {
  int max_width = 80;  // characters the picture aims to fit in; a column is never narrower than its label
  int height = 10;     // text rows for a whole 2-D array; each block row gets at least one
};

// One line per device in mesh order: device, process, mesh coords, index box, shard shape, replica id.
inline std::string sharding_table(const NamedSharding& sharding, const std::vector<int64_t>& shape) {
  std::vector<std::vector<std::string>> rows{{"device", "process", "mesh coords", "index", "shard shape", "replica"}};
  const Mesh& mesh = sharding.mesh();
  for (const auto& [device, index] : sharding.devices_indices_map(shape)) {
    const int64_t position = mesh.position(device);
    std::string coords = "(";
    for (int a = 0; a < mesh.ndim(); ++a) coords += (a ? ", " : "") + std::to_string(mesh.coord(position, a));
    rows.push_back({darray::to_string(device), std::to_string(device.process_index), coords + ")",
                    darray::to_string(index), shape_to_string(box_shape(index)),
                    std::to_string(sharding.replica_id(device))});
  }
  return detail::draw_table(rows);
}

namespace detail {

// "CPU 0" / "GPU 2,3": the devices holding one block (all its replicas), ids ascending, as JAX labels blocks.
inline std::string block_label(const std::vector<Device>& devices) {
  std::vector<int> ids;
  for (const Device& d : devices) ids.push_back(d.id);
  std::sort(ids.begin(), ids.end());
  std::string label = devices.front().kind == DeviceKind::cuda ? "GPU " : "CPU ";
  for (std::size_t i = 0; i < ids.size(); ++i) label += (i ? "," : "") + std::to_string(ids[i]);
  return label;
}

// Fraction of a dim of n elements that block i of k covers; equal shares when the dim is empty.
inline double block_fraction(int64_t n, int64_t k, int64_t i) {
  return n > 0 ? static_cast<double>(block_size(n, k, i)) / static_cast<double>(n) : 1.0 / static_cast<double>(k);
}

}  // namespace detail

// Boxes for rank 1 and 2: block rows and columns sized in proportion to their share of the array (uneven blocks
// show as uneven boxes), scaled so the whole array is about options.height rows tall and at most options.max_width
// wide, with a 2-D array's width following its aspect ratio (a character is about 2.5 times taller than wide).
// Other ranks get a sharding_table, since they have no flat picture.
inline std::string visualize_sharding(const NamedSharding& sharding, std::vector<int64_t> shape,
                                      const VisualizeOptions& options = {}) {
  sharding.check_shape(shape);
  DARRAY_THROW_IF(
      options.max_width < 1 || options.height < 1, InvalidArgument, "visualize_sharding",
      "options max_width = " << options.max_width << ", height = " << options.height << "; expected both >= 1");
  const std::size_t rank = shape.size();
  if (rank == 0 || rank > 2) {
    return sharding.to_string() + " on shape " + shape_to_string(shape) + ": rank " + std::to_string(rank) +
           ", so one line per device (boxes are drawn for rank 1 and 2)\n" + sharding_table(sharding, shape);
  }
  // A 1-D array is drawn as one row of blocks along its only dim.
  const bool flat = rank == 1;
  const int64_t n_rows = flat ? 1 : shape[0], n_cols = flat ? shape[0] : shape[1];
  const int64_t rows = flat ? 1 : sharding.num_parts(0), cols = sharding.num_parts(flat ? 0 : 1);

  std::vector<std::vector<std::string>> labels(static_cast<std::size_t>(rows));
  std::vector<int> widths(static_cast<std::size_t>(cols), 0);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      const std::vector<int64_t> parts = flat ? std::vector<int64_t>{j} : std::vector<int64_t>{i, j};
      labels[static_cast<std::size_t>(i)].push_back(detail::block_label(sharding.replica_devices(parts)));
      // One space either side of the label at least.
      int& w = widths[static_cast<std::size_t>(j)];
      w = std::max(w, static_cast<int>(labels[static_cast<std::size_t>(i)].back().size()) + 2);
    }
  }
  const double aspect =
      !flat && n_rows > 0 && n_cols > 0 ? static_cast<double>(n_cols) / static_cast<double>(n_rows) : 1.0;
  const int borders = static_cast<int>(cols) + 1;
  const double total_width =
      std::max(0.0, std::min(2.5 * options.height * aspect, static_cast<double>(options.max_width - borders)));
  for (int64_t j = 0; j < cols; ++j) {
    int& w = widths[static_cast<std::size_t>(j)];
    w = std::max(w, static_cast<int>(total_width * detail::block_fraction(n_cols, cols, j)));
  }
  std::vector<int> heights(static_cast<std::size_t>(rows), 1);
  if (!flat)
    for (int64_t i = 0; i < rows; ++i)
      heights[static_cast<std::size_t>(i)] =
          std::max(1, static_cast<int>(options.height * detail::block_fraction(n_rows, rows, i)));
  return detail::draw_grid(heights, widths, labels);
}

}  // namespace darray
