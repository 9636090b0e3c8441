// Flag errors a user can read: what CLI11 reports about a command line (an unknown flag, a value
// out of range or not a number, a missing value or argument), rewritten as one line that names the
// flag, the value given and what is allowed, with the nearest valid flag or subcommand for a
// misspelt one.
//
// Numbers: every option that takes one checks it with `integer` or `number` below, never with
// CLI11's range validators (whose bounds print as 309-digit doubles). `require_ranges` holds that
// for every option of an App, so a new numeric flag without a range fails the first run of the
// binary (InternalError, with file and line) instead of reaching a user with CLI11's text.
//
// explain_parse_error looks at the App after a failed parse, not at CLI11's wording, wherever it
// can: an argument nobody took (unknown flag, misspelt subcommand, extra positional) is reported
// first, before a "required" error it caused (`plan m.onnx --gpu 8` names --gpu, not --gpus).
// Pure functions of their arguments; not thread-safe with a parse of the same App.
#pragma once

#include <CLI/CLI.hpp>

#include <charconv>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace tensoropt::cli {

// The validators below are named "tensoropt-range: <what is allowed>": `require_ranges` looks for
// the name, and messages quote what follows it, while --help shows the short description (">=1").
inline constexpr const char* kRangeValidator = "tensoropt-range";

// A validator of integers in [lo, hi] written in decimal (an optional '+'; no leading zero, which
// CLI11 would read as octal). Refuses with "got '0', expected an integer >= 1" (or "from 1 to 3",
// or "... (at most 2147483647)" past T's range).
template <class T>
CLI::Validator integer(T lo, T hi = std::numeric_limits<T>::max()) {
  static_assert(std::is_integral_v<T>);
  std::string description = hi == std::numeric_limits<T>::max() ? "an integer >= " + std::to_string(lo)
                            : lo == hi                            ? "the integer " + std::to_string(lo)
                                                                  : "an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
  CLI::Validator v(
      [lo, hi, description](std::string& text) -> std::string {
        std::string_view s = text;
        if (!s.empty() && s.front() == '+') s.remove_prefix(1);
        T value{};
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
        if (ec == std::errc::result_out_of_range && end == s.data() + s.size() && !s.empty())
          return "got '" + text + "', expected " + description + " (at most " + std::to_string(hi) + ")";
        if (s.size() > 1 && s.front() == '0') return "got '" + text + "', expected " + description + " (in decimal, without leading zeros)";
        if (s.empty() || ec != std::errc{} || end != s.data() + s.size() || value < lo || value > hi)
          return "got '" + text + "', expected " + description;
        return {};
      },
      hi == std::numeric_limits<T>::max() ? ">=" + std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi),
      std::string(kRangeValidator) + ": " + description);
  return v;
}

// A validator of finite numbers x (decimal or scientific, an optional '+') with lo <= x, and x < hi
// (`hi_open`) or x <= hi; hi = infinity for no upper bound. Refuses with "got 'abc', expected a number >= 0" (or ">= 0 and < 1").
CLI::Validator number(double lo, double hi = std::numeric_limits<double>::infinity(), bool hi_open = false);

// Throws InternalError naming the first option of `app` or of its subcommands that takes a number
// (CLI11 type INT, UINT or FLOAT) without one of the validators above.
void require_ranges(const CLI::App& app);

// The one line (no "tensoropt: error: " prefix, no newline) that explains `e`, thrown by
// app.parse(). `app` is the top-level App as the failed parse left it.
std::string explain_parse_error(const CLI::App& app, const CLI::ParseError& e);

// Levenshtein distance, and the candidate nearest to `given` when it is near enough to be a
// likely misspelling ("" otherwise): at most 2 edits, or one a prefix of the other.
size_t edit_distance(std::string_view a, std::string_view b);
std::string nearest(std::string_view given, const std::vector<std::string>& candidates);

}  // namespace tensoropt::cli
