// Scratch memory a kernel's backward allocates beyond the op's inputs, outputs and their
// gradients, as the runtime's backend does it, so that the planner costs what the runtime holds
// (docs/cost-model.md "Workspace"). One definition for both sides: the CPU backend's
// convolutions split their images with image_parts(), and the runtime's kernel test checks its
// allocator against conv_backward_workspace().
//
// The CPU backend runs Conv and ConvTranspose by im2col + GEMM over images split into parts that
// run side by side; each part has its own im2col buffer ([C/group x kernel, output positions] for
// Conv, [M/group x kernel, input positions] for ConvTranspose; none when the convolution is
// pointwise: 1x1, stride 1, same spatial size) and, when the weight takes a gradient, each part
// but the first its own partial sum of the weight gradient. Depthwise convolutions use neither.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>

#include "graph/ir.h"

namespace tensoropt::planner {

struct ImageParts {
  int64_t parts = 1;  // images are split into this many parts, run side by side
  int inner = 1;      // threads each part's GEMMs use
};
// `threads` parts when every part gets an image and either they divide evenly or there are at
// least 4 images per thread; otherwise one part on every thread.
ImageParts image_parts(int64_t images, int threads);

// The bytes (float32) a Conv or ConvTranspose backward allocates beyond its gradients, for local
// shapes x [N, C, ...], w, y; 0 for any other op. REQUIRES: shapes of rank >= 3.
int64_t conv_backward_workspace(const Node& node, const Shape& x, const Shape& w, const Shape& y, bool weight_grad, int threads);

}  // namespace tensoropt::planner
