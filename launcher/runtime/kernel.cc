#include "launcher/runtime/kernel.h"

#include <algorithm>
#include <chrono>

#include "graph/error.h"
#include "launcher/runtime/backend.h"

namespace tensoropt::runtime {

int64_t mean_count(const ShardInfo* shard, int input, const Shape& local, const std::vector<bool>& reduced) {
  const Shape& shape = shard ? shard->global.at(static_cast<size_t>(input)) : local;
  int64_t n = 1;
  for (size_t a = 0; a < shape.size() && a < reduced.size(); ++a)
    if (reduced[a]) n *= shape[a];
  return n;
}

void kernel_error(const Node& node, const std::string& what) { throw InputError("node " + node.label() + ": " + what); }

void apply_state_updates(Backend& backend, const OpKernel& kernel, const Node& node, const std::vector<Array*>& outputs,
                         std::map<int, Array>& state, const ShardInfo* shard) {
  for (auto [o, input] : kernel.state_updates) {
    if (static_cast<size_t>(o) >= node.outputs.size() || static_cast<size_t>(input) >= node.inputs.size()) continue;
    const int src = node.outputs[static_cast<size_t>(o)], dst = node.inputs[static_cast<size_t>(input)];
    auto it = dst < 0 ? state.end() : state.find(dst);
    if (src < 0 || it == state.end() || !outputs[static_cast<size_t>(o)]) continue;
    const Array& from = *outputs[static_cast<size_t>(o)];
    Array& to = it->second;
    if (from.shape() == to.shape() && from.rank() == 0) {
      std::vector<char> host(static_cast<size_t>(from.bytes()));
      backend.read(from, host.data(), from.bytes());
      backend.write(to, host.data(), to.bytes());
      continue;
    }
    const int64_t at = shard && from.shape() != to.shape() ? shard->offset[static_cast<size_t>(input)].at(0) : 0;
    backend.copy_slab(from, 0, 0, to, at, from.dim(0));
  }
}

Array float32_copy(Backend& backend, const Array& a) {
  Array r(DType::F32, a.shape(), backend.allocator(), MemoryKind::Transients);
  backend.convert(a, r);
  return r;
}

const Array* Float32Args::operator()(const Array* a) {
  if (!a || a->dtype() != DType::BF16 || pass_bf16_) return a;
  TO_CHECK(copies_.size() < copies_.capacity());
  copies_.push_back(float32_copy(backend_, *a));
  return &copies_.back();
}

namespace {

std::vector<Array> forward_call_unchecked(Backend& backend, const OpKernel& k, const Node& n, int index,
                                          const std::vector<const Array*>& inputs, const std::vector<OutputSpec>& outputs,
                                          OpState& state, const StepContext& ctx, const ShardInfo* shard,
                                          std::map<int, Array>* updates) {
  // bfloat16 inputs as float32 copies; a view (aliases_input) stays a view of what it reads.
  Float32Args converted(backend, inputs.size(), k.takes_bf16);
  std::vector<const Array*> in;
  for (const Array* a : inputs) in.push_back(k.aliases_input ? a : converted(a));
  std::vector<Array> outs(outputs.size()), computed(outputs.size());
  std::vector<Array*> out;
  for (size_t o = 0; o < outputs.size(); ++o) {
    const OutputSpec& spec = outputs[o];
    if (!spec.present) {
      out.push_back(nullptr);
      continue;
    }
    if (o == 0 && k.aliases_input) {
      if (!in.at(0) || numel(spec.shape) != in[0]->numel()) {
        throw InternalError("node " + n.label() + ": views " + (in.at(0) ? in[0]->str() : std::string("nothing")) + " as " +
                            shape_str(spec.shape));
      }
      outs[o] = in[0]->view(spec.shape);
      out.push_back(&outs[o]);
    } else if (spec.store != spec.compute && !k.takes_bf16) {
      computed[o] = Array(spec.compute, spec.shape, backend.allocator(), MemoryKind::Transients);
      out.push_back(&computed[o]);
    } else {
      outs[o] = Array(spec.store, spec.shape, backend.allocator(), spec.kind);
      out.push_back(&outs[o]);
    }
  }
  if (ctx.timer) ctx.timer->begin(n.op_type + " forward");
  k.forward(OpCall{n, index, in, out, state, ctx, shard});
  if (ctx.timer) ctx.timer->end();
  converted.clear();  // the float32 copies of the inputs: gone before the outputs are stored
  if (updates) apply_state_updates(backend, k, n, out, *updates, shard);
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (!computed[o].defined()) continue;
    outs[o] = Array(outputs[o].store, computed[o].shape(), backend.allocator(), outputs[o].kind);
    backend.convert(computed[o], outs[o]);
    computed[o] = Array();
  }
  return outs;
}

}  // namespace

