// Builds small ONNX models in memory for tests: typed inputs (-1 = dynamic dim), int64 and
// float initializers, nodes with int/ints/float/string/float-tensor attributes, outputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace tensoropt::test {

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 17);
  ModelBuilder& input(const std::string& name, const std::vector<int64_t>& shape, int elem_type = 1);
  ModelBuilder& ints(const std::string& name, const std::vector<int64_t>& values, std::vector<int64_t> shape = {-2});
  ModelBuilder& flag(const std::string& name, bool value);  // a bool scalar initializer
  ModelBuilder& floats(const std::string& name, const std::vector<int64_t>& shape, float fill = 0.5f);
  ModelBuilder& node(const std::string& op, const std::vector<std::string>& inputs,
                     const std::vector<std::string>& outputs, const std::string& name = "");
  // Attributes apply to the last node added.
  ModelBuilder& attr(const std::string& key, int64_t v);
  ModelBuilder& attr(const std::string& key, const std::vector<int64_t>& v);
  ModelBuilder& attr_f(const std::string& key, float v);
  ModelBuilder& attr_s(const std::string& key, const std::string& v);
  // A float tensor attribute of this shape, every element `fill` (a Constant's "value").
  ModelBuilder& attr_t(const std::string& key, const std::vector<int64_t>& shape, float fill);
  ModelBuilder& output(const std::string& name);
  std::string bytes() const;

 private:
  onnx::ModelProto model_;
};

}  // namespace tensoropt::test
