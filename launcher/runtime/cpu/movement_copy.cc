#include "launcher/runtime/cpu/movement_copy.h"

#include <algorithm>
#include <cstring>
#ifdef __AVX2__
#include <immintrin.h>
#endif

#include "launcher/runtime/cpu/util.h"

namespace tensoropt::runtime::cpu {
namespace {

constexpr int64_t kChunkBytes = 1 << 16;  // the least a thread is given to copy
// permute's tiles: kTileA elements along the axis inner in dst by kTileB along the one inner in
// src (the longer runs on the read side measured best), kTileA * kTileB elements in all.
constexpr int64_t kTileA = 32, kTileB = 128;

const char* bytes(const void* p) { return static_cast<const char*>(p); }
char* bytes(void* p) { return static_cast<char*>(p); }

// Work items of about `item_bytes` each, grouped so that a chunk moves at least kChunkBytes.
int64_t grain_for(int64_t item_bytes) { return std::max<int64_t>(1, kChunkBytes / std::max<int64_t>(item_bytes, 1)); }

bool all_zero(const void* value, int64_t esize) {
  for (int64_t b = 0; b < esize; ++b) {
    if (bytes(value)[b] != 0) return false;
  }
  return true;
}

// Transposes an 8 x 8 block of 4-byte elements: row r of src (stride ss) becomes column r of dst
// (stride ds), in registers (AVX2), so both sides move whole 32-byte rows.
#ifdef __AVX2__
// (The intrinsics' vector types may alias any type, so 4-byte elements of any kind move through
// them unchanged.)
void transpose8x8(const void* src, int64_t ss, void* dst, int64_t ds) {
  const auto* s = static_cast<const float*>(src);
  auto* d = static_cast<float*>(dst);
  const __m256 r0 = _mm256_loadu_ps(s), r1 = _mm256_loadu_ps(s + ss), r2 = _mm256_loadu_ps(s + 2 * ss),
               r3 = _mm256_loadu_ps(s + 3 * ss), r4 = _mm256_loadu_ps(s + 4 * ss), r5 = _mm256_loadu_ps(s + 5 * ss),
               r6 = _mm256_loadu_ps(s + 6 * ss), r7 = _mm256_loadu_ps(s + 7 * ss);
  const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3),
               t3 = _mm256_unpackhi_ps(r2, r3), t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),
               t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0)), u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2)),
               u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0)), u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2)),
               u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0)), u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2)),
               u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0)), u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  _mm256_storeu_ps(d, _mm256_permute2f128_ps(u0, u4, 0x20));
  _mm256_storeu_ps(d + ds, _mm256_permute2f128_ps(u1, u5, 0x20));
  _mm256_storeu_ps(d + 2 * ds, _mm256_permute2f128_ps(u2, u6, 0x20));
  _mm256_storeu_ps(d + 3 * ds, _mm256_permute2f128_ps(u3, u7, 0x20));
  _mm256_storeu_ps(d + 4 * ds, _mm256_permute2f128_ps(u0, u4, 0x31));
  _mm256_storeu_ps(d + 5 * ds, _mm256_permute2f128_ps(u1, u5, 0x31));
  _mm256_storeu_ps(d + 6 * ds, _mm256_permute2f128_ps(u2, u6, 0x31));
  _mm256_storeu_ps(d + 7 * ds, _mm256_permute2f128_ps(u3, u7, 0x31));
}
#endif

// Decodes a linear index into mixed-radix digits over `dims` (last fastest).
void decode(int64_t k, const std::vector<int64_t>& dims, std::vector<int64_t>& digits) {
  for (size_t a = dims.size(); a-- > 0;) {
    digits[a] = k % dims[a];
    k /= dims[a];
  }
}

// Advances mixed-radix digits by one (last fastest).
void advance(std::vector<int64_t>& digits, const std::vector<int64_t>& dims) {
  for (size_t a = dims.size(); a-- > 0;) {
    if (++digits[a] < dims[a]) return;
    digits[a] = 0;
  }
}

