// DESIGN's layers, held in the tree (docs/design.md "Layers"): every #include "..." of our own
// sources names a folder its layer may use. CMake enforces what it can (one library per layer,
// linked only downward); this test catches the includes a link would not (a header-only use).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace tensoropt {
namespace {

// Folders, most specific first, and the folders each may include from (itself included).
struct Layer {
  std::string folder;
  std::vector<std::string> may_use;
};
const std::vector<Layer> kLayers = {
    {"graph/", {"graph/"}},
    {"planner/ft/", {"planner/ft/"}},
    {"planner/parallel/", {"planner/parallel/", "graph/"}},
    {"planner/", {"planner/", "graph/"}},
    {"launcher/comm/", {"launcher/comm/", "graph/"}},
    {"launcher/runtime/", {"launcher/runtime/", "launcher/comm/", "planner/parallel/", "graph/"}},
    {"launcher/", {"launcher/", "planner/", "graph/", "profiler/"}},
    {"profiler/", {"profiler/", "launcher/runtime/", "launcher/comm/", "planner/", "graph/"}},
    {"cli/", {"cli/", "launcher/", "planner/", "graph/", "profiler/"}},
};

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

const Layer* layer_of(const std::string& path) {
  for (const Layer& l : kLayers)
    if (starts_with(path, l.folder)) return &l;
  return nullptr;
}

// Our own includes of a file: the quoted ones that name a layer's folder.
std::vector<std::pair<int, std::string>> own_includes(const std::filesystem::path& file) {
  std::vector<std::pair<int, std::string>> out;
  std::ifstream in(file);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const size_t at = line.find("#include \"");
    if (at == std::string::npos || line.find_first_not_of(" \t") != at) continue;
    const size_t end = line.find('"', at + 10);
    const std::string target = line.substr(at + 10, end - at - 10);
    if (layer_of(target)) out.emplace_back(n, target);
  }
  return out;
}

}  // namespace

TEST_CASE("layers: every source includes only from the layers DESIGN lets it use") {
  const std::filesystem::path root = TENSOROPT_SOURCE_DIR;
  int files = 0;
  std::string wrong;
  for (const Layer& top : kLayers) {
    if (top.folder.find('/') != top.folder.size() - 1) continue;  // walk each top-level folder once
    const std::filesystem::path dir = root / top.folder;
    if (!std::filesystem::exists(dir)) continue;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
      const std::string ext = entry.path().extension().string();
      if (ext != ".h" && ext != ".cc" && ext != ".cu" && ext != ".cuh") continue;
      const std::string rel = std::filesystem::relative(entry.path(), root).generic_string();
      const Layer* l = layer_of(rel);
      REQUIRE(l != nullptr);
      ++files;
      for (const auto& [line, target] : own_includes(entry.path())) {
        bool ok = false;
        for (const std::string& f : l->may_use) ok = ok || starts_with(target, f);
        if (!ok) wrong += "\n  " + rel + ":" + std::to_string(line) + " includes " + target + " (" + l->folder + " may use none of it)";
      }
    }
  }
  CHECK(files > 200);
  CHECK_MESSAGE(wrong.empty(), "includes across layers:" << wrong);
}

}  // namespace tensoropt
