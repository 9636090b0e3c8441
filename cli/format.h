// Human-readable numbers for terminal output. Pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "graph/units.h"  // bytes_human, flops_human

namespace tensoropt::cli {

std::string with_commas(int64_t n);      // 124439808 -> "124,439,808"
std::string seconds_human(double s);     // 0.0123 -> "12.30 ms"
// "60GiB", "60 GB", "512MiB", "6e10" (bytes) -> bytes. Throws InputError naming `flag` otherwise.
double parse_bytes(const std::string& text, const std::string& flag);

}  // namespace tensoropt::cli
