// Transpose, Concat, Split, Expand, Tile and Trilu, and what the data-movement files share
// (movement.h).
#include <algorithm>
#include <numeric>

#include "graph/ops/movement.h"

namespace tensoropt::ops {
namespace {

std::vector<int64_t> perm_of(const OpView& v) {
  size_t r = v.in_shape(0).size();
  std::vector<int64_t> perm;
  if (auto p = v.node.attr_ints("perm")) perm = *p;
  else for (size_t a = r; a-- > 0;) perm.push_back(static_cast<int64_t>(a));
  if (perm.size() != r) throw OpError("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(r));
  std::vector<bool> seen(r, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(r) || seen[static_cast<size_t>(p)]) throw OpError("perm is not a permutation");
    seen[static_cast<size_t>(p)] = true;
  }
  return perm;
}

std::vector<int64_t> split_sizes(const OpView& v, int axis) {
  int64_t dim = v.in_shape(0)[static_cast<size_t>(axis)];
  std::vector<int64_t> sizes;
  if (auto s = v.node.attr_ints("split")) sizes = *s;
  else if (v.has_input(1)) sizes = v.in_ints(1, "split");
  int n = v.num_outputs();
  if (sizes.empty()) {
    int64_t parts = v.node.attr_int("num_outputs", n);
    if (parts <= 0) throw OpError("no outputs");
    int64_t each = (dim + parts - 1) / parts;
    for (int64_t k = 0; k < parts; ++k) sizes.push_back(std::max<int64_t>(0, std::min(each, dim - k * each)));
  }
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) throw OpError("negative split size");
    total = add_checked(total, s);
  }
  if (total != dim || static_cast<int>(sizes.size()) != n) {
    throw OpError("split sizes " + shape_str(sizes) + " do not cover axis of size " + std::to_string(dim) +
                  " with " + std::to_string(n) + " outputs");
  }
  return sizes;
}

OpDef transpose_op() {
  OpDef d = movement("Transpose", {});
  d.infer = [](const OpView& v) {
    auto perm = perm_of(v);
    Shape out;
    for (int64_t p : perm) out.push_back(v.in_shape(0)[static_cast<size_t>(p)]);
    return std::vector<OutType>{{v.in(0).dtype, out}};
  };
  d.fold = [](const OpView& v) {
    auto perm = perm_of(v);
    const Shape& in = v.in_shape(0);
    std::vector<int64_t> src(in.size());
    return std::vector<Value>{gather_fold(*v.in_value(0), v.in(0).dtype, v.out(0).shape, [&](const std::vector<int64_t>& idx) {
      for (size_t j = 0; j < perm.size(); ++j) src[static_cast<size_t>(perm[j])] = idx[j];
      return linear(src, in);
    })};
  };
  d.space = [](const OpView& v) {
    auto perm = perm_of(v);
    std::vector<int> ia(perm.size());
    for (size_t j = 0; j < perm.size(); ++j) ia[static_cast<size_t>(perm[j])] = static_cast<int>(j);
    return axes_space(v.out(0).shape, std::vector<DimRole>(perm.size(), DimRole::Parallel), {ia});
  };
  return d;
}

