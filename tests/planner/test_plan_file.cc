// The plan file: the model hash it records (file_hash).
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "graph/error.h"
#include "planner/plan_file.h"

namespace tensoropt::planner {

TEST_CASE("plan file: file_hash is FNV-1a 64 of the bytes (the plan files' basis), read in pieces, refuses an unreadable file") {
  const auto dir = std::filesystem::temp_directory_path();
  const auto write = [&](const std::string& name, const std::string& bytes) {
    const std::string path = (dir / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  };
  // FNV-1a with the plan files' offset basis (plan_file.h), values computed independently.
  CHECK(file_hash(write("tensoropt_hash_empty", "")) == "14650fb0739d0383");
  CHECK(file_hash(write("tensoropt_hash_a", "a")) == "44bd8ad473cd9906");
  CHECK(file_hash(write("tensoropt_hash_foobar", "foobar")) == "88fad7c0a8ff07f2");
  // Across the 1 MiB pieces: the same as one pass over every byte.
  std::string big(3 * (size_t{1} << 20) + 12345, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 2654435761u) >> 13);
  uint64_t h = kModelHashBasis;
  for (unsigned char c : big) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char want[17];
  std::snprintf(want, sizeof want, "%016llx", static_cast<unsigned long long>(h));
  CHECK(file_hash(write("tensoropt_hash_big", big)) == std::string(want));
  CHECK_THROWS_WITH_AS(file_hash((dir / "tensoropt_no_such_file.onnx").string()), doctest::Contains("cannot be read"), InputError);
}

}  // namespace tensoropt::planner
