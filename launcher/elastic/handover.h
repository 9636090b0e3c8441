// How an elastic job's state moves between generations (launcher/elastic/worker.h): over the new
// group's communicator, no file round trip.
//
// share_whole: the whole model and optimizer state from one worker (`root`, which holds it whole)
// to every worker of the group. One header broadcast (the step count, every tensor with its dtype,
// every optimizer slot list with its length and dtype; its length bounded by the graph's tensor
// count, which every worker knows), then one broadcast per dtype of everything packed (a broadcast
// per tensor would pay the collective's latency a hundred times). With `into_held`, a worker that
// holds a whole state already (the same step's: a resize) receives into it; otherwise into new
// arrays of the graph's shapes (a held state of another step is never half replaced). Afterwards `arrays` holds the whole model on every worker and
// `state` its optimizer slots; `whole` is emptied.
//
// agree: after a lost worker, what each member of the new group holds, gathered on every member,
// and which one the state comes from.
//
// share_history: the root's report history (steps, resizes, recoveries) to every member.
//
// Collectives: every member calls them in the same order. Errors: CommError from the communicator.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/ir.h"
#include "launcher/comm/communicator.h"
#include "launcher/runtime/array.h"
#include "launcher/runtime/backend.h"

namespace tensoropt::elastic {

void share_whole(comm::Communicator& c, runtime::Backend& backend, const Graph& g, int root, std::map<int, runtime::Array>& whole,
                 std::map<int, std::vector<runtime::Array>>& state, int64_t& steps, std::map<int, runtime::Array>& arrays, bool into_held);

// What a member holds: the step of its whole state (-1: none), the last step it completed, how
// many steps of the report's history it keeps, and the step of its shards of the new group's own
// point for its own rank (-1: none).
struct Held {
  int64_t whole_step = -1, reached = 0, history = 0, shard_step = -1;
};
struct Agreement {
  bool shards = false;       // every member holds its shards of the same step: each goes on from them
  int root = -1;             // else the member the whole state comes from; -1 when none holds one
  int64_t step = 0;          // the step the group goes on from
  int64_t reached = 0;       // the last step any member completed
  int history_root = 0;      // the member with the longest history
};
// Shards where every member holds them at one step no older than any whole state; else the
// latest whole state (of those, the longest history; of those, the lowest rank).
Agreement agree(comm::Communicator& c, const Held& mine);

void share_history(comm::Communicator& c, int root, nlohmann::ordered_json& history);

}  // namespace tensoropt::elastic
