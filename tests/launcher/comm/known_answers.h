// Known answers for the communicator tests (test_*.cc here): every collective checked against
// what it must compute, on forked processes (tests/children.h) that meet through a file store in
// a fresh temporary directory. Each check throws std::runtime_error naming the collective, the
// dtype, the group and the first wrong element; a child reports "ok" or that message.
//
// Every member of a group calls the same checks in the same order (they are collectives).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "launcher/comm/gloo_communicator.h"
#include "tests/children.h"

namespace tensoropt::comm {

// For doctest's failure messages.
std::ostream& operator<<(std::ostream& os, const Group& g);

namespace test_known {

using test::ChildResult;
using test::run_children;
using test::TempDir;

// How long the tests of results let their children run before killing them.
inline constexpr std::chrono::milliseconds kChildLimit{40000};

// Tests of results wait up to 10 s (6 processes under ASan on a loaded 2-core machine need more
// than 3 s at times); the fault tests pass their own short timeouts.
GlooOptions options(int rank, int size, const std::string& rendezvous,
                    std::chrono::milliseconds timeout = std::chrono::seconds(10));

void check_all_ok(const std::vector<ChildResult>& results);

// What world rank r contributes at element i: small integers, exact in every dtype and their sums.
template <typename T>
T val(int r, int64_t i) {
  return static_cast<T>(r * 100 + i % 50);
}

template <typename T>
void expect(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  if (got.size() != want.size())
    throw std::runtime_error(what + ": " + std::to_string(got.size()) + " elements, expected " + std::to_string(want.size()));
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i])
      throw std::runtime_error(what + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " +
                               std::to_string(want[i]));
}

template <typename T>
void check_all_reduce(Communicator& c, const Group& g, DType dt, const std::string& name) {
  const int64_t n = 37;
  std::vector<T> buf(n), want(n, T(0));
  for (int64_t i = 0; i < n; ++i) {
    buf[static_cast<size_t>(i)] = val<T>(c.rank(), i);
    for (int r : g.ranks) want[static_cast<size_t>(i)] += val<T>(r, i);
  }
  c.all_reduce(buf.data(), n, dt, g);
  expect(buf, want, "all_reduce " + name + " over " + g.str());
}

template <typename T>
void check_all_gather(Communicator& c, const Group& g, DType dt, const std::vector<int64_t>& counts, const std::string& name) {
  const int me = g.index_of(c.rank());
  std::vector<T> in(static_cast<size_t>(counts[static_cast<size_t>(me)])), want;
  for (size_t k = 0; k < in.size(); ++k) in[k] = val<T>(c.rank(), static_cast<int64_t>(k));
  for (size_t j = 0; j < counts.size(); ++j)
    for (int64_t k = 0; k < counts[j]; ++k) want.push_back(val<T>(g.ranks[j], k));
  std::vector<T> out(want.size(), T(0));
  c.all_gather_v(in.data(), out.data(), counts, dt, g);
  expect(out, want, "all_gather " + name + " over " + g.str());
}

template <typename T>
void check_reduce_scatter(Communicator& c, const Group& g, DType dt, const std::vector<int64_t>& counts, const std::string& name) {
  const auto me = static_cast<size_t>(g.index_of(c.rank()));
  int64_t total = 0, offset = 0;
  for (size_t j = 0; j < counts.size(); ++j) {
    if (j == me) offset = total;
    total += counts[j];
  }
  std::vector<T> in(static_cast<size_t>(total)), want(static_cast<size_t>(counts[me]), T(0));
  for (int64_t i = 0; i < total; ++i) in[static_cast<size_t>(i)] = val<T>(c.rank(), i);
  for (int64_t k = 0; k < counts[me]; ++k)
    for (int r : g.ranks) want[static_cast<size_t>(k)] += val<T>(r, offset + k);
  std::vector<T> out(want.size(), T(-1));
  c.reduce_scatter_v(in.data(), out.data(), counts, dt, g);
  expect(out, want, "reduce_scatter " + name + " over " + g.str());
}

// Group rank a sends cnt(a, b) elements to group rank b; element k is sender*1000 + b*10 + k.
template <typename T>
void check_all_to_all(Communicator& c, const Group& g, DType dt, const std::function<int64_t(int, int)>& cnt,
                      const std::string& name) {
  const int me = g.index_of(c.rank()), n = g.size();
  std::vector<int64_t> sc, rc;
  std::vector<T> in, want;
  for (int j = 0; j < n; ++j) {
    sc.push_back(cnt(me, j));
    rc.push_back(cnt(j, me));
    for (int64_t k = 0; k < cnt(me, j); ++k) in.push_back(static_cast<T>(c.rank() * 1000 + j * 10 + k));
    for (int64_t k = 0; k < cnt(j, me); ++k) want.push_back(static_cast<T>(g.ranks[static_cast<size_t>(j)] * 1000 + me * 10 + k));
  }
  std::vector<T> out(want.size(), T(-1));
  c.all_to_all_v(in.data(), sc, out.data(), rc, dt, g);
  expect(out, want, "all_to_all " + name + " over " + g.str());
}

template <typename T>
void check_broadcast(Communicator& c, const Group& g, DType dt, const std::string& name) {
  for (int root = 0; root < g.size(); ++root) {
    const int64_t n = 23;
    std::vector<T> buf(n), want(n);
    for (int64_t i = 0; i < n; ++i) {
      want[static_cast<size_t>(i)] = val<T>(g.ranks[static_cast<size_t>(root)], i);
      buf[static_cast<size_t>(i)] = g.index_of(c.rank()) == root ? val<T>(c.rank(), i) : T(0);
    }
    c.broadcast(buf.data(), n, dt, root, g);
    expect(buf, want, "broadcast " + name + " from group rank " + std::to_string(root) + " over " + g.str());
  }
}

// bfloat16 sums (test_bf16.cc): all_reduce and reduce_scatter of small integers, and the rounding
// of a tie to even on two members.
void check_bf16_sums(Communicator& c, const Group& g);

// Every collective over `g`, whose members all call this; several dtypes, equal and uneven counts
// (with zeros), float16/bfloat16 moved as bytes, bfloat16 summed.
void check_collectives(Communicator& c, const Group& g);

// check_collectives over the world of n forked processes, each checking its identity first.
void check_world(int n);

}  // namespace test_known
}  // namespace tensoropt::comm
