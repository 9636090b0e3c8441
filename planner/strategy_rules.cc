#include "planner/strategy_rules.h"

#include <fnmatch.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "graph/error.h"

namespace tensoropt::planner {
namespace {

using nlohmann::ordered_json;

[[noreturn]] void bad(const std::string& where, const std::string& what) { throw InputError(where + ": " + what); }

bool glob(const std::string& pattern, const std::string& name) { return fnmatch(pattern.c_str(), name.c_str(), 0) == 0; }

SplitSpec parse_spec(const ordered_json& j, const std::string& where) {
  SplitSpec s;
  if (j.is_string()) {
    const std::string v = j.get<std::string>();
    if (v == "replicate") s.kind = SplitSpec::Kind::Replicate;
    else if (v == "batch") s.kind = SplitSpec::Kind::Batch;
    else if (v == "follow") s.kind = SplitSpec::Kind::Follow;
    else bad(where, "split '" + v + "' is not replicate, batch, follow, {\"dim\": NAME}, {\"axis\": K} or {\"weight_axis\": K}");
    return s;
  }
  if (!j.is_object() || j.size() != 1)
    bad(where, "a split is \"replicate\", \"batch\", \"follow\", {\"dim\": NAME}, {\"axis\": K} or {\"weight_axis\": K}, or a list of them (one per mesh axis)");
  const auto it = j.begin();
  if (it.key() == "dim" && it.value().is_string()) {
    s.kind = SplitSpec::Kind::Dim;
    s.dim = it.value().get<std::string>();
  } else if ((it.key() == "axis" || it.key() == "weight_axis") && it.value().is_number_integer()) {
    s.kind = it.key() == "axis" ? SplitSpec::Kind::Axis : SplitSpec::Kind::WeightAxis;
    s.axis = it.value().get<int>();
  } else {
    bad(where, "split " + j.dump() + " is not {\"dim\": NAME}, {\"axis\": K} or {\"weight_axis\": K}");
  }
  return s;
}

// One spec (for every mesh axis) or a list of them (one per axis).
std::vector<SplitSpec> parse_split(const ordered_json& j, const std::string& where) {
  std::vector<SplitSpec> out;
  if (!j.is_array()) {
    out.push_back(parse_spec(j, where));
    return out;
  }
  if (j.empty()) bad(where, "a split list needs one spec per mesh axis");
  for (const auto& e : j) {
    out.push_back(parse_spec(e, where));
    if (out.back().kind == SplitSpec::Kind::Follow) bad(where, "\"follow\" takes the whole layout: give it alone, not in a list");
  }
  return out;
}

std::string text_field(const ordered_json& r, const char* key, const std::string& where) {
  if (!r.at(key).is_string()) bad(where, std::string("'") + key + "' must be a string");
  return r.at(key).get<std::string>();
}

StrategyRule parse_rule(const ordered_json& r, size_t i, const std::string& path) {
  StrategyRule rule;
  rule.text = "rules[" + std::to_string(i) + "] " + r.dump();
  const std::string where = path + ": rules[" + std::to_string(i) + "]";
  if (!r.is_object()) bad(where, "must be an object like {\"match\": \"/h.*/attn/*\", \"op\": \"MatMul\", \"split\": {\"axis\": 1}}");
  for (auto it = r.begin(); it != r.end(); ++it) {
    static const std::vector<std::string> keys = {"kind", "match", "op", "reads", "split", "recompute", "zero"};
    if (std::find(keys.begin(), keys.end(), it.key()) == keys.end())
      bad(where, "unknown key '" + it.key() + "' (a rule has kind, match, op, reads, split, recompute, zero)");
  }
  if (r.contains("kind")) {
    const std::string k = text_field(r, "kind", where);
    if (k == "op") rule.kind = VarKind::Op;
    else if (k == "param") rule.kind = VarKind::Parameter;
    else if (k == "input") rule.kind = VarKind::Input;
    else if (k == "tensor") rule.kind = VarKind::Tensor;
    else bad(where, "kind '" + k + "' is not op, param, input or tensor");
  }
  if (r.contains("match")) rule.match = text_field(r, "match", where);
  if (r.contains("op")) rule.op_type = text_field(r, "op", where);
  if (r.contains("reads")) rule.reads = text_field(r, "reads", where);
  if (rule.kind != VarKind::Op && (rule.op_type || rule.reads)) bad(where, "'op' and 'reads' select ops only");
  if (!r.contains("split")) bad(where, "missing field 'split'");
  rule.split = parse_split(r.at("split"), where);
  if (r.contains("recompute")) {
    if (!r.at("recompute").is_boolean()) bad(where, "'recompute' must be true or false");
    if (rule.kind != VarKind::Op) bad(where, "'recompute' is for ops");
    rule.recompute = r.at("recompute").get<bool>();
  }
  if (r.contains("zero")) {
    if (!r.at("zero").is_number_integer() || (r.at("zero").get<int>() != 0 && r.at("zero").get<int>() != 2)) bad(where, "'zero' must be 0 or 2");
    if (rule.kind != VarKind::Parameter) bad(where, "'zero' is for parameters (\"kind\": \"param\")");
    rule.zero = r.at("zero").get<int>();
  }
  for (const SplitSpec& s : rule.split) {
    const bool op_only = s.kind == SplitSpec::Kind::Dim || s.kind == SplitSpec::Kind::WeightAxis;
    if (rule.kind == VarKind::Op && s.kind == SplitSpec::Kind::Follow) bad(where, "\"follow\" is for parameters, inputs and tensors, not ops");
    if (rule.kind != VarKind::Op && op_only) bad(where, "'dim' and 'weight_axis' split ops; a parameter, input or tensor takes {\"axis\": K}");
  }
  return rule;
}

// The bare name a rule's "match" sees.
std::string bare_name(const StrategySpace& space, const Variable& v) {
  if (v.kind != VarKind::Op) return space.graph().tensors[static_cast<size_t>(v.tensor)].name;
  const Node& n = space.graph().nodes[static_cast<size_t>(v.node)];
  if (!n.name.empty()) return n.name;
  std::string name = "#";  // appended: "#" + std::string&& trips GCC 12's false -Wrestrict at -O3
  return name.append(std::to_string(v.node));
}

bool selects(const StrategyRule& r, const StrategySpace& space, const Variable& v) {
  if (v.kind != r.kind) return false;
  if (r.match && !glob(*r.match, bare_name(space, v))) return false;
  if (v.kind != VarKind::Op) return true;
  const Graph& g = space.graph();
  const Node& n = g.nodes[static_cast<size_t>(v.node)];
  if (r.op_type && n.op_type != *r.op_type) return false;
  if (r.reads) {
    const bool any = std::any_of(n.inputs.begin(), n.inputs.end(), [&](int t) {
      return t >= 0 && g.tensors[static_cast<size_t>(t)].kind == TensorKind::Parameter && glob(*r.reads, g.tensors[static_cast<size_t>(t)].name);
    });
    if (!any) return false;
  }
  return true;
}

std::string config_list(const Variable& v) {
  std::string s;
  for (const VarConfig& c : v.configs) s += (s.empty() ? "" : ", ") + c.name;
  return s;
}

// What a variable is called in messages: "node '/h.0/attn/MatMul' (MatMul)", "parameter 'fc.weight'".
std::string subject(const StrategySpace& space, const Variable& v) {
  if (v.kind == VarKind::Op) {
    const Node& n = space.graph().nodes[static_cast<size_t>(v.node)];
    return "node '" + bare_name(space, v) + "' (" + n.op_type + ")";
  }
  const char* kind = v.kind == VarKind::Parameter ? "parameter '" : v.kind == VarKind::Input ? "input '" : "tensor '";
  return kind + bare_name(space, v) + "'";
}

// Resolving one variable under one rule (or the default); `who` opens every message.
struct Resolver {
  const StrategySpace& space;
  const std::vector<int>& assignment;  // ops already resolved, for "follow"

