// THE layout transition function: the one source of truth for what moves between devices when a
// tensor changes layout (docs/design.md). The planner costs exactly these steps (collectives.h); the
// runtime will execute exactly these steps. A plan is data: no executor lives here.
//
// Per mesh axis, every legal transition and the one step it becomes (the only copy of this table):
//
//   from \ to   R                      P                         S(j)
//   R           -                      LocalPartial (free)       LocalSlice (free)
//   P           AllReduce              -                         ReduceScatter(j)
//   S(i)        AllGather(i)           LocalPad (free)           AllToAll(i->j), i != j
//
//   LocalSlice    keep my chunk of a replicated value.
//   LocalPartial  coordinate 0 along the axis keeps the value, the others hold zeros (exact in
//                 floating point; DTensor divides by the axis size instead).
//   LocalPad      place my chunk in zeros of the unsharded shape: the sum over the axis is the tensor.
// There is no LocalReduce: nothing turns addends into a value without communication.
//
// Several axes: steps are chosen greedily, one axis per step, always taking the first legal step
// in this order of phases (and re-checking after each step):
//   1. shard (ascending axes): R->S(j) LocalSlice and P->S(j) ReduceScatter;
//   2. shape-neutral and exchange: AllReduce, then LocalPartial, then AllToAll, ascending axes;
//   3. unshard (DESCENDING axes, innermost first): S(i)->R AllGather, S(i)->P LocalPad; an S(i)
//      whose target is another shard it cannot reach directly goes to R, resharded by phase 1 later.
// A step on axis a that touches tensor dimension d is legal only when no later axis shards d (a is
// innermost for d) and the earlier axes shard d as the target does (so the nesting of chunks comes
// out in axis order, layout.h). That is why [S(0),S(0)] -> [R,R] gathers axis 1 first, then
// axis 0: gathering axis 0 first would concatenate chunks that axis 1 has cut. Reducing (phase 1,
// 2) before gathering (3) makes reductions run on the smaller tensor: [P,S(1)] -> [R,R] is
// AllReduce@0 on the shard, then AllGather@1.
//
// Sizes: bytes_in / bytes_out are the largest local shard per device before / after the step.
// `bytes` is the collective's size as nccl-tests counts it (collectives.h): AllGather the gathered
// buffer, ReduceScatter the input buffer, AllReduce the buffer, AllToAll the per-device buffer.
// Uneven shards are padded to the ceil chunk for a collective (as DTensor does), so `bytes` is
// group_size * (padded piece) and may exceed the unpadded tensor; local steps have bytes 0.
//
// Gradients. The gradient of a tensor in layout L lies in gradient_layout(L), per axis:
//   R -> P  (a replicated value's copies each get a partial gradient; their sum is the gradient)
//   P -> R  (every addend's gradient is the whole output gradient)
//   S(i) -> S(i)
// backward_plan(p) moves the gradient of p.to back to the gradient of p.from: p's steps in reverse
// order, each replaced by its dual (AllGather <-> ReduceScatter, LocalSlice <-> LocalPad,
// AllReduce <-> AllReduce, LocalPartial <-> LocalPartial, AllToAll(i->j) <-> AllToAll(j->i)), with
// the sizes recomputed; runs of consecutive phase-2 steps (which act on distinct axes) are listed in
// phase-2 order when they commute, i.e. when no tensor dimension is touched by two of them (two
// AllToAlls onto and off one dimension must keep their reverse order: chunks nest in axis order;
// found by executing every 2x2 transition of a rank-3 tensor). Dual steps have equal alpha-beta
// cost for even sizes.
// Guarantee (tested): every plan and every backward plan, executed on a simulated mesh with real
// numbers, lands exactly the values its target layout describes (all layouts of 1, 2 and 3 axes,
// uneven sizes). backward_plan(redistribute(a->b)) == redistribute(grad(b) -> grad(a)) step for
// step on every single-axis transition and on the two-axis cases of the tests; over all transitions
// without detours it holds on 232 of 236 ([2,3] mesh) and 2880 of 3300 ([2,2,2]). The rest are
// orderings where the greedy is not symmetric (e.g. an AllReduce placed before an AllToAll forward,
// after its dual backward; or a detour: [S(0),S(0)] -> [R,S(0)] goes through R, its dual through
// P). Those backward plans are still correct plans of the gradient transition, of equal or close
// cost; the runtime executes backward_plan, so planner and runtime agree either way.
// Errors: a layout that does not fit the shape or mesh (layout.h) throws InputError.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "planner/parallel/layout.h"
#include "planner/parallel/mesh.h"

