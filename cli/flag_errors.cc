#include "cli/flag_errors.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "graph/error.h"

namespace tensoropt::cli {
namespace {

const std::string kRangePrefix = std::string(kRangeValidator) + ": ";

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_flag_like(const std::string& arg) { return arg.size() > 1 && arg[0] == '-' && !std::isdigit(static_cast<unsigned char>(arg[1])) && arg[1] != '.'; }

// The subcommand the parse went into (the innermost), else the top-level App.
const CLI::App* command_of(const CLI::App& app) {
  const CLI::App* at = &app;
  for (std::vector<CLI::App*> subs = at->get_subcommands(); !subs.empty(); subs = at->get_subcommands()) at = subs.back();
  return at;
}

std::string command_words(const CLI::App& app, const CLI::App* cmd) { return cmd == &app ? "tensoropt" : "tensoropt " + cmd->get_name(); }

// How messages name an option: "--steps" (its first long name), "-b", or "MODEL" for a positional.
std::string display(const CLI::Option* o) {
  if (!o->get_lnames().empty()) return "--" + o->get_lnames().front();
  if (!o->get_snames().empty()) return "-" + o->get_snames().front();
  std::string name = o->get_name();
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

bool positional(const CLI::Option* o) { return o->get_lnames().empty() && o->get_snames().empty(); }

std::vector<std::string> flag_names(const CLI::App* cmd) {
  std::vector<std::string> names;
  for (const CLI::Option* o : cmd->get_options()) {
    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : o->get_snames()) names.push_back("-" + s);
  }
  return names;
}

const CLI::Option* option_named(const CLI::App* cmd, const std::string& name) {
  for (const CLI::Option* o : cmd->get_options()) {
    for (const std::string& l : o->get_lnames())
      if (name == "--" + l) return o;
    for (const std::string& s : o->get_snames())
      if (name == "-" + s) return o;
  }
  return nullptr;
}

// The long text of what `o` allows: our range validator's, else the option's own description.
std::string allowed(const CLI::Option* o) {
  for (int i = 0;; ++i) {
    try {
      const std::string& name = const_cast<CLI::Option*>(o)->get_validator(i)->get_name();
      if (name.rfind(kRangePrefix, 0) == 0) return name.substr(kRangePrefix.size());
    } catch (const CLI::OptionNotFound&) {
      break;
    }
  }
  return o->get_description();
}

// The option CLI11's message is about: it starts with the option's name, or holds it after
// "convert: " (ConversionError). nullptr when none of `cmd`'s.
const CLI::Option* option_in_message(const CLI::App* cmd, const std::string& what) {
  for (const CLI::Option* o : cmd->get_options()) {
    const std::string name = o->get_name();
    for (const std::string& lead : {name + ":", name + " ", "Could not convert: " + name + " "})
      if (what.rfind(lead, 0) == 0) return o;
  }
  return nullptr;
}

// An option that took a flag as its value (`--gpus --point 2`, where CLI11 gives --gpus the value
// "--point"): its value was left out. Only asked once the parse failed. "" when none did.
std::string swallowed_flag(const CLI::App* cmd) {
  for (const CLI::Option* o : cmd->get_options())
    for (const std::string& r : o->results())
      if (!positional(o) && o->get_expected_min() > 0 && r.size() > 2 && r.rfind("--", 0) == 0)
        return display(o) + ": got no value (the next argument, " + r + ", is a flag), expected " + allowed(o);
  return {};
}

// The subcommands other than `cmd` that have a flag `name`.
std::vector<std::string> commands_with_flag(const CLI::App& app, const CLI::App* cmd, const std::string& name) {
  std::vector<std::string> out;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (sub != cmd && option_named(sub, name)) out.push_back(sub->get_name());
  return out;
}

// An argument no option or subcommand took, first of all: an unknown flag (with the value after
// it), a misspelt subcommand or one argument too many. "" when every argument was taken.
std::string leftover(const CLI::App& app, const CLI::App* cmd) {
  const std::vector<std::string> rest = cmd->remaining();
  if (rest.empty()) return {};
  const std::string& first = rest.front();
  const std::string where = command_words(app, cmd);
  if (is_flag_like(first)) {
    const size_t eq = first.find('=');
    const std::string name = first.substr(0, eq);
    const std::string given = eq != std::string::npos ? first : rest.size() > 1 && !is_flag_like(rest[1]) ? first + " " + rest[1] : first;
    std::string msg = where + " has no flag " + name + " (given '" + given + "')";
    const std::vector<std::string> others = commands_with_flag(app, cmd, name);
    if (std::string near = nearest(name, flag_names(cmd)); !near.empty()) return msg + "; did you mean " + near + "?";
    if (cmd == &app && !others.empty()) return msg + "; it is a flag of " + join(others, ", ") + ": give it after the subcommand, e.g. tensoropt " + others.front() + " ... " + given;
    if (!others.empty()) return msg + "; " + join(others, ", ") + " take" + (others.size() == 1 ? "s" : "") + " it (see " + where + " --help)";
    return msg + "; see " + where + " --help";
  }
  if (cmd == &app) {
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
    const std::string near = nearest(first, names);
    return "no subcommand '" + first + "'" + (near.empty() ? "" : "; did you mean " + near + "?") + " (subcommands: " + join(names, ", ") + ")";
  }
  std::vector<std::string> takes;
  for (const CLI::Option* o : cmd->get_options())
    if (positional(o)) takes.push_back(display(o));
  return cmd->get_name() + ": unexpected argument '" + first + "' (" + cmd->get_name() +
         (takes.empty() ? " takes no arguments" : " takes " + join(takes, " ") + " and flags") + "; see " + where + " --help)";
}

}  // namespace

CLI::Validator number(double lo, double hi, bool hi_open) {
  auto fmt = [](double x) {
    std::string s = std::to_string(x);
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
    return s;
  };
  const std::string description = std::isinf(hi) ? "a number >= " + fmt(lo) : "a number >= " + fmt(lo) + " and " + (hi_open ? "< " : "<= ") + fmt(hi);
  CLI::Validator v(
      [=](std::string& text) -> std::string {
        std::string_view s = text;
        if (!s.empty() && s.front() == '+') s.remove_prefix(1);
        double value = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
        const bool ok = !s.empty() && ec == std::errc{} && end == s.data() + s.size() && std::isfinite(value) && value >= lo &&
                        (hi_open ? value < hi : value <= hi);
        return ok ? std::string{} : "got '" + text + "', expected " + description;
      },
      std::isinf(hi) ? ">=" + fmt(lo) : "[" + fmt(lo) + "," + fmt(hi) + (hi_open ? ")" : "]"), kRangePrefix + description);
  return v;
}

void require_ranges(const CLI::App& app) {
  std::vector<const CLI::App*> apps{&app};
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) apps.push_back(sub);
  for (const CLI::App* a : apps)
    for (const CLI::Option* o : a->get_options()) {
      const std::string type = o->get_type_name();
      if (type.rfind("INT", 0) != 0 && type.rfind("UINT", 0) != 0 && type.rfind("FLOAT", 0) != 0) continue;
      if (allowed(o) == o->get_description())
        internal_fault(__FILE__, __LINE__, a->get_name() + " " + display(o) + " takes a number but has no range: check it with cli::integer or cli::number");
    }
}

