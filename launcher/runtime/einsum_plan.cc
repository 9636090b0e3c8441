#include "launcher/runtime/einsum_plan.h"

#include <algorithm>
#include <map>
#include <string>

namespace tensoropt::runtime::einsum {

bool has(const Labels& l, int x) { return std::find(l.begin(), l.end(), x) != l.end(); }

Equation parse(const Node& node, const std::vector<Shape>& shapes) {
  std::string eq;
  for (char ch : node.attr_string("equation", "")) {
    if (ch != ' ') eq += ch;
  }
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  // The "..." rank: the most axes any operand's ellipsis covers.
  auto letters = [](const std::string& t) { return t.size() - (t.find("...") == std::string::npos ? 0 : 3); };
  size_t erank = 0;
  for (size_t i = 0; i < terms.size(); ++i) erank = std::max(erank, shapes[i].size() - letters(terms[i]));
  Equation e;
  Labels ellipsis;
  for (size_t a = 0; a < erank; ++a) {
    ellipsis.push_back(static_cast<int>(e.size.size()));
    e.size.push_back(1);
  }
  std::map<char, int> letter;
  std::map<char, int> uses;
  for (size_t i = 0; i < terms.size(); ++i) {
    const std::string& t = terms[i];
    const Shape& sh = shapes[i];
    const size_t own = sh.size() - letters(t);
    Labels l;
    for (size_t k = 0; k < t.size(); ++k) {
      if (t.compare(k, 3, "...") == 0) {
        for (size_t a = 0; a < own; ++a) {
          int lab = ellipsis[erank - own + a];
          e.size[static_cast<size_t>(lab)] = std::max(e.size[static_cast<size_t>(lab)], sh[l.size()]);
          l.push_back(lab);
        }
        k += 2;
        continue;
      }
      ++uses[t[k]];
      auto [it, fresh] = letter.emplace(t[k], static_cast<int>(e.size.size()));
      if (fresh) e.size.push_back(sh[l.size()]);
      l.push_back(it->second);
    }
    e.terms.push_back(l);
  }
  for (size_t i = 0; i < terms.size(); ++i) {
    for (size_t a = 0; a < e.terms[i].size(); ++a) {
      int& lab = e.terms[i][a];
      if (shapes[i][a] == 1 && e.size[static_cast<size_t>(lab)] != 1) lab = -1;
    }
  }
  std::string rhs;
  if (arrow != std::string::npos) {
    rhs = eq.substr(arrow + 2);
  } else {
    rhs = erank > 0 ? "..." : "";
    for (auto [ch, n] : uses) {
      if (n == 1) rhs += ch;
    }
  }
  for (size_t k = 0; k < rhs.size(); ++k) {
    Labels add;
    if (rhs.compare(k, 3, "...") == 0) {
      add = ellipsis;
      k += 2;
    } else {
      add = {letter.at(rhs[k])};
    }
    for (int lab : add) {
      if (has(e.out, lab)) kernel_error(node, "a label repeated in the output of '" + eq + "' is not implemented");
      e.out.push_back(lab);
    }
  }
  return e;
}

int64_t count(const Labels& l, const std::vector<int64_t>& size) {
  int64_t n = 1;
  for (int lab : l) n *= size[static_cast<size_t>(lab)];
  return n;
}

GatherSpace gather_space(const Shape& xs, const Labels& labels, const Labels& keep, const std::vector<int64_t>& size) {
  std::vector<int64_t> st(xs.size());
  for (size_t a = xs.size(), s = 1; a-- > 0;) {
    st[a] = static_cast<int64_t>(s);
    s *= static_cast<size_t>(xs[a]);
  }
  auto stride = [&](int lab) {
    int64_t s = 0;
    for (size_t a = 0; a < labels.size(); ++a) s += labels[a] == lab ? st[a] : 0;
    return s;
  };
  GatherSpace g;
  for (int lab : keep) {
    g.keep_size.push_back(size[static_cast<size_t>(lab)]);
    g.keep_stride.push_back(stride(lab));
    g.kept *= size[static_cast<size_t>(lab)];
  }
  Labels seen = keep;
  for (int lab : labels) {
    if (lab < 0 || has(seen, lab)) continue;
    seen.push_back(lab);
    g.sum_size.push_back(size[static_cast<size_t>(lab)]);
    g.sum_stride.push_back(stride(lab));
    g.summed *= size[static_cast<size_t>(lab)];
  }
  return g;
}

Shape shape_of(const Labels& l, const std::vector<int64_t>& size) {
  Shape s;
  for (int lab : l) s.push_back(size[static_cast<size_t>(lab)]);
  return s;
}

Labels concat(std::initializer_list<const Labels*> parts) {
  Labels r;
  for (const Labels* p : parts) r.insert(r.end(), p->begin(), p->end());
  return r;
}

Pair plan_pair(const Labels& la, const Labels& lb, const Labels& keep, const std::vector<int64_t>& size) {
  Pair p;
  for (int lab : keep) {
    if (has(la, lab) && has(lb, lab)) p.batch.push_back(lab);
    else if (has(la, lab)) p.fa.push_back(lab);
    else p.fb.push_back(lab);
  }
  for (int lab : la) {
    if (lab >= 0 && has(lb, lab) && !has(keep, lab) && !has(p.contract, lab)) p.contract.push_back(lab);
  }
  p.a_order = concat({&p.batch, &p.fa, &p.contract});
  p.b_order = concat({&p.batch, &p.contract, &p.fb});
  p.y_order = concat({&p.batch, &p.fa, &p.fb});
  p.nb = count(p.batch, size);
  p.d = {.m = count(p.fa, size), .n = count(p.fb, size), .k = count(p.contract, size)};
  if (la == p.a_order) p.a_direct = true;
  else if (la == concat({&p.batch, &p.contract, &p.fa})) p.a_direct = p.d.ta = true;
  if (lb == p.b_order) p.b_direct = true;
  else if (lb == concat({&p.batch, &p.fb, &p.contract})) p.b_direct = p.d.tb = true;
  return p;
}

Labels kept_after(const Equation& e, const Labels& cur, size_t i) {
  if (i + 1 >= e.terms.size()) return e.out;
  Labels keep;
  for (const Labels* l : {&cur, &e.terms[i]}) {
    for (int lab : *l) {
      bool later = has(e.out, lab);
      for (size_t j = i + 1; j < e.terms.size(); ++j) later = later || has(e.terms[j], lab);
      if (lab >= 0 && later && !has(keep, lab)) keep.push_back(lab);
    }
  }
  return keep;
}

namespace {

Array transient(const Shape& s, const StepContext& ctx) { return Array(DType::F32, s, *ctx.allocator, MemoryKind::Transients); }

// An operand as the GEMM reads it: in place, or gathered into `order`.
const float* operand(const float* x, const Shape& xs, const Labels& l, bool direct, const Labels& order,
                     const std::vector<int64_t>& size, Array& buf, const StepContext& ctx, Ops& ops) {
  if (direct) return x;
  buf = transient(shape_of(order, size), ctx);
  ops.gather(x, xs, l, order, size, buf.data<float>());
  return buf.data<float>();
}

// y [keep...] = the contraction of A and B.
void contract(const float* a, const Shape& as, const Labels& la, const float* b, const Shape& bs, const Labels& lb,
              const Labels& keep, const std::vector<int64_t>& size, float* y, const StepContext& ctx, Ops& ops) {
  Pair p = plan_pair(la, lb, keep, size);
  Array abuf, bbuf, ybuf;
  const float* pa = operand(a, as, la, p.a_direct, p.a_order, size, abuf, ctx, ops);
  const float* pb = operand(b, bs, lb, p.b_direct, p.b_order, size, bbuf, ctx, ops);
  const bool in_place = keep == p.y_order;
  if (!in_place) ybuf = transient(shape_of(p.y_order, size), ctx);
  float* py = in_place ? y : ybuf.data<float>();
  ops.batched_gemm(p.d, pa, pb, py, p.nb);
  if (!in_place) ops.gather(py, ybuf.shape(), p.y_order, keep, size, y);
}

void forward(const OpCall& c, Ops& ops) {
  for (const Array* x : c.in) {
    if (x->dtype() != DType::F32) kernel_error(c.node, "only float32 is implemented, not " + x->str());
  }
  std::vector<Shape> shapes;
  for (const Array* x : c.in) shapes.push_back(x->shape());
  const Equation e = parse(c.node, shapes);
  float* y = c.out[0]->data<float>();
  if (c.in.size() == 1) return ops.gather(c.in[0]->data<float>(), shapes[0], e.terms[0], e.out, e.size, y);
  // Left to right: the running result keeps the labels the output or a later operand uses.
  Array acc;
  const float* cur = c.in[0]->data<float>();
  Shape cur_shape = shapes[0];
  Labels cur_labels = e.terms[0];
  for (size_t i = 1; i < c.in.size(); ++i) {
    const Labels keep = kept_after(e, cur_labels, i);
    Array next = i + 1 < c.in.size() ? transient(shape_of(keep, e.size), c.ctx) : Array();
    contract(cur, cur_shape, cur_labels, c.in[i]->data<float>(), shapes[i], e.terms[i], keep, e.size,
             next.defined() ? next.data<float>() : y, c.ctx, ops);
    acc = std::move(next);
    cur = acc.defined() ? acc.data<float>() : nullptr;
    cur_shape = shape_of(keep, e.size);
    cur_labels = keep;
  }
}

void backward(const GradCall& c, Ops& ops) {
  if (c.in_shapes.size() > 2) kernel_error(c.node, "Einsum of more than two operands has no gradient (the catalogue keeps no operand)");
  const Equation e = parse(c.node, c.in_shapes);
  const float* dy = c.dout[0]->data<float>();
  if (c.in_shapes.size() == 1) {
    return ops.scatter(dy, c.in_shapes[0], e.terms[0], e.out, e.size, c.din[0]->data<float>());
  }
  const Labels &la = e.terms[0], &lb = e.terms[1];
  Pair p = plan_pair(la, lb, e.out, e.size);
  const auto [m, n, k, ta, tb] = p.d;
  Array dybuf;
  const float* dyp = operand(dy, c.dout[0]->shape(), e.out, e.out == p.y_order, p.y_order, e.size, dybuf, c.ctx, ops);
  if (Array* da = c.din[0]) {  // dA'[b] = dY'[b]·B'[b]ᵀ, or its transpose when A is read transposed
    Array bbuf, dabuf;
    const float* pb = operand(c.in[1]->data<float>(), c.in_shapes[1], lb, p.b_direct, p.b_order, e.size, bbuf, c.ctx, ops);
    if (!p.a_direct) dabuf = transient(shape_of(p.a_order, e.size), c.ctx);
    float* out = p.a_direct ? da->data<float>() : dabuf.data<float>();
    if (ta) ops.batched_gemm({.m = k, .n = m, .k = n, .ta = tb, .tb = true}, pb, dyp, out, p.nb);
    else ops.batched_gemm({.m = m, .n = k, .k = n, .tb = !tb}, dyp, pb, out, p.nb);
    if (!p.a_direct) ops.scatter(out, c.in_shapes[0], la, p.a_order, e.size, da->data<float>());
  }
  if (Array* db = c.din[1]) {  // dB'[b] = A'[b]ᵀ·dY'[b], or its transpose when B is read transposed
    Array abuf, dbbuf;
    const float* pa = operand(c.in[0]->data<float>(), c.in_shapes[0], la, p.a_direct, p.a_order, e.size, abuf, c.ctx, ops);
    if (!p.b_direct) dbbuf = transient(shape_of(p.b_order, e.size), c.ctx);
    float* out = p.b_direct ? db->data<float>() : dbbuf.data<float>();
    if (tb) ops.batched_gemm({.m = n, .n = k, .k = m, .ta = true, .tb = ta}, dyp, pa, out, p.nb);
    else ops.batched_gemm({.m = k, .n = n, .k = m, .ta = !ta}, pa, dyp, out, p.nb);
    if (!p.b_direct) ops.scatter(out, c.in_shapes[1], lb, p.b_order, e.size, db->data<float>());
  }
}

}  // namespace

void einsum_forward(const OpCall& c, Ops& ops) { forward(c, ops); }
void einsum_backward(const GradCall& c, Ops& ops) { backward(c, ops); }

}  // namespace tensoropt::runtime::einsum
