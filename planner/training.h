// How the model is trained, as far as cost is concerned: numeric precision and optimizer, and the
// bytes per parameter element each implies (docs/cost-model.md "Memory").
//
//   precision fp32: weights, gradients and activations in fp32; compute on FP32 CUDA cores.
//   precision bf16: mixed precision as Megatron-LM and ZeRO (Rajbhandari et al., SC 2020, section 3.1)
//                   do it: bf16 weights, gradients and activations; an fp32 master copy of the
//                   weights kept with the optimizer state; matmul-class ops on BF16 tensor cores.
//
// Bytes per trainable element:          weights  gradients  optimizer state (master included)
//   fp32, SGD                               4        4          0
//   fp32, SGD with momentum                 4        4          4
//   fp32, Adam                              4        4          8   (first and second moments)
//   bf16, SGD                               2        2          4   (fp32 master)
//   bf16, SGD with momentum                 2        2          8
//   bf16, Adam                              2        2         12   (ZeRO's K = 12)
// Activations and other float tensors take 4 bytes per element under fp32 and 2 under bf16;
// integer tensors (token ids, indices) keep their own type.
// Errors: the parsers throw InputError naming the flag and the accepted values.
// Pure values; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "graph/ir.h"

namespace tensoropt::planner {

enum class Precision : uint8_t { Fp32, Bf16 };
enum class Optimizer : uint8_t { Sgd, Momentum, Adam };

Precision parse_precision(std::string_view text);  // "fp32" | "bf16"
// The optimizers every command names the same way (plan, evaluate and run): SGD, SGD with
// momentum, Adam and AdamW. The planner costs AdamW as Adam (the same state, the same passes).
inline constexpr std::string_view kOptimizerNames = "sgd, momentum, adam, adamw";
Optimizer parse_optimizer(std::string_view text);  // one of kOptimizerNames
std::string_view precision_name(Precision p);
std::string_view optimizer_name(Optimizer o);

struct Training {
  Precision precision = Precision::Fp32;
  Optimizer optimizer = Optimizer::Adam;

  int weight_bytes() const { return precision == Precision::Bf16 ? 2 : 4; }
  int gradient_bytes() const { return weight_bytes(); }
  int optimizer_state_bytes() const;
  // Bytes of one element of `t` as it lives during training (float types follow the precision).
  int element_bytes(const Tensor& t) const;
};

}  // namespace tensoropt::planner
