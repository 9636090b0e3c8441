// Groups of the Gloo communicator: one Gloo context per group, made the first time the group is
// used and cached; its members meet through a PrefixStore named after the group's ranks ("g0,2,4",
// a hash for long lists: group_key), so every subgroup has its own keys in the one store. A group
// of one needs no context (a null one): its collectives are local copies.
//
// A communicator keeps up to three caches of them (gloo_communicator.h), each its own connections
// under its own key prefix: the blocking calls' (""), the async lane's ("a") and the
// halving-doubling reduce-scatters' ("h"). Every member makes a group's context at the same point
// of the same call sequence, since making it is a rendezvous of the group's members.
//
// Thread-safety: none; contexts are made and tags taken on the communicator's calling thread (the
// async lane runs on a context it was handed, with a tag taken for it).
#pragma once

#include <gloo/context.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "launcher/comm/communicator.h"

namespace tensoropt::comm::gloo_impl {

struct GroupContext {
  std::shared_ptr<gloo::Context> context;  // null for a group of one
  uint32_t tag = 0;                        // one per collective, in call order
};
// One cache of contexts, by the group's ranks.
using GroupContexts = std::map<std::vector<int>, GroupContext>;

// The store's key prefix of a group: "g" and its ranks, or "g", its size and a hash of its ranks
// when the list is longer than 64 characters.
std::string group_key(const Group& g);

}  // namespace tensoropt::comm::gloo_impl
