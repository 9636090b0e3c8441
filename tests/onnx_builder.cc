#include "tests/onnx_builder.h"

namespace tensoropt::test {

ModelBuilder::ModelBuilder(int64_t opset) {
  model_.set_ir_version(8);
  auto* op = model_.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  model_.mutable_graph()->set_name("test");
}

ModelBuilder& ModelBuilder::input(const std::string& name, const std::vector<int64_t>& shape, int elem_type) {
  auto* vi = model_.mutable_graph()->add_input();
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  auto* sh = tt->mutable_shape();
  for (int64_t d : shape) {
    auto* dim = sh->add_dim();
    if (d < 0) dim->set_dim_param("batch");
    else dim->set_dim_value(d);
  }
  return *this;
}

ModelBuilder& ModelBuilder::ints(const std::string& name, const std::vector<int64_t>& values, std::vector<int64_t> shape) {
  auto* t = model_.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  if (shape == std::vector<int64_t>{-2}) shape = {static_cast<int64_t>(values.size())};
  for (int64_t d : shape) t->add_dims(d);
  for (int64_t v : values) t->add_int64_data(v);
  return *this;
}

ModelBuilder& ModelBuilder::flag(const std::string& name, bool value) {
  auto* t = model_.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::BOOL);
  t->add_int32_data(value ? 1 : 0);
  return *this;
}

namespace {

// A float tensor of this shape, every element `fill`.
void fill_floats(onnx::TensorProto& t, const std::vector<int64_t>& shape, float fill) {
  t.set_data_type(onnx::TensorProto::FLOAT);
  int64_t n = 1;
  for (int64_t d : shape) {
    t.add_dims(d);
    n *= d;
  }
  for (int64_t i = 0; i < n; ++i) t.add_float_data(fill);
}

}  // namespace

ModelBuilder& ModelBuilder::floats(const std::string& name, const std::vector<int64_t>& shape, float fill) {
  auto* t = model_.mutable_graph()->add_initializer();
  t->set_name(name);
  fill_floats(*t, shape, fill);
  return *this;
}

ModelBuilder& ModelBuilder::node(const std::string& op, const std::vector<std::string>& inputs,
                                 const std::vector<std::string>& outputs, const std::string& name) {
  auto* n = model_.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(name.empty() ? op + "_" + std::to_string(model_.graph().node_size()) : name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return *this;
}

ModelBuilder& ModelBuilder::attr(const std::string& key, int64_t v) {
  auto* a = model_.mutable_graph()->mutable_node(model_.graph().node_size() - 1)->add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
  return *this;
}

ModelBuilder& ModelBuilder::attr(const std::string& key, const std::vector<int64_t>& v) {
  auto* a = model_.mutable_graph()->mutable_node(model_.graph().node_size() - 1)->add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
  return *this;
}

ModelBuilder& ModelBuilder::attr_f(const std::string& key, float v) {
  auto* a = model_.mutable_graph()->mutable_node(model_.graph().node_size() - 1)->add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
  return *this;
}

ModelBuilder& ModelBuilder::attr_t(const std::string& key, const std::vector<int64_t>& shape, float fill) {
  auto* a = model_.mutable_graph()->mutable_node(model_.graph().node_size() - 1)->add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::TENSOR);
  fill_floats(*a->mutable_t(), shape, fill);
  return *this;
}

ModelBuilder& ModelBuilder::attr_s(const std::string& key, const std::string& v) {
  auto* a = model_.mutable_graph()->mutable_node(model_.graph().node_size() - 1)->add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
  return *this;
}

ModelBuilder& ModelBuilder::output(const std::string& name) {
  model_.mutable_graph()->add_output()->set_name(name);
  return *this;
}

std::string ModelBuilder::bytes() const { return model_.SerializeAsString(); }

}  // namespace tensoropt::test