std::string explain_parse_error(const CLI::App& app, const CLI::ParseError& e) {
  const CLI::App* cmd = command_of(app);
  const std::string what = e.what();
  if (std::string s = swallowed_flag(cmd); !s.empty()) return s;
  if (std::string s = leftover(app, cmd); !s.empty()) return s;
  const CLI::Option* o = option_in_message(cmd, what);
  if (dynamic_cast<const CLI::RequiredError*>(&e)) {
    for (const CLI::Option* r : cmd->get_options())
      if (r->get_required() && r->count() == 0)
        return cmd->get_name() + ": " + display(r) + " is required: " + allowed(r) + " (see " + command_words(app, cmd) + " --help)";
  } else if (dynamic_cast<const CLI::ValidationError*>(&e)) {
    return what;  // "--steps: got '0', expected an integer >= 1" from our validators
  } else if (dynamic_cast<const CLI::ConversionError*>(&e) && o) {
    const std::string value = join(o->results(), " ");
    if (o->get_expected_max() == 0) return display(o) + ": got '" + value + "', expected no value (a switch: give " + display(o) + " alone)";
    return display(o) + ": got '" + value + "', expected " + allowed(o);
  } else if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) && o) {
    std::vector<std::string> given;
    for (const std::string& r : o->results()) given.push_back("'" + r + "'");
    if (given.size() > 1) return display(o) + ": given " + std::to_string(given.size()) + " times (" + join(given, ", ") + "), expected once";
    return display(o) + ": got no value, expected " + allowed(o);
  } else if (dynamic_cast<const CLI::ExcludesError*>(&e)) {
    return what + ": give one of them";
  }
  return what + " (see " + command_words(app, cmd) + " --help)";
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string nearest(std::string_view given, const std::vector<std::string>& candidates) {
  auto bare = [](std::string_view s) {
    while (!s.empty() && s.front() == '-') s.remove_prefix(1);
    return lower(s);
  };
  const std::string g = bare(given);
  std::string best;
  size_t best_distance = SIZE_MAX;
  for (const std::string& c : candidates) {
    const std::string b = bare(c);
    if (b.empty() || g.empty()) continue;
    const size_t d = edit_distance(g, b);
    const bool prefix = std::min(g.size(), b.size()) >= 3 && (b.rfind(g, 0) == 0 || g.rfind(b, 0) == 0);
    const bool near = (d <= 2 && d < g.size()) || prefix;
    if (near && d < best_distance) best = c, best_distance = d;
  }
  return best;
}

}  // namespace tensoropt::cli
