// bench_comm: our GlooCommunicator's all_reduce, all_gather and reduce_scatter against Gloo's own
// algorithms called directly, at the same sizes, in the same processes, on the same connections'
// kind (TCP on loopback). Run by scripts/bench/comm.
//
//   bench_comm --procs N [--min BYTES] [--max BYTES]
//
// Forks N processes meeting through a file store in a fresh temporary directory. Each size is a
// buffer of S bytes of float32 in the nccl-tests convention (all_reduce: the buffer; all_gather:
// the gathered output; reduce_scatter: the input). For every size, calls of ours and of Gloo's
// alternate one by one (1 GiB / S of each, 9..1000); the figures are the median and the least call
// times on rank 0 (every call ends with the group's data moved, so rank 0's time is the collective's). Gloo's side: gloo::allreduce (ring, gloo::sum<float>), gloo::allgather, and
// ReduceScatterHalvingDoubling<float> built once per size and run k times (its intended use;
// it reduces in place, so its buffer grows by a factor of N a call: harmless for timing).
// Output: '#' comment lines, then one row per (op, size): op procs bytes, then Gloo's, ours and our
// overhead in % for the medians, then the same for the minima.
// Exit code 0 when every child succeeded.
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "launcher/comm/gloo_communicator.h"

namespace {

using namespace tensoropt;
using Clock = std::chrono::steady_clock;

struct Args {
  int procs = 2;
  int64_t min_bytes = 4 << 10, max_bytes = 64 << 20;
};

double median(const std::vector<double>& t) {
  std::vector<double> s = t;
  std::sort(s.begin(), s.end());
  return s[s.size() / 2];
}

double time_call(const std::function<void()>& call) {
  auto t0 = Clock::now();
  call();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int worker(const Args& a, int rank, const std::string& dir) {
  comm::GlooOptions o;
  o.rank = rank;
  o.size = a.procs;
  o.rendezvous = "file:" + dir;
  o.prefix = "ours";
  o.hostname = "127.0.0.1";
  o.timeout = std::chrono::seconds(60);
  auto ours = comm::make_gloo_communicator(o);
  const comm::Group world = ours->world();

  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore fstore(dir);
  gloo::rendezvous::PrefixStore store("raw", fstore);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, a.procs);
  ctx->setTimeout(std::chrono::seconds(60));
  ctx->connectFullMesh(store, dev);
  uint32_t tag = 0;
  const auto sum = static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>);

  if (rank == 0) {
    std::printf("# bench_comm: %d processes, TCP on 127.0.0.1, float32, median call times\n", a.procs);
    std::printf("# %-15s %5s %10s %10s %10s %10s %10s %10s %10s\n", "op", "procs", "bytes", "gloo_us", "ours_us", "overhead_%",
                "gloo_min", "ours_min", "min_ovh_%");
  }
  for (int op = 0; op < 3; ++op) {
    for (int64_t bytes = a.min_bytes; bytes <= a.max_bytes; bytes *= 4) {
      const int64_t n = bytes / 4, piece = n / a.procs;
      std::vector<float> buf(static_cast<size_t>(n), 1.0f), out(static_cast<size_t>(n), 0.0f);
      std::function<void()> mine, theirs;
      std::unique_ptr<gloo::ReduceScatterHalvingDoubling<float>> rs;
      const char* name = "";
      if (op == 0) {
        name = "all_reduce";
        mine = [&] { ours->all_reduce(buf.data(), n, DType::F32, world); };
        theirs = [&] {
          gloo::AllreduceOptions opts(ctx);
          opts.setOutput(buf.data(), static_cast<size_t>(n));
          opts.setReduceFunction(sum);
          opts.setTag(tag++);
          gloo::allreduce(opts);
        };
      } else if (op == 1) {
        name = "all_gather";
        mine = [&] { ours->all_gather(buf.data(), out.data(), piece, DType::F32, world); };
        theirs = [&] {
          gloo::AllgatherOptions opts(ctx);
          opts.setInput(buf.data(), static_cast<size_t>(piece));
          opts.setOutput(out.data(), static_cast<size_t>(piece * a.procs));
          opts.setTag(tag++);
          gloo::allgather(opts);
        };
      } else {
        name = "reduce_scatter";
        mine = [&] { ours->reduce_scatter(buf.data(), out.data(), piece, DType::F32, world); };
        rs = std::make_unique<gloo::ReduceScatterHalvingDoubling<float>>(
            ctx, std::vector<float*>{buf.data()}, static_cast<int>(n), std::vector<int>(static_cast<size_t>(a.procs), static_cast<int>(piece)));
        theirs = [&] { rs->run(); };
      }
      // Samples per side: 1 GiB of buffers, 9..1000. Every rank computes the same count. Ours and
      // Gloo's alternate call by call (the first of the pair alternating too), so both see the
      // same machine; the medians drop the scheduler's outliers.
      const int samples = static_cast<int>(std::clamp<int64_t>((int64_t{1} << 30) / std::max<int64_t>(bytes, 1), 9, 1000));
      mine();
      theirs();
      ours->barrier(world);
      std::vector<double> tm, tg;
      for (int i = 0; i < samples; ++i) {
        if (i % 2) {
          tm.push_back(time_call(mine));
          tg.push_back(time_call(theirs));
        } else {
          tg.push_back(time_call(theirs));
          tm.push_back(time_call(mine));
        }
      }
      if (rank == 0) {
        const double g = median(tg) * 1e6, m = median(tm) * 1e6;
        const double gmin = *std::min_element(tg.begin(), tg.end()) * 1e6, mmin = *std::min_element(tm.begin(), tm.end()) * 1e6;
        std::printf("  %-15s %5d %10lld %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f\n", name, a.procs, static_cast<long long>(bytes), g, m,
                    (m / g - 1) * 100, gmin, mmin, (mmin / gmin - 1) * 100);
        std::fflush(stdout);
      }
    }
  }
  ours->barrier(world);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const char* v = argv[i + 1];
    if (k == "--procs") a.procs = std::atoi(v);
    else if (k == "--min") a.min_bytes = std::atoll(v);
    else if (k == "--max") a.max_bytes = std::atoll(v);
    else {
      std::fprintf(stderr, "bench_comm: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  if (a.procs < 2 || a.min_bytes < 4 * a.procs) {
    std::fprintf(stderr, "bench_comm: needs --procs >= 2, --min >= 4 * procs\n");
    return 2;
  }
  char tmpl[] = "/tmp/bench_comm.XXXXXX";
  if (!mkdtemp(tmpl)) return 1;
  const std::string dir = tmpl;
  std::fflush(stdout);
  std::vector<pid_t> kids;
  for (int r = 0; r < a.procs; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      int rc = 1;
      try {
        rc = worker(a, r, dir);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_comm: rank %d: %s\n", r, e.what());
      }
      std::fflush(stdout);
      _exit(rc);
    }
    kids.push_back(pid);
  }
  int failed = 0;
  for (pid_t p : kids) {
    int status = 0;
    waitpid(p, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return failed ? 1 : 0;
}