  [[noreturn]] void refuse(const std::string& who, const Variable& v, const std::string& why) const {
    throw InputError(who + ": " + subject(space, v) + " " + why + " on mesh " + space.mesh().str() + "; its configurations: " + config_list(v));
  }

  static int wrap(int axis, int rank) { return axis < 0 ? axis + rank : axis; }

  // The iteration dim a spec asks an op to split on one mesh axis, -1 for none.
  int op_dim(const std::string& who, const Variable& v, const SplitSpec& s) const {
    const Graph& g = space.graph();
    const Node& n = g.nodes[static_cast<size_t>(v.node)];
    switch (s.kind) {
      case SplitSpec::Kind::Replicate:
        return -1;
      case SplitSpec::Kind::Batch:
        for (size_t d = 0; d < v.space.dims.size(); ++d)
          if (v.space.dims[d].role == DimRole::Batch) return static_cast<int>(d);
        return -1;
      case SplitSpec::Kind::Dim: {
        std::string dims;
        for (size_t d = 0; d < v.space.dims.size(); ++d) {
          if (v.space.dims[d].name == s.dim) return static_cast<int>(d);
          dims += (dims.empty() ? "" : ", ") + v.space.dims[d].name;
        }
        refuse(who, v, "has no dim '" + s.dim + "' (its dims: " + dims + ")");
      }
      case SplitSpec::Kind::Axis:
      case SplitSpec::Kind::WeightAxis: {
        int slot = 0;
        std::string what = "output";
        const std::vector<std::vector<int>>* maps = &v.space.outputs;
        if (s.kind == SplitSpec::Kind::WeightAxis) {
          maps = &v.space.inputs;
          slot = -1;
          for (size_t i = 0; i < n.inputs.size() && slot < 0; ++i)
            if (n.inputs[i] >= 0 && g.tensors[static_cast<size_t>(n.inputs[i])].kind == TensorKind::Parameter) slot = static_cast<int>(i);
          if (slot < 0) refuse(who, v, "reads no parameter, so it has no weight_axis");
          what = "weight '" + g.tensors[static_cast<size_t>(n.inputs[static_cast<size_t>(slot)])].name + "'";
        }
        const std::vector<int>& map = maps->at(static_cast<size_t>(slot));
        const int a = wrap(s.axis, static_cast<int>(map.size()));
        if (a < 0 || a >= static_cast<int>(map.size()))
          refuse(who, v, "has no " + what + " axis " + std::to_string(s.axis) + " (its " + what + " has " + std::to_string(map.size()) + ")");
        if (map[static_cast<size_t>(a)] < 0) refuse(who, v, "cannot split " + what + " axis " + std::to_string(s.axis) + " (no dim of its own)");
        return map[static_cast<size_t>(a)];
      }
      case SplitSpec::Kind::Follow:
        break;
    }
    throw InternalError("follow on an op");
  }

