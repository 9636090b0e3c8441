#include "planner/file_hash.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "graph/error.h"

namespace tensoropt::planner {
namespace {

// XXH64 as Yann Collet's specification defines it (doc/xxhash_spec.md of the xxHash project).
constexpr uint64_t kP1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kP2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kP3 = 0x165667B19E3779F9ull;
constexpr uint64_t kP4 = 0x85EBCA77C2B2AE63ull;
constexpr uint64_t kP5 = 0x27D4EB2F165667C5ull;

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t read64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

uint64_t read32(const unsigned char* p) { return static_cast<uint64_t>(p[0]) | uint64_t{p[1]} << 8 | uint64_t{p[2]} << 16 | uint64_t{p[3]} << 24; }

uint64_t round(uint64_t acc, uint64_t input) { return rotl(acc + input * kP2, 31) * kP1; }

uint64_t merge(uint64_t acc, uint64_t v) { return (acc ^ round(0, v)) * kP1 + kP4; }

// XXH64 fed in pieces: 32-byte stripes into four lanes, the last partial stripe kept for the end.
class Xxh64 {
 public:
  void update(const unsigned char* p, size_t n) {
    total_ += n;
    if (held_ > 0) {
      const size_t take = std::min(n, sizeof stripe_ - held_);
      std::memcpy(stripe_ + held_, p, take);
      held_ += take;
      p += take;
      n -= take;
      if (held_ < sizeof stripe_) return;
      consume(stripe_);
      held_ = 0;
    }
    for (; n >= 32; p += 32, n -= 32) consume(p);
    std::memcpy(stripe_, p, n);
    held_ = n;
  }

  uint64_t digest() const {
    uint64_t h = kP5;  // under one stripe the lanes are unused
    if (total_ >= 32) {
      h = rotl(v_[0], 1) + rotl(v_[1], 7) + rotl(v_[2], 12) + rotl(v_[3], 18);
      for (uint64_t v : v_) h = merge(h, v);
    }
    h += total_;
    const unsigned char* p = stripe_;
    size_t n = held_;
    for (; n >= 8; p += 8, n -= 8) h = rotl(h ^ round(0, read64(p)), 27) * kP1 + kP4;
    if (n >= 4) {
      h = rotl(h ^ (read32(p) * kP1), 23) * kP2 + kP3;
      p += 4;
      n -= 4;
    }
    for (; n > 0; ++p, --n) h = rotl(h ^ (*p * kP5), 11) * kP1;
    h ^= h >> 33;
    h *= kP2;
    h ^= h >> 29;
    h *= kP3;
    h ^= h >> 32;
    return h;
  }

 private:
  void consume(const unsigned char* p) {
    for (int i = 0; i < 4; ++i) v_[i] = round(v_[i], read64(p + 8 * i));
  }

  uint64_t v_[4] = {kP1 + kP2, kP2, 0, 0 - kP1};
  uint64_t total_ = 0;
  unsigned char stripe_[32] = {};
  size_t held_ = 0;
};

class Fnv1a {
 public:
  void update(const unsigned char* p, size_t n) {
    for (size_t i = 0; i < n; ++i) h_ = (h_ ^ p[i]) * 1099511628211ull;
  }
  uint64_t digest() const { return h_; }

 private:
  uint64_t h_ = kFnvModelBasis;
};

// Read in pieces: a model of several GiB is hashed by every worker of a run, and holding all of it
// at once would double the memory the run needs before its first step.
template <class Hash>
std::string hash_pieces(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(path + ": cannot be read");
  std::vector<char> piece(size_t{1} << 20);
  Hash hash;
  while (f) {
    f.read(piece.data(), static_cast<std::streamsize>(piece.size()));
    hash.update(reinterpret_cast<const unsigned char*>(piece.data()), static_cast<size_t>(f.gcount()));
  }
  if (f.bad()) throw InputError(path + ": cannot be read");
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(hash.digest()));
  return buf;
}

}  // namespace

std::string file_hash(const std::string& path, const std::string& algorithm) {
  if (algorithm == "xxh64") return hash_pieces<Xxh64>(path);
  if (algorithm == "fnv1a64") return hash_pieces<Fnv1a>(path);
  throw InputError(path + ": no model hash '" + algorithm + "' (xxh64, or fnv1a64 in older plan files)");
}

}  // namespace tensoropt::planner
