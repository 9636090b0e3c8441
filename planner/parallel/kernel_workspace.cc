#include "planner/parallel/kernel_workspace.h"

#include <algorithm>

namespace tensoropt::planner {

ImageParts image_parts(int64_t images, int threads) {
  if (threads > 1 && images >= threads && (images % threads == 0 || images >= 4 * int64_t{threads})) return {threads, 1};
  return {1, std::max(1, threads)};
}

int64_t conv_backward_workspace(const Node& node, const Shape& x, const Shape& w, const Shape& y, bool weight_grad, int threads) {
  const bool transpose = node.op_type == "ConvTranspose";
  if ((node.op_type != "Conv" && !transpose) || x.size() < 3 || w.size() != x.size() || y.size() != x.size()) return 0;
  const int64_t group = node.attr_int("group", 1);
  if (!transpose && group > 1 && group == x[1]) return 0;  // depthwise
  int64_t kernel = 1, xpos = 1, ypos = 1;
  bool pointwise = true;
  const auto strides = node.attr_ints("strides");
  for (size_t a = 2; a < x.size(); ++a) {
    kernel *= w[a];
    xpos *= x[a];
    ypos *= y[a];
    const int64_t stride = strides && strides->size() == x.size() - 2 ? (*strides)[a - 2] : 1;
    pointwise = pointwise && w[a] == 1 && stride == 1 && x[a] == y[a];
  }
  // Conv: W [M, C/g, k...], im2col of X: [C/g * k, Y positions]. ConvTranspose: W [C, M/g, k...],
  // im2col of dY: [M/g * k, X positions].
  const int64_t col = pointwise ? 0 : w[1] * kernel * (transpose ? xpos : ypos);
  const ImageParts split = image_parts(x[0], threads);
  int64_t weight = 1;
  for (int64_t d : w) weight *= d;
  return 4 * (split.parts * col + (weight_grad ? (split.parts - 1) * weight : 0));
}

}  // namespace tensoropt::planner