std::vector<Array> forward_call(Backend& backend, const OpKernel& k, const Node& n, int index, const std::vector<const Array*>& inputs,
                                const std::vector<OutputSpec>& outputs, OpState& state, const StepContext& ctx,
                                const ShardInfo* shard, std::map<int, Array>* updates) {
  try {
    return forward_call_unchecked(backend, k, n, index, inputs, outputs, state, ctx, shard, updates);
  } catch (const OutOfMemory& e) {
    std::string shapes;
    for (const OutputSpec& o : outputs)
      if (o.present) shapes += (shapes.empty() ? "" : ", ") + std::string(dtype_name(o.store)) + shape_str(o.shape);
    throw e.with_context("node " + n.label() + " (forward, output " + shapes + ")");
  }
}

void check_backward_kernels(const Graph& g, const std::vector<const OpKernel*>& kernels, const StepSchedule& schedule,
                            std::string_view backend) {
  TO_CHECK(kernels.size() == g.nodes.size() && schedule.nodes.size() == g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (schedule.nodes[i].backward && !kernels[i]->backward) {
      throw InputError("node " + g.nodes[i].label() + ": op '" + g.nodes[i].op_type + "' has no " + std::string(backend) +
                       " backward kernel, and an input of it takes a gradient");
    }
  }
}

namespace {

class HostKernelTimer final : public KernelTimer {
 public:
  void begin(const std::string& label) override {
    label_ = label;
    start_ = std::chrono::steady_clock::now();
  }
  void end() override {
    Row& r = rows_[label_];
    r.label = label_;
    ++r.calls;
    r.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  std::vector<Row> report() override { return sorted_rows(rows_); }
  void reset() override { rows_.clear(); }

 private:
  std::string label_;
  std::chrono::steady_clock::time_point start_;
  std::map<std::string, Row> rows_;
};

}  // namespace

std::vector<KernelTimer::Row> sorted_rows(const std::map<std::string, KernelTimer::Row>& rows) {
  std::vector<KernelTimer::Row> out;
  for (const auto& [label, r] : rows) out.push_back(r);
  std::stable_sort(out.begin(), out.end(), [](const KernelTimer::Row& a, const KernelTimer::Row& b) { return a.seconds > b.seconds; });
  return out;
}

DeviceFacts facts_from_lines(const std::string& text) {
  DeviceFacts f;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    const size_t colon = line.find(": ");
    if (colon == std::string::npos) continue;
    f.fields.emplace_back(line.substr(0, colon), line.substr(colon + 2));
  }
  for (const auto& [key, value] : f.fields) f.line += (f.line.empty() ? "" : ", ") + key + " " + value;
  return f;
}

Slab slab_of(const Array& src, int dim, int64_t src_at, const Array& dst, int64_t dst_at, int64_t len) {
  TO_CHECK(src.dtype() == dst.dtype() && src.rank() == dst.rank() && dim >= 0 && dim < src.rank());
  int64_t outer = 1, inner = dtype_size(src.dtype());
  for (int d = 0; d < src.rank(); ++d) {
    if (d == dim) continue;
    TO_CHECK(src.dim(d) == dst.dim(d));
    if (d < dim) outer *= src.dim(d);
    else inner *= src.dim(d);
  }
  TO_CHECK(len >= 0 && src_at >= 0 && dst_at >= 0 && src_at + len <= src.dim(dim) && dst_at + len <= dst.dim(dim));
  return {outer, len * inner, src.dim(dim) * inner, dst.dim(dim) * inner, src_at * inner, dst_at * inner};
}

std::unique_ptr<KernelTimer> host_kernel_timer() { return std::make_unique<HostKernelTimer>(); }

}  // namespace tensoropt::runtime
