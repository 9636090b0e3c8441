// Quantities as people read them, in every layer's messages and tables: one rounding rule for
// bytes (binary units) and FLOPs (decimal), so the planner, the launcher and the CLI print a size
// the same way. Pure functions; thread-safe.
#pragma once

#include <string>

namespace tensoropt {

std::string bytes_human(double bytes);  // 512 -> "512 B", 1536 -> "1.50 KiB", up to TiB
std::string flops_human(double flops);  // 4.1e9 -> "4.10 GFLOP", up to PFLOP

}  // namespace tensoropt
