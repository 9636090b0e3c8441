#include "launcher/comm/nccl/id_exchange.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "launcher/comm/gloo/groups.h"
#include "launcher/comm/gloo/rendezvous.h"

namespace tensoropt::comm::nccl_impl {

std::string nccl_id_key(const Group& g, std::string_view lane) {
  std::string key = "nccl-";
  if (!lane.empty()) key.append(lane).append("-");
  return key.append(gloo_impl::group_key(g));
}

struct IdExchange::Stores {
  gloo_impl::Stores stores;
};

IdExchange::IdExchange(const std::string& rendezvous, const std::string& prefix, std::chrono::milliseconds timeout)
    : stores_(std::make_unique<Stores>()), timeout_(timeout) {
  GlooOptions o;  // open_stores reads the spec and the prefix only
  o.rendezvous = rendezvous;
  o.prefix = prefix;
  stores_->stores = gloo_impl::open_stores(o);
}

IdExchange::~IdExchange() = default;

NcclId IdExchange::exchange(const std::string& key, int index, const std::function<NcclId()>& make_id) {
  auto& store = stores_->stores.job();
  if (index == 0) {
    const NcclId id = make_id();
    try {
      store.set(key, std::vector<char>(id.begin(), id.end()));
    } catch (const std::exception& e) {
      throw std::runtime_error("setting the NCCL id under key '" + key + "' in the store: " + e.what());
    }
    return id;
  }
  std::vector<char> value;
  try {
    store.wait({key}, timeout_);
    value = store.get(key);
  } catch (const std::exception& e) {
    throw std::runtime_error("waiting " + std::to_string(timeout_.count()) + " ms for member 0's NCCL id under key '" + key +
                             "' in the store: " + e.what());
  }
  NcclId id;
  if (value.size() != id.size())
    throw std::runtime_error("the NCCL id under key '" + key + "' has " + std::to_string(value.size()) + " bytes, not " +
                             std::to_string(id.size()));
  std::copy(value.begin(), value.end(), id.begin());
  return id;
}

}  // namespace tensoropt::comm::nccl_impl
