// bfloat16 sums: the known answers that check_collectives runs on every group, and the rounding of
// edge cases (ties, overflow, infinities, NaN, signed zeros, subnormals) bit for bit as graph/dtype.h
// rounds the float32 sum.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "graph/dtype.h"
#include "tests/launcher/comm/known_answers.h"

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

namespace {

using namespace test_known;

// Pairs of bfloat16 bit patterns (rank 0's, rank 1's) whose sum is the same bits in either order.
struct Bf16Case {
  uint16_t a, b;
  int want;  // the sum's bits, or -1 for a NaN (whose bits are the processor's)
};
const std::vector<Bf16Case> kBf16Cases = {
    {0x3f80, 0x3b80, 0x3f80},  // 1 + 2^-8: a tie, to the even 1
    {0x3f81, 0x3b80, 0x3f82},  // (1 + 2^-7) + 2^-8: a tie, to the even 1 + 2^-6
    {0x4380, 0x4040, 0x4382},  // 256 + 3 = 259: a tie, to the even 260
    {0xc000, 0x3f80, 0xbf80},  // -2 + 1 = -1
    {0x7f7f, 0x7f7f, 0x7f80},  // the largest finite, twice: infinity
    {0xff7f, 0xff7f, 0xff80},  // and negative
    {0x7f80, 0x3f80, 0x7f80},  // infinity + 1
    {0x7f80, 0xff80, -1},      // infinity - infinity: NaN
    {0x7fc1, 0x3f80, -1},      // NaN + 1: NaN
    {0x8000, 0x8000, 0x8000},  // -0 + -0 = -0
    {0x0000, 0x8000, 0x0000},  // 0 + -0 = 0
    {0x0001, 0x0001, 0x0002},  // the least subnormal, twice
};

TEST_CASE("comm: bfloat16 sums are graph/dtype.h's rounding of the float32 sum, bit for bit") {
  // The cases hold graph/dtype.h to the bits written above; the processes then hold the
  // communicator's all_reduce and reduce_scatter to graph/dtype.h's bits.
  for (const Bf16Case& k : kBf16Cases) {
    const uint16_t sum = float_to_bf16(bf16_to_float(k.a) + bf16_to_float(k.b));
    INFO(k.a << " + " << k.b);
    if (k.want < 0) CHECK(((sum & 0x7f80) == 0x7f80 && (sum & 0x7f) != 0));
    else CHECK(sum == k.want);
  }
  TempDir dir;
  auto results = run_children(2, [&](int rank) {
    auto c = make_gloo_communicator(options(rank, 2, "file:" + dir.path));
    std::vector<uint16_t> buf, want;
    for (const Bf16Case& k : kBf16Cases) {
      buf.push_back(rank == 0 ? k.a : k.b);
      want.push_back(float_to_bf16(bf16_to_float(k.a) + bf16_to_float(k.b)));
    }
    std::vector<uint16_t> in = buf;
    c->all_reduce(buf.data(), static_cast<int64_t>(buf.size()), DType::BF16, c->world());
    expect(buf, want, "all_reduce bfloat16");
    const int64_t half = static_cast<int64_t>(in.size()) / 2, rest = static_cast<int64_t>(in.size()) - half;
    std::vector<uint16_t> out(static_cast<size_t>(rank == 0 ? half : rest));
    c->reduce_scatter_v(in.data(), out.data(), {half, rest}, DType::BF16, c->world());
    const auto first = want.begin() + (rank == 0 ? 0 : half);
    expect(out, std::vector<uint16_t>(first, first + static_cast<int64_t>(out.size())), "reduce_scatter bfloat16");
    c->barrier(c->world());  // the last collective before the communicator goes (communicator.h)
  }, kChildLimit);
  check_all_ok(results);
}

}  // namespace
}  // namespace tensoropt::comm
