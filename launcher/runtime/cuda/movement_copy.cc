// The shared host side of the CUDA data-movement kernels (movement.h): operands, gathers through
// per-axis maps and their transposes as segmented sums.
#include <string>
#include <utility>

#include "launcher/runtime/cpu/movement_kernels.h"
#include "launcher/runtime/cuda/device/movement.h"
#include "launcher/runtime/cuda/movement.h"

namespace tensoropt::runtime::cuda {
namespace {

std::vector<int64_t> row_major_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t a = s.size(); a-- > 1;) st[a - 1] = st[a] * s[a];
  return st;
}

bool is_identity(const std::vector<int64_t>& map, int64_t n) {
  if (static_cast<int64_t>(map.size()) != n) return false;
  for (size_t i = 0; i < map.size(); ++i) {
    if (map[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

}  // namespace

std::vector<int64_t> host_ints(CudaBackend& be, const Array* a) {
  std::vector<int64_t> v;
  if (!a || a->numel() == 0) return v;
  v.resize(static_cast<size_t>(a->numel()));
  if (a->dtype() == DType::I64) {
    be.read(*a, v.data(), a->bytes());
    return v;
  }
  TO_CHECK(a->dtype() == DType::I32);
  std::vector<int32_t> narrow(v.size());
  be.read(*a, narrow.data(), a->bytes());
  for (size_t i = 0; i < v.size(); ++i) v[i] = narrow[i];
  return v;
}

std::vector<double> host_reals(CudaBackend& be, const Array* a) {
  std::vector<double> v;
  if (!a || a->numel() == 0) return v;
  v.resize(static_cast<size_t>(a->numel()));
  if (a->dtype() == DType::F64) {
    be.read(*a, v.data(), a->bytes());
    return v;
  }
  TO_CHECK(a->dtype() == DType::F32);
  std::vector<float> narrow(v.size());
  be.read(*a, narrow.data(), a->bytes());
  for (size_t i = 0; i < v.size(); ++i) v[i] = narrow[i];
  return v;
}

Array device_ints(CudaBackend& be, const StepContext& ctx, const std::vector<int64_t>& v) {
  const auto n = static_cast<int64_t>(v.size());
  Array a(DType::I64, {n > 0 ? n : 1}, *ctx.allocator, MemoryKind::Transients);
  const int64_t zero = 0;
  be.write(a, n > 0 ? v.data() : &zero, a.bytes());
  return a;
}

void gather(CudaBackend& be, const StepContext& ctx, const Node& node, std::vector<GatherAxis> axes, const void* src, void* dst,
            int64_t esize, uint64_t fill_bits, const void* fill_src, bool widen) {
  int64_t n = 1;
  for (const GatherAxis& a : axes) n *= a.out;
  if (n == 0) return;
  std::vector<GatherAxis> kept;
  for (GatherAxis& a : axes) {
    if (a.out == 1 && !a.tabled) continue;
    if (!kept.empty()) {
      GatherAxis& p = kept.back();
      if (!p.tabled && !a.tabled && p.mod == 0 && a.mod == 0 && p.stride == a.stride * a.out) {
        p.out *= a.out;
        p.stride = a.stride;
        continue;
      }
    }
    kept.push_back(std::move(a));
  }
  if (kept.size() > TO_MAX_RANK) {
    kernel_error(node, "moves " + std::to_string(kept.size()) + " axes that cannot be merged; the CUDA kernel takes at most " +
                           std::to_string(TO_MAX_RANK));
  }
  cuda_kernels::GatherAxesArgs g{};
  std::vector<int64_t> table;
  g.rank = static_cast<int>(kept.size());
  for (size_t a = 0; a < kept.size(); ++a) {
    g.out_shape[a] = kept[a].out;
    g.src_stride[a] = kept[a].stride;
    g.mod[a] = kept[a].mod;
    g.table_at[a] = kept[a].tabled ? static_cast<int64_t>(table.size()) : -1;
    if (kept[a].tabled) table.insert(table.end(), kept[a].table.begin(), kept[a].table.end());
  }
  Array t;
  if (!table.empty()) {
    t = device_ints(be, ctx, table);
    g.table = t.data<int64_t>();
  }
  g.src = src;
  g.dst = dst;
  g.esize = esize;
  g.fill_bits = fill_bits;
  g.fill_src = fill_src;
  g.widen = widen;
  be.launch("move_gather_axes", g, node.op_type);
}

void gather_maps(CudaBackend& be, const StepContext& ctx, const Node& node, const AxisMaps& m, const Array& src, Array& dst,
                 uint64_t fill_bits, const void* fill_src) {
  TO_CHECK(m.src == src.shape() && m.out() == dst.shape() && src.dtype() == dst.dtype());
  const std::vector<int64_t> st = row_major_strides(m.src);
  std::vector<GatherAxis> axes;
  for (size_t a = 0; a < m.map.size(); ++a) {
    axes.push_back(is_identity(m.map[a], m.src[a]) ? GatherAxis::plain(m.src[a], st[a]) : GatherAxis::indexed(m.map[a], st[a]));
  }
  gather(be, ctx, node, std::move(axes), src.raw(), dst.raw(), dtype_size(src.dtype()), fill_bits, fill_src);
}

void scatter_maps(CudaBackend& be, const StepContext& ctx, const Node& node, const AxisMaps& m, const Array& dout, Array& dsrc) {
  TO_CHECK((dout.dtype() == DType::F32 || dout.dtype() == DType::BF16) && dsrc.dtype() == DType::F32 && dout.shape() == m.out() &&
           dsrc.shape() == m.src);
  std::vector<size_t> passes;
  for (size_t a = 0; a < m.map.size(); ++a) {
    if (!is_identity(m.map[a], m.src[a])) passes.push_back(a);
  }
  if (passes.empty()) {
    copy_converted(be, dout, dsrc, node.op_type);
    return;
  }
  Shape cur = m.out();
  Array g = dout;
  for (size_t k = 0; k < passes.size(); ++k) {
    const size_t a = passes[k];
    Shape next = cur;
    next[a] = m.src[a];
    Array into = k + 1 == passes.size() ? dsrc : Array(DType::F32, next, *ctx.allocator, MemoryKind::Transients);
    Segments s;
    for (size_t i = 0; i < m.map[a].size(); ++i) {
      s.src_row.push_back(static_cast<int64_t>(i));
      s.target.push_back(m.map[a][i]);
    }
    const int axis = static_cast<int>(a);
    segment_sum(be, ctx, s, g.raw(), into.data<float>(), cpu::outer_of(cur, axis), m.src[a], cur[a], cpu::inner_of(cur, axis),
                node.op_type, static_cast<int>(g.dtype()));
    g = into;
    cur = next;
  }
}

void permute(CudaBackend& be, const StepContext& ctx, const Node& node, const Array& src, const Shape& src_shape,
             const std::vector<int64_t>& perm, Array& dst) {
  const bool widen = src.dtype() == DType::BF16 && dst.dtype() == DType::F32;
  TO_CHECK(perm.size() == src_shape.size() && numel(src_shape) == src.numel() && (src.dtype() == dst.dtype() || widen));
  const std::vector<int64_t> st = row_major_strides(src_shape);
  std::vector<GatherAxis> axes;
  for (int64_t p : perm) axes.push_back(GatherAxis::plain(src_shape[static_cast<size_t>(p)], st[static_cast<size_t>(p)]));
  gather(be, ctx, node, std::move(axes), src.raw(), dst.raw(), dtype_size(src.dtype()), 0, nullptr, widen);
}

void segment_sum(CudaBackend& be, const StepContext& ctx, const Segments& s, const void* src, float* dst, int64_t outer,
                 int64_t rows, int64_t items, int64_t width, std::string_view what, int src_dtype) {
  if (outer * rows * width == 0) return;
  TO_CHECK(s.src_row.size() == s.target.size() && (s.weight.empty() || s.weight.size() == s.target.size()));
  // A stable counting sort of the entries by target: offsets [rows + 1], then the source rows.
  size_t entries = 0;
  for (int64_t t : s.target) {
    TO_CHECK(t < rows);
    entries += t >= 0;
  }
  const auto first = static_cast<size_t>(rows) + 1;
  std::vector<int64_t> packed(first + entries, int64_t{0});
  for (int64_t t : s.target) {
    if (t >= 0) ++packed[static_cast<size_t>(t) + 1];
  }
  for (size_t r = 1; r < first; ++r) packed[r] += packed[r - 1];
  std::vector<int64_t> at(packed.begin(), packed.begin() + rows);
  std::vector<float> weight(s.weight.empty() ? 0 : packed.size() - first);
  for (size_t e = 0; e < s.target.size(); ++e) {
    if (s.target[e] < 0) continue;
    TO_CHECK(s.src_row[e] >= 0 && s.src_row[e] < items);
    const auto pos = static_cast<size_t>(at[static_cast<size_t>(s.target[e])]++);
    packed[first + pos] = s.src_row[e];
    if (!weight.empty()) weight[pos] = s.weight[e];
  }
  const Array lists = device_ints(be, ctx, packed);
  Array w;
  cuda_kernels::SegmentSumArgs a{src, src_dtype, dst, outer, rows, items, width, lists.data<int64_t>(), lists.data<int64_t>() + first,
                                 nullptr};
  if (!weight.empty()) {
    w = Array(DType::F32, {static_cast<int64_t>(weight.size())}, *ctx.allocator, MemoryKind::Transients);
    be.write(w, weight.data(), w.bytes());
    a.weight = w.data<float>();
  }
  be.launch("move_segment_sum", a, what);
}

void copy_all(CudaBackend& be, const Array& src, Array& dst, std::string_view what) {
  TO_CHECK(src.bytes() == dst.bytes());
  if (src.bytes() == 0 || src.raw() == dst.raw()) return;
  be.check(be.driver().copy_rows(be.device(), dst.raw(), dst.bytes(), src.raw(), src.bytes(), src.bytes(), 1), what);
}

void copy_converted(CudaBackend& be, const Array& src, Array& dst, std::string_view what) {
  if (src.dtype() == dst.dtype()) return copy_all(be, src, dst, what);
  TO_CHECK(src.numel() == dst.numel());
  be.convert(src.view(dst.shape()), dst);
}

const Array& as_dtype(CudaBackend& be, const StepContext& ctx, const Array& x, DType t, Array& holder) {
  const auto float_like = [](DType d) { return d == DType::F32 || d == DType::BF16; };
  if (x.dtype() == t || !float_like(x.dtype()) || !float_like(t)) return x;
  holder = Array(t, x.shape(), *ctx.allocator, MemoryKind::Transients);
  be.convert(x, holder);
  return holder;
}

}  // namespace tensoropt::runtime::cuda
