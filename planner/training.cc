#include "planner/training.h"

#include "graph/error.h"

namespace tensoropt::planner {

Precision parse_precision(std::string_view text) {
  if (text == "fp32") return Precision::Fp32;
  if (text == "bf16") return Precision::Bf16;
  throw InputError("--dtype: unknown precision '" + std::string(text) + "' (accepted: fp32, bf16)");
}

Optimizer parse_optimizer(std::string_view text) {
  if (text == "sgd") return Optimizer::Sgd;
  if (text == "momentum") return Optimizer::Momentum;
  if (text == "adam" || text == "adamw") return Optimizer::Adam;  // AdamW keeps and reads what Adam does
  throw InputError("--optimizer: unknown optimizer '" + std::string(text) + "' (accepted: " + std::string(kOptimizerNames) + ")");
}

std::string_view precision_name(Precision p) { return p == Precision::Bf16 ? "bf16" : "fp32"; }

std::string_view optimizer_name(Optimizer o) {
  switch (o) {
    case Optimizer::Sgd: return "sgd";
    case Optimizer::Momentum: return "momentum";
    case Optimizer::Adam: return "adam";
  }
  return "?";
}

int Training::optimizer_state_bytes() const {
  int moments = optimizer == Optimizer::Sgd ? 0 : optimizer == Optimizer::Momentum ? 1 : 2;
  int master = precision == Precision::Bf16 ? 4 : 0;
  return master + 4 * moments;
}

int Training::element_bytes(const Tensor& t) const {
  if (dtype_is_float(t.dtype)) return weight_bytes();
  return static_cast<int>(dtype_size(t.dtype));
}

}  // namespace tensoropt::planner
