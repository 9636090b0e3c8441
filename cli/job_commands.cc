// `tensoropt status DIR` and `tensoropt resize DIR --gpus N` (commands.h): what an elastic job's
// rank 0 last wrote to its control directory, and a request the job's launcher acts on
// (launcher/elastic/control.h, docs/cli.md).
#include <cstdio>
#include <ostream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "launcher/elastic/control.h"
#include "launcher/train/report.h"

namespace tensoropt::cli {

int run_status(const JobArgs& args, std::ostream& out) {
  const nlohmann::ordered_json st = control::read_status(args.dir);
  if (args.json) {
    out << st.dump(2) << "\n";
    return 0;
  }
  const bool finished = st.value("finished", false), running = st.value("running", false);
  out << "job      " << args.dir << ": " << (finished ? "finished" : running ? "running" : "gone (its launcher ended before the last step)") << "\n";
  out << "step     " << st.value("step", 0) << " of " << st.value("steps", 0) << ", " << st.value("samples", 0) << " samples\n";
  out << "workers  " << st.value("workers", 0) << ", mesh " << st.value("mesh", std::string()) << ", " << st.value("point", std::string()) << "\n";
  out << "step time predicted " << human_seconds(st.value("predicted_step_s", 0.0)) << ", measured " << human_seconds(st.value("measured_step_s", 0.0))
      << " (median at this size)\n";
  const nlohmann::ordered_json resizes = st.value("resizes", nlohmann::ordered_json::array());
  if (resizes.empty()) out << "resizes  none\n";
  for (const auto& r : resizes) {
    out << "resized  " << r.value("from", 0) << " -> " << r.value("to", 0) << " workers after step " << r.value("at_step", 0) << ": paused "
        << human_seconds(r.value("pause_s", 0.0)) << ", " << human_seconds(r.value("request_to_first_step_s", 0.0)) << " from the request\n";
  }
  for (const auto& r : st.value("recoveries", nlohmann::ordered_json::array())) {
    out << "lost     rank " << r.value("lost_ranks", nlohmann::ordered_json::array()).dump() << " (" << r.value("how", std::string()) << ") after step "
        << r.value("at_step", 0) << ": went on with " << r.value("to", 0) << " workers from step " << r.value("resumed_from_step", 0) << " ("
        << (r.value("source", std::string()) == "replicas" ? "the state the workers left held" : "the checkpoint") << "), "
        << r.value("redone_steps", 0) << " steps done again\n";
  }
  return 0;
}

int run_resize(const JobArgs& args, std::ostream& out) {
  control::request_resize(args.dir, args.gpus);
  out << "asked    " << args.dir << " for " << args.gpus << " workers (tensoropt status " << args.dir << " shows when it has them)\n";
  return 0;
}

}  // namespace tensoropt::cli
