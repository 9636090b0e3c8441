#include "planner/sharding_json.h"

#include <unordered_map>

#include "graph/error.h"

namespace tensoropt::planner {
namespace {

using nlohmann::ordered_json;

[[noreturn]] void bad(const std::string& where, const std::string& what) { throw InputError(where + ": " + what); }

int index_in(const ordered_json& j, size_t size, const std::string& where) {
  if (!j.is_number_integer() || j.get<int64_t>() < 0 || j.get<int64_t>() >= static_cast<int64_t>(size)) {
    bad(where, "a sharding entry " + j.dump() + " is not an index below " + std::to_string(size));
  }
  return j.get<int>();
}

bool flag(const ordered_json& j, const std::string& where) {
  if (!j.is_number_integer() || (j.get<int>() != 0 && j.get<int>() != 1)) bad(where, "a sharding flag " + j.dump() + " is not 0 or 1");
  return j.get<int>() == 1;
}

}  // namespace

void add_sharding_json(ordered_json& space, const ShardingTable& table) {
  std::vector<Layout> layouts;
  std::unordered_map<Layout, int> ids;
  const auto id = [&](const Layout& l) {
    const auto [it, added] = ids.emplace(l, static_cast<int>(layouts.size()));
    if (added) layouts.push_back(l);
    return it->second;
  };
  ordered_json& vars = space.at("variables");
  TO_CHECK(vars.size() == table.variables.size());
  for (size_t v = 0; v < vars.size(); ++v) {
    const ShardingVariable& sv = table.variables[v];
    ordered_json choices = ordered_json::array();
    for (const ShardingChoice& c : sv.choices) {
      if (sv.node >= 0) {
        ordered_json in = ordered_json::array(), out = ordered_json::array();
        for (const Layout& l : c.in) in.push_back(id(l));
        for (const Layout& l : c.out) out.push_back(id(l));
        choices.push_back(ordered_json::array({in, out, c.recompute ? 1 : 0}));
      } else {
        choices.push_back(ordered_json::array({id(c.layout), c.zero ? 1 : 0}));
      }
    }
    if (sv.node >= 0) vars[v]["node"] = sv.node;
    else vars[v]["tensor"] = sv.tensor;
    vars[v]["sharding"] = std::move(choices);
  }
  ordered_json names = ordered_json::array();
  for (const Layout& l : layouts) names.push_back(l.str());
  space["layouts"] = std::move(names);
}

std::optional<ShardingTable> read_sharding_json(const ordered_json& space, const std::string& where) {
  if (!space.contains("layouts")) return std::nullopt;
  const std::string at = where + ": spaces[].layouts";
  std::vector<Layout> layouts;
  for (const ordered_json& name : space.at("layouts")) {
    std::optional<Layout> l = name.is_string() ? parse_layout(name.get<std::string>()) : std::nullopt;
    if (!l) bad(at, name.dump() + " is not a layout such as \"[S(0),R]\"");
    layouts.push_back(*l);
  }
  ShardingTable table;
  table.mesh_axes = static_cast<int>(space.at("shape").size());
  for (const ordered_json& var : space.at("variables")) {
    const std::string vw = where + ": variable " + var.at("name").dump();
    ShardingVariable sv;
    if (var.contains("node")) sv.node = var.at("node").get<int>();
    else if (var.contains("tensor")) sv.tensor = var.at("tensor").get<int>();
    else bad(vw, "has neither 'node' nor 'tensor'");
    const ordered_json& choices = var.at("sharding");
    if (!choices.is_array() || choices.size() != var.at("configs").size()) bad(vw, "needs one 'sharding' entry per configuration");
    for (const ordered_json& c : choices) {
      ShardingChoice choice;
      if (!c.is_array() || c.size() != (sv.node >= 0 ? 3u : 2u)) bad(vw, "a sharding entry " + c.dump() + " has the wrong form");
      if (sv.node >= 0) {
        for (const ordered_json& i : c.at(0)) choice.in.push_back(layouts[static_cast<size_t>(index_in(i, layouts.size(), vw))]);
        for (const ordered_json& i : c.at(1)) choice.out.push_back(layouts[static_cast<size_t>(index_in(i, layouts.size(), vw))]);
        choice.recompute = flag(c.at(2), vw);
      } else {
        choice.layout = layouts[static_cast<size_t>(index_in(c.at(0), layouts.size(), vw))];
        choice.zero = flag(c.at(1), vw);
      }
      sv.choices.push_back(std::move(choice));
    }
    table.variables.push_back(std::move(sv));
  }
  return table;
}

}  // namespace tensoropt::planner
