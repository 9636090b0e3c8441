// The report's history of an elastic job (launcher/elastic/worker.h), kept by every worker since
// any may lead after a loss: per step its loss, time and worker count, the resizes and the
// recoveries. A step's samples are not kept: they are the data source's for that step
// (runtime/data.h), added when the report is written. Compact, so that keeping it costs a step
// nothing measurable (a JSON object per step on every worker cost 15% of a 1 ms step).
// Pure values; not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "launcher/runtime/data.h"

namespace tensoropt::elastic {

struct StepRecord {
  int64_t step = 0;
  double loss = 0, seconds = 0;
  int workers = 0;
};

struct History {
  std::vector<StepRecord> steps;
  nlohmann::ordered_json resizes = nlohmann::ordered_json::array(), recoveries = nlohmann::ordered_json::array();

  // {"steps": [[step, loss, seconds, workers], ...], "resizes": [...], "recoveries": [...]}: what
  // DIR/history.json holds and a regroup shares; from_json reads it (missing fields: empty).
  nlohmann::ordered_json to_json() const;
  static History from_json(const nlohmann::ordered_json& doc);
  // The steps after `step` dropped (done again after a recovery).
  void keep_until(int64_t step);
  // The report's "steps": per step, its step, loss, time_s, samples_per_s (of a global batch of
  // `batch`), samples (data's for the step) and workers.
  nlohmann::ordered_json report_steps(const runtime::DataSource& data, int64_t batch) const;
};

}  // namespace tensoropt::elastic
