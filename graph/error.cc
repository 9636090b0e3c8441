#include "graph/error.h"

namespace tensoropt {

void internal_fault(const char* file, int line, const std::string& what) {
  throw InternalError(std::string(file) + ":" + std::to_string(line) + ": check failed: " + what);
}

}  // namespace tensoropt