// A permutation with size-1 axes dropped and neighbouring axes merged: src dims and the perm.
struct Permutation {
  std::vector<int64_t> dims, perm;
};

Permutation coalesce(const Shape& shape, const std::vector<int64_t>& perm) {
  std::vector<int64_t> renum(shape.size(), -1);
  int64_t kept = 0;
  for (size_t a = 0; a < shape.size(); ++a) {
    if (shape[a] != 1) renum[a] = kept++;
  }
  std::vector<int64_t> q;  // dst order of the kept src axes, renumbered
  for (int64_t p : perm) {
    if (renum[static_cast<size_t>(p)] >= 0) q.push_back(renum[static_cast<size_t>(p)]);
  }
  std::vector<int64_t> kept_dims;
  for (int64_t d : shape) {
    if (d != 1) kept_dims.push_back(d);
  }
  // Groups: maximal runs of q with consecutive src axes; each becomes one axis.
  std::vector<int64_t> group_first, group_dim;  // per group, in dst order
  for (size_t j = 0; j < q.size(); ++j) {
    int64_t d = kept_dims[static_cast<size_t>(q[j])];
    if (j > 0 && q[j] == q[j - 1] + 1) group_dim.back() *= d;
    else {
      group_first.push_back(q[j]);
      group_dim.push_back(d);
    }
  }
  std::vector<int64_t> order(group_first.size());  // groups in src order
  for (size_t g = 0; g < order.size(); ++g) order[g] = static_cast<int64_t>(g);
  std::sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
    return group_first[static_cast<size_t>(x)] < group_first[static_cast<size_t>(y)];
  });
  Permutation r;
  r.dims.resize(order.size());
  r.perm.resize(order.size());
  for (size_t s = 0; s < order.size(); ++s) {
    auto g = static_cast<size_t>(order[s]);
    r.dims[s] = group_dim[g];
    r.perm[g] = static_cast<int64_t>(s);
  }
  return r;
}

