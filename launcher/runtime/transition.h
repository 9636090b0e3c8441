// The runtime's half of THE layout transition function (planner/parallel/redistribute.h): a worker
// runs, step by step, exactly the RedistributePlan the planner costs, on its own shard, moving what
// crosses devices through a Communicator (launcher/comm/communicator.h) over the group of each
// step's mesh axis. Backward runs backward_plan(plan) through the same function.
//
// What each step does to this worker's shard X (group of p members along the step's axis, this
// worker at position k; N is the size of the step's tensor dimension with the axis not sharding it,
// chunk m of it the range [m*c, min((m+1)*c, N)), c = ceil(N/p), layout.h's ceil rule):
//   LocalSlice   R -> S(j)   keep chunk k of dimension j
//   LocalPad     S(i) -> P   chunk k of dimension i placed in zeros of size N
//   LocalPartial R -> P      position 0 keeps X, the others hold zeros
//   AllReduce    P -> R      the sum over the group
//   AllGather    S(i) -> R   every member's chunk, concatenated along i in group order
//   ReduceScatter P -> S(j)  chunk k of dimension j of the sum over the group
//   AllToAll     S(i) -> S(j) chunk k of j of every member's X, concatenated along i
// Uneven chunks (even empty ones) are sent at their own sizes (the _v collectives); the planner
// costs them padded to c (redistribute.h), so its figure is an upper bound of what moves here.
//
// Sums (AllReduce, ReduceScatter) need a float32, float64, int32 or int64 shard; the others move
// any dtype. Buffers come from the backend's allocator as MemoryKind::Transients; the result is
// allocated as `kind`. No copy that is not needed: chunks that already lie one after another are
// sent from the shard itself and received straight into the result, and an AllReduce sums in place
// on a previous step's result, or on the input itself when the caller gives it up
// (`consume_input`: its values are then lost, as a gradient's are once synchronised). What this
// holds at most, besides the input, is planner::transient_bytes(plan, mesh, consume_input): the
// planner's figure. Errors: a shard whose shape is not plan.from's local shape at this worker is
// an InternalError; a collective's failure is comm::CommError. Not thread-safe (the communicator).
#pragma once

#include "launcher/comm/communicator.h"
#include "launcher/runtime/array.h"
#include "launcher/runtime/backend.h"
#include "planner/parallel/mesh.h"
#include "planner/parallel/redistribute.h"

namespace tensoropt::runtime {

// This worker's place on the mesh and the means to talk to the others.
struct MeshContext {
  const planner::DeviceMesh* mesh = nullptr;
  int rank = 0;                       // world rank = the mesh's row-major rank
  comm::Communicator* comm = nullptr;
};

// This worker's shard of `local` (in plan.from) after the plan: its shard in plan.to.
Array run_transition(const Array& local, const planner::RedistributePlan& plan, const MeshContext& where, Backend& backend,
                     MemoryKind kind, bool consume_input = false);

}  // namespace tensoropt::runtime
