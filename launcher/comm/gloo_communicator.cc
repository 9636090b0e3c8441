#include "launcher/comm/gloo_communicator.h"

#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/config.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>
#if GLOO_USE_REDIS
#include <gloo/rendezvous/redis_store.h>
#endif

#include <signal.h>

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <numeric>
#include <set>

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

namespace {

namespace rdv = gloo::rendezvous;
using Clock = std::chrono::steady_clock;

// Holds every wait of the store below it to one timeout: Gloo's rendezvous calls get() and wait()
// without one in places (they would wait Gloo's default 30 s, or for ever on some stores).
class TimeoutStore : public rdv::Store {
 public:
  TimeoutStore(rdv::Store& store, std::chrono::milliseconds timeout) : store_(store), timeout_(timeout) {}
  void set(const std::string& key, const std::vector<char>& data) override { store_.set(key, data); }
  std::vector<char> get(const std::string& key) override {
    store_.wait({key}, timeout_);
    return store_.get(key);
  }
  void wait(const std::vector<std::string>& keys) override { store_.wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    store_.wait(keys, std::min(timeout, timeout_));
  }

 private:
  rdv::Store& store_;
  std::chrono::milliseconds timeout_;
};

// The store's key prefix of a group: its ranks, or a hash of them when the list is long.
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

template <typename T>
void add(void* c, const void* a, const void* b, size_t n) {
  T* out = static_cast<T*>(c);  // may be a (Gloo and we reduce in place)
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) out[i] = x[i] + y[i];
}
using AddFn = void (*)(void*, const void*, const void*, size_t);

// bfloat16 sums: each pair added in float32 and rounded to nearest even (as NCCL sums bfloat16).
float bf16_to_float(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
uint16_t float_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);  // NaN stays NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}
void add_bf16(void* c, const void* a, const void* b, size_t n) {
  auto* out = static_cast<uint16_t*>(c);
  const auto* x = static_cast<const uint16_t*>(a);
  const auto* y = static_cast<const uint16_t*>(b);
  for (size_t i = 0; i < n; ++i) out[i] = float_to_bf16(bf16_to_float(x[i]) + bf16_to_float(y[i]));
}

// dtype_name lives in the graph library, which this layer does not link.
std::string dtype_label(DType t) { return "#" + std::to_string(static_cast<int>(t)) + " (" + std::to_string(comm_dtype_size(t)) + " bytes)"; }

struct GroupContext {
  std::shared_ptr<gloo::Context> context;  // null for a group of one
  uint32_t tag = 0;                        // one per collective, in call order
};

// Reduce-scatters of at most this many input bytes, with equal counts over a power-of-two group,
// run Gloo's halving-doubling algorithm, built once per (dtype, counts) on a scratch copy of the
// input and cached (its buffers are registered with the peers, so a run needs no handshake: 2-4x
// faster than an alltoallv on small inputs). It runs on a context of its own per group: on the
// blocking calls' connections its registered buffers stalled the unbound-buffer collectives that
// followed (a 7 MiB all-gather took 0.4-4 s, both sides idle; GPT-2 small on 2 workers: 208 s a
// step, 27 s without). Above 256 KiB direct_reduce_scatter is as fast (1 MiB on 2 processes:
// within 1% of halving-doubling, whose copies in and out of its scratch cost 16% there); so do
// uneven counts and other group sizes, for which Gloo's final local copy may memcpy between
// overlapping ranges (ASan showed it for counts {2,5}).
constexpr int64_t kHalvingDoublingMaxBytes = 1 << 18;
// The slot prefix of direct_reduce_scatter's messages: past Gloo's own (gloo/types.h, 0x01-0x08).
constexpr uint8_t kReduceScatterSlotPrefix = 0x40;
constexpr size_t kHalvingDoublingCacheEntries = 32;  // per group: at most ~32 MiB of scratch

struct HalvingDoubling {
  std::vector<uint8_t> scratch;  // the algorithm reduces in place here
  std::unique_ptr<gloo::Algorithm> algorithm;
};
// Every member builds the same entries in the same order (the same calls), so the Gloo slots that
// building takes agree across members.
using HalvingDoublingCache = std::map<std::pair<DType, std::vector<int64_t>>, HalvingDoubling>;

