// GlooCommunicator: the Communicator (communicator.h) of CPU workers, over Gloo's TCP transport.
//
// Rendezvous: the processes meet through a store that already exists, never a protocol of ours:
//   file:DIR            Gloo's FileStore in DIR (created if missing): one machine, or a shared file
//                       system as Slurm clusters have;
//   redis://HOST:PORT   Gloo's RedisStore (Debian's libgloo is built with hiredis) on a running
//                       redis-server, e.g. Debian's.
// A store's keys are set once (Gloo refuses to overwrite), so a store reused by several jobs needs
// a distinct `prefix` per job; a fresh directory or server needs none.
//
// Groups: one Gloo context per group, made the first time the group is used (gloo/groups.h). The
// world's context is made by the constructor, which therefore returns only once every rank has
// joined (or throws). A group of one needs no context: its collectives are local copies.
//
// Algorithms: all_reduce is Gloo's allreduce (ring), all_gather_v Gloo's allgatherv (ring),
// all_to_all_v Gloo's alltoallv, broadcast and barrier Gloo's; reduce_scatter_v is Gloo's
// halving-doubling or a one-round exchange and a local sum (the choice: gloo/algorithms.h).
//
// Async all-reduce (all_reduce_async): run in call order by one thread of the communicator's own,
// on connections of its own, beside the blocking calls (gloo/async_lane.h).
//
// Timeouts: `timeout` bounds every wait: each store wait of the rendezvous (which Gloo polls with
// one-second granularity, so a rendezvous fails between timeout and timeout + 1 s), each connect
// and each collective end to end. Errors: as communicator.h; the constructor throws CommError
// ("rendezvous" over the world) when the world does not meet, InputError for a bad spec or option.
// Not thread-safe (communicator.h). Must be created after any fork(): Gloo runs a network thread.
// Process-wide effect: make_gloo_communicator sets SIGPIPE to ignored when it has its default
// action, as Python (hence PyTorch) does: Gloo writes to sockets without MSG_NOSIGNAL, and a write
// to a peer that died must be a CommError, not the death of this process (a test kills a peer).
//
// The implementation is in gloo/, a file per concept: rendezvous.h (stores, device, connections),
// groups.h, algorithms.h, sums.h (per-dtype sums, bfloat16's by graph/dtype.h), async_lane.h, and
// gloo_communicator.h (the class, and which file defines what).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "launcher/comm/communicator.h"

namespace tensoropt::comm {

// A parsed --rendezvous value.
struct RendezvousSpec {
  enum class Kind { File, Redis };
  Kind kind = Kind::File;
  std::string dir;   // File
  std::string host;  // Redis
  int port = 0;      // Redis, 1..65535
};
// "file:DIR" or "redis://HOST:PORT". Throws InputError (one line, naming the value) otherwise:
// an unknown scheme, an empty DIR or HOST, a missing or non-numeric port, a port outside 1..65535.
RendezvousSpec parse_rendezvous(std::string_view spec);

struct GlooOptions {
  int rank = 0;
  int size = 1;
  std::string rendezvous;  // parse_rendezvous's format
  std::string prefix;      // namespaces this job's keys in a shared store; "" for none
  std::chrono::milliseconds timeout{30000};
  // Set by another thread, ends every rendezvous wait within 0.1 s (a CommError): an elastic
  // job's group met in the background is given up when the job regroups without it. Null: none.
  std::shared_ptr<const std::atomic<bool>> abandon;
  // Where this process listens for its peers: a network interface ("lo", "eth0") or else a
  // hostname or address ("127.0.0.1"). Both empty: the GLOO_SOCKET_IFNAME variable's interface
  // when set, else the address this machine's hostname resolves to (Gloo's default).
  std::string interface;
  std::string hostname;
};

// Meets the world through the store and connects every pair. Throws InputError for a bad
// rendezvous spec, a rank outside 0..size-1, size < 1 or a timeout <= 0; CommError when the world
// does not meet within the timeout or the store cannot be reached.
std::unique_ptr<Communicator> make_gloo_communicator(const GlooOptions& options);

}  // namespace tensoropt::comm
