#include "launcher/comm/gloo/gloo_communicator.h"

#include <signal.h>

#include "graph/error.h"
#include "launcher/comm/gloo/async_lane.h"

namespace tensoropt::comm {

namespace gloo_impl {

GlooCommunicator::GlooCommunicator(const GlooOptions& o) : options_(o) {
  const Group world = world_group(o.size);
  try {
    stores_ = open_stores(o);
    device_ = make_device(o);
  } catch (const std::exception& e) {
    throw CommError("rendezvous", world, o.rank, e.what());
  }
  context(world, "rendezvous", contexts_);
}

// The lane stops (after its running collective, bounded by the timeout) before the contexts and
// the device it uses go.
GlooCommunicator::~GlooCommunicator() { lane_.reset(); }

void GlooCommunicator::check_count(int64_t count, const char* what) {
  if (count < 0) throw InternalError(std::string(what) + ": negative count " + std::to_string(count));
}

void GlooCommunicator::check_counts(const std::vector<int64_t>& counts, const Group& g, const char* what) {
  if (counts.size() != g.ranks.size())
    throw InternalError(std::string(what) + ": " + std::to_string(counts.size()) + " counts for group " + g.str());
  for (int64_t c : counts) check_count(c, what);
}

void GlooCommunicator::refuse_after_failure(const char* what, const Group& group) {
  if (failed_.empty() && lane_) {
    const std::string lane = lane_->failed();
    if (!lane.empty()) {
      // As fail() after a blocking call's error: close the connections so the peers fail fast too.
      failed_ = "an asynchronous all_reduce: " + lane;
      contexts_.clear();
      lane_contexts_.clear();
      hd_cache_.clear();
      hd_contexts_.clear();
    }
  }
  if (!failed_.empty())
    throw CommError(what, group, rank(), "the communicator is unusable after an earlier error: " + failed_);
}

void GlooCommunicator::fail(const char* what, const Group& group, const std::string& cause) {
  failed_ = std::string(what) + " over group " + group.str() + ": " + cause;
  if (lane_) lane_->poison(failed_);  // what is queued fails at once instead of running on
  contexts_.clear();
  lane_contexts_.clear();
  hd_cache_.clear();
  hd_contexts_.clear();
  throw CommError(what, group, rank(), cause);
}

}  // namespace gloo_impl

std::unique_ptr<Communicator> make_gloo_communicator(const GlooOptions& o) {
  if (o.size < 1) throw InputError("gloo communicator: world size " + std::to_string(o.size) + " is below 1");
  if (o.rank < 0 || o.rank >= o.size)
    throw InputError("gloo communicator: rank " + std::to_string(o.rank) + " outside 0.." + std::to_string(o.size - 1));
  if (o.timeout.count() <= 0) throw InputError("gloo communicator: the timeout must be positive");
  parse_rendezvous(o.rendezvous);
  // Gloo writes to its sockets without MSG_NOSIGNAL: a write to a dead peer would raise SIGPIPE,
  // whose default action kills this process instead of letting the collective throw.
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGPIPE, &ignore, nullptr);
  }
  return std::make_unique<gloo_impl::GlooCommunicator>(o);
}

}  // namespace tensoropt::comm