  int op_config(const std::string& who, const Variable& v, const std::vector<SplitSpec>& split, bool recompute) const {
    const int axes = space.mesh().ndim();
    std::vector<int> want(static_cast<size_t>(axes));
    for (int a = 0; a < axes; ++a) want[static_cast<size_t>(a)] = op_dim(who, v, split[split.size() == 1 ? 0 : static_cast<size_t>(a)]);
    for (size_t k = 0; k < v.configs.size(); ++k) {
      const VarConfig& c = v.configs[k];
      if (c.recompute == recompute && v.op_configs[static_cast<size_t>(c.op_config)].axis_dim == want) return static_cast<int>(k);
    }
    std::string asked;
    for (int a = 0; a < axes; ++a) {
      const int d = want[static_cast<size_t>(a)];
      asked += (a ? ", " : "") + std::string("mesh axis ") + std::to_string(a) + " " +
               (d < 0 ? std::string("replicates") : "splits " + v.space.dims[static_cast<size_t>(d)].name);
    }
    refuse(who, v, "has no configuration where " + asked + (recompute ? " with recompute" : ""));
  }

  // The layout "follow" gives a parameter, input or tensor variable.
  Layout followed(const std::string& who, const Variable& v) const {
    const auto op_of = [&](int var) -> const OpConfig& {
      const Variable& op = space.variables()[static_cast<size_t>(var)];
      return op.op_configs[static_cast<size_t>(op.configs[static_cast<size_t>(assignment[static_cast<size_t>(var)])].op_config)];
    };
    const Tensor& t = space.graph().tensors[static_cast<size_t>(v.tensor)];
    if (v.kind == VarKind::Tensor) {
      const Node& p = space.graph().nodes[static_cast<size_t>(t.producer)];
      const size_t slot = static_cast<size_t>(std::find(p.outputs.begin(), p.outputs.end(), v.tensor) - p.outputs.begin());
      return op_of(t.producer).outputs.at(slot);  // node n is variable n
    }
    const int self = space.find_variable(v.name);
    for (const Link& l : space.links()) {
      if (l.from != self || space.variables()[static_cast<size_t>(l.to)].kind != VarKind::Op) continue;
      Layout in = op_of(l.to).inputs.at(static_cast<size_t>(l.to_slot));
      for (int a = 0; a < in.size(); ++a)
        if (in[a].is_partial()) in = in.with(a, Placement::replicate());
      return in;
    }
    refuse(who, v, "has no reader to follow");
  }

  Layout layout(const std::string& who, const Variable& v, const std::vector<SplitSpec>& split) const {
    if (split.front().kind == SplitSpec::Kind::Follow) return followed(who, v);
    const Tensor& t = space.graph().tensors[static_cast<size_t>(v.tensor)];
    const int rank = static_cast<int>(t.shape.size());
    std::vector<Placement> p;
    for (int a = 0; a < space.mesh().ndim(); ++a) {
      const SplitSpec& s = split[split.size() == 1 ? 0 : static_cast<size_t>(a)];
      int d = -1;
      if (s.kind == SplitSpec::Kind::Batch && v.kind != VarKind::Parameter) d = t.batch_axis;
      if (s.kind == SplitSpec::Kind::Axis) {
        d = wrap(s.axis, rank);
        if (d < 0 || d >= rank) refuse(who, v, "has no axis " + std::to_string(s.axis) + " (its shape has " + std::to_string(rank) + ")");
      }
      p.push_back(d < 0 ? Placement::replicate() : Placement::shard(d));
    }
    return Layout(std::move(p));
  }

