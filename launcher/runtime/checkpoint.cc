#include "launcher/runtime/checkpoint.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include "graph/error.h"
#include "graph/import.h"

namespace tensoropt::runtime {
namespace {

constexpr char kMagic[8] = {'T', 'O', 'P', 'T', 'O', 'P', 'T', '1'};

// A file written as FILE.part and renamed to FILE by rename_into_place(), so that an interrupted
// save leaves no half file under the final name (a .part not renamed is removed); bytes are
// appended as they come (a multi-GiB external data file or optimizer state is never held whole in
// memory). A checkpoint's files are all finished before any is renamed, so a save that fails
// leaves the previous checkpoint's set as it was.
class PartFile {
 public:
  explicit PartFile(std::string path) : path_(std::move(path)), f_(path_ + ".part", std::ios::binary | std::ios::trunc) {
    if (!f_) throw InputError(path_ + ": cannot be written");
  }
  PartFile(const PartFile&) = delete;
  PartFile& operator=(const PartFile&) = delete;
  ~PartFile() {
    if (renamed_) return;
    f_.close();
    std::error_code ec;
    std::filesystem::remove(path_ + ".part", ec);
  }
  void append(const char* bytes, size_t n) {
    f_.write(bytes, static_cast<std::streamsize>(n));
    if (!f_) throw InputError(path_ + ": write failed (disk full?)");
    size_ += n;
  }
  void append(const std::string& bytes) { append(bytes.data(), bytes.size()); }
  size_t size() const { return size_; }
  void finish() {
    f_.close();
    if (!f_) throw InputError(path_ + ": write failed (disk full?)");
  }
  void rename_into_place() {
    std::filesystem::rename(path_ + ".part", path_);
    renamed_ = true;
  }