template <typename T>
void permute_typed(const T* src, const Permutation& p, T* dst, int threads) {
  const size_t n = p.dims.size();
  std::vector<int64_t> sst = strides_of(p.dims);
  std::vector<int64_t> out_dims(n), dst_of_src(n);  // dst_of_src[a]: dst stride of src axis a
  for (size_t j = 0; j < n; ++j) out_dims[j] = p.dims[static_cast<size_t>(p.perm[j])];
  std::vector<int64_t> dst_st = strides_of(out_dims);
  for (size_t j = 0; j < n; ++j) dst_of_src[static_cast<size_t>(p.perm[j])] = dst_st[j];
  if (p.perm[n - 1] == static_cast<int64_t>(n - 1)) {
    // The inner axis stays inner: copy rows of it, one per dst index over the outer axes.
    int64_t len = p.dims[n - 1];
    std::vector<int64_t> outer(out_dims.begin(), out_dims.end() - 1);
    int64_t rows = numel(outer);
    parallel_for(rows, grain_for(len * static_cast<int64_t>(sizeof(T))), threads, [&](int64_t lo, int64_t hi) {
      std::vector<int64_t> idx(outer.size());
      decode(lo, outer, idx);
      for (int64_t row = lo; row < hi; ++row) {
        int64_t off = 0;
        for (size_t j = 0; j < outer.size(); ++j) off += idx[j] * sst[static_cast<size_t>(p.perm[j])];
        std::memcpy(dst + row * len, src + off, static_cast<size_t>(len) * sizeof(T));
        advance(idx, outer);
      }
    });
    return;
  }
  // Tiles over A (src axis inner in dst) and B (src inner axis); the other axes index the tile.
  // A tile is read row by row into a buffer and written out column by column, so both sides
  // touch whole cache lines (a strided walk would alias in the cache at power-of-two strides).
  // A short axis gets a long tile of the other.
  const auto A = static_cast<size_t>(p.perm[n - 1]), B = n - 1;
  std::vector<int64_t> other_dims, other_src, other_dst;
  for (size_t a = 0; a < n; ++a) {
    if (a == A || a == B) continue;
    other_dims.push_back(p.dims[a]);
    other_src.push_back(sst[a]);
    other_dst.push_back(dst_of_src[a]);
  }
  const int64_t na = p.dims[A], nb = p.dims[B], sa = sst[A], db = dst_of_src[B];
  const int64_t tile_a = na < kTileA ? na : nb < kTileB ? std::min(na, kTileA * kTileB / nb) : kTileA;
  const int64_t tile_b = std::min(nb, kTileA * kTileB / tile_a);
  const int64_t ta = (na + tile_a - 1) / tile_a, tb = (nb + tile_b - 1) / tile_b;
  const int64_t items = numel(other_dims) * ta * tb;
  const int64_t grain = grain_for(tile_a * tile_b * static_cast<int64_t>(sizeof(T)));
  parallel_for(items, grain, threads, [&](int64_t lo, int64_t hi) {
    std::vector<int64_t> idx(other_dims.size());
    std::vector<T> buf(static_cast<size_t>(tile_a * tile_b));
    for (int64_t it = lo; it < hi; ++it) {
      int64_t ib = it % tb, ia = (it / tb) % ta;
      decode(it / (tb * ta), other_dims, idx);
      int64_t s0 = 0, d0 = 0;
      for (size_t k = 0; k < idx.size(); ++k) {
        s0 += idx[k] * other_src[k];
        d0 += idx[k] * other_dst[k];
      }
      const int64_t a0 = ia * tile_a, la = std::min(na - a0, tile_a), b0 = ib * tile_b, lb = std::min(nb - b0, tile_b);
#ifdef __AVX2__
      if constexpr (sizeof(T) == 4) {
        // 8 x 8 blocks in registers, straight from src to dst; the ragged edges element by element.
        const int64_t fa = la / 8 * 8, fb = lb / 8 * 8;
        const T* s = src + s0 + a0 * sa + b0;
        T* d = dst + d0 + b0 * db + a0;
        for (int64_t a = 0; a < fa; a += 8)
          for (int64_t b = 0; b < fb; b += 8) transpose8x8(s + a * sa + b, sa, d + b * db + a, db);
        for (int64_t a = 0; a < la; ++a)
          for (int64_t b = a < fa ? fb : 0; b < lb; ++b) d[b * db + a] = s[a * sa + b];
        continue;
      }
#endif
      for (int64_t a = 0; a < la; ++a) {
        const T* s = src + s0 + (a0 + a) * sa + b0;
        std::memcpy(&buf[static_cast<size_t>(a * tile_b)], s, static_cast<size_t>(lb) * sizeof(T));
      }
      for (int64_t b = 0; b < lb; ++b) {
        T* d = dst + d0 + (b0 + b) * db + a0;
        for (int64_t a = 0; a < la; ++a) d[a] = buf[static_cast<size_t>(a * tile_b + b)];
      }
    }
  });
}