OpDef concat_op() {
  OpDef d = movement("Concat", {});
  auto axis_of = [](const OpView& v) {
    if (!v.node.attr("axis")) throw OpError("missing attribute 'axis'");
    return norm_axis(v.node.attr_int("axis", 0), v.in_rank(0), "axis");
  };
  d.infer = [axis_of](const OpView& v) {
    if (v.num_inputs() == 0 || !v.has_input(0)) throw OpError("no inputs");
    int axis = axis_of(v);
    Shape out = v.in_shape(0);
    out[static_cast<size_t>(axis)] = 0;
    for (int i = 0; i < v.num_inputs(); ++i) {
      if (!v.has_input(i)) throw OpError("missing input " + std::to_string(i));
      const Shape& s = v.in_shape(i);
      for (size_t a = 0; a < out.size(); ++a) {
        if (s.size() != out.size() || (static_cast<int>(a) != axis && s[a] != out[a])) {
          throw OpError("input " + std::to_string(i) + " " + shape_str(s) + " does not match " + shape_str(v.in_shape(0)));
        }
      }
      out[static_cast<size_t>(axis)] = add_checked(out[static_cast<size_t>(axis)], s[static_cast<size_t>(axis)]);
    }
    return std::vector<OutType>{{v.in(0).dtype, out}};
  };
  d.fold = [axis_of](const OpView& v) {
    auto axis = static_cast<size_t>(axis_of(v));
    const Shape& out = v.out(0).shape;
    Value r = make_value(v.in(0).dtype, out);
    std::vector<int64_t> idx(out.size(), 0);
    for (int64_t k = 0; k < numel(out); ++k) {
      int64_t pos = idx[axis];
      int i = 0;
      while (pos >= v.in_shape(i)[axis]) pos -= v.in_shape(i++)[axis];
      std::vector<int64_t> src = idx;
      src[axis] = pos;
      const Value& in = *v.in_value(i);
      int64_t l = linear(src, v.in_shape(i));
      set_elem(r, k, in.real(l), in.integer(l));
      next_index(idx, out);
    }
    return std::vector<Value>{r};
  };
  d.space = [axis_of](const OpView& v) {
    int axis = axis_of(v);
    const Shape& out = v.out(0).shape;
    std::vector<DimRole> roles(out.size(), DimRole::Parallel);
    roles[static_cast<size_t>(axis)] = DimRole::Fixed;
    std::vector<int> ia = iota_axes(out.size());
    ia[static_cast<size_t>(axis)] = -1;
    return axes_space(out, roles, std::vector<std::vector<int>>(static_cast<size_t>(v.num_inputs()), ia));
  };
  return d;
}

OpDef split_op() {
  OpDef d = movement("Split", {1});
  auto axis_of = [](const OpView& v) { return norm_axis(v.node.attr_int("axis", 0), v.in_rank(0), "axis"); };
  d.infer = [axis_of](const OpView& v) {
    int axis = axis_of(v);
    std::vector<OutType> out;
    for (int64_t s : split_sizes(v, axis)) {
      Shape sh = v.in_shape(0);
      sh[static_cast<size_t>(axis)] = s;
      out.push_back({v.in(0).dtype, sh});
    }
    return out;
  };
  d.fold = [axis_of](const OpView& v) {
    auto axis = static_cast<size_t>(axis_of(v));
    std::vector<Value> outs;
    int64_t offset = 0;
    for (int64_t s : split_sizes(v, static_cast<int>(axis))) {
      Shape sh = v.in_shape(0);
      sh[axis] = s;
      std::vector<int64_t> src;
      outs.push_back(gather_fold(*v.in_value(0), v.in(0).dtype, sh, [&](const std::vector<int64_t>& idx) {
        src = idx;
        src[axis] += offset;
        return linear(src, v.in_shape(0));
      }));
      offset += s;
    }
    return outs;
  };
  d.space = [axis_of](const OpView& v) {
    int axis = axis_of(v);
    const Shape& in = v.in_shape(0);
    std::vector<DimRole> roles(in.size(), DimRole::Parallel);
    roles[static_cast<size_t>(axis)] = DimRole::Fixed;
    IterSpace s = axes_space(in, roles, {iota_axes(in.size()), {}}, v.num_outputs());
    for (auto& o : s.outputs) o[static_cast<size_t>(axis)] = -1;
    return s;
  };
  return d;
}

OpDef expand_op() {
  OpDef d = movement("Expand", {1});
  d.flops_doc = "0 / N - input elements (sum over the broadcast axes)";
  d.infer = [](const OpView& v) {
    auto shape = v.in_ints(1, "shape");
    for (int64_t s : shape) {
      if (s < 0) throw OpError("negative dimension in shape " + shape_str(shape));
    }
    return std::vector<OutType>{{v.in(0).dtype, broadcast({v.in_shape(0), shape})}};
  };
  d.fold = [](const OpView& v) {
    const Shape& in = v.in_shape(0);
    const Shape& out = v.out(0).shape;
    return std::vector<Value>{gather_fold(*v.in_value(0), v.in(0).dtype, out, [&](const std::vector<int64_t>& idx) {
      return broadcast_offset(in, out, idx);
    })};
  };
  d.space = [](const OpView& v) {
    IterSpace s = elementwise_space(v, {0});
    s.inputs.resize(2);
    return s;
  };
  d.bwd_flops = [](const OpView& v, const std::vector<bool>& g) { return g[0] ? out_elems(v) - in_elems(v) : 0.0; };
  return d;
}

