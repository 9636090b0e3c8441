// A one-line description of a strategy for tables and plan files, such as
// "DP2 x TP4, recompute 12 ops, ZeRO-2 on 140/148 params" or "DP4 (TP 31%) x DP2, ZeRO-2".
//
// Each mesh axis is named by what the op FLOPs on it mostly do: DP when the batch dim is split, TP
// when any other dim is (Megatron column/row splits, channels, heads, sequence), "rep" when most
// work is replicated along it (FLOP-weighted majority per axis). Any other kind of split on the
// axis follows in parentheses with its share of the axis's FLOPs ("<1%" when under one percent),
// so every kind of split a point uses is named; replicated minorities are not listed.
// Pure function; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "planner/space/space.h"

namespace tensoropt::planner {

struct StrategyCounts {
  std::vector<std::string> axis_roles;  // per mesh axis: "DP", "TP" or "rep"
  std::vector<std::string> axis_minor;  // per mesh axis: the other splits, "TP 31%", or ""
  int recomputed_ops = 0;
  int parameters = 0;
  int zero2 = 0;  // parameters at ZeRO level 2
};

StrategyCounts count_strategy(const StrategySpace& space, const std::vector<int>& assignment);
std::string summarize_strategy(const StrategySpace& space, const std::vector<int>& assignment);

}  // namespace tensoropt::planner
