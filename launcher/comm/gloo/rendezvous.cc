#include "launcher/comm/gloo/rendezvous.h"

#include <gloo/config.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#if GLOO_USE_REDIS
#include <gloo/rendezvous/redis_store.h>
#endif

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>

#include "graph/error.h"

namespace tensoropt::comm {

RendezvousSpec parse_rendezvous(std::string_view spec) {
  const std::string quoted = "--rendezvous '" + std::string(spec) + "'";
  RendezvousSpec r;
  if (spec.starts_with("file:")) {
    r.kind = RendezvousSpec::Kind::File;
    r.dir = std::string(spec.substr(5));
    if (r.dir.empty()) throw InputError(quoted + ": file: needs a directory (file:DIR)");
    return r;
  }
  if (spec.starts_with("redis://")) {
    r.kind = RendezvousSpec::Kind::Redis;
    std::string_view rest = spec.substr(8);
    const size_t colon = rest.rfind(':');
    if (colon == std::string_view::npos)
      throw InputError(quoted + ": redis:// needs a host and a port (redis://HOST:PORT)");
    r.host = std::string(rest.substr(0, colon));
    std::string_view port = rest.substr(colon + 1);
    if (r.host.empty()) throw InputError(quoted + ": redis:// needs a host (redis://HOST:PORT)");
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), r.port);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size() || r.port < 1 || r.port > 65535)
      throw InputError(quoted + ": the port must be a number in 1..65535 (redis://HOST:PORT)");
    return r;
  }
  throw InputError(quoted + ": expected file:DIR or redis://HOST:PORT");
}

namespace gloo_impl {

namespace rdv = gloo::rendezvous;

namespace {

// Holds every wait of the store below it to one timeout: Gloo's rendezvous calls get() and wait()
// without one in places (they would wait Gloo's default 30 s, or for ever on some stores).
class TimeoutStore : public rdv::Store {
 public:
  TimeoutStore(rdv::Store& store, std::chrono::milliseconds timeout, const std::atomic<bool>* abandon)
      : store_(store), timeout_(timeout), abandon_(abandon) {}
  void set(const std::string& key, const std::vector<char>& data) override { store_.set(key, data); }
  std::vector<char> get(const std::string& key) override {
    wait({key}, timeout_);
    return store_.get(key);
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  // With an abandon flag, the wait goes in slices of 0.1 s, the flag read between them.
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    using Clock = std::chrono::steady_clock;
    const Clock::time_point end = Clock::now() + std::min(timeout, timeout_);
    while (true) {
      if (abandon_ && abandon_->load()) throw std::runtime_error("the rendezvous was given up (the job regrouped without it)");
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now());
      if (!abandon_) return store_.wait(keys, std::max(left, std::chrono::milliseconds(1)));
      try {
        return store_.wait(keys, std::clamp(left, std::chrono::milliseconds(1), std::chrono::milliseconds(100)));
      } catch (const std::exception&) {
        if (Clock::now() >= end) throw;
      }
    }
  }

 private:
  rdv::Store& store_;
  std::chrono::milliseconds timeout_;
  const std::atomic<bool>* abandon_;
};

}  // namespace

Stores open_stores(const GlooOptions& options) {
  Stores s;
  const RendezvousSpec spec = parse_rendezvous(options.rendezvous);
  if (spec.kind == RendezvousSpec::Kind::File) {
    std::error_code ec;
    std::filesystem::create_directories(spec.dir, ec);  // FileStore reports a directory it cannot use
    s.store = std::make_unique<rdv::FileStore>(spec.dir);
  } else {
#if GLOO_USE_REDIS
    s.store = std::make_unique<rdv::RedisStore>(spec.host, spec.port);
#else
    throw InputError("--rendezvous '" + options.rendezvous + "': this Gloo was built without Redis support");
#endif
  }
  if (!options.prefix.empty()) s.job_store = std::make_unique<rdv::PrefixStore>(options.prefix, *s.store);
  return s;
}

std::shared_ptr<gloo::transport::Device> make_device(const GlooOptions& options) {
  gloo::transport::tcp::attr attr;
  const char* env_iface = std::getenv("GLOO_SOCKET_IFNAME");
  if (!options.interface.empty()) attr.iface = options.interface;
  else if (!options.hostname.empty()) attr.hostname = options.hostname;
  else if (env_iface && *env_iface) attr.iface = env_iface;
  return gloo::transport::tcp::CreateDevice(attr);
}

std::shared_ptr<gloo::Context> connect_group(rdv::Store& job_store, const std::string& key, int index, int size,
                                             std::chrono::milliseconds timeout,
                                             std::shared_ptr<gloo::transport::Device>& device, const std::atomic<bool>* abandon) {
  rdv::PrefixStore prefixed(key, job_store);
  TimeoutStore store(prefixed, timeout, abandon);
  auto ctx = std::make_shared<rdv::Context>(index, size);
  ctx->setTimeout(timeout);
  ctx->connectFullMesh(store, device);
  return ctx;
}

}  // namespace gloo_impl
}  // namespace tensoropt::comm