// Whether map[a] reads every source position of the axis in order.
bool is_identity(const std::vector<int64_t>& map, int64_t src_dim) {
  if (static_cast<int64_t>(map.size()) != src_dim) return false;
  for (size_t i = 0; i < map.size(); ++i) {
    if (map[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

bool is_injective(const std::vector<int64_t>& map, int64_t src_dim) {
  std::vector<bool> seen(static_cast<size_t>(src_dim), false);
  for (int64_t v : map) {
    if (v < 0) continue;
    if (seen[static_cast<size_t>(v)]) return false;
    seen[static_cast<size_t>(v)] = true;
  }
  return true;
}

// A run of the inner axis: output positions [begin, begin + len) read source [src, src + len), or
// lie outside the source when src < 0.
struct Run {
  int64_t begin, len, src;
};

std::vector<Run> runs_of(const std::vector<int64_t>& map) {
  std::vector<Run> runs;
  for (size_t i = 0; i < map.size(); ++i) {
    int64_t v = map[i];
    if (!runs.empty()) {
      Run& r = runs.back();
      bool extends = r.src < 0 ? v < 0 : v == r.src + r.len;
      if (extends) {
        ++r.len;
        continue;
      }
    }
    runs.push_back({static_cast<int64_t>(i), 1, v < 0 ? -1 : v});
  }
  return runs;
}

}  // namespace

void copy_rows(const void* src, int64_t src_stride, void* dst, int64_t dst_stride, int64_t rows, int64_t row_bytes,
               int threads) {
  if (rows <= 0 || row_bytes <= 0) return;
  int64_t segments = 1;
  if (rows < threads && row_bytes >= 2 * kChunkBytes) segments = std::min<int64_t>(threads, row_bytes / kChunkBytes);
  int64_t seg = (row_bytes + segments - 1) / segments;
  parallel_for(rows * segments, grain_for(seg), threads, [&](int64_t lo, int64_t hi) {
    for (int64_t it = lo; it < hi; ++it) {
      int64_t r = it / segments, b0 = (it % segments) * seg, len = std::min(seg, row_bytes - b0);
      if (len <= 0) continue;
      std::memcpy(bytes(dst) + r * dst_stride + b0, bytes(src) + r * src_stride + b0, static_cast<size_t>(len));
    }
  });
}

void fill_elements(void* dst, int64_t n, const void* value, int64_t esize, int threads) {
  if (n <= 0) return;
  if (all_zero(value, esize)) {
    parallel_for(n * esize, kChunkBytes, threads, [&](int64_t lo, int64_t hi) {
      std::memset(bytes(dst) + lo, 0, static_cast<size_t>(hi - lo));
    });
    return;
  }
  by_element_size(esize, [&](auto t) {
    using T = decltype(t);
    T v;
    std::memcpy(&v, value, sizeof(T));
    T* d = static_cast<T*>(dst);
    parallel_for(n, grain_for(esize), threads, [&](int64_t lo, int64_t hi) { std::fill(d + lo, d + hi, v); });
  });
}

void permute(const void* src, const Shape& src_shape, const std::vector<int64_t>& perm, void* dst, int64_t esize,
             int threads) {
  const int64_t n = numel(src_shape);
  if (n == 0) return;
  Permutation p = coalesce(src_shape, perm);
  bool identity = true;
  for (size_t a = 0; a < p.perm.size(); ++a) identity = identity && p.perm[a] == static_cast<int64_t>(a);
  if (identity) {
    copy_rows(src, 0, dst, 0, 1, n * esize, threads);
    return;
  }
  by_element_size(esize, [&](auto t) {
    using T = decltype(t);
    permute_typed(static_cast<const T*>(src), p, static_cast<T*>(dst), threads);
  });
}

Shape AxisMaps::out() const {
  Shape s;
  for (const auto& m : map) s.push_back(static_cast<int64_t>(m.size()));
  return s;
}

void gather_axes(const AxisMaps& m, const void* src, void* dst, int64_t esize, const void* fill, int threads) {
  const Shape out = m.out();
  if (numel(out) == 0) return;
  if (out.empty()) {
    std::memcpy(dst, src, static_cast<size_t>(esize));
    return;
  }
  // Trailing axes read whole become part of one element of `block` source elements.
  size_t n = out.size();
  int64_t block = 1;
  while (n > 1 && is_identity(m.map[n - 1], m.src[n - 1])) block *= m.src[--n];
  const std::vector<int64_t> st = strides_of(m.src);
  const std::vector<int64_t>& inner = m.map[n - 1];
  const std::vector<Run> runs = runs_of(inner);
  const std::vector<int64_t> outer(out.begin(), out.begin() + static_cast<long>(n - 1));
  const int64_t len = static_cast<int64_t>(inner.size()), el = block * esize;
  // Short runs (a strided Slice, a broadcast inner axis): element by element.
  const bool by_element = block == 1 && static_cast<int64_t>(runs.size()) * 4 > len;
  parallel_for(numel(outer), grain_for(len * el), threads, [&](int64_t lo, int64_t hi) {
    std::vector<int64_t> idx(outer.size());
    decode(lo, outer, idx);
    for (int64_t row = lo; row < hi; ++row) {
      int64_t base = 0;
      bool outside = false;
      for (size_t a = 0; a + 1 < n; ++a) {
        int64_t v = m.map[a][static_cast<size_t>(idx[a])];
        outside = outside || v < 0;
        base += v * st[a];
      }
      char* drow = bytes(dst) + row * len * el;
      const char* srow = bytes(src) + base * esize;
      advance(idx, outer);
      if (by_element && !outside) {
        by_element_size(esize, [&](auto t) {
          using T = decltype(t);
          T f{};
          if (fill) std::memcpy(&f, fill, sizeof(T));
          const T* s = reinterpret_cast<const T*>(srow);
          T* d = reinterpret_cast<T*>(drow);
          for (int64_t i = 0; i < len; ++i) {
            int64_t v = inner[static_cast<size_t>(i)];
            d[i] = v < 0 ? f : s[v];
          }
        });
        continue;
      }
      for (const Run& r : runs) {
        char* d = drow + r.begin * el;
        if (outside || r.src < 0) fill_elements(d, r.len * block, fill, esize, 1);
        else std::memcpy(d, srow + r.src * el, static_cast<size_t>(r.len * el));
      }
    }
  });
}

void scatter_add_axes(const AxisMaps& m, const float* dout, float* dsrc, int threads) {
  const float zero = 0;
  fill_elements(dsrc, numel(m.src), &zero, sizeof(float), threads);
  const Shape out = m.out();
  if (numel(out) == 0) return;
  if (out.empty()) {
    dsrc[0] = dout[0];
    return;
  }
  const size_t L = out.size() - 1;
  const std::vector<int64_t> st = strides_of(m.src), ost = strides_of(out);
  // Outer axes: injective ones (P) are split over threads, the others (S) are walked serially.
  std::vector<size_t> P, S;
  std::vector<int64_t> pdims, sdims;
  for (size_t a = 0; a < L; ++a) {
    bool inj = is_injective(m.map[a], m.src[a]);
    (inj ? P : S).push_back(a);
    (inj ? pdims : sdims).push_back(out[a]);
  }
  const int64_t len = out[L], nP = numel(pdims), nS = numel(sdims);
  // Few injective outer positions: split the inner axis too, when it is injective.
  int64_t chunks = 1;
  if (nP < threads && len >= 1024 && is_injective(m.map[L], m.src[L])) chunks = threads;
  const int64_t chunk = (len + chunks - 1) / chunks;
  const std::vector<int64_t>& inner = m.map[L];
  parallel_for(nP * chunks, grain_for(nS * chunk * 4), threads, [&](int64_t lo, int64_t hi) {
    std::vector<int64_t> idx(out.size()), pd(P.size()), sd(S.size());
    for (int64_t it = lo; it < hi; ++it) {
      decode(it / chunks, pdims, pd);
      for (size_t k = 0; k < P.size(); ++k) idx[P[k]] = pd[k];
      int64_t l0 = (it % chunks) * chunk, l1 = std::min(len, l0 + chunk);
      std::fill(sd.begin(), sd.end(), 0);
      for (int64_t s = 0; s < nS; ++s) {
        for (size_t k = 0; k < S.size(); ++k) idx[S[k]] = sd[k];
        advance(sd, sdims);
        int64_t sbase = 0, obase = 0;
        bool outside = false;
        for (size_t a = 0; a < L; ++a) {
          int64_t v = m.map[a][static_cast<size_t>(idx[a])];
          outside = outside || v < 0;
          sbase += v * st[a];
          obase += idx[a] * ost[a];
        }
        if (outside) continue;
        for (int64_t l = l0; l < l1; ++l) {
          int64_t v = inner[static_cast<size_t>(l)];
          if (v >= 0) dsrc[sbase + v * st[L]] += dout[obase + l];
        }
      }
    }
  });
}

}  // namespace tensoropt::runtime::cpu