namespace tensoropt::planner {

enum class StepKind : uint8_t { AllGather, ReduceScatter, AllReduce, AllToAll, LocalSlice, LocalPad, LocalPartial };
std::string_view step_kind_name(StepKind k);
bool is_collective(StepKind k);  // false for the three free local steps
// The table above. REQUIRES: from != to.
StepKind transition_kind(const Placement& from, const Placement& to);
StepKind dual(StepKind k);

struct Step {
  int mesh_axis = 0;
  StepKind kind = StepKind::AllGather;
  Placement from = Placement::replicate();  // this axis' placement before
  Placement to = Placement::replicate();    // and after
  int group_size = 1;                       // devices along mesh_axis
  int64_t bytes_in = 0;                     // largest local shard per device before
  int64_t bytes_out = 0;                    // and after
  int64_t bytes = 0;                        // collective size (nccl-tests convention); 0 if local

  bool operator==(const Step&) const = default;
  std::string str() const;  // "AllGather@1 S(0)->R n=4 in=32 out=128 bytes=128"
};

struct RedistributePlan {
  Shape shape;  // global
  int dtype_bytes = 4;
  Layout from = Layout({});
  Layout to = Layout({});
  std::vector<Step> steps;

  bool operator==(const RedistributePlan&) const = default;
  std::string str() const;  // from -> to, then one step a line
  int count(StepKind k) const;
};

// REQUIRES: numel(shape) * max(dtype_bytes, 1) * mesh.size() fits in int64 (fits_on_mesh): every
// size is at most that, as no padded piece exceeds the tensor and no group the mesh. StrategySpace
// checks every tensor when built; an overflow here is an internal fault.
RedistributePlan redistribute(const Shape& shape, int dtype_bytes, const Layout& from, const Layout& to,
                              const DeviceMesh& mesh);
// Whether `shape` of `dtype_bytes` elements meets redistribute's requirement on `mesh`.
// REQUIRES: numel(shape) * dtype_bytes fits in int64 (the importer's limit, graph/ops/helpers.h).
bool fits_on_mesh(const Shape& shape, int dtype_bytes, const DeviceMesh& mesh);

Placement gradient_placement(const Placement& p);
Layout gradient_layout(const Layout& l);

// ZeRO-2 (docs/cost-model.md "Communication"), as the planner costs it and the runtime runs it: a parameter
// stored in `storage` keeps its local shard, flattened, split over the mesh axes that replicate it
// (S(0) of the flat vector, nested ceil chunks). Layouts of that flat vector: its gradient's addends
// (P on those axes), this device's chunk (S(0) on them) and the gathered vector (R); the axes that
// split the parameter are R in all three (each device's flat vector is its own shard).
struct ZeroFlat {
  Layout gradient, chunk, whole;
};
ZeroFlat zero_flat(const Layout& storage);
// REQUIRES: `plan` came from redistribute on `mesh`.
RedistributePlan backward_plan(const RedistributePlan& plan, const DeviceMesh& mesh);

// The most bytes a device holds at once while it executes `plan` on `mesh`, besides the plan's
// input, as the runtime executes it (launcher/runtime/transition.h, whose test checks its allocator
// against this on every layout pair): each step's result; the buffer a ReduceScatter or AllToAll
// packs its chunks into, unless they already lie one after another (every dimension before the
// split one has size 1); the buffer an AllGather or AllToAll receives into, unless it already is
// the result (the same condition on the gathered dimension); and the previous step's result while
// the next one runs. An AllReduce works in place on a previous step's result, and on the input
// itself when `consume_input` (the caller gives the input up: a gradient being synchronised);
// otherwise on a copy. The largest shards (the device at coordinate 0) give the figure. The planner
// charges it as workspace (docs/cost-model.md "Workspace"). 0 for an empty plan.
int64_t transient_bytes(const RedistributePlan& plan, const DeviceMesh& mesh, bool consume_input = false);
// The product of the dimensions before `d`: 1 when the chunks of d lie one after another.
int64_t outer_size(const Shape& shape, int d);

}  // namespace tensoropt::planner
