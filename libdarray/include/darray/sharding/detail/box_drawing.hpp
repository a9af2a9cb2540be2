// Text rendering helpers for visualize_sharding and sharding_table: a grid of labelled cells drawn with Unicode box
// characters, and a left-aligned text table. Widths count characters; labels and table cells are ASCII.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace darray {
namespace detail {

inline std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// A grid of heights.size() x widths.size() cells; labels[i][j] is centred in cell (i, j), on its middle text row
// (the upper one of two). Each width must be at least its labels' length.
inline std::string draw_grid(const std::vector<int>& heights, const std::vector<int>& widths,
                             const std::vector<std::vector<std::string>>& labels) {
  auto rule = [&](const char* left, const char* mid, const char* right) {
    std::string line = left;
    for (std::size_t j = 0; j < widths.size(); ++j) line += (j ? mid : "") + repeat("─", widths[j]);
    return line + right + "\n";
  };
  std::string out = rule("┌", "┬", "┐");
  for (std::size_t i = 0; i < heights.size(); ++i) {
    if (i) out += rule("├", "┼", "┤");
    const int label_row = (heights[i] - 1) / 2;
    for (int r = 0; r < heights[i]; ++r) {
      out += "│";
      for (std::size_t j = 0; j < widths.size(); ++j) {
        const std::string text = r == label_row ? labels[i][j] : "";
        const int pad = widths[j] - static_cast<int>(text.size());
        out += std::string(static_cast<std::size_t>(pad / 2), ' ') + text +
               std::string(static_cast<std::size_t>(pad - pad / 2), ' ') + "│";
      }
      out += "\n";
    }
  }
  return out + rule("└", "┴", "┘");
}

// Rows of cells, each column padded to its widest cell, two spaces apart; the first row is the header.
inline std::string draw_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c)
      line += row[c] + (c + 1 < row.size() ? std::string(widths[c] - row[c].size() + 2, ' ') : "");
    out += line + "\n";
  }
  return out;
}

}  // namespace detail
}  // namespace darray
