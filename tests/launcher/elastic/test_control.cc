// The control directory seen from another machine: a launcher elsewhere (job.json names its host)
// is alive while its beat file changes, so `tensoropt resize` and `status` work from any machine
// that shares the directory, and a silent or ended job is gone.
#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <optional>
#include <string>
#include <thread>

#include "graph/error.h"
#include "launcher/elastic/control.h"
#include "launcher/elastic/join.h"
#include "launcher/elastic/remote.h"
#include "tests/children.h"

namespace tensoropt {

TEST_CASE("elastic control: a launcher on another machine is alive while it beats, resize reaches it, and not once it is silent or ended") {
  test::TempDir dir;
  const std::string control = dir.path + "/control";
  control::open_control(control, 1, 4);
  // This process's pid would read as alive here: the launcher named on another host is judged by its beat alone.
  control::write_json(control + "/job.json", {{"job", "j"}, {"launcher", "elsewhere-" + std::to_string(getpid())}});
  CHECK_FALSE(control::job_alive(control));
  CHECK_THROWS_WITH_AS(control::request_resize(control, 2), doctest::Contains("the job is gone"), InputError);

  std::atomic<bool> beating{true};
  std::thread launcher([&] {
    while (beating) {
      remote::beat(control + "/launcher.beat");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  CHECK(control::job_alive(control));
  control::request_resize(control, 3);
  const std::optional<nlohmann::ordered_json> request = control::read_json(control + "/request.json");
  REQUIRE(request.has_value());
  CHECK(request->value("gpus", 0) == 3);
  CHECK_THROWS_WITH_AS(control::request_resize(control, 5), doctest::Contains("outside the job's 1..4"), InputError);

  control::write_json(control + "/ended.json", {{"at", 0}});
  CHECK_FALSE(control::job_alive(control));
  beating = false;
  launcher.join();

  // On this machine the launcher's pid decides, as before.
  std::filesystem::remove(control + "/ended.json");
  control::write_json(control + "/job.json", {{"job", "j"}, {"launcher", remote::this_member()}});
  CHECK(control::job_alive(control));  // launcher.pid is this process
}

TEST_CASE("elastic join: a job on another machine whose workers listen on loopback is refused in one line, before anything starts") {
  test::TempDir dir;
  const std::string control = dir.path + "/control";
  control::open_control(control, 1, 4);
  control::write_json(control + "/job.json", {{"job", "j"}, {"store", "file:" + control + "/elastic-store"}, {"argv", {"tensoropt", "run"}},
                                              {"launcher", "elsewhere-1"}, {"gloo_socket_ifname", ""}});
  std::atomic<bool> beating{true};
  std::thread launcher([&] {
    while (beating) {
      remote::beat(control + "/launcher.beat");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  std::ostringstream out, err;
  CHECK_THROWS_WITH_AS(join_elastic(control, std::nullopt, out, err), doctest::Contains("listen on 127.0.0.1 only; start it with GLOO_SOCKET_IFNAME"),
                       InputError);
  beating = false;
  launcher.join();
  CHECK(remote::offers(control).empty());  // no offer was made
}

}  // namespace tensoropt