 private:
  std::string path_;
  std::ofstream f_;
  size_t size_ = 0;
  bool renamed_ = false;
};

std::string host_bytes(const Array& a, Backend& b) {
  std::string s(static_cast<size_t>(a.bytes()), '\0');
  b.read(a, s.data(), a.bytes());
  return s;
}

int onnx_type(DType t) { return dtype_to_onnx(t); }

}  // namespace

void save_checkpoint(const std::string& path, const std::string& model_path, const Graph& g, Backend& backend,
                     const std::map<int, Array>& weights, Optimizer& optimizer, int64_t external_above) {
  onnx::ModelProto model;
  if (!model.ParseFromString(read_model_file(model_path))) throw InputError(model_path + ": not an ONNX model");
  auto* gp = model.mutable_graph();
  std::map<std::string, onnx::TensorProto*> inits;
  for (auto& t : *gp->mutable_initializer()) inits[t.name()] = &t;
  int64_t total = 0;
  for (const auto& [t, a] : weights) {
    const Tensor& x = g.tensors[static_cast<size_t>(t)];
    if (x.kind == TensorKind::Parameter || x.kind == TensorKind::Buffer) total += a.bytes();
  }
  const bool external = total > external_above;
  const std::string data_name = std::filesystem::path(path).filename().string() + ".data";
  std::optional<PartFile> data;
  if (external) data.emplace((std::filesystem::path(path).parent_path() / data_name).string());
  for (const auto& [t, a] : weights) {
    const Tensor& x = g.tensors[static_cast<size_t>(t)];
    if (x.kind != TensorKind::Parameter && x.kind != TensorKind::Buffer) continue;
    onnx::TensorProto* init = inits.count(x.name) ? inits[x.name] : gp->add_initializer();
    init->Clear();
    init->set_name(x.name);
    init->set_data_type(onnx_type(a.dtype()));
    for (int64_t d : a.shape()) init->add_dims(d);
    std::string bytes = host_bytes(a, backend);
    if (external) {
      init->set_data_location(onnx::TensorProto::EXTERNAL);
      auto kv = [&](const std::string& k, const std::string& v) {
        auto* e = init->add_external_data();
        e->set_key(k);
        e->set_value(v);
      };
      kv("location", data_name);
      kv("offset", std::to_string(data->size()));
      kv("length", std::to_string(bytes.size()));
      data->append(bytes);
    } else {
      init->set_raw_data(bytes);
    }
  }
  // A weight that was a typed graph input keeps its input entry: the initializer is its default.
  if (data) data->finish();
  PartFile onnx_file(path);
  onnx_file.append(model.SerializeAsString());
  onnx_file.finish();

  nlohmann::ordered_json head;
  const OptimizerSettings& s = optimizer.settings();
  head["optimizer"] = optimizer_kind_name(s.kind);
  head["lr"] = s.lr;
  head["momentum"] = s.momentum;
  head["weight_decay"] = s.weight_decay;
  head["step"] = optimizer.steps();
  nlohmann::ordered_json arrays = nlohmann::ordered_json::array();
  int64_t offset = 0;
  for (auto& [t, slots] : optimizer.state()) {
    for (size_t k = 0; k < slots.size(); ++k) {
      arrays.push_back({{"tensor", g.tensors[static_cast<size_t>(t)].name}, {"slot", k}, {"shape", slots[k].shape()},
                        {"offset", offset}});
      offset += slots[k].bytes();
    }
  }
  head["arrays"] = arrays;
  std::string header = head.dump();
  PartFile out(path + ".optim");
  out.append(kMagic, 8);
  uint64_t len = header.size();
  out.append(reinterpret_cast<const char*>(&len), 8);
  out.append(header);
  for (auto& [t, slots] : optimizer.state()) {
    for (const Array& a : slots) out.append(host_bytes(a, backend));
  }
  out.finish();
  // Every file is complete: now they take their names, the data first, the model, its state.
  if (data) data->rename_into_place();
  onnx_file.rename_into_place();
  out.rename_into_place();
  if (!external) {
    // An earlier save's external data would only mislead whoever looks at the directory.
    std::error_code ec;
    std::filesystem::remove((std::filesystem::path(path).parent_path() / data_name).string(), ec);
  }
}

bool load_checkpoint(const std::string& path, const Graph& g, Backend& backend, std::map<int, Array>& weights,
                     Optimizer& optimizer) {
  onnx::ModelProto model;
  if (!model.ParseFromString(read_model_file(path))) throw InputError(path + ": not an ONNX model, or truncated");
  std::map<std::string, const onnx::TensorProto*> inits;
  for (const auto& t : model.graph().initializer()) inits[t.name()] = &t;
  const std::string dir = std::filesystem::path(path).parent_path().string();
  for (auto& [t, a] : weights) {
    const Tensor& x = g.tensors[static_cast<size_t>(t)];
    if (x.kind != TensorKind::Parameter && x.kind != TensorKind::Buffer) continue;
    auto it = inits.find(x.name);
    const onnx::TensorProto* init = it == inits.end() ? nullptr : it->second;
    Shape dims = init ? Shape(init->dims().begin(), init->dims().end()) : Shape{};
    if (!init || dims != a.shape() || init->data_type() != onnx_type(a.dtype())) {
      throw InputError(path + ": not a checkpoint of " + g.source_path + ": " + (x.kind == TensorKind::Parameter ? "parameter '" : "buffer '") +
                       x.name + "' " + (init ? "is " + shape_str(dims) + ", the model has " + a.str() : "is missing"));
    }
    std::string bytes;
    if (init->data_location() == onnx::TensorProto::EXTERNAL) {
      std::string location;
      int64_t offset = 0;
      int64_t length = -1;
      for (const auto& kv : init->external_data()) {
        if (kv.key() == "location") location = kv.value();
        if (kv.key() == "length") length = std::atoll(kv.value().c_str());
        if (kv.key() == "offset") {
          size_t used = 0;
          try {
            offset = std::stoll(kv.value(), &used);
          } catch (const std::exception&) {
            used = 0;
          }
          if (used != kv.value().size() || offset < 0) {
            throw InputError(path + ": external data offset '" + kv.value() + "' of '" + x.name + "' is not a byte offset");
          }
        }
      }
      const std::filesystem::path where(location);
      bool escapes = location.empty() || where.is_absolute();
      for (const auto& part : where) escapes = escapes || part == "..";
      if (escapes) throw InputError(path + ": external data of '" + x.name + "' at '" + location + "' is not a file beside the model");
      if (length >= 0 && length != a.bytes()) {
        throw InputError(path + ": external data of '" + x.name + "' is " + std::to_string(length) + " bytes, the model's tensor " +
                         std::to_string(a.bytes()));
      }
      std::ifstream f(std::filesystem::path(dir) / where, std::ios::binary);
      bytes.resize(static_cast<size_t>(a.bytes()));
      f.seekg(offset);
      if (!f || !f.read(bytes.data(), a.bytes())) throw InputError(path + ": external data for '" + x.name + "' is missing or short");
    } else {
      bytes = init->raw_data();
      if (static_cast<int64_t>(bytes.size()) != a.bytes()) throw InputError(path + ": '" + x.name + "' holds the wrong number of bytes");
    }
    backend.write(a, bytes.data(), a.bytes());
  }
  std::ifstream f(path + ".optim", std::ios::binary);
  if (!f) return false;
  std::string all = read_file(path + ".optim");
  if (all.size() < 16 || std::memcmp(all.data(), kMagic, 8) != 0) throw InputError(path + ".optim: not a tensoropt optimizer state file");
  uint64_t len;
  std::memcpy(&len, all.data() + 8, 8);
  if (len > all.size() - 16) throw InputError(path + ".optim: truncated");
  nlohmann::json head;
  try {
    head = nlohmann::json::parse(all.substr(16, len));
  } catch (const std::exception& e) {
    throw InputError(path + ".optim: bad header (" + e.what() + ")");
  }
  try {
    const std::string want = std::string(optimizer_kind_name(optimizer.settings().kind));
    if (!head.is_object() || !head.contains("arrays") || !head["arrays"].is_array()) {
      throw InputError(path + ".optim: bad header (no list of arrays)");
    }
    if (head.value("optimizer", "") != want) {
      throw InputError(path + ".optim: state of optimizer '" + head.value("optimizer", "") + "', this run uses '" + want + "'");
    }
    const size_t base = 16 + len;
    for (auto& [t, slots] : optimizer.state()) {
      const std::string& name = g.tensors[static_cast<size_t>(t)].name;
      for (size_t k = 0; k < slots.size(); ++k) {
        const nlohmann::json* entry = nullptr;
        for (const auto& e : head["arrays"]) {
          if (e.is_object() && e.value("tensor", "") == name && e.value("slot", size_t{99}) == k) entry = &e;
        }
        if (!entry) throw InputError(path + ".optim: no state for '" + name + "' slot " + std::to_string(k));
        const auto& at = entry->contains("offset") ? (*entry)["offset"] : nlohmann::json();
        if (!at.is_number_unsigned()) throw InputError(path + ".optim: bad offset for '" + name + "'");
        const size_t off = at.get<size_t>();
        const size_t bytes = static_cast<size_t>(slots[k].bytes());
        if (off > all.size() - base || bytes > all.size() - base - off) throw InputError(path + ".optim: truncated");
        backend.write(slots[k], all.data() + base + off, slots[k].bytes());
      }
    }
    optimizer.set_steps(head.value("step", int64_t{0}));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path + ".optim: bad header (" + e.what() + ")");
  }
  return true;
}

}  // namespace tensoropt::runtime
