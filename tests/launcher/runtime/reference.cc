#include "tests/launcher/runtime/reference.h"

#include <doctest/doctest.h>

#include <cstring>
#include <cstdlib>
#include <fstream>
#include <iterator>

namespace tensoropt::test {

const std::string& runtime_fixtures() {
  // The tree the test binary was built from, or another checkout of it (scripts/gpu-check runs the
  // test binary on a GPU machine, in a copy of the tree at another path).
  static const std::string dir = [] {
    const char* other = std::getenv("TENSOROPT_SOURCE_DIR");
    return std::string(other && *other ? other : TENSOROPT_SOURCE_DIR) + "/tests/fixtures/runtime/";
  }();
  return dir;
}

std::vector<float> Reference::tensor(const std::string& name, Shape& shape) const {
  for (const auto& t : head["tensors"]) {
    if (t["name"] != name) continue;
    shape = t["shape"].get<Shape>();
    std::vector<float> v(static_cast<size_t>(numel(shape)));
    std::memcpy(v.data(), blob.data() + t["offset"].get<size_t>(), v.size() * 4);
    return v;
  }
  return {};
}

Reference reference(const std::string& name) {
  Reference r;
  std::ifstream j(runtime_fixtures() + name + ".ref.json");
  REQUIRE(j.good());
  r.head = nlohmann::json::parse(j);
  std::ifstream b(runtime_fixtures() + name + ".ref.bin", std::ios::binary);
  r.blob.assign(std::istreambuf_iterator<char>(b), {});
  return r;
}

runtime::OptimizerSettings reference_settings(const std::string& opt) {
  runtime::OptimizerSettings s;
  s.kind = runtime::parse_optimizer_kind(opt);
  if (opt == "sgd") {
    s.lr = 0.01;
    s.momentum = 0.9;
    s.weight_decay = 0.01;
  } else {
    s.lr = 0.001;
    s.weight_decay = opt == "adamw" ? 0.1 : 0.0;
  }
  return s;
}

}  // namespace tensoropt::test
