#include "launcher/runtime/data.h"

#include <cstring>
#include <limits>
#include <optional>
#include <fstream>
#include <random>

#include <xtensor/xnpy.hpp>

#include "graph/error.h"

namespace tensoropt::runtime {
namespace {

// The target's shape for one batch: labels drop the output's class axis.
Shape target_shape(const Graph& g, LossKind loss) {
  Shape s = g.tensors[static_cast<size_t>(g.outputs[0])].shape;
  if (loss == LossKind::CrossEntropy) {
    if (s.size() < 2) throw InputError(g.source_path + ": cross-entropy needs logits of rank 2 or more, the output is " + shape_str(s));
    s.pop_back();
  }
  return s;
}

// The size of the axis node n picks from when it is a Gather (or, with `elements`, a
// GatherElements) reading `input` as its indices; nullopt otherwise.
std::optional<int64_t> indexed_axis(const Graph& g, const Node& n, int input, bool elements) {
  const bool gather = n.op_type == "Gather" || (elements && n.op_type == "GatherElements");
  if (!gather || n.inputs.size() < 2 || n.inputs[1] != input || n.inputs[0] < 0) return std::nullopt;
  const Shape& table = g.tensors[static_cast<size_t>(n.inputs[0])].shape;
  int64_t axis = n.attr_int("axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(table.size());
  if (axis < 0 || axis >= static_cast<int64_t>(table.size())) return std::nullopt;  // the importer refuses such a node
  return table[static_cast<size_t>(axis)];
}

// Synthetic token ids: below the first embedding table's rows that reads them, else 1000.
int64_t vocabulary(const Graph& g, int input) {
  for (const Node& n : g.nodes)
    if (const std::optional<int64_t> rows = indexed_axis(g, n, input, /*elements=*/false)) return *rows;
  return 1000;
}

// Positions (step-1)*B .. step*B-1 of the stream, B the graph's batch, modulo `rows` when it is
// positive (a file's rows, read wrapping around).
std::vector<int64_t> stream_positions(const Graph& g, int64_t step, int64_t rows) {
  const int64_t batch = std::max<int64_t>(g.batch, 1);
  std::vector<int64_t> out(static_cast<size_t>(batch));
  for (int64_t j = 0; j < batch; ++j) {
    const int64_t i = (step - 1) * batch + j;
    out[static_cast<size_t>(j)] = rows > 0 ? i % rows : i;
  }
  return out;
}

class Synthetic final : public DataSource {
 public:
  Synthetic(const Graph& g, LossKind loss, uint64_t seed, Backend& b) : g_(g), loss_(loss), seed_(seed), b_(b) {}
  Batch next(int64_t step) override {
    std::mt19937_64 rng(seed_ * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(step));
    Batch batch;
    for (int t : g_.inputs) {
      const Tensor& x = g_.tensors[static_cast<size_t>(t)];
      batch.inputs.push_back(fill(x.shape, runtime_dtype(x), vocabulary(g_, t), rng, MemoryKind::Inputs));
    }
    const Shape& out = g_.tensors[static_cast<size_t>(g_.outputs[0])].shape;
    batch.target = loss_ == LossKind::CrossEntropy ? fill(target_shape(g_, loss_), DType::I64, out.back(), rng, MemoryKind::Inputs)
                                                   : fill(out, DType::F32, 0, rng, MemoryKind::Inputs);
    return batch;
  }
  std::vector<int64_t> samples(int64_t step) const override { return stream_positions(g_, step, 0); }

 private:
  Array fill(const Shape& shape, DType dtype, int64_t range, std::mt19937_64& rng, MemoryKind kind) {
    Array a(dtype, shape, b_.allocator(), kind);
    std::vector<char> host(static_cast<size_t>(a.bytes()));
    for (int64_t i = 0; i < a.numel(); ++i) {
      auto k = static_cast<size_t>(i);
      if (dtype == DType::F32) {
        auto v = static_cast<float>(std::normal_distribution<double>(0, 1)(rng));
        std::memcpy(host.data() + 4 * k, &v, 4);
      } else if (dtype == DType::I64) {
        auto v = static_cast<int64_t>(std::uniform_int_distribution<int64_t>(0, std::max<int64_t>(range, 1) - 1)(rng));
        std::memcpy(host.data() + 8 * k, &v, 8);
      } else {
        host[k] = static_cast<char>(rng() & 1);
      }
    }
    b_.write(a, host.data(), a.bytes());
    return a;
  }
  const Graph& g_;
  LossKind loss_;
  uint64_t seed_;
  Backend& b_;
};

struct NpyArray {
  std::string path;
  Shape shape;
  std::string type;  // "<f4", "<i8", ...
  std::vector<char> bytes;
};

NpyArray read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(path + ": cannot be read");
  NpyArray a;
  a.path = path;
  try {
    auto file = xt::detail::load_npy_file(f);
    if (file.m_fortran_order) throw InputError(path + ": Fortran-ordered array; save it with np.ascontiguousarray first");
    for (size_t d : file.m_shape) a.shape.push_back(static_cast<int64_t>(d));
    a.type = file.m_typestring;
    a.bytes.assign(file.ptr(), file.ptr() + file.n_bytes());
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(path + ": not a NumPy .npy file (" + e.what() + ")");
  }
  if (!f && !f.eof()) throw InputError(path + ": truncated");
  return a;
}

// Element i of an integer .npy array (check_fits has made sure it is <i8 or <i4).
int64_t int_at(const NpyArray& a, int64_t i) {
  const char* p = a.bytes.data() + i * (a.type[2] - '0');
  if (a.type[2] == '8') {
    int64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Rows [row, row + count) of `a` (wrapping around) as an Array of `dtype` and `shape`.
Array rows_of(const NpyArray& a, int64_t row, const Shape& shape, DType dtype, Backend& b) {
  Array out(dtype, shape, b.allocator(), MemoryKind::Inputs);
  const int64_t count = shape.empty() ? 1 : shape[0];
  const int64_t per_row = count > 0 ? out.numel() / count : 0;
  const int64_t n = a.shape.empty() ? 0 : a.shape[0];
  const int esize = a.type[2] - '0';
  std::vector<char> host(static_cast<size_t>(out.bytes()));
  for (int64_t r = 0; r < count; ++r) {
    int64_t src_row = (row + r) % n;
    for (int64_t i = 0; i < per_row; ++i) {
      const char* p = a.bytes.data() + ((src_row * per_row) + i) * esize;
      auto k = static_cast<size_t>(r * per_row + i);
      if (dtype == DType::F32) {
        float v = a.type[1] == 'f' && esize == 8 ? static_cast<float>(*reinterpret_cast<const double*>(p))
                                                 : *reinterpret_cast<const float*>(p);
        std::memcpy(host.data() + 4 * k, &v, 4);
      } else {
        const int64_t v = int_at(a, src_row * per_row + i);
        std::memcpy(host.data() + 8 * k, &v, 8);
      }
    }
  }
  b.write(out, host.data(), out.bytes());
  return out;
}

// Checks that `a` holds rows of `want` (its shape without the batch) in a type fitting `dtype`.
void check_fits(const NpyArray& a, const Shape& want, DType dtype, const std::string& what) {
  Shape rows(want.begin() + (want.empty() ? 0 : 1), want.end());
  bool shape_ok = a.shape.size() == want.size() && !a.shape.empty() && a.shape[0] >= 1 &&
                  Shape(a.shape.begin() + 1, a.shape.end()) == rows;
  if (!shape_ok) {
    throw InputError(a.path + ": shape " + shape_str(a.shape) + " does not fit " + what + " " + shape_str(want) +
                     ": expected [N" + (rows.empty() ? std::string() : "," + shape_str(rows).substr(1)) + (rows.empty() ? "]" : ""));
  }
  bool little = a.type.size() == 3 && (a.type[0] == '<' || a.type[0] == '|');
  bool type_ok = little && (dtype == DType::F32 ? (a.type == "<f4" || a.type == "<f8") : (a.type == "<i8" || a.type == "<i4"));
  if (!type_ok) {
    throw InputError(a.path + ": dtype '" + a.type + "' does not fit " + what + " (" +
                     (dtype == DType::F32 ? "float32 or float64" : "int64 or int32") + ")");
  }
}


// "[3,17]": the position of flat element i in an array of `shape`.
std::string position(const Shape& shape, int64_t i) {
  Shape at(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    at[d] = shape[d] > 0 ? i % shape[d] : 0;
    i = shape[d] > 0 ? i / shape[d] : 0;
  }
  return shape_str(at);
}

// The flat index of the first element of an integer array outside [lo, hi), or -1.
int64_t first_outside(const NpyArray& a, int64_t lo, int64_t hi) {
  const int64_t n = numel(a.shape);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = int_at(a, i);
    if (v < lo || v >= hi) return i;
  }
  return -1;
}

// Labels for `classes` classes: each below it (negative ones are ignored, as PyTorch's ignore_index).
void check_labels(const NpyArray& y, int64_t classes) {
  const int64_t i = first_outside(y, std::numeric_limits<int64_t>::min(), classes);
  if (i < 0) return;
  throw InputError(y.path + ": label " + std::to_string(int_at(y, i)) + " at " + position(y.shape, i) + " is not below the model's " +
                   std::to_string(classes) + " classes (labels are 0 to " + std::to_string(classes - 1) + "; negative ones are ignored)");
}

// The indices a data input feeds, as the kernels take them: for each Gather or GatherElements
// reading `input` as its indices, in [-n, n) for the n entries of the axis it picks from
// (negative ones counting from the end). InputError at the first index out of range.
void check_indices(const Graph& g, int input, const NpyArray& a) {
  for (const Node& n : g.nodes) {
    const std::optional<int64_t> dim = indexed_axis(g, n, input, /*elements=*/true);
    if (!dim) continue;
    const int64_t i = first_outside(a, -*dim, *dim);
    if (i < 0) continue;
    throw InputError(a.path + ": index " + std::to_string(int_at(a, i)) + " at " + position(a.shape, i) + " is outside [" +
                     std::to_string(-*dim) + ", " + std::to_string(*dim) + "): node " + n.label() + " picks from an axis of " +
                     std::to_string(*dim));
  }
}

class Npy final : public DataSource {
 public:
  Npy(const Graph& g, LossKind loss, NpyArray x, NpyArray y, Backend& b) : g_(g), loss_(loss), x_(std::move(x)), y_(std::move(y)), b_(b) {}
  Batch next(int64_t step) override {
    const Tensor& in = g_.tensors[static_cast<size_t>(g_.inputs[0])];
    const int64_t rows = in.shape.empty() ? 1 : in.shape[0];
    const int64_t start = (step - 1) * rows;
    Batch batch;
    batch.inputs.push_back(rows_of(x_, start, in.shape, runtime_dtype(in), b_));
    batch.target = rows_of(y_, start, target_shape(g_, loss_), loss_ == LossKind::CrossEntropy ? DType::I64 : DType::F32, b_);
    return batch;
  }
  std::vector<int64_t> samples(int64_t step) const override { return stream_positions(g_, step, x_.shape[0]); }

 private:
  const Graph& g_;
  LossKind loss_;
  NpyArray x_, y_;
  Backend& b_;
};

}  // namespace

std::unique_ptr<DataSource> synthetic_data(const Graph& g, LossKind loss, uint64_t seed, Backend& backend) {
  target_shape(g, loss);  // validates the output for the loss
  return std::make_unique<Synthetic>(g, loss, seed, backend);
}

std::unique_ptr<DataSource> npy_data(const Graph& g, LossKind loss, const std::string& data_path,
                                     const std::string& labels_path, Backend& backend) {
  if (g.inputs.size() != 1) {
    throw InputError(g.source_path + ": --data feeds one input, the model has " + std::to_string(g.inputs.size()));
  }
  const Tensor& in = g.tensors[static_cast<size_t>(g.inputs[0])];
  NpyArray x = read_npy(data_path), y = read_npy(labels_path);
  check_fits(x, in.shape, runtime_dtype(in), "input '" + in.name + "'");
  Shape target = target_shape(g, loss);
  check_fits(y, target, loss == LossKind::CrossEntropy ? DType::I64 : DType::F32,
             loss == LossKind::CrossEntropy ? std::string("the labels") : std::string("the mse target"));
  if (x.shape[0] != y.shape[0]) {
    throw InputError(labels_path + ": " + std::to_string(y.shape[0]) + " rows, " + data_path + " has " + std::to_string(x.shape[0]));
  }
  if (!in.shape.empty() && x.shape[0] < in.shape[0]) {
    throw InputError(data_path + ": " + std::to_string(x.shape[0]) + " rows, fewer than one batch of " + std::to_string(in.shape[0]));
  }
  // Every index the files feed, before step 1: a label outside the classes (negative ones are
  // ignored, as PyTorch's ignore_index), an index outside the axis it picks from.
  if (loss == LossKind::CrossEntropy) check_labels(y, g.tensors[static_cast<size_t>(g.outputs[0])].shape.back());
  if (!dtype_is_float(in.dtype)) check_indices(g, g.inputs[0], x);
  return std::make_unique<Npy>(g, loss, std::move(x), std::move(y), backend);
}

}  // namespace tensoropt::runtime
