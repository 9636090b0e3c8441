// The NCCL communicator's rendezvous: each group's NCCL unique id (128 bytes) travels through the
// same store the Gloo communicator meets in ("file:DIR" or "redis://HOST:PORT", behind the job's
// prefix), opened by the same code (gloo/rendezvous.h open_stores); there is no second store.
//
// Member 0 of a group makes the id (ncclGetUniqueId, through the caller's function) and sets it
// under the group's key; the other members wait for that key, up to the timeout, and read it. A
// key is set once per job (the stores refuse to overwrite), and every group has its own:
// nccl_id_key. Nothing here calls NCCL, so the exchange is tested without a GPU.
//
// Errors: the constructor throws InputError for a malformed spec, and what the store throws when
// it cannot be opened; exchange throws std::runtime_error naming the key when the wait runs past
// the timeout, the value is not 128 bytes, or the store fails. The communicator turns each into a
// CommError naming the collective, the group and the rank.
// Thread-safety: none; one thread uses an IdExchange (a test may give each thread its own).
#pragma once

#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "launcher/comm/communicator.h"

namespace tensoropt::comm::nccl_impl {

using NcclId = std::array<unsigned char, 128>;

// The store key of group g's id on a lane ("" for the blocking calls' communicator, "a" for the
// asynchronous all-reduces'): "nccl-" + lane + the Gloo communicator's group key, e.g.
// "nccl-g[0,2]", "nccl-a-g[0,2]" (gloo/groups.h group_key: a hash for long rank lists).
std::string nccl_id_key(const Group& g, std::string_view lane);

class IdExchange {
 public:
  // Opens the store of `rendezvous` behind `prefix` ("" for none), as the Gloo communicator does.
  IdExchange(const std::string& rendezvous, const std::string& prefix, std::chrono::milliseconds timeout);
  ~IdExchange();
  IdExchange(const IdExchange&) = delete;
  IdExchange& operator=(const IdExchange&) = delete;

  // Member `index` of a group: index 0 returns make_id() after setting it under `key`; any other
  // waits for `key` (at most the timeout) and returns what member 0 set.
  NcclId exchange(const std::string& key, int index, const std::function<NcclId()>& make_id);

 private:
  struct Stores;
  std::unique_ptr<Stores> stores_;
  std::chrono::milliseconds timeout_;
};

}  // namespace tensoropt::comm::nccl_impl
