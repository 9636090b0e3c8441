// Failure of a peer: one killed with SIGKILL mid-collective makes the others throw CommError
// within the timeout, naming the collective, the group and the rank, and leaves their
// communicators unusable.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tests/launcher/comm/known_answers.h"

namespace tensoropt::comm {
namespace {

using namespace std::chrono_literals;
using namespace test_known;
using Clock = std::chrono::steady_clock;

TEST_CASE("comm: a peer killed with SIGKILL mid-collective makes the others throw CommError naming the collective, group and rank") {
  TempDir dir;
  const int n = 3;
  const auto timeout = 3s;
  auto results = run_children(
      n,
      [&](int rank) {
        auto c = make_gloo_communicator(options(rank, n, "file:" + dir.path, timeout));
        std::vector<float> buf(1 << 16, 1.0f);
        try {
          for (;;) c->all_reduce(buf.data(), static_cast<int64_t>(buf.size()), DType::F32, c->world());
        } catch (const CommError& e) {
          const std::string first = e.what();
          // Unusable afterwards: the next call fails at once, saying so.
          const auto t0 = Clock::now();
          try {
            c->barrier(c->world());
          } catch (const CommError& again) {
            if (std::string(again.what()).find("unusable") == std::string::npos || Clock::now() - t0 > 100ms)
              throw std::runtime_error(std::string("second error: ") + again.what());
            throw std::runtime_error(first);
          }
          throw std::runtime_error("a call after a CommError succeeded");
        }
      },
      /*limit=*/20s, /*kill_rank=*/2, /*kill_after=*/1500ms);
  CHECK(results[2].message == "killed by signal 9");
  MESSAGE("rank 0 said: " << results[0].message);
  for (int r = 0; r < 2; ++r) {
    const std::string& msg = results[static_cast<size_t>(r)].message;
    INFO(msg);
    CHECK(msg.find("all_reduce over group [0,1,2] failed on rank " + std::to_string(r)) != std::string::npos);
    // Within the timeout of the kill at 1.5 s (plus slack for a loaded machine).
    CHECK(results[static_cast<size_t>(r)].seconds < 1.5 + 3.0 + 2.0);
  }
}

}  // namespace
}  // namespace tensoropt::comm
