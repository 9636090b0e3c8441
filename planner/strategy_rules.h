// A readable strategy: ordered rules over node and parameter names that choose one configuration
// for every variable of a strategy space (docs/plan-format.md "Rules"), the hand-written
// alternative to naming a configuration per variable.
//
// Contract.
//   A rule selects variables of one kind ("op" unless it says "kind": "param", "input" or
//   "tensor") by a glob over the bare name ("match": the node name of an op, "#<index>" when
//   unnamed; the tensor name of the others), an op type ("op") and, for ops, a glob over the
//   parameters the op reads ("reads"); an absent filter selects all. Rules are tried in order and
//   the first that selects a variable configures it.
//   "split" says what each mesh axis does, one spec for every axis or a list with one per axis:
//     "replicate"                     the axis splits nothing (a tensor: R)
//     "batch"                         an op's batch dim (an op without one replicates); a tensor's or
//                                     input's batch axis (none: R); a parameter stays whole (R)
//     {"dim": "n"}                    an op's iteration dim by its catalogue name
//     {"axis": k}                     an op: the dim of its first output's axis k; a tensor: S(k)
//     {"weight_axis": k}              an op: the dim of axis k of the first parameter it reads
//     "follow"                        parameters, inputs and tensors only, for every axis: the layout
//                                     the first reader's configuration asks for (partial sums: R), or
//                                     the producer's output layout for a tensor
//   (k < 0 counts from the end.) Ops may add "recompute": true, parameters "zero": 2.
//   Ops no rule selects take "default" (a split, as above); parameters, inputs and tensors no rule
//   selects follow.
// Guarantees: resolve_rules returns exactly one configuration index per variable, or throws
//   InputError (one line) naming the file and: the rule (rules[i], as written) that selects no
//   variable or only variables earlier rules took; the rule, node or tensor and the configurations
//   it could take when the named split is not one of them; the first op no rule selects when there
//   is no default. A rule is never silently ignored, and no variable is guessed.
// Thread-safety: plain values and pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "planner/space/space.h"

namespace tensoropt::planner {

struct SplitSpec {
  enum class Kind : uint8_t { Replicate, Batch, Dim, Axis, WeightAxis, Follow };
  Kind kind = Kind::Replicate;
  std::string dim;  // Kind::Dim
  int axis = 0;     // Kind::Axis, Kind::WeightAxis
};

struct StrategyRule {
  VarKind kind = VarKind::Op;
  std::optional<std::string> match, op_type, reads;  // globs (op_type: exact)
  std::vector<SplitSpec> split;  // one for every mesh axis, or one per axis
  bool recompute = false;        // ops
  int zero = 0;                  // parameters: 0 or 2
  std::string text;              // "rules[2] {...}", as written, for messages
};

struct StrategyRules {
  std::vector<StrategyRule> rules;
  std::optional<std::vector<SplitSpec>> default_split;  // for ops no rule selects
  std::string where;                                   // the file
};

// The "rules" and "default" of a strategy file `j` (REQUIRES: j is an object). InputError naming
// `path` and the rule for anything malformed (an unknown key, a split that is no spec).
StrategyRules parse_strategy_rules(const nlohmann::ordered_json& j, const std::string& path);

// One configuration index per variable of `space`, as the contract above says.
std::vector<int> resolve_rules(const StrategyRules& r, const StrategySpace& space);

}  // namespace tensoropt::planner
