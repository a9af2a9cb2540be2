// Process groups: sub-communicators of the library communicator, one per color, built once (MPI_Comm_split with
// key = world rank) and cached by the partition they describe. Every process passes the same color vector,
// derived from replicated metadata such as a mesh axis; cached communicators are freed before MPI_Finalize.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "darray/comm/check.hpp"
#include "darray/core/error.hpp"
#include "darray/runtime/detail/arrival.hpp"
#include "darray/runtime/detail/mpi.hpp"
#include "darray/runtime/detail/state.hpp"

namespace darray {

class ProcessGroup {
 public:
  MPI_Comm comm() const { return m_comm; }
  int rank() const { return m_rank; }  // this process's rank in comm()
  int size() const { return static_cast<int>(m_world_ranks.size()); }
  // The color of this process's group after relabelling colors by first appearance (0, 1, ...).
  int color() const { return m_color; }
  // World rank of each group rank.
  const std::vector<int>& world_ranks() const { return m_world_ranks; }
  // Group rank of a world rank in this group, -1 when that process belongs to another group.
  int group_rank_of(int world_rank) const {
    for (std::size_t g = 0; g < m_world_ranks.size(); ++g)
      if (m_world_ranks[g] == world_rank) return static_cast<int>(g);
    return -1;
  }

  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;
  ~ProcessGroup() {
    int finalized = 1;
    MPI_Finalized(&finalized);
    if (!finalized && m_comm != MPI_COMM_NULL) MPI_Comm_free(&m_comm);
  }

 private:
  friend const ProcessGroup& process_group(const std::vector<int>&);
  ProcessGroup() = default;
  MPI_Comm m_comm = MPI_COMM_NULL;
  int m_rank = 0;
  int m_color = 0;
  std::vector<int> m_world_ranks;
};

namespace detail {

// Colors relabelled by first appearance, so [5,5,2,2] and [0,0,1,1] (the same partition) share one communicator.
inline std::vector<int> canonical_colors(const std::vector<int>& colors, int world_size, const char* api) {
  DARRAY_THROW_IF(static_cast<int>(colors.size()) != world_size, InvalidArgument, api,
                  "got " << colors.size() << " colors; expected one per process (" << world_size << ")");
  std::map<int, int> relabel;
  std::vector<int> out(colors.size());
  for (std::size_t p = 0; p < colors.size(); ++p) {
    DARRAY_THROW_IF(colors[p] < 0, InvalidArgument, api,
                    "color " << colors[p] << " for process " << p << "; expected 0 or more");
    auto it = relabel.emplace(colors[p], static_cast<int>(relabel.size())).first;
    out[p] = it->second;
  }
  return out;
}

inline std::string describe_colors(const std::vector<int>& colors) {
  std::ostringstream os;
  os << "group_comm(colors=[";
  for (std::size_t p = 0; p < colors.size(); ++p) os << (p ? "," : "") << colors[p];
  os << "])";
  return os.str();
}

struct GroupCache {
  std::map<std::vector<int>, std::unique_ptr<ProcessGroup>> groups;
  bool cleanup_registered = false;
};

inline GroupCache& group_cache() {
  static GroupCache c;
  return c;
}

}  // namespace detail

// Group rank of world_rank under color_of_process: its position among the processes of the same color, in world
// rank order (the order MPI_Comm_split with key = world rank produces). Pure: no MPI, usable by planners.
inline int group_rank(const std::vector<int>& color_of_process, int world_rank) {
  DARRAY_THROW_IF(
      world_rank < 0 || static_cast<std::size_t>(world_rank) >= color_of_process.size(), InvalidArgument, "group_rank",
      "world rank " << world_rank << " outside the color vector of " << color_of_process.size() << " processes");
  int g = 0;
  for (int p = 0; p < world_rank; ++p)
    if (color_of_process[static_cast<std::size_t>(p)] == color_of_process[static_cast<std::size_t>(world_rank)]) ++g;
  return g;
}

// This process's group under color_of_process (one color per world rank, identical on every process). Collective
// over the library communicator the first time a partition is seen, a lookup afterwards (with DARRAY_CHECK on,
// every call is collective: the colors are compared first). The reference stays valid until the Environment ends.
inline const ProcessGroup& process_group(const std::vector<int>& color_of_process) {
  const MPI_Comm world = detail::world_comm();
  int rank = 0, size = 1;
  DARRAY_MPI_CHECK(MPI_Comm_rank(world, &rank));
  DARRAY_MPI_CHECK(MPI_Comm_size(world, &size));
  std::vector<int> key = detail::canonical_colors(color_of_process, size, "group_comm");
  // Under DARRAY_CHECK every call is checked, hits included: a process that hits the cache while another misses
  // (different vectors) would otherwise leave the missing one alone in MPI_Comm_split.
  check_consistent(world, detail::describe_colors(key));
  detail::GroupCache& cache = detail::group_cache();
  auto it = cache.groups.find(key);
  if (it != cache.groups.end()) return *it->second;

  if (!cache.cleanup_registered) {
    // Communicators must be freed before MPI_Finalize, and the cache must not outlive the Environment whose
    // communicator they were split from.
    detail::at_finalize([] {
      detail::group_cache().groups.clear();
      detail::group_cache().cleanup_registered = false;
    });
    cache.cleanup_registered = true;
  }
  std::unique_ptr<ProcessGroup> g(new ProcessGroup());
  g->m_color = key[static_cast<std::size_t>(rank)];
  for (int p = 0; p < size; ++p)
    if (key[static_cast<std::size_t>(p)] == g->m_color) g->m_world_ranks.push_back(p);
  detail::arrive_together(world, "group_comm");  // under DARRAY_TIMEOUT_S: never left alone in the split
  DARRAY_MPI_CHECK(MPI_Comm_split(world, g->m_color, rank, &g->m_comm));
  int group_size = 0;
  DARRAY_MPI_CHECK(MPI_Comm_rank(g->m_comm, &g->m_rank));
  DARRAY_MPI_CHECK(MPI_Comm_size(g->m_comm, &group_size));
  DARRAY_THROW_IF(group_size != g->size() || g->m_world_ranks[static_cast<std::size_t>(g->m_rank)] != rank,
                  InvalidArgument, "group_comm",
                  "MPI_Comm_split built a group of " << group_size << " processes where the colors give " << g->size()
                                                     << "; processes passed different color vectors");
  return *cache.groups.emplace(std::move(key), std::move(g)).first->second;
}

// The communicator of this process's group (see process_group). Owned by the cache: do not free it.
inline MPI_Comm group_comm(const std::vector<int>& color_of_process) { return process_group(color_of_process).comm(); }

}  // namespace darray