template <typename T>
std::unique_ptr<gloo::Algorithm> make_halving_doubling(const std::shared_ptr<gloo::Context>& ctx, uint8_t* scratch,
                                                       const std::vector<int64_t>& counts) {
  std::vector<int> recv;
  int all = 0;
  for (int64_t c : counts) {
    recv.push_back(static_cast<int>(c));
    all += static_cast<int>(c);
  }
  return std::make_unique<gloo::ReduceScatterHalvingDoubling<T>>(ctx, std::vector<T*>{reinterpret_cast<T*>(scratch)}, all, recv);
}

// The async lane's view of one all_reduce_async: done and its error, shared by the lane (which
// sets them) and the Pending (which waits on them), so neither outlives what it needs.
struct AsyncState {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  bool failed = false;
  std::string error;  // why, when failed
  Group group;
  int rank = 0;
};

void finish(AsyncState& st, std::optional<std::string> error) {
  {
    std::lock_guard<std::mutex> lock(st.m);
    st.done = true;
    st.failed = error.has_value();
    st.error = error.value_or("");
  }
  st.cv.notify_all();
}

class AsyncPending final : public Pending {
 public:
  explicit AsyncPending(std::shared_ptr<AsyncState> st) : st_(std::move(st)) {}
  ~AsyncPending() override { block(); }
  void wait() override {
    block();
    if (st_->failed) throw CommError("all_reduce", st_->group, st_->rank, st_->error);
  }

 private:
  void block() {
    std::unique_lock<std::mutex> lock(st_->m);
    st_->cv.wait(lock, [&] { return st_->done; });
  }
  std::shared_ptr<AsyncState> st_;
};

// One thread that runs the async collectives in the order they were started. A job that fails
// makes every later one fail at once (the lane's connections may be broken mid-message), and
// leaves `failed()` set for the communicator to refuse its blocking calls too.
class AsyncLane {
 public:
  AsyncLane() : thread_([this] { loop(); }) {}
  ~AsyncLane() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void start(std::function<void()> run, std::shared_ptr<AsyncState> st) {
    {
      std::lock_guard<std::mutex> lock(m_);
      jobs_.push_back({std::move(run), std::move(st)});
    }
    cv_.notify_all();
  }
  // Empty when no collective of the lane failed.
  std::string failed() {
    std::lock_guard<std::mutex> lock(m_);
    return failed_;
  }
  // After the communicator failed elsewhere: every collective not yet started fails at once.
  void poison(const std::string& cause) {
    std::lock_guard<std::mutex> lock(m_);
    if (failed_.empty()) failed_ = cause;
  }

 private:
  struct Job {
    std::function<void()> run;
    std::shared_ptr<AsyncState> state;
  };
  void loop() {
    for (;;) {
      Job job;
      std::string earlier;
      {
        std::unique_lock<std::mutex> lock(m_);
        cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return;  // stopping, nothing left
        job = std::move(jobs_.front());
        jobs_.pop_front();
        if (stop_) earlier = "the communicator was destroyed";
        else if (!failed_.empty()) earlier = "the communicator failed earlier: " + failed_;
      }
      if (!earlier.empty()) {
        finish(*job.state, std::move(earlier));
        continue;
      }
      std::optional<std::string> error;
      try {
        job.run();
      } catch (const std::exception& e) {
        error = std::string(e.what()).empty() ? std::string("unknown error") : std::string(e.what());
      } catch (...) {
        error = "unknown error";
      }
      if (error) {
        std::lock_guard<std::mutex> lock(m_);
        if (failed_.empty()) failed_ = *error;
      }
      job.run = nullptr;  // drops the job's context before the waiter may go on
      finish(*job.state, error);
    }
  }

  std::mutex m_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stop_ = false;
  std::string failed_;
  std::thread thread_;  // last: starts after the members it reads are made
};

class GlooCommunicator final : public Communicator {
 public:
  explicit GlooCommunicator(const GlooOptions& o) : options_(o) {
    const Group world = world_group(o.size);
    try {
      open_store();
      gloo::transport::tcp::attr attr;
      const char* env_iface = std::getenv("GLOO_SOCKET_IFNAME");
      if (!o.interface.empty()) attr.iface = o.interface;
      else if (!o.hostname.empty()) attr.hostname = o.hostname;
      else if (env_iface && *env_iface) attr.iface = env_iface;
      device_ = gloo::transport::tcp::CreateDevice(attr);
    } catch (const std::exception& e) {
      throw CommError("rendezvous", world, o.rank, e.what());
    }
    context(world, "rendezvous", contexts_);
  }
  // The lane stops (after its running collective, bounded by the timeout) before the contexts and
  // the device it uses go.
  ~GlooCommunicator() override { lane_.reset(); }

