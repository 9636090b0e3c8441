#include "launcher/elastic/history.h"

#include <algorithm>

namespace tensoropt::elastic {

nlohmann::ordered_json History::to_json() const {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const StepRecord& r : steps) rows.push_back({r.step, r.loss, r.seconds, r.workers});
  return {{"steps", rows}, {"resizes", resizes}, {"recoveries", recoveries}};
}

History History::from_json(const nlohmann::ordered_json& doc) {
  History h;
  for (const auto& r : doc.value("steps", nlohmann::ordered_json::array()))
    h.steps.push_back({r.at(0).get<int64_t>(), r.at(1).get<double>(), r.at(2).get<double>(), r.at(3).get<int>()});
  h.resizes = doc.value("resizes", nlohmann::ordered_json::array());
  h.recoveries = doc.value("recoveries", nlohmann::ordered_json::array());
  return h;
}

void History::keep_until(int64_t step) {
  steps.erase(std::remove_if(steps.begin(), steps.end(), [step](const StepRecord& r) { return r.step > step; }), steps.end());
}

nlohmann::ordered_json History::report_steps(const runtime::DataSource& data, int64_t batch) const {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const StepRecord& r : steps) {
    out.push_back({{"step", r.step}, {"loss", r.loss}, {"time_s", r.seconds}, {"samples_per_s", static_cast<double>(batch) / r.seconds},
                   {"samples", data.samples(r.step)}, {"workers", r.workers}});
  }
  return out;
}

}  // namespace tensoropt::elastic
