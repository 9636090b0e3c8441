#include "cli/format.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "graph/error.h"

namespace tensoropt::cli {

std::string seconds_human(double s) {
  char buf[64];
  if (s >= 1) std::snprintf(buf, sizeof buf, "%.3f s", s);
  else if (s >= 1e-3) std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
  else std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  return buf;
}

double parse_bytes(const std::string& text, const std::string& flag) {
  const char* begin = text.c_str();
  char* end = nullptr;
  double v = std::strtod(begin, &end);
  std::string unit(end);
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  static const struct {
    const char* name;
    double factor;
  } units[] = {{"", 1},         {"B", 1},           {"KB", 1e3},           {"MB", 1e6},
               {"GB", 1e9},     {"TB", 1e12},       {"KiB", 1024.0},       {"MiB", 1048576.0},
               {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  if (end != begin && std::isfinite(v) && v > 0) {
    for (const auto& u : units)
      if (unit == u.name) return v * u.factor;
  }
  throw InputError(flag + ": '" + text + "' is not a size (e.g. 60GiB, 512MiB, 80GB, or bytes)");
}

}  // namespace tensoropt::cli