  int data_config(const std::string& who, const Variable& v, const std::vector<SplitSpec>& split, int zero) const {
    const Layout l = layout(who, v, split);
    for (size_t k = 0; k < v.configs.size(); ++k)
      if (v.configs[k].layout == l && v.configs[k].zero == zero) return static_cast<int>(k);
    refuse(who, v, "has no configuration " + l.str() + (zero ? " zero-2" : ""));
  }
};

}  // namespace

StrategyRules parse_strategy_rules(const ordered_json& j, const std::string& path) {
  StrategyRules r;
  r.where = path;
  if (j.contains("rules")) {
    const ordered_json& rules = j.at("rules");
    if (!rules.is_array()) bad(path, "'rules' must be a list of rules");
    for (size_t i = 0; i < rules.size(); ++i) r.rules.push_back(parse_rule(rules[i], i, path));
  }
  if (j.contains("default")) {
    r.default_split = parse_split(j.at("default"), path + ": default");
    for (const SplitSpec& s : *r.default_split)
      if (s.kind == SplitSpec::Kind::Follow) bad(path + ": default", "\"follow\" is for parameters, inputs and tensors, which follow by default");
  }
  return r;
}

std::vector<int> resolve_rules(const StrategyRules& r, const StrategySpace& space) {
  const std::vector<Variable>& vars = space.variables();
  const int axes = space.mesh().ndim();
  const auto check_axes = [&](const std::vector<SplitSpec>& split, const std::string& who) {
    if (split.size() != 1 && static_cast<int>(split.size()) != axes)
      bad(who, "the split lists " + std::to_string(split.size()) + " specs, and mesh " + space.mesh().str() + " has " + std::to_string(axes) + " axes");
  };
  for (const StrategyRule& rule : r.rules) check_axes(rule.split, r.where + ": " + rule.text);
  if (r.default_split) check_axes(*r.default_split, r.where + ": default");
  // Which rule configures each variable (-1: none), and per rule whether it selects any.
  std::vector<int> rule_of(vars.size(), -1);
  std::vector<int> selected(r.rules.size(), 0), taken_by(r.rules.size(), -1);
  for (size_t v = 0; v < vars.size(); ++v) {
    for (size_t i = 0; i < r.rules.size(); ++i) {
      if (!selects(r.rules[i], space, vars[v])) continue;
      ++selected[i];
      if (rule_of[v] < 0) rule_of[v] = static_cast<int>(i);
      else if (taken_by[i] < 0) taken_by[i] = rule_of[v];
    }
  }
  for (size_t i = 0; i < r.rules.size(); ++i) {
    const std::string who = r.where + ": " + r.rules[i].text;
    if (selected[i] == 0) bad(who, "matches no variable of the model's strategy space (names as plan --dump-space lists them)");
    if (std::find(rule_of.begin(), rule_of.end(), static_cast<int>(i)) == rule_of.end())
      bad(who, "configures nothing: every variable it matches took an earlier rule (rules[" + std::to_string(taken_by[i]) + "])");
  }
  std::vector<int> a(vars.size(), -1);
  const Resolver resolver{space, a};
  // Ops first: "follow" reads their choices.
  int unruled = 0;
  std::string first;
  for (size_t v = 0; v < vars.size(); ++v) {
    if (vars[v].kind != VarKind::Op) continue;
    const int i = rule_of[v];
    if (i < 0 && !r.default_split) {
      if (unruled++ == 0) first = subject(space, vars[v]);
      continue;
    }
    const std::string who = r.where + ": " + (i >= 0 ? r.rules[static_cast<size_t>(i)].text : std::string("default"));
    a[v] = i >= 0 ? resolver.op_config(who, vars[v], r.rules[static_cast<size_t>(i)].split, r.rules[static_cast<size_t>(i)].recompute)
                  : resolver.op_config(who, vars[v], *r.default_split, false);
  }
  if (unruled)
    bad(r.where, std::to_string(unruled) + (unruled == 1 ? " op matches" : " ops match") + " no rule and there is no \"default\", the first " + first);
  const std::vector<SplitSpec> follow{SplitSpec{SplitSpec::Kind::Follow, "", 0}};
  for (size_t v = 0; v < vars.size(); ++v) {
    if (vars[v].kind == VarKind::Op) continue;
    const int i = rule_of[v];
    const std::string who = r.where + ": " + (i >= 0 ? r.rules[static_cast<size_t>(i)].text : std::string("follow (no rule)"));
    a[v] = i >= 0 ? resolver.data_config(who, vars[v], r.rules[static_cast<size_t>(i)].split, r.rules[static_cast<size_t>(i)].zero)
                  : resolver.data_config(who, vars[v], follow, 0);
  }
  return a;
}

}  // namespace tensoropt::planner