  std::string_view backend() const override { return "gloo"; }
  int rank() const override { return options_.rank; }
  int size() const override { return options_.size; }
  std::chrono::milliseconds timeout() const override { return options_.timeout; }

  void all_reduce(void* buf, int64_t count, DType dtype, const Group& group) override {
    const AddFn fn = sum_fn(dtype, "all_reduce");
    check_count(count, "all_reduce");
    run("all_reduce", group, [&](GroupContext& g) {
      if (!g.context || count == 0) return;
      gloo_all_reduce(g.context, g.tag, buf, count, dtype, fn);
    });
  }

  std::unique_ptr<Pending> all_reduce_async(void* buf, int64_t count, DType dtype, const Group& group) override {
    const AddFn fn = sum_fn(dtype, "all_reduce");
    check_count(count, "all_reduce");
    refuse_after_failure("all_reduce", group);
    check_group(group, "all_reduce");
    auto st = std::make_shared<AsyncState>();
    st->group = group;
    st->rank = rank();
    // The lane's own context for the group: made here, on the calling thread, where every member
    // makes it at the same point of the same call sequence (the store is used by one thread only).
    GroupContext& g = context(group, "all_reduce", lane_contexts_, "a");
    if (!g.context || count == 0) {
      finish(*st, std::nullopt);
      return std::make_unique<AsyncPending>(st);
    }
    if (!lane_) lane_ = std::make_unique<AsyncLane>();
    std::shared_ptr<gloo::Context> ctx = g.context;
    const uint32_t tag = g.tag++;
    lane_->start([this, ctx, tag, buf, count, dtype, fn] { gloo_all_reduce(ctx, tag, buf, count, dtype, fn); }, st);
    return std::make_unique<AsyncPending>(st);
  }

  void all_gather_v(const void* in, void* out, const std::vector<int64_t>& counts, DType dtype,
                    const Group& group) override {
    const int64_t es = copy_size(dtype, "all_gather");
    check_counts(counts, group, "all_gather");
    run("all_gather", group, [&](GroupContext& g) {
      const int me = group.index_of(rank());
      if (!g.context) {
        if (counts[0] > 0) std::memmove(out, in, static_cast<size_t>(counts[0] * es));
        return;
      }
      if (total(counts) == 0) return;
      std::vector<size_t> bytes;
      for (int64_t c : counts) bytes.push_back(static_cast<size_t>(c * es));
      gloo::AllgathervOptions opts(g.context);
      opts.setInput(const_cast<uint8_t*>(static_cast<const uint8_t*>(in)), bytes[static_cast<size_t>(me)]);
      opts.setOutput(static_cast<uint8_t*>(out), bytes);
      opts.setTag(g.tag);
      opts.setTimeout(options_.timeout);
      gloo::allgatherv(opts);
    });
  }

  void reduce_scatter_v(const void* in, void* out, const std::vector<int64_t>& counts, DType dtype,
                        const Group& group) override {
    const AddFn fn = sum_fn(dtype, "reduce_scatter");
    check_counts(counts, group, "reduce_scatter");
    run("reduce_scatter", group, [&](GroupContext& g) {
      if (!g.context) {
        if (counts[0] > 0) std::memmove(out, in, static_cast<size_t>(counts[0] * esize(dtype)));
        return;
      }
      const int64_t bytes = total(counts) * esize(dtype);
      const int n = group.size();
      const bool even = std::all_of(counts.begin(), counts.end(), [&](int64_t c) { return c == counts[0]; });
      if (bytes == 0) return;
      if (bytes <= kHalvingDoublingMaxBytes && even && (n & (n - 1)) == 0 && dtype != DType::BF16)
        halving_doubling_reduce_scatter(group, in, out, counts, dtype);
      else
        direct_reduce_scatter(g, in, out, counts, esize(dtype), fn);
    });
  }

