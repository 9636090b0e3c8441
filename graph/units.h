// Quantities as people read them, in every layer's messages and tables: one rounding rule for
// bytes (binary units) and FLOPs (decimal), so the planner, the launcher and the CLI print a size
// the same way. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace tensoropt {

std::string with_commas(int64_t n);     // 124439808 -> "124,439,808"
std::string bytes_human(double bytes);  // 512 -> "512 B", 1536 -> "1.50 KiB", up to TiB
std::string flops_human(double flops);  // 4.1e9 -> "4.10 GFLOP", up to PFLOP
std::string share_percent(double fraction);  // 0.0123 -> "1.2%": two significant digits
// "1 GPU", "8 GPUs": n and the noun, plural unless n is 1 (an `s` added, or `plural` when given).
std::string count_of(int64_t n, const std::string& noun, const std::string& plural = "");

}  // namespace tensoropt
