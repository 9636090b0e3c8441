// The hash a plan file records of its model file, so that `evaluate` and `run` refuse another
// model: a check that the file is the same, not an interchange format.
//
// file_hash(path) is XXH64 (seed 0) of the file's bytes, 16 hex digits, the same as `xxhsum -H1`:
// several GB/s, so hashing a model of inline weights costs a fraction of a second.
// file_hash(path, "fnv1a64") is the hash plan files recorded before: 64-bit FNV-1a with the offset
// basis 1469598103934665603 (the published 14695981039346656037 short of its last digit), byte
// by byte (0.7 GB/s); it is kept so that those files still match their models.
// Both read the file in pieces. Throws InputError naming the file if it cannot be read, and for an
// algorithm other than these two.
#pragma once

#include <cstdint>
#include <string>

namespace tensoropt::planner {

inline constexpr const char* kModelHashAlgorithm = "xxh64";
inline constexpr uint64_t kFnvModelBasis = 1469598103934665603ull;

std::string file_hash(const std::string& path, const std::string& algorithm = kModelHashAlgorithm);

}  // namespace tensoropt::planner
