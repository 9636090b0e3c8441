#include "launcher/train/settings.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>

#include "graph/error.h"

namespace tensoropt {

int kernel_threads(const TrainSettings& s, int workers) {
  if (s.threads > 0) return s.threads;
  if (const char* omp = std::getenv("OMP_NUM_THREADS"); omp && *omp) {
    char* end = nullptr;
    const long n = std::strtol(omp, &end, 10);
    if (*end != '\0' || n < 1 || n > 4096) {
      throw InputError(std::string("OMP_NUM_THREADS=") + omp + ": expected a positive number of threads (or unset: every core)");
    }
    return static_cast<int>(n);
  }
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, workers));
}

}  // namespace tensoropt
