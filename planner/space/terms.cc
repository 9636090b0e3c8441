#include "planner/space/terms.h"

#include "graph/error.h"

namespace tensoropt::planner {

Term comm_term(Purpose p, StepKind k) {
  TO_CHECK(is_collective(k));
  return static_cast<Term>(static_cast<int>(Term::CommFirst) + static_cast<int>(p) * 4 + static_cast<int>(k));
}

bool is_time_term(Term t) { return t <= Term::CommLast; }

std::string term_name(Term t) {
  switch (t) {
    case Term::ComputeForward: return "compute_forward";
    case Term::ComputeBackward: return "compute_backward";
    case Term::Recompute: return "recompute";
    case Term::OptimizerStep: return "optimizer_step";
    case Term::Weights: return "weights";
    case Term::Gradients: return "gradients";
    case Term::OptimizerState: return "optimizer_state";
    case Term::Activations: return "activations";
    case Term::DataInputs: return "data_inputs";
    case Term::Buffers: return "buffers_and_constants";
    case Term::Workspace: return "workspace";
    default: break;
  }
  int i = static_cast<int>(t) - static_cast<int>(Term::CommFirst);
  TO_CHECK(i >= 0 && i < 12);
  static const char* purposes[] = {"forward", "backward", "gradient_sync"};
  static const char* kinds[] = {"all_gather", "reduce_scatter", "all_reduce", "all_to_all"};
  return std::string("comm_") + purposes[i / 4] + "_" + kinds[i % 4];
}

Breakdown& Breakdown::operator+=(const Breakdown& o) {
  for (size_t i = 0; i < v.size(); ++i) v[i] += o.v[i];
  return *this;
}

double Breakdown::time() const {
  double s = 0;
  for (int i = 0; i < kTerms; ++i)
    if (is_time_term(static_cast<Term>(i))) s += v[static_cast<size_t>(i)];
  return s;
}

double Breakdown::memory() const {
  double s = 0;
  for (int i = 0; i < kTerms; ++i)
    if (!is_time_term(static_cast<Term>(i))) s += v[static_cast<size_t>(i)];
  return s;
}

}  // namespace tensoropt::planner
