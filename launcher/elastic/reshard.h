// An elastic job's handover, shard to shard: every parameter's local shard and its optimizer
// slots move from one plan point's layouts on its mesh (the generation before) to another's (the
// next), over one communicator that holds both groups, so no worker ever holds the whole model.
//
// The communicator is the larger of the two groups: the new one when the job grows (its first
// `from.workers` ranks are the old group's, in the same order), the old one when it shrinks (its
// first `to.workers` ranks are the new group's). Ranks below from.workers hold `mine` (their
// LocalShards under `from`); ranks below to.workers receive theirs under `to`.
//
// Each worker's shard of a tensor is a box of the global tensor (layout.h: nested chunks along the
// split dimensions); two old boxes of a tensor are equal (replicas) or disjoint. Every piece a new
// box needs is the intersection with one old box, sent by one of that box's holders (the receiver
// itself when it is one, else the holders in turn), packed per dtype into one all_to_all_v. Rank 0
// (a holder) first broadcasts what moves: the parameters, their dtypes and the slot count.
//
// Collectives: every member of the communicator calls it. Errors: CommError from the communicator.
// Not thread-safe.
#pragma once

#include <vector>

#include "graph/ir.h"
#include "launcher/comm/communicator.h"
#include "launcher/runtime/backend.h"
#include "launcher/runtime/sharded_executor.h"
#include "planner/parallel/layout.h"
#include "planner/parallel/mesh.h"

namespace tensoropt::elastic {

// What a group's point says each worker holds: its mesh and every tensor's home layout.
struct Holding {
  planner::DeviceMesh mesh;
  std::vector<planner::Layout> home;  // [tensor]
  int workers = 0;
};

// This worker's LocalShards under `to` (empty where it is not below to.workers).
runtime::LocalShards reshard(comm::Communicator& c, runtime::Backend& backend, const Graph& g, const Holding& from, const Holding& to,
                             const runtime::LocalShards& mine);

}  // namespace tensoropt::elastic
