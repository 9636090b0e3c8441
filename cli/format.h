// Human-readable numbers for terminal output. Pure functions.
#pragma once

#include <cstdint>
#include <string>

namespace tensoropt::cli {

std::string with_commas(int64_t n);      // 124439808 -> "124,439,808"
std::string bytes_human(double bytes);   // 1536 -> "1.50 KiB"
std::string flops_human(double flops);   // 4.1e9 -> "4.10 GFLOP"
std::string seconds_human(double s);     // 0.0123 -> "12.30 ms"
// "60GiB", "60 GB", "512MiB", "6e10" (bytes) -> bytes. Throws InputError naming `flag` otherwise.
double parse_bytes(const std::string& text, const std::string& flag);

}  // namespace tensoropt::cli