  void all_to_all_v(const void* in, const std::vector<int64_t>& send_counts, void* out,
                    const std::vector<int64_t>& recv_counts, DType dtype, const Group& group) override {
    const int64_t es = copy_size(dtype, "all_to_all");
    check_counts(send_counts, group, "all_to_all");
    check_counts(recv_counts, group, "all_to_all");
    run("all_to_all", group, [&](GroupContext& g) {
      if (!g.context) {
        if (send_counts[0] != recv_counts[0])
          throw InternalError("all_to_all: a group of one sends and receives different counts");
        if (send_counts[0] > 0) std::memmove(out, in, static_cast<size_t>(send_counts[0] * es));
        return;
      }
      std::vector<int64_t> sb, rb;
      for (int64_t c : send_counts) sb.push_back(c * es);
      for (int64_t c : recv_counts) rb.push_back(c * es);
      // Gloo wants a buffer even when this member moves nothing.
      uint8_t dummy_in = 0, dummy_out = 0;
      auto* src = total(send_counts) ? const_cast<uint8_t*>(static_cast<const uint8_t*>(in)) : &dummy_in;
      auto* dst = total(recv_counts) ? static_cast<uint8_t*>(out) : &dummy_out;
      gloo::AlltoallvOptions opts(g.context);
      opts.setInput(src, sb);
      opts.setOutput(dst, rb);
      opts.setTag(g.tag);
      opts.setTimeout(options_.timeout);
      gloo::alltoallv(opts);
    });
  }

  void broadcast(void* buf, int64_t count, DType dtype, int root, const Group& group) override {
    const int64_t es = copy_size(dtype, "broadcast");
    check_count(count, "broadcast");
    if (root < 0 || root >= group.size())
      throw InternalError("broadcast: root " + std::to_string(root) + " is not a rank of group " + group.str());
    run("broadcast", group, [&](GroupContext& g) {
      if (!g.context || count == 0) return;
      gloo::BroadcastOptions opts(g.context);
      opts.setOutput(static_cast<uint8_t*>(buf), static_cast<size_t>(count * es));
      opts.setRoot(root);
      opts.setTag(g.tag);
      opts.setTimeout(options_.timeout);
      gloo::broadcast(opts);
    });
  }

  void barrier(const Group& group) override {
    run("barrier", group, [&](GroupContext& g) {
      if (!g.context) return;
      gloo::BarrierOptions opts(g.context);
      opts.setTag(g.tag);
      opts.setTimeout(options_.timeout);
      gloo::barrier(opts);
    });
  }

 private:
  void open_store() {
    const RendezvousSpec spec = parse_rendezvous(options_.rendezvous);
    if (spec.kind == RendezvousSpec::Kind::File) {
      std::error_code ec;
      std::filesystem::create_directories(spec.dir, ec);  // FileStore reports a directory it cannot use
      store_ = std::make_unique<rdv::FileStore>(spec.dir);
    } else {
#if GLOO_USE_REDIS
      store_ = std::make_unique<rdv::RedisStore>(spec.host, spec.port);
#else
      throw InputError("--rendezvous '" + options_.rendezvous + "': this Gloo was built without Redis support");
#endif
    }
    if (!options_.prefix.empty()) job_store_ = std::make_unique<rdv::PrefixStore>(options_.prefix, *store_);
  }
  rdv::Store& job_store() { return job_store_ ? *job_store_ : *store_; }

  // Gloo's allreduce of buf[count] with `fn` (sum_fn(dtype)); Gloo moves elements of T's size.
  void gloo_all_reduce(const std::shared_ptr<gloo::Context>& context, uint32_t tag, void* buf, int64_t count, DType dtype,
                       AddFn fn) const {
    switch (dtype) {
      case DType::F32: return gloo_all_reduce(context, tag, static_cast<float*>(buf), count, fn);
      case DType::F64: return gloo_all_reduce(context, tag, static_cast<double*>(buf), count, fn);
      case DType::I32: return gloo_all_reduce(context, tag, static_cast<int32_t*>(buf), count, fn);
      case DType::BF16: return gloo_all_reduce(context, tag, static_cast<uint16_t*>(buf), count, fn);
      default: return gloo_all_reduce(context, tag, static_cast<int64_t*>(buf), count, fn);  // I64 (sum_fn checked)
    }
  }
  template <typename T>
  void gloo_all_reduce(const std::shared_ptr<gloo::Context>& context, uint32_t tag, T* buf, int64_t count, AddFn fn) const {
    gloo::AllreduceOptions opts(context);
    opts.setOutput(buf, static_cast<size_t>(count));
    opts.setReduceFunction(fn);
    opts.setTag(tag);
    opts.setTimeout(options_.timeout);
    gloo::allreduce(opts);
  }

