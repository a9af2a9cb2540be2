// The collectives layer: block-wise collectives over mesh axes with jax.lax semantics, broadcast of host data, and
// named sync points. Include this header (or darray/darray.hpp) to get all of them.
//
// The operand is a DistributedArray; each device's block (its shard) is that device's operand, as inside
// shard_map(f, mesh, in_specs=spec). A collective over mesh axes acts within each axis group: the devices whose
// mesh coordinates differ only along those axes; a device's axis index is its coordinate along them (the first
// axis most significant). The result is a DistributedArray whose per-device blocks are exactly the jax.lax results,
// laid out by one rule, as shard_map's out_specs would be chosen to describe them:
//   - axes along which the result blocks are equal leave the PartitionSpec (psum, pmax, pmin, all_gather): the
//     result is replicated along them. psum over "i" of shape (8,) sharded P("i") on 8 devices is shape (1,),
//     sharded P(none), every block [8.] when the blocks were [1.].
//   - an axis along which the result blocks come to differ goes to the dim where they differ, as that entry's minor
//     axis (psum_scatter: the scattered dim; all_to_all: split_dim).
//   - ppermute keeps the operand's spec; all_gather(stacked) adds a replicated entry for its new dim.
// The result's global shape is what its blocks tile under that spec. Blocks that must be equal (psum, pmax, pmin,
// psum_scatter, all_to_all, stacked all_gather, ppermute's source and dest) and results that would not tile are
// InvalidArgument errors on every process, naming the devices and shapes.
//
// Communication: devices of one group on one process combine locally (no MPI); processes joined by any group form
// a component, and the cross-process step runs on that component's cached sub-communicator (comm/group.hpp, one
// color per process), so a process whose devices sit in several groups needs no more than one. Reductions
// allreduce one slot per group of the component (a process without devices in a group adds the identity);
// data movement runs one Transport exchange per component, NCCL on device memory in GPU builds. Pieces already
// present on the receiving process (a replica of the source block) are copied there, never sent. Every collective
// is collective over all processes of the job, those without devices in the mesh included.
#pragma once

#include "darray/collectives/all_gather.hpp"
#include "darray/collectives/all_to_all.hpp"
#include "darray/collectives/axis.hpp"
#include "darray/collectives/broadcast.hpp"
#include "darray/collectives/plan.hpp"
#include "darray/collectives/ppermute.hpp"
#include "darray/collectives/psum_scatter.hpp"
#include "darray/collectives/reductions.hpp"
#include "darray/collectives/sync.hpp"
