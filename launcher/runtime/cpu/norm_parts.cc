#include "launcher/runtime/cpu/norm_parts.h"

#include <cstring>
#include <string>

namespace tensoropt::runtime::cpu {

Rows rows_of(const Shape& s, int begin, int end) {
  Rows r;
  for (int a = 0; a < static_cast<int>(s.size()); ++a) {
    int64_t d = s[static_cast<size_t>(a)];
    if (a < begin) r.outer *= d;
    else if (a < end) r.n *= d;
    else r.inner *= d;
  }
  return r;
}

double row_sum(const float* p, int64_t n, int64_t stride) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t k = 0;
  for (; k + 4 <= n; k += 4) {
    s0 += p[k * stride];
    s1 += p[(k + 1) * stride];
    s2 += p[(k + 2) * stride];
    s3 += p[(k + 3) * stride];
  }
  for (; k < n; ++k) s0 += p[k * stride];
  return (s0 + s1) + (s2 + s3);
}

int node_axis(const Node& node, const char* key, int64_t fallback, int rank) {
  int64_t a = node.attr_int(key, fallback);
  if (a < -rank || a >= rank) kernel_error(node, std::string(key) + " " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
  return static_cast<int>(a < 0 ? a + rank : a);
}

Array keep_input(const OpCall& c, int i) {
  const Array& a = *c.in[static_cast<size_t>(i)];
  if (a.kind() == MemoryKind::Parameters || a.kind() == MemoryKind::Buffers) return a;
  Array copy(a.dtype(), a.shape(), *c.ctx.allocator, MemoryKind::Activations);
  if (a.bytes() > 0) std::memcpy(copy.raw(), a.raw(), static_cast<size_t>(a.bytes()));
  return copy;
}

}  // namespace tensoropt::runtime::cpu
