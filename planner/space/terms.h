// The vocabulary of a strategy's cost: every term it is made of (Term), seconds first, then bytes,
// and a Breakdown, one value per term. The strategy space (planner/space/space.h) produces them,
// one per variable configuration and per link configuration pair; the plan file, `evaluate` and
// the runtime's measured-against-predicted report print them by term_name().
//
// Communication terms are one per purpose (forward, backward, gradient synchronisation) and
// collective kind (planner/parallel/redistribute.h StepKind), in Purpose then StepKind order.
// Thread-safety: plain values and pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "planner/parallel/redistribute.h"

namespace tensoropt::planner {

enum class Purpose : uint8_t { Forward, Backward, Gradient };

// Every term of a cost, seconds first, then bytes.
enum class Term : uint8_t {
  ComputeForward, ComputeBackward, Recompute, OptimizerStep,
  // communication: 3 purposes x 4 collective kinds, in Purpose then StepKind order
  CommFirst, CommLast = CommFirst + 11,
  Weights, Gradients, OptimizerState, Activations, DataInputs, Buffers, Workspace,
  Count
};
inline constexpr int kTerms = static_cast<int>(Term::Count);
Term comm_term(Purpose p, StepKind k);  // REQUIRES: is_collective(k)
std::string term_name(Term t);          // "compute_forward", "comm_backward_all_gather", "weights", ...
bool is_time_term(Term t);

struct Breakdown {
  std::array<double, kTerms> v{};
  double& operator[](Term t) { return v[static_cast<size_t>(t)]; }
  double operator[](Term t) const { return v[static_cast<size_t>(t)]; }
  Breakdown& operator+=(const Breakdown& o);
  double time() const;    // sum of the time terms
  double memory() const;  // sum of the memory terms
};

}  // namespace tensoropt::planner
