#include "cli/explain_output.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/format.h"

namespace tensoropt::cli {

namespace {

using namespace planner;

double compute_time(const Breakdown& b) {
  return b[Term::ComputeForward] + b[Term::ComputeBackward] + b[Term::Recompute] + b[Term::OptimizerStep];
}
double comm_time(const Breakdown& b) { return b.time() - compute_time(b); }

// What a row's ops and parameters do: "12 DP, 3 TP, 1 whole, 2 recomputed; 4 params, 4 ZeRO-2, 1 split".
std::string doing(const ExplainRow& r) {
  std::string s;
  auto add = [&](int n, const char* what) {
    if (n == 0) return;
    // Appended piece by piece: GCC 12 at -O3 reports a false -Wrestrict on "literal" + std::string&&.
    s.append(s.empty() ? "" : ", ").append(std::to_string(n)).append(" ").append(what);
  };
  add(r.data_parallel, "DP");
  add(r.tensor_parallel, "TP");
  add(r.replicated, "whole");
  add(r.recomputed, "recomputed");
  if (r.parameters > 0) {
    s.append(s.empty() ? "" : "; ").append(std::to_string(r.parameters)).append(r.parameters == 1 ? " param" : " params");
    if (r.zero2) s += ", " + std::to_string(r.zero2) + " ZeRO-2";
    if (r.split_parameters) s += ", " + std::to_string(r.split_parameters) + " split";
  }
  return s;
}

std::string clipped(const std::string& s, size_t width) { return s.size() <= width ? s : s.substr(0, width - 3) + "..."; }

}  // namespace

void print_explanation_text(const StrategySpace& space, const std::vector<int>& assignment, const Explanation& e, bool by_node,
                            std::ostream& out) {
  const auto& g = space.graph();
  char line[512];
  std::snprintf(line, sizeof line, "%-34s %5s  %11s %11s %11s  %s\n", by_node ? "node" : "layer", "ops", "compute", "comm",
                "memory", by_node ? "configuration" : "what its ops do");
  out << line;
  for (const ExplainRow& r : e.rows) {
    std::string what = doing(r);
    if (by_node) {
      const int n = r.nodes.front();
      what = g.nodes[static_cast<size_t>(n)].op_type + ": " + describe_op(space, n, assignment[static_cast<size_t>(n)]);
    }
    std::snprintf(line, sizeof line, "%-34s %5zu  %11s %11s %11s  %s\n", clipped(r.name, 34).c_str(), r.nodes.size(),
                  seconds_human(compute_time(r.terms)).c_str(), seconds_human(comm_time(r.terms)).c_str(),
                  bytes_human(r.terms.memory()).c_str(), what.c_str());
    out << line;
  }
  std::snprintf(line, sizeof line, "%-34s %5s  %11s %11s %11s  %s\n", "workspace (the step's peak)", "", "", "",
                bytes_human(e.workspace).c_str(), "transients of one moment, in no row");
  out << line;
  std::snprintf(line, sizeof line, "%-34s %5zu  %11s %11s %11s  %s per step, %s per GPU\n", "total", g.nodes.size(),
                seconds_human(compute_time(e.total)).c_str(), seconds_human(comm_time(e.total)).c_str(),
                bytes_human(e.total.memory()).c_str(), seconds_human(e.total.time()).c_str(), bytes_human(e.total.memory()).c_str());
  out << line;
}

void print_explanation_json(const StrategySpace& space, const std::vector<int>& assignment, const Explanation& e, bool by_node,
                            std::ostream& out) {
  const auto& g = space.graph();
  auto terms = [](const Breakdown& b) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    for (int i = 0; i < kTerms; ++i) {
      const Term t = static_cast<Term>(i);
      if (b[t] != 0) j[term_name(t) + (is_time_term(t) ? "_s" : "_bytes")] = b[t];
    }
    return j;
  };
  nlohmann::ordered_json j;
  j["rows_by"] = by_node ? "node" : "layer";
  j["rows"] = nlohmann::ordered_json::array();
  for (const ExplainRow& r : e.rows) {
    nlohmann::ordered_json row;
    row["name"] = r.name;
    row["nodes"] = nlohmann::ordered_json::array();
    for (int n : r.nodes) {
      row["nodes"].push_back({{"name", g.nodes[static_cast<size_t>(n)].name},
                              {"op", g.nodes[static_cast<size_t>(n)].op_type},
                              {"configuration", space.variables()[static_cast<size_t>(n)].configs[static_cast<size_t>(assignment[static_cast<size_t>(n)])].name},
                              {"does", describe_op(space, n, assignment[static_cast<size_t>(n)])}});
    }
    row["ops"] = {{"data_parallel", r.data_parallel}, {"tensor_parallel", r.tensor_parallel}, {"whole", r.replicated}, {"recomputed", r.recomputed}};
    row["parameters"] = {{"count", r.parameters}, {"zero2", r.zero2}, {"split", r.split_parameters}};
    row["time_s"] = r.terms.time();
    row["memory_bytes"] = r.terms.memory();
    row["terms"] = terms(r.terms);
    j["rows"].push_back(row);
  }
  j["workspace_bytes"] = e.workspace;
  j["time_s"] = e.total.time();
  j["memory_bytes"] = e.total.memory();
  j["terms"] = terms(e.total);
  out << j.dump(2) << "\n";
}

}  // namespace tensoropt::cli
