#include "graph/units.h"

#include <cmath>
#include <cstdio>

namespace tensoropt {

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}
namespace {

// v in the largest of `units` (each `base` times the last) that keeps it at least 1; whole in the first.
std::string scaled(double v, double base, const char* const* units, int count) {
  int u = 0;
  while (std::fabs(v) >= base && u + 1 < count) {
    v /= base;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
  return buf;
}

}  // namespace

std::string bytes_human(double bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  return scaled(bytes, 1024, units, 5);
}

std::string flops_human(double flops) {
  static const char* const units[] = {"FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP"};
  return scaled(flops, 1000, units, 6);
}

std::string share_percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g%%", 100 * fraction);
  return buf;
}

std::string count_of(int64_t n, const std::string& noun, const std::string& plural) {
  return std::to_string(n) + " " + (n == 1 ? noun : plural.empty() ? noun + "s" : plural);
}

}  // namespace tensoropt
