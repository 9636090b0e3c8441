// The elementwise family's kernel files (kernels.h: register_elementwise, in elementwise.cc,
// calls these). Family-private.
#pragma once

#include "launcher/runtime/kernel.h"

namespace tensoropt::runtime::cpu {

void register_elementwise_unary(KernelTable& table);   // elementwise_unary.cc: maths, activations, IsNaN, IsInf
void register_elementwise_binary(KernelTable& table);  // elementwise_binary.cc: arithmetic, Min, Max, Sum, Mean, PRelu
void register_elementwise_logic(KernelTable& table);   // elementwise_logic.cc: comparisons, And, Or, Xor, Not, Where

}  // namespace tensoropt::runtime::cpu
