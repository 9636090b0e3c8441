#include "planner/gpu_counts.h"

#include <algorithm>
#include <cctype>

#include "graph/error.h"

namespace tensoropt::planner {
namespace {

constexpr int kMaxGpus = 65536;

int parse_count(const std::string& part, const std::string& spec) {
  if (part.empty() || part.size() > 6 || !std::all_of(part.begin(), part.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    throw InputError("--gpus: '" + part + "' in '" + spec + "' is not a GPU count (use N, N,M,... or LOW-HIGH)");
  }
  int n = std::stoi(part);
  if (n < 1 || n > kMaxGpus) throw InputError("--gpus: " + part + " is outside 1.." + std::to_string(kMaxGpus));
  return n;
}

}  // namespace

std::vector<int> parse_gpu_counts(const std::string& spec) {
  std::vector<int> out;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    std::string part = spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t dash = part.find('-');
    if (dash == std::string::npos) {
      out.push_back(parse_count(part, spec));
    } else {
      int lo = parse_count(part.substr(0, dash), spec), hi = parse_count(part.substr(dash + 1), spec);
      if (lo > hi) throw InputError("--gpus: range '" + part + "' runs backwards");
      for (long p = 1; p <= hi; p *= 2) {
        if (p >= lo) out.push_back(static_cast<int>(p));
      }
      out.push_back(lo);
      out.push_back(hi);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace tensoropt::planner
