// Einsum, a contraction over the letters of its equation (family "linear", added by
// register_linear). Legend: P = product of all index sizes.
#include <cctype>
#include <map>
#include <set>

#include "graph/ops/helpers.h"

namespace tensoropt::ops {
namespace {

// Einsum: dims are the equation's letters (and "..." axes, named e0, e1, ...); letters absent
// from the output are reductions.
struct EinsumSpec {
  std::vector<IterDim> dims;
  std::vector<std::vector<int>> operands;  // per input axis: dim index
  std::vector<int> output;                 // per output axis: dim index
};

// The comma-separated terms of an equation's left-hand side.
std::vector<std::string> einsum_terms(const std::string& lhs) {
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return terms;
}

// The dims met so far while reading the operands' terms, left to right.
struct EinsumParse {
  EinsumSpec spec;
  std::map<char, int> letter_dim;
  std::map<char, int> letter_count;
  int ellipsis_rank = -1;
  std::vector<int> ellipsis_dims;

  // The "..." of a term covering erank axes of shape sh from `axis` on: appends their dims to axes.
  void add_ellipsis(int erank, const Shape& sh, size_t& axis, std::vector<int>& axes) {
    // Ellipsis axes align to the right across operands.
    if (erank > ellipsis_rank) {
      for (int e = ellipsis_rank < 0 ? 0 : ellipsis_rank; e < erank; ++e) {
        ellipsis_dims.insert(ellipsis_dims.begin(), static_cast<int>(spec.dims.size()));
        spec.dims.push_back({dim_name('e', e), 1, DimRole::Parallel});
      }
      ellipsis_rank = erank;
    }
    for (int e = 0; e < erank; ++e) {
      int d = ellipsis_dims[static_cast<size_t>(ellipsis_rank - erank + e)];
      int64_t size = sh[axis++];
      int64_t& have = spec.dims[static_cast<size_t>(d)].size;
      if (have != size && have != 1 && size != 1) throw OpError("'...' axes do not broadcast");
      have = std::max(have, size);
      axes.push_back(size == have ? d : -1);
    }
  }

  // Letter c naming axis `axis` of shape sh: returns its dim.
  int add_letter(char c, const Shape& sh, size_t axis) {
    if (!std::isalpha(static_cast<unsigned char>(c))) throw OpError(std::string("bad character '") + c + "' in equation");
    ++letter_count[c];
    auto [it, fresh] = letter_dim.emplace(c, static_cast<int>(spec.dims.size()));
    if (fresh) spec.dims.push_back({std::string(1, c), sh[axis], DimRole::Parallel});
    else if (spec.dims[static_cast<size_t>(it->second)].size != sh[axis]) {
      throw OpError(std::string("letter '") + c + "' has sizes " + std::to_string(spec.dims[static_cast<size_t>(it->second)].size) + " and " + std::to_string(sh[axis]));
    }
    return it->second;
  }

  // Term t of input i, of shape sh.
  void add_operand(const std::string& t, const Shape& sh, size_t i) {
    size_t dots = t.find("...");
    size_t letters = t.size() - (dots == std::string::npos ? 0 : 3);
    if (letters > sh.size() || (dots == std::string::npos && letters != sh.size())) {
      throw OpError("term '" + t + "' does not match input " + std::to_string(i) + " " + shape_str(sh));
    }
    int erank = static_cast<int>(sh.size() - letters);
    std::vector<int> axes;
    size_t axis = 0;
    for (size_t k = 0; k < t.size(); ++k) {
      if (k == dots) {
        add_ellipsis(erank, sh, axis, axes);
        k += 2;
        continue;
      }
      axes.push_back(add_letter(t[k], sh, axis));
      ++axis;
    }
    spec.operands.push_back(axes);
  }

  // The output term when the equation has no "->": "..." if any, then the letters used once, in
  // alphabetical order.
  std::string implicit_output() const {
    std::string rhs = ellipsis_rank > 0 ? "..." : "";
    for (auto [c, n] : letter_count) {
      if (n == 1) rhs += c;
    }
    return rhs;
  }

  // Reads the output term; the dims it leaves out become reductions.
  void set_output(const std::string& rhs) {
    std::set<int> in_output;
    for (size_t k = 0; k < rhs.size(); ++k) {
      if (rhs.compare(k, 3, "...") == 0) {
        for (int d : ellipsis_dims) {
          spec.output.push_back(d);
          in_output.insert(d);
        }
        k += 2;
        continue;
      }
      auto it = letter_dim.find(rhs[k]);
      if (it == letter_dim.end()) throw OpError(std::string("output letter '") + rhs[k] + "' is not in any input");
      spec.output.push_back(it->second);
      in_output.insert(it->second);
    }
    for (size_t d = 0; d < spec.dims.size(); ++d) {
      if (!in_output.count(static_cast<int>(d))) spec.dims[d].role = DimRole::Reduction;
    }
  }
};

EinsumSpec parse_einsum(const OpView& v) {
  std::string eq;
  for (char c : v.node.attr_string("equation", "")) {
    if (c != ' ') eq += c;
  }
  if (eq.empty()) throw OpError("missing attribute 'equation'");
  size_t arrow = eq.find("->");
  std::vector<std::string> terms = einsum_terms(eq.substr(0, arrow));
  if (static_cast<int>(terms.size()) != v.num_inputs()) throw OpError("equation has " + std::to_string(terms.size()) + " operands, node has " + std::to_string(v.num_inputs()));
  EinsumParse p;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (!v.has_input(static_cast<int>(i))) throw OpError("missing input " + std::to_string(i));
    p.add_operand(terms[i], v.in_shape(static_cast<int>(i)), i);
  }
  p.set_output(arrow != std::string::npos ? eq.substr(arrow + 2) : p.implicit_output());
  return p.spec;
}

double einsum_points(const OpView& v) {
  double p = 1;
  for (const IterDim& d : parse_einsum(v).dims) p *= static_cast<double>(d.size);
  return p;
}

OpDef einsum() {
  OpDef d;
  d.type = "Einsum";
  d.family = "linear";
  d.flops_doc = "2·P for two operands (P = product of all index sizes), P for one / 2·P per operand needing a gradient";
  d.saves_doc = "with two operands: each operand, for the other's gradient";
  d.infer = [](const OpView& v) {
    EinsumSpec s = parse_einsum(v);
    Shape out;
    for (int dim : s.output) out.push_back(s.dims[static_cast<size_t>(dim)].size);
    return std::vector<OutType>{{v.in(0).dtype, out}};
  };
  d.space = [](const OpView& v) {
    EinsumSpec s = parse_einsum(v);
    return IterSpace{s.dims, s.operands, {s.output}, {}};
  };
  d.fwd_flops = [](const OpView& v) { return (v.num_inputs() >= 2 ? 2 : 1) * einsum_points(v); };
  d.bwd_flops = [](const OpView& v, const std::vector<bool>& g) {
    double f = 0;
    for (bool b : g) f += b ? (v.num_inputs() >= 2 ? 2 : 1) * einsum_points(v) : 0.0;
    return f;
  };
  d.saved = [](const OpView& v, const std::vector<bool>& g) {
    return v.num_inputs() == 2 ? save_for_other_operand(v, g) : std::vector<Saved>{};
  };
  return d;
}

}  // namespace

void register_einsum(std::vector<OpDef>& ops) { ops.push_back(einsum()); }

}  // namespace tensoropt::ops