  static int64_t esize(DType t) { return comm_dtype_size(t); }
  static int64_t copy_size(DType t, const char* what) {
    const int64_t s = comm_dtype_size(t);
    if (s == 0) throw InternalError(std::string(what) + ": dtype " + dtype_label(t) + " cannot be moved");
    return s;
  }
  static AddFn sum_fn(DType t, const char* what) {
    switch (t) {
      case DType::F32: return &add<float>;
      case DType::F64: return &add<double>;
      case DType::I32: return &add<int32_t>;
      case DType::I64: return &add<int64_t>;
      case DType::BF16: return &add_bf16;
      default: throw InternalError(std::string(what) + ": no sum for dtype " + dtype_label(t));
    }
  }
  static void check_count(int64_t count, const char* what) {
    if (count < 0) throw InternalError(std::string(what) + ": negative count " + std::to_string(count));
  }
  static void check_counts(const std::vector<int64_t>& counts, const Group& g, const char* what) {
    if (counts.size() != g.ranks.size())
      throw InternalError(std::string(what) + ": " + std::to_string(counts.size()) + " counts for group " + g.str());
    for (int64_t c : counts) check_count(c, what);
  }
  static int64_t total(const std::vector<int64_t>& counts) { return std::accumulate(counts.begin(), counts.end(), int64_t{0}); }

  void check_group(const Group& g, const char* what) const {
    std::set<int> seen;
    for (int r : g.ranks) {
      if (r < 0 || r >= size() || !seen.insert(r).second)
        throw InternalError(std::string(what) + ": group " + g.str() + " is not a set of distinct ranks of a world of " +
                            std::to_string(size()));
    }
    if (g.index_of(rank()) < 0)
      throw InternalError(std::string(what) + ": rank " + std::to_string(rank()) + " is not in group " + g.str());
  }

  // The group's context in `cache` (the blocking calls' or the async lane's), made on first use:
  // its members meet in the store under the group's key after `lane` ("" or "a"). Throws CommError
  // (`what` over the group) when they do not.
  GroupContext& context(const Group& g, const char* what, std::map<std::vector<int>, GroupContext>& cache,
                        const char* lane = "") {
    auto it = cache.find(g.ranks);
    if (it != cache.end()) return it->second;
    GroupContext gc;
    if (g.size() > 1) {
      try {
        rdv::PrefixStore prefixed(std::string(lane) + group_key(g), job_store());
        TimeoutStore store(prefixed, options_.timeout);
        auto ctx = std::make_shared<rdv::Context>(g.index_of(rank()), g.size());
        ctx->setTimeout(options_.timeout);
        ctx->connectFullMesh(store, device_);
        gc.context = std::move(ctx);
      } catch (const std::exception& e) {
        fail(what, g, e.what());
      }
    }
    return cache.emplace(g.ranks, std::move(gc)).first->second;
  }

