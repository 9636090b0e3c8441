#include "launcher/comm/gloo/groups.h"

#include <cstdio>
#include <set>

#include "graph/error.h"
#include "launcher/comm/gloo/gloo_communicator.h"

namespace tensoropt::comm::gloo_impl {

std::string group_key(const Group& g) {
  // Built by append (GCC 12 at -O3 warns falsely, -Wrestrict, on a literal + std::string here).
  const std::string s = g.str();
  std::string key = "g";
  if (s.size() <= 64) return key.append(s);
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return key.append(std::to_string(g.size())).append("-").append(buf);
}

void GlooCommunicator::check_group(const Group& g, const char* what) const {
  std::set<int> seen;
  for (int r : g.ranks) {
    if (r < 0 || r >= size() || !seen.insert(r).second)
      throw InternalError(std::string(what) + ": group " + g.str() + " is not a set of distinct ranks of a world of " +
                          std::to_string(size()));
  }
  if (g.index_of(rank()) < 0)
    throw InternalError(std::string(what) + ": rank " + std::to_string(rank()) + " is not in group " + g.str());
}

GroupContext& GlooCommunicator::context(const Group& g, const char* what, GroupContexts& cache, const char* lane) {
  auto it = cache.find(g.ranks);
  if (it != cache.end()) return it->second;
  GroupContext gc;
  if (g.size() > 1) {
    try {
      gc.context = connect_group(stores_.job(), std::string(lane) + group_key(g), g.index_of(rank()), g.size(),
                                 options_.timeout, device_, options_.abandon.get());
    } catch (const std::exception& e) {
      fail(what, g, e.what());
    }
  }
  return cache.emplace(g.ranks, std::move(gc)).first->second;
}

}  // namespace tensoropt::comm::gloo_impl
