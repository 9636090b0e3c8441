// bfloat16 sums: the known answers that check_collectives runs on every group.
#include <cstring>
#include <string>
#include <vector>

#include "tests/comm/known_answers.h"

namespace tensoropt::comm {

namespace test_known {

// bfloat16 sums: small integers (exact in bfloat16, as are their sums up to 256), and on two
// members 256 + 3 = 259, halfway between 258 and 260, which rounds to the even 260 (truncation
// would give 258).
void check_bf16_sums(Communicator& c, const Group& g) {
  auto bf16 = [](float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return static_cast<uint16_t>(bits >> 16);  // exact for these values
  };
  const int n = g.size();
  const int64_t count = 41;
  std::vector<uint16_t> buf(count), want(count);
  int members = 0;
  for (int r : g.ranks) members += r + 1;
  for (int64_t i = 0; i < count; ++i) {
    buf[static_cast<size_t>(i)] = bf16(static_cast<float>((c.rank() + 1) * (i % 5 + 1)));
    want[static_cast<size_t>(i)] = bf16(static_cast<float>(members * (i % 5 + 1)));
  }
  std::vector<uint16_t> in = buf;
  c.all_reduce(buf.data(), count, DType::BF16, g);
  expect(buf, want, "all_reduce bfloat16 over " + g.str());
  std::vector<int64_t> counts(static_cast<size_t>(n), 3);
  std::vector<uint16_t> rs_in(in.begin(), in.begin() + 3 * n), rs_out(3);
  c.reduce_scatter_v(rs_in.data(), rs_out.data(), counts, DType::BF16, g);
  const auto me = static_cast<size_t>(g.index_of(c.rank()));
  expect(rs_out, std::vector<uint16_t>(want.begin() + 3 * me, want.begin() + 3 * me + 3), "reduce_scatter bfloat16 over " + g.str());
  if (n == 2) {
    std::vector<uint16_t> x{bf16(me == 0 ? 256.0f : 3.0f)};
    c.all_reduce(x.data(), 1, DType::BF16, g);
    expect(x, std::vector<uint16_t>{bf16(260.0f)}, "all_reduce bfloat16 256 + 3 over " + g.str());
  }
}

}  // namespace test_known
}  // namespace tensoropt::comm
