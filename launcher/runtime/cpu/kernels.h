// The CPU kernels, registered by family into CpuBackend's table (backend.h). One file per family,
// mirroring graph/ops/: each op's forward and backward side by side in its family's file.
#pragma once

#include "launcher/runtime/kernel.h"

namespace tensoropt::runtime::cpu {

void register_elementwise(KernelTable& table);  // elementwise.cc: unary, binary, activations, Where, Clip, Dropout, Cast
void register_linear(KernelTable& table);       // linear.cc: MatMul, Gemm, Conv, ConvTranspose, Einsum
void register_pool(KernelTable& table);         // pool.cc: MaxPool, AveragePool, global pools
void register_norm(KernelTable& table);         // norm.cc: normalisations, Softmax, LogSoftmax, reductions, TopK, CumSum
void register_movement(KernelTable& table);     // movement.cc: Reshape ... Trilu, Gather, GatherElements, ScatterND, OneHot
void register_resample(KernelTable& table);     // resample.cc: Resize, Upsample, DepthToSpace, SpaceToDepth
void register_shape(KernelTable& table);        // shape.cc: Shape, Size, Constant, ConstantOfShape, Range (when not folded)

}  // namespace tensoropt::runtime::cpu
