// Rendezvous of the Gloo communicator: the store its processes meet through, the transport device
// they listen on, and the full mesh of connections one group makes through that store.
//
// The store is one that already exists, never a protocol of ours: Gloo's FileStore for "file:DIR"
// (the directory is created if missing) and Gloo's RedisStore for "redis://HOST:PORT"
// (parse_rendezvous in ../gloo_communicator.h reads the spec). A store's keys are set once (Gloo
// refuses to overwrite), so a job's keys go behind a PrefixStore named by GlooOptions::prefix when
// one is set, and each group's keys behind a PrefixStore of its own (connect_group).
//
// Timeouts: every wait on the store is held to the communicator's timeout (TimeoutStore): Gloo's
// rendezvous calls get() and wait() without one in places, and polls the store with one-second
// granularity, so a rendezvous fails between timeout and timeout + 1 s.
//
// Errors: whatever Gloo throws (gloo::Exception and its kin, std::runtime_error), or InputError
// for a Redis spec when this Gloo was built without Redis; the communicator turns each into a
// CommError naming the collective and the group. Thread-safety: none; the stores are used by the
// communicator's calling thread only (the async lane never touches them).
#pragma once

#include <gloo/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/device.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "launcher/comm/gloo_communicator.h"

namespace tensoropt::comm::gloo_impl {

// The job's store, opened from GlooOptions::rendezvous and ::prefix.
struct Stores {
  std::unique_ptr<gloo::rendezvous::Store> store;      // the FileStore or RedisStore
  std::unique_ptr<gloo::rendezvous::Store> job_store;  // `store` behind the job's prefix; null without one
  gloo::rendezvous::Store& job() { return job_store ? *job_store : *store; }
};
// REQUIRES: options.rendezvous parses (parse_rendezvous). Throws what the store's constructor
// throws when it cannot be opened.
Stores open_stores(const GlooOptions& options);

// The TCP device this process listens on: GlooOptions::interface, else ::hostname, else the
// GLOO_SOCKET_IFNAME variable's interface when set, else Gloo's default (the address this
// machine's hostname resolves to).
std::shared_ptr<gloo::transport::Device> make_device(const GlooOptions& options);

// Meets the group's other members in `job_store` under `key` and connects every pair: returns a
// context of `size` members in which this process is `index`. Every wait is held to `timeout`,
// and ends within 0.1 s of `abandon` (when not null) becoming true.
// Throws Gloo's exception when the members do not meet within it, std::runtime_error when abandoned.
std::shared_ptr<gloo::Context> connect_group(gloo::rendezvous::Store& job_store, const std::string& key, int index,
                                             int size, std::chrono::milliseconds timeout,
                                             std::shared_ptr<gloo::transport::Device>& device,
                                             const std::atomic<bool>* abandon = nullptr);

}  // namespace tensoropt::comm::gloo_impl
