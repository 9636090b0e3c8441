// The plan file: the model hash it records (planner/file_hash.h).
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "graph/error.h"
#include "planner/plan_file.h"

namespace tensoropt::planner {
namespace {

std::string write(const std::string& name, const std::string& bytes) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// Bytes that are not a repeated pattern, the same as the generator the expected values were made
// from: byte i is ((i * 2654435761) mod 2^64) >> 13, low 8 bits.
std::string pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 2654435761u) >> 13);
  return s;
}

}  // namespace

TEST_CASE("plan file: file_hash is XXH64 of the bytes, read in pieces, refuses an unreadable file") {
  // Values from `xxhsum -H1` (xxHash 0.8.1) on the same bytes: every tail length (under 4, 4 to 7,
  // 8 and more), one stripe and more, and a file across the 1 MiB pieces.
  const std::pair<size_t, const char*> cases[] = {
      {0, "ef46db3751d8e999"},  {1, "e934a84adb052768"},  {3, "28823e205e353f69"},  {4, "91b65bbe720c34cf"},
      {7, "e2400cdea02ee3c5"},  {8, "521fd2878ea69d17"},  {12, "3fb737ea78f531bb"}, {31, "b74baa9042b94dee"},
      {32, "4e13111ced6f735d"}, {33, "f7b9faf20b3bce63"}, {63, "35f935e6044a08ad"}, {64, "cd91daec2c21766f"},
      {100, "d61ea92c5ae13676"}, {3 * (size_t{1} << 20) + 12345, "69a953fa2fbdd4ff"}};
  for (const auto& [n, want] : cases) {
    CAPTURE(n);
    CHECK(file_hash(write("tensoropt_hash_" + std::to_string(n), pattern(n))) == want);
  }
  CHECK(file_hash(write("tensoropt_hash_abc", "abc")) == "44bc2cf5ad770999");
  const std::string missing = (std::filesystem::temp_directory_path() / "tensoropt_no_such_file.onnx").string();
  CHECK_THROWS_WITH_AS(file_hash(missing), doctest::Contains("cannot be read"), InputError);
  CHECK_THROWS_WITH_AS(file_hash(write("tensoropt_hash_a", "a"), "md5"), doctest::Contains("no model hash 'md5'"), InputError);
}

TEST_CASE("plan file: older plan files' FNV-1a (with their offset basis) still hashes as they recorded") {
  // FNV-1a with the plan files' offset basis (file_hash.h), values computed independently.
  CHECK(file_hash(write("tensoropt_hash_empty", ""), "fnv1a64") == "14650fb0739d0383");
  CHECK(file_hash(write("tensoropt_hash_a", "a"), "fnv1a64") == "44bd8ad473cd9906");
  CHECK(file_hash(write("tensoropt_hash_foobar", "foobar"), "fnv1a64") == "88fad7c0a8ff07f2");
  const std::string big = pattern(3 * (size_t{1} << 20) + 12345);
  uint64_t h = kFnvModelBasis;
  for (unsigned char c : big) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char want[17];
  std::snprintf(want, sizeof want, "%016llx", static_cast<unsigned long long>(h));
  CHECK(file_hash(write("tensoropt_hash_big", big), "fnv1a64") == std::string(want));
}

}  // namespace tensoropt::planner