  void refuse_after_failure(const char* what, const Group& group) {
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

  // Runs one collective on the group's context; every failure becomes a CommError, after which
  // this communicator is unusable and its connections are closed (so the peers fail fast too).
  template <typename Fn>
  void run(const char* what, const Group& group, Fn&& fn) {
    refuse_after_failure(what, group);
    check_group(group, what);
    GroupContext& g = context(group, what, contexts_);
    try {
      fn(g);
      ++g.tag;
    } catch (const InternalError&) {
      throw;
    } catch (const std::exception& e) {
      fail(what, group, e.what());
    }
  }

  [[noreturn]] void fail(const char* what, const Group& group, const std::string& cause) {
    failed_ = std::string(what) + " over group " + group.str() + ": " + cause;
    if (lane_) lane_->poison(failed_);  // what is queued fails at once instead of running on
    contexts_.clear();
    lane_contexts_.clear();
    hd_cache_.clear();
    hd_contexts_.clear();
    throw CommError(what, group, rank(), cause);
  }

  void halving_doubling_reduce_scatter(const Group& group, const void* in, void* out, const std::vector<int64_t>& counts,
                                       DType dtype) {
    const std::shared_ptr<gloo::Context> ctx = context(group, "reduce_scatter", hd_contexts_, "h").context;
    HalvingDoublingCache& cache = hd_cache_[group.ranks];
    const int64_t es = esize(dtype);
    const auto bytes = static_cast<size_t>(total(counts) * es);
    auto key = std::make_pair(dtype, counts);
    auto it = cache.find(key);
    if (it == cache.end()) {
      if (cache.size() >= kHalvingDoublingCacheEntries) cache.clear();
      HalvingDoubling h;
      h.scratch.resize(bytes);
      switch (dtype) {
        case DType::F32: h.algorithm = make_halving_doubling<float>(ctx, h.scratch.data(), counts); break;
        case DType::F64: h.algorithm = make_halving_doubling<double>(ctx, h.scratch.data(), counts); break;
        case DType::I32: h.algorithm = make_halving_doubling<int32_t>(ctx, h.scratch.data(), counts); break;
        default: h.algorithm = make_halving_doubling<int64_t>(ctx, h.scratch.data(), counts); break;
      }
      it = cache.emplace(std::move(key), std::move(h)).first;
    }
    HalvingDoubling& h = it->second;
    std::memcpy(h.scratch.data(), in, bytes);
    h.algorithm->run();
    const int64_t mine = counts[static_cast<size_t>(ctx->rank)];
    if (mine > 0) std::memcpy(out, h.scratch.data(), static_cast<size_t>(mine * es));  // its result comes first
  }

  // Direct reduce-scatter: one Gloo alltoallv sends piece j of my input to member j and brings me
  // every member's piece `me`; I add them up. Each member sends and receives (n-1)/n of the input,
  // as a ring does, in one round instead of n-1 (Gloo's unbound buffers cost a handshake per
  // message, which made the ring 2-10x slower than Gloo's halving-doubling below 4 MiB on 4 ranks).
  void direct_reduce_scatter(GroupContext& g, const void* in, void* out, const std::vector<int64_t>& counts,
                             int64_t es, AddFn fn) {
    const int n = g.context->size, me = g.context->rank;
    const int64_t mine = counts[static_cast<size_t>(me)];
    const size_t piece_bytes = static_cast<size_t>(mine * es);
    std::vector<size_t> offset(static_cast<size_t>(n) + 1, 0);
    for (int j = 0; j < n; ++j) offset[static_cast<size_t>(j) + 1] = offset[static_cast<size_t>(j)] + static_cast<size_t>(counts[static_cast<size_t>(j)] * es);
    // Every other member's piece `me` lands in scratch_, one after another; my own piece is read
    // where it is (an alltoallv would copy it in first). Sends and receives are posted at once on
    // unbound buffers, under a slot of this call's tag no Gloo collective uses.
    scratch_.resize(std::max<size_t>(1, piece_bytes * static_cast<size_t>(n - 1)));
    uint8_t dummy = 0;
    auto source = g.context->createUnboundBuffer(offset.back() ? const_cast<void*>(in) : &dummy, std::max<size_t>(1, offset.back()));
    auto sink = g.context->createUnboundBuffer(scratch_.data(), scratch_.size());
    const uint64_t slot = gloo::Slot::build(kReduceScatterSlotPrefix, g.tag);
    int sends = 0, recvs = 0;
    for (int j = 0; j < n; ++j) {
      if (j == me) continue;
      const auto bytes = static_cast<size_t>(counts[static_cast<size_t>(j)] * es);
      if (bytes > 0) source->send(j, slot, offset[static_cast<size_t>(j)], bytes), ++sends;
      if (piece_bytes > 0) sink->recv(j, slot, static_cast<size_t>(recvs) * piece_bytes, piece_bytes), ++recvs;
    }
    for (int k = 0; k < recvs; ++k)
      if (!sink->waitRecv(options_.timeout)) throw std::runtime_error("reduce_scatter: a receive was aborted");
    for (int k = 0; k < sends; ++k)
      if (!source->waitSend(options_.timeout)) throw std::runtime_error("reduce_scatter: a send was aborted");
    if (mine == 0) return;
    const auto elems = static_cast<size_t>(mine);
    const auto* own = static_cast<const uint8_t*>(in) + offset[static_cast<size_t>(me)];
    if (n == 1) {
      std::memmove(out, own, piece_bytes);
      return;
    }
    fn(out, own, scratch_.data(), elems);
    for (int k = 1; k < n - 1; ++k) fn(out, out, scratch_.data() + static_cast<size_t>(k) * piece_bytes, elems);
  }

  GlooOptions options_;
  std::unique_ptr<rdv::Store> store_;
  std::unique_ptr<rdv::Store> job_store_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::map<std::vector<int>, GroupContext> contexts_;
  std::map<std::vector<int>, GroupContext> lane_contexts_;  // the async lane's, one per group
  std::unique_ptr<AsyncLane> lane_;                         // started by the first async collective
  std::map<std::vector<int>, GroupContext> hd_contexts_;    // halving-doubling reduce-scatters', one per group
  std::map<std::vector<int>, HalvingDoublingCache> hd_cache_;
  std::vector<uint8_t> scratch_;
  std::string failed_;
};

}  // namespace

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
  return std::make_unique<GlooCommunicator>(o);
}

}  // namespace tensoropt::comm
