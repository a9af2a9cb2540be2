// The layouts a distributed 3-D FFT passes through. Each stage is a sharding of the array plus the dims whose FFTs
// run locally there; consecutive stages differ by one transpose (one spec entry moving to another dim, an
// all-to-all inside one mesh-axis group). Pure index math on replicated metadata: usable offline, never throws
// differently on different processes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "darray/core/error.hpp"
#include "darray/sharding/mesh.hpp"
#include "darray/sharding/partition_spec.hpp"

namespace darray {
namespace fft {

struct Stage {
  PartitionSpec spec;     // exactly three entries
  std::vector<int> dims;  // the dims transformed locally in this stage, increasing; each dim is in one stage
};

namespace detail {

inline int64_t entry_parts(const Mesh& mesh, const PartitionSpec::Entry& entry) {
  int64_t parts = 1;
  for (const std::string& axis : entry) parts *= mesh.axis_size(axis);
  return parts;
}

}  // namespace detail

// The stages for an input sharded as `input` over `mesh`:
//  1. transform every dim that is whole (one block) in the input, all in one local multi-dim FFT;
//  2. while dims remain: take the highest remaining dim, move its mesh axes onto the lowest dim that is already
//     transformed and whole, and transform it there.
// On a 1-D mesh, P("x", none, none) gives the slab sequence (x,-,-) {1,2} -> (-,x,-) {0}: one transpose, as
// FFTW-MPI. On a 2-D mesh the z pencil P("r", "c", none) gives (r,c,-) {2} -> (r,-,c) {1} -> (-,r,c) {0}: two
// transposes, each inside one mesh-axis group, as 2DECOMP&FFT and cuDecomp. Any input works that leaves at least
// one dim whole; a real (r2c) transform needs dim 2 whole, since the halved dim is transformed first.
// Mesh axes the input leaves unused stay unused (those devices hold replicas and transform them alike).
inline std::vector<Stage> plan_stages(const PartitionSpec& input, const Mesh& mesh, bool real, const char* api) {
  DARRAY_THROW_IF(input.size() > 3, InvalidArgument, api,
                  input << " has " << input.size() << " entries; a 3-D FFT takes a PartitionSpec of at most 3");
  std::vector<PartitionSpec::Entry> entries = input.entries();
  entries.resize(3);
  for (const auto& e : entries)
    for (const std::string& axis : e) (void)mesh.axis_position(axis);  // throws naming the axis and the mesh
  auto whole = [&](int d) { return detail::entry_parts(mesh, entries[static_cast<std::size_t>(d)]) == 1; };
  DARRAY_THROW_IF(!whole(0) && !whole(1) && !whole(2), InvalidArgument, api,
                  input << " splits all three dims over " << mesh.to_string()
                        << "; a distributed FFT needs at least one whole dim to start with (a slab P(\"x\", none, "
                           "none) on a 1-D mesh or a pencil P(\"r\", \"c\", none) on a 2-D mesh)");
  DARRAY_THROW_IF(real && !whole(2), InvalidArgument, api,
                  input << " splits dim 2 over " << mesh.to_string()
                        << "; a real-to-complex FFT transforms (and halves) the last dim first, so the input must "
                           "hold it whole, e.g. P(\"x\", none, none) or P(\"r\", \"c\", none)");
  std::vector<Stage> stages;
  bool done[3] = {false, false, false};
  Stage first{PartitionSpec(entries), {}};
  for (int d = 0; d < 3; ++d)
    if (whole(d)) {
      first.dims.push_back(d);
      done[d] = true;
    }
  stages.push_back(std::move(first));
  while (!(done[0] && done[1] && done[2])) {
    int next = 2;
    while (done[next]) --next;
    int target = 0;
    while (!(done[target] && whole(target))) ++target;  // exists: the dims of the last stage are done and whole
    auto& from = entries[static_cast<std::size_t>(next)];
    auto& to = entries[static_cast<std::size_t>(target)];
    to.insert(to.end(), from.begin(), from.end());  // `to` may hold size-1 axes; order among them is irrelevant
    from.clear();
    done[next] = true;
    stages.push_back(Stage{PartitionSpec(entries), {next}});
  }
  return stages;
}

inline std::ostream& operator<<(std::ostream& os, const Stage& s) {
  os << s.spec << " {";
  for (std::size_t k = 0; k < s.dims.size(); ++k) os << (k ? "," : "") << s.dims[k];
  return os << "}";
}

}  // namespace fft
}  // namespace darray
