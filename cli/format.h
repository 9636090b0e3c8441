// Human-readable numbers for terminal output. Pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "graph/units.h"  // with_commas, bytes_human, flops_human

namespace tensoropt::cli {

std::string seconds_human(double s);     // 0.0123 -> "12.30 ms"
// "60GiB", "60 GB", "512MiB", "6e10" (bytes) -> bytes. Throws InputError naming `flag` otherwise.
double parse_bytes(const std::string& text, const std::string& flag);

}  // namespace tensoropt::cli
