#include "launcher/runtime/cpu/linear_window.h"

#include <algorithm>
#include <string>

#include "launcher/runtime/kernel.h"

namespace tensoropt::runtime::cpu {

std::vector<int64_t> ints_or(const Node& node, const char* key, int64_t fill, size_t n) {
  auto a = node.attr_ints(key);
  if (!a || a->empty()) return std::vector<int64_t>(n, fill);
  return *a;
}

Window make_window(const Node& node, const Shape& in, const Shape& out, const Shape& kernel,
                   const std::vector<int64_t>& pad, const std::vector<int64_t>& pad_end) {
  const size_t r = in.size();
  if (r > 3) kernel_error(node, std::to_string(r) + " spatial axes: only 1 to 3 are implemented");
  auto stride = ints_or(node, "strides", 1, r), dil = ints_or(node, "dilations", 1, r);
  Window w;
  for (size_t i = 0; i < r; ++i) {
    size_t a = 3 - r + i;
    w.in[a] = in[i];
    w.out[a] = out[i];
    w.kernel[a] = kernel[i];
    w.stride[a] = stride[i];
    w.dilation[a] = dil[i];
    w.pad[a] = pad[i];
    w.pad_end[a] = pad_end[i];
  }
  return w;
}

Window conv_window(const Node& node, const Shape& x, const Shape& y, const Shape& kernel) {
  const size_t r = x.size() - 2;
  Shape in(x.begin() + 2, x.end()), out(y.begin() + 2, y.end());
  std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  std::vector<int64_t> pad(r, 0), pad_end(r, 0);
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    auto stride = ints_or(node, "strides", 1, r), dil = ints_or(node, "dilations", 1, r);
    for (size_t i = 0; i < r; ++i) {
      int64_t total = std::max<int64_t>(0, (out[i] - 1) * stride[i] + dil[i] * (kernel[i] - 1) + 1 - in[i]);
      pad[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pad_end[i] = total - pad[i];
    }
  } else if (auto_pad != "VALID") {
    auto p = ints_or(node, "pads", 0, 2 * r);
    pad.assign(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(r));
    pad_end.assign(p.begin() + static_cast<std::ptrdiff_t>(r), p.end());
  }
  return make_window(node, in, out, kernel, pad, pad_end);
}

}  // namespace tensoropt::runtime::cpu