OpDef tile_op() {
  OpDef d = movement("Tile", {1});
  d.flops_doc = "0 / N - input elements (sum over the repeats)";
  d.infer = [](const OpView& v) {
    auto rep = v.in_ints(1, "repeats");
    Shape out = v.in_shape(0);
    if (rep.size() != out.size()) throw OpError("repeats has " + std::to_string(rep.size()) + " values for rank " + std::to_string(out.size()));
    for (size_t a = 0; a < out.size(); ++a) {
      if (rep[a] < 0) throw OpError("negative repeat");
      out[a] = mul_checked(out[a], rep[a]);
    }
    checked_numel(out);
    return std::vector<OutType>{{v.in(0).dtype, out}};
  };
  d.fold = [](const OpView& v) {
    const Shape& in = v.in_shape(0);
    std::vector<int64_t> src(in.size());
    return std::vector<Value>{gather_fold(*v.in_value(0), v.in(0).dtype, v.out(0).shape, [&](const std::vector<int64_t>& idx) {
      for (size_t a = 0; a < in.size(); ++a) src[a] = idx[a] % in[a];
      return linear(src, in);
    })};
  };
  d.space = [](const OpView& v) {
    const Shape& in = v.in_shape(0);
    const Shape& out = v.out(0).shape;
    std::vector<DimRole> roles(out.size(), DimRole::Parallel);
    std::vector<int> ia = iota_axes(out.size());
    for (size_t a = 0; a < out.size(); ++a) {
      if (in[a] != out[a]) {
        roles[a] = DimRole::Fixed;
        ia[a] = -1;
      }
    }
    return axes_space(out, roles, {ia, {}});
  };
  d.bwd_flops = [](const OpView& v, const std::vector<bool>& g) { return g[0] ? out_elems(v) - in_elems(v) : 0.0; };
  return d;
}

OpDef trilu_op() {
  OpDef d = movement("Trilu", {1});
  d.infer = [](const OpView& v) {
    if (v.in_rank(0) < 2) throw OpError("input must have rank >= 2");
    return std::vector<OutType>{{v.in(0).dtype, v.in_shape(0)}};
  };
  d.fold = [](const OpView& v) {
    int64_t k = v.has_input(1) ? v.in_ints(1, "k").at(0) : 0;
    bool upper = v.node.attr_int("upper", 1) != 0;
    const Shape& s = v.in_shape(0);
    size_t r = s.size();
    return std::vector<Value>{gather_fold(*v.in_value(0), v.in(0).dtype, s, [&](const std::vector<int64_t>& idx) {
      int64_t i = idx[r - 2], j = idx[r - 1];
      bool keep = upper ? j - i >= k : j - i <= k;
      return keep ? linear(idx, s) : -1;
    })};
  };
  d.space = [](const OpView& v) {
    const Shape& s = v.in_shape(0);
    std::vector<DimRole> roles(s.size(), DimRole::Parallel);
    roles[s.size() - 1] = roles[s.size() - 2] = DimRole::Fixed;
    return axes_space(s, roles, {iota_axes(s.size()), {}});
  };
  return d;
}

}  // namespace

Value relabel(const Value& in, const Shape& shape) {
  Value out = in;
  out.shape = shape;
  return out;
}

OpDef movement(const std::string& type, std::vector<int> nondiff) {
  OpDef d;
  d.type = type;
  d.family = "data movement";
  d.flops_doc = "0 / 0";
  d.saves_doc = "nothing";
  d.nondiff_inputs = std::move(nondiff);
  d.fwd_flops = [](const OpView&) { return 0.0; };
  d.bwd_flops = [](const OpView&, const std::vector<bool>&) { return 0.0; };
  d.saved = [](const OpView&, const std::vector<bool>&) { return std::vector<Saved>{}; };
  return d;
}

// Every data-movement op: these, and the other files' (movement.h).
void register_movement(std::vector<OpDef>& ops) {
  register_movement_views(ops);
  ops.push_back(transpose_op());
  ops.push_back(concat_op());
  ops.push_back(split_op());
  ops.push_back(expand_op());
  ops.push_back(tile_op());
  ops.push_back(trilu_op());
  register_movement_slices(ops);
  register_movement_indexed(ops);
}

}  // namespace tensoropt::ops
