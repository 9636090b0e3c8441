// Kernel cases of launcher/runtime/cpu/movement*.cc (the harness: kernel_check.h). Expected values
// come from numpy (np.transpose, np.concatenate, np.split, slicing, np.take, np.take_along_axis,
// np.pad, np.broadcast_to, np.tile, np.triu / np.tril) on inputs 1, 2, 3, ...; the gradient of
// every case is checked against finite differences.
#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "graph/error.h"
#include "graph/import.h"
#include "launcher/runtime/cpu/backend.h"
#include "launcher/runtime/executor.h"
#include "tests/launcher/runtime/kernel_check.h"

namespace tensoropt::test {
namespace {

constexpr int kInt64 = 7;  // onnx::TensorProto::INT64
// Past any axis. (INT64_MAX would not survive the harness, which passes values as doubles.)
constexpr int64_t kMaxEnd = int64_t{1} << 40;

std::vector<double> iota(size_t n, double first = 1) {
  std::vector<double> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

void views(std::vector<KernelCase>& cases) {
  {
    ModelBuilder b;
    b.input("x", {2, 3, 4}).ints("shape", {4, -1}).node("Reshape", {"x", "shape"}, {"y"}).output("y");
    cases.push_back({.op = "Reshape", .name = "Reshape [2,3,4] -> [4,-1]", .model = b, .values = {{"x", iota(24)}},
                     .expect = {{"y", iota(24)}}});
  }
  {
    ModelBuilder b;
    b.input("x", {2, 3, 4}).node("Flatten", {"x"}, {"y"}).attr("axis", int64_t{2}).output("y");
    cases.push_back({.op = "Flatten", .name = "Flatten axis 2", .model = b, .values = {{"x", iota(24)}},
                     .expect = {{"y", iota(24)}}});
  }
  {
    ModelBuilder b;
    b.input("x", {2, 1, 3, 1}).ints("axes", {-1}).node("Squeeze", {"x", "axes"}, {"y"}).output("y");
    cases.push_back({.op = "Squeeze", .name = "Squeeze axes [-1]", .model = b, .values = {{"x", iota(6)}},
                     .expect = {{"y", iota(6)}}});
  }
  {
    ModelBuilder b;
    b.input("x", {2, 3}).ints("axes", {0, -1}).node("Unsqueeze", {"x", "axes"}, {"y"}).output("y");
    cases.push_back({.op = "Unsqueeze", .name = "Unsqueeze axes [0,-1]", .model = b, .values = {{"x", iota(6)}},
                     .expect = {{"y", iota(6)}}});
  }
  {
    // A view between two real ops: the gradient flows through the aliased output.
    ModelBuilder b;
    b.input("x", {2, 6}).ints("shape", {3, 4}).node("Reshape", {"x", "shape"}, {"r"});
    b.node("Transpose", {"r"}, {"y"}).attr("perm", std::vector<int64_t>{1, 0}).output("y");
    cases.push_back({.op = "Reshape", .name = "Reshape then Transpose", .model = b});
  }
  {
    // One row of 160 KB: its gradient copy is split over the threads.
    ModelBuilder b;
    b.input("x", {2, 100, 200}).node("Flatten", {"x"}, {"y"}).attr("axis", int64_t{0}).output("y");
    cases.push_back({.op = "Flatten", .name = "Flatten axis 0, a long row", .model = b});
  }
}

void transpose(std::vector<KernelCase>& cases) {
  {
    ModelBuilder b;
    b.input("x", {2, 3, 4}).node("Transpose", {"x"}, {"y"}).attr("perm", std::vector<int64_t>{2, 0, 1}).output("y");
    cases.push_back({.op = "Transpose", .name = "Transpose perm [2,0,1]", .model = b, .values = {{"x", iota(24)}},
                     .expect = {{"y", {1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23, 4, 8, 12, 16, 20, 24}}}});
  }
  {
    ModelBuilder b;
    b.input("x", {2, 3, 4}).node("Transpose", {"x"}, {"y"}).output("y");
    cases.push_back({.op = "Transpose", .name = "Transpose default perm (reversed)", .model = b, .values = {{"x", iota(24)}},
                     .expect = {{"y", {1, 13, 5, 17, 9, 21, 2, 14, 6, 18, 10, 22, 3, 15, 7, 19, 11, 23, 4, 16, 8, 20, 12, 24}}}});
  }
  {
    ModelBuilder b;
    b.input("x", {2, 3, 4}, kInt64).node("Transpose", {"x"}, {"y"}).attr("perm", std::vector<int64_t>{2, 0, 1}).output("y");
    cases.push_back({.op = "Transpose", .name = "Transpose int64", .model = b, .values = {{"x", iota(24)}},
                     .expect = {{"y", {1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23, 4, 8, 12, 16, 20, 24}}},
                     .gradient = false});
  }
  {
    // Inner axes swapped, sizes not multiples of the 32-element tile.
    ModelBuilder b;
    b.input("x", {3, 40, 50}).node("Transpose", {"x"}, {"y"}).attr("perm", std::vector<int64_t>{0, 2, 1}).output("y");
    cases.push_back({.op = "Transpose", .name = "Transpose [3,40,50] tiled", .model = b});
  }
  {
    // 8 x 8 register blocks inside several tiles, ragged on both axes (67 = 2 x 32 + 3 rows,
    // 141 = 128 + 13 columns), and with the transposed axes apart from a middle one.
    ModelBuilder b;
    b.input("x", {67, 141}).node("Transpose", {"x"}, {"y"}).attr("perm", std::vector<int64_t>{1, 0}).output("y");
    cases.push_back({.op = "Transpose", .name = "Transpose [67,141] in 8x8 blocks", .model = b});
    ModelBuilder c;
    c.input("x", {2, 17, 3, 24}).node("Transpose", {"x"}, {"y"}).attr("perm", std::vector<int64_t>{0, 3, 2, 1}).output("y");
    cases.push_back({.op = "Transpose", .name = "Transpose [2,17,3,24] perm [0,3,2,1]", .model = c});
  }
  {
    // Attention's [B,T,H,D] -> [B,H,T,D]: rows of D copied whole; a size-1 axis dropped.
    ModelBuilder b;
    b.input("x", {2, 5, 1, 3, 4}).node("Transpose", {"x"}, {"y"}).attr("perm", std::vector<int64_t>{0, 3, 2, 1, 4}).output("y");
    cases.push_back({.op = "Transpose", .name = "Transpose rows [2,5,1,3,4] perm [0,3,2,1,4]", .model = b});
  }
}

void concat_split(std::vector<KernelCase>& cases) {
  {
    ModelBuilder b;
    b.input("a", {2, 2, 3}).input("b", {2, 1, 3}).input("c", {2, 3, 3});
    b.node("Concat", {"a", "b", "c"}, {"y"}).attr("axis", int64_t{1}).output("y");
    cases.push_back({.op = "Concat", .name = "Concat axis 1 of three", .model = b,
                     .values = {{"a", iota(12)}, {"b", iota(6, 101)}, {"c", iota(18, 201)}},
                     .expect = {{"y", {1, 2, 3, 4, 5, 6, 101, 102, 103, 201, 202, 203, 204, 205, 206, 207, 208, 209,
                                       7, 8, 9, 10, 11, 12, 104, 105, 106, 210, 211, 212, 213, 214, 215, 216, 217, 218}}}});
  }
  {
    ModelBuilder b;
    b.input("a", {3, 2}).input("b", {3, 5});
    b.node("Concat", {"a", "b"}, {"y"}).attr("axis", int64_t{-1}).output("y");
    cases.push_back({.op = "Concat", .name = "Concat axis -1", .model = b});
  }
  {
    ModelBuilder b;
    b.input("x", {2, 5}).ints("split", {1, 3, 1}).node("Split", {"x", "split"}, {"y0", "y1", "y2"}).attr("axis", int64_t{-1});
    b.output("y0").output("y1").output("y2");
    cases.push_back({.op = "Split", .name = "Split uneven [1,3,1] axis -1", .model = b, .values = {{"x", iota(10)}},
                     .expect = {{"y0", {1, 6}}, {"y1", {2, 3, 4, 7, 8, 9}}, {"y2", {5, 10}}}});
  }
  {
    // The middle output is unused: its gradient is absent and reads as zero.
    ModelBuilder b;
    b.input("x", {6, 2}).node("Split", {"x"}, {"y0", "y1", "y2"}).output("y0").output("y2");
    cases.push_back({.op = "Split", .name = "Split equal parts, middle output unused", .model = b});
  }
  {
    ModelBuilder b(18);
    b.input("x", {3, 5}).node("Split", {"x"}, {"y0", "y1", "y2"}).attr("axis", int64_t{1}).attr("num_outputs", int64_t{3});
    b.output("y0").output("y1").output("y2");
    cases.push_back({.op = "Split", .name = "Split num_outputs 3 of 5 (opset 18)", .model = b, .values = {{"x", iota(15)}},
                     .expect = {{"y0", {1, 2, 6, 7, 11, 12}}, {"y1", {3, 4, 8, 9, 13, 14}}, {"y2", {5, 10, 15}}}});
  }
}

void slice(std::vector<KernelCase>& cases) {
  {
    // x[1:3, :, -1:-6:-2]
    ModelBuilder b;
    b.input("x", {4, 5, 6}).ints("starts", {1, -1}).ints("ends", {3, -6}).ints("axes", {0, 2}).ints("steps", {1, -2});
    b.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"}).output("y");
    cases.push_back({.op = "Slice", .name = "Slice negative step", .model = b, .values = {{"x", iota(120)}},
                     .expect = {{"y", {36, 34, 32, 42, 40, 38, 48, 46, 44, 54, 52, 50, 60, 58, 56, 66, 64, 62, 72, 70,
                                       68, 78, 76, 74, 84, 82, 80, 90, 88, 86}}}});
  }
  {
    // x[:, 1:1000:2, ::3], negative axes, ends past the axis.
    ModelBuilder b;
    b.input("x", {4, 5, 6}).ints("starts", {1, 0}).ints("ends", {1000, kMaxEnd}).ints("axes", {-2, -1}).ints("steps", {2, 3});
    b.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"}).output("y");
    cases.push_back({.op = "Slice", .name = "Slice steps 2 and 3, negative axes", .model = b, .values = {{"x", iota(120)}},
                     .expect = {{"y", {7, 10, 19, 22, 37, 40, 49, 52, 67, 70, 79, 82, 97, 100, 109, 112}}}});
  }
  {
    ModelBuilder b;
    b.input("x", {3, 8, 4}).ints("starts", {2}).ints("ends", {7}).ints("axes", {1});
    b.node("Slice", {"x", "starts", "ends", "axes"}, {"y"}).output("y");
    cases.push_back({.op = "Slice", .name = "Slice rows [2,7) of the middle axis", .model = b});
  }
  {
    // A single long row: the gradient's scatter splits the inner axis over the threads.
    ModelBuilder b;
    b.input("x", {1, 3000}).ints("starts", {5}).ints("ends", {-100}).ints("axes", {1});
    b.node("Slice", {"x", "starts", "ends", "axes"}, {"y"}).output("y");
    cases.push_back({.op = "Slice", .name = "Slice a long row", .model = b});
  }
  {
    ModelBuilder b(9);
    b.input("x", {4, 6}).node("Slice", {"x"}, {"y"}).attr("starts", std::vector<int64_t>{-3}).attr("ends", std::vector<int64_t>{100});
    b.attr("axes", std::vector<int64_t>{1}).output("y");
    cases.push_back({.op = "Slice", .name = "Slice attributes (opset 9)", .model = b});
  }
}

void gather(std::vector<KernelCase>& cases) {
  {
    ModelBuilder b;
    b.input("d", {5, 3}).input("i", {2, 2}, kInt64).node("Gather", {"d", "i"}, {"y"}).output("y");
    cases.push_back({.op = "Gather", .name = "Gather axis 0, negative and repeated indices", .model = b,
                     .values = {{"d", iota(15)}, {"i", {0, -1, 2, 0}}},
                     .expect = {{"y", {1, 2, 3, 13, 14, 15, 7, 8, 9, 1, 2, 3}}}});
  }
  {
    ModelBuilder b;
    b.input("d", {2, 4, 3}).input("i", {3}, kInt64).node("Gather", {"d", "i"}, {"y"}).attr("axis", int64_t{1}).output("y");
    cases.push_back({.op = "Gather", .name = "Gather axis 1", .model = b, .values = {{"d", iota(24)}, {"i", {-1, 0, 2}}},
                     .expect = {{"y", {10, 11, 12, 1, 2, 3, 7, 8, 9, 22, 23, 24, 13, 14, 15, 19, 20, 21}}}});
  }
  {
    ModelBuilder b;
    b.input("d", {2, 4, 3}).input("i", {}, kInt64).node("Gather", {"d", "i"}, {"y"}).attr("axis", int64_t{-2}).output("y");
    cases.push_back({.op = "Gather", .name = "Gather scalar index, axis -2", .model = b, .values = {{"d", iota(24)}, {"i", {-2}}},
                     .expect = {{"y", {7, 8, 9, 19, 20, 21}}}});
  }
  {
    // An embedding: a [50, 300] table (a parameter), [4, 16] token ids with repeats; threads
    // split the columns.
    ModelBuilder b;
    std::vector<double> ids;
    for (int k = 0; k < 64; ++k) ids.push_back((k * 7) % 50 - (k % 3 == 0 ? 50 : 0));
    b.floats("table", {50, 300}).input("i", {4, 16}, kInt64).node("Gather", {"table", "i"}, {"y"}).output("y");
    cases.push_back({.op = "Gather", .name = "Gather embedding table", .model = b, .values = {{"i", ids}}});
  }
  {
    ModelBuilder b;
    b.input("d", {3, 4}).input("i", {3, 2}, kInt64).node("GatherElements", {"d", "i"}, {"y"}).attr("axis", int64_t{1}).output("y");
    cases.push_back({.op = "GatherElements", .name = "GatherElements axis 1", .model = b,
                     .values = {{"d", iota(12)}, {"i", {0, -1, 3, 3, 1, 0}}}, .expect = {{"y", {1, 4, 8, 8, 10, 9}}}});
  }
  {
    // Indices smaller than the data off the axis.
    ModelBuilder b;
    b.input("d", {3, 4}).input("i", {2, 3}, kInt64).node("GatherElements", {"d", "i"}, {"y"}).output("y");
    cases.push_back({.op = "GatherElements", .name = "GatherElements axis 0, indices [2,3] of [3,4]", .model = b,
                     .values = {{"d", iota(12)}, {"i", {2, 0, -1, 1, 1, 0}}}, .expect = {{"y", {9, 2, 11, 5, 6, 3}}}});
  }
  {
    ModelBuilder b;
    b.input("x", {4, 3}).ints("idx", {1, 3}, {2, 1}).input("u", {2, 3}).node("ScatterND", {"x", "idx", "u"}, {"y"}).output("y");
    cases.push_back({.op = "ScatterND", .name = "ScatterND rows", .model = b, .values = {{"x", iota(12)}, {"u", iota(6, 101)}},
                     .expect = {{"y", {1, 2, 3, 101, 102, 103, 7, 8, 9, 104, 105, 106}}}});
  }
  {
    // The same row written twice: the first update is overwritten and takes no gradient.
    ModelBuilder b;
    b.input("x", {4, 3}).ints("idx", {2, 0, -2, 0}, {2, 2}).input("u", {2}).node("ScatterND", {"x", "idx", "u"}, {"y"}).output("y");
    cases.push_back({.op = "ScatterND", .name = "ScatterND elements, repeated index", .model = b});
  }
  {
    ModelBuilder b(16);
    b.input("x", {4, 3}).ints("idx", {2, -2}, {2, 1}).input("u", {2, 3}).node("ScatterND", {"x", "idx", "u"}, {"y"});
    b.attr_s("reduction", "add").output("y");
    cases.push_back({.op = "ScatterND", .name = "ScatterND reduction add, repeated index", .model = b,
                     .values = {{"x", iota(12)}, {"u", iota(6, 101)}},
                     .expect = {{"y", {1, 2, 3, 4, 5, 6, 212, 215, 218, 10, 11, 12}}}});
  }
  {
    ModelBuilder b;
    b.input("i", {2, 3}, kInt64).ints("depth", {4}).input("v", {2}).node("OneHot", {"i", "depth", "v"}, {"y"}).output("y");
    cases.push_back({.op = "OneHot", .name = "OneHot last axis, negative and out-of-range indices", .model = b,
                     .values = {{"i", {1, -1, 5, 3, -5, 0}}, {"v", {-1, 3}}},
                     .expect = {{"y", {-1, 3, -1, -1, -1, -1, -1, 3, -1, -1, -1, -1, -1, -1, -1, 3, -1, -1, -1, -1, 3, -1, -1, -1}}},
                     .gradient = false});
  }
  {
    ModelBuilder b;
    b.input("i", {2, 3}, kInt64).ints("depth", {4}).ints("v", {-1, 3});
    b.node("OneHot", {"i", "depth", "v"}, {"y"}).attr("axis", int64_t{1}).output("y");
    cases.push_back({.op = "OneHot", .name = "OneHot axis 1, int64 values", .model = b, .values = {{"i", {1, -1, 5, 3, -5, 0}}},
                     .expect = {{"y", {-1, -1, -1, 3, -1, -1, -1, -1, -1, -1, 3, -1, -1, -1, 3, -1, -1, -1, -1, -1, -1, 3, -1, -1}}},
                     .gradient = false});
  }
}

void pad(std::vector<KernelCase>& cases) {
  {
    ModelBuilder b;
    b.input("x", {2, 3}).ints("pads", {1, 2, 0, 1}).floats("cv", {}, 0.5f).node("Pad", {"x", "pads", "cv"}, {"y"}).output("y");
    cases.push_back({.op = "Pad", .name = "Pad constant 0.5", .model = b, .values = {{"x", iota(6)}},
                     .expect = {{"y", {0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 1, 2, 3, 0.5, 0.5, 0.5, 4, 5, 6, 0.5}}}});
  }
  {
    ModelBuilder b;
    b.input("x", {3, 4}).ints("pads", {2, 3, 1, 2}).node("Pad", {"x", "pads"}, {"y"}).attr_s("mode", "reflect").output("y");
    cases.push_back({.op = "Pad", .name = "Pad reflect", .model = b, .values = {{"x", iota(12)}},
                     .expect = {{"y", {12, 11, 10, 9, 10, 11, 12, 11, 10, 8, 7, 6, 5, 6, 7, 8, 7, 6, 4, 3, 2, 1, 2, 3, 4, 3, 2,
                                       8, 7, 6, 5, 6, 7, 8, 7, 6, 12, 11, 10, 9, 10, 11, 12, 11, 10, 8, 7, 6, 5, 6, 7, 8, 7, 6}}}});
  }
  {
    ModelBuilder b;
    b.input("x", {3, 4}).ints("pads", {0, 1, 2, 3}).node("Pad", {"x", "pads"}, {"y"}).attr_s("mode", "edge").output("y");
    cases.push_back({.op = "Pad", .name = "Pad edge", .model = b, .values = {{"x", iota(12)}},
                     .expect = {{"y", {1, 1, 2, 3, 4, 4, 4, 4, 5, 5, 6, 7, 8, 8, 8, 8, 9, 9, 10, 11, 12, 12, 12, 12,
                                       9, 9, 10, 11, 12, 12, 12, 12, 9, 9, 10, 11, 12, 12, 12, 12}}}});
  }
  {
    ModelBuilder b;
    b.input("x", {3, 4}).ints("pads", {-1, 0, 0, 2}).node("Pad", {"x", "pads"}, {"y"}).output("y");
    cases.push_back({.op = "Pad", .name = "Pad negative (a crop)", .model = b, .values = {{"x", iota(12)}},
                     .expect = {{"y", {5, 6, 7, 8, 0, 0, 9, 10, 11, 12, 0, 0}}}});
  }
  {
    ModelBuilder b(18);
    b.input("x", {2, 3, 5}).ints("pads", {1, 4, 3, 2}).ints("axes", {-1, 1});
    b.node("Pad", {"x", "pads", "", "axes"}, {"y"}).attr_s("mode", "reflect").output("y");
    cases.push_back({.op = "Pad", .name = "Pad reflect with axes (opset 18)", .model = b});
  }
  {
    ModelBuilder b(10);
    b.input("x", {2, 2, 3}).node("Pad", {"x"}, {"y"}).attr("pads", std::vector<int64_t>{0, 1, 2, 1, 0, 2});
    b.attr_s("mode", "edge").output("y");
    cases.push_back({.op = "Pad", .name = "Pad edge, attributes (opset 10)", .model = b});
  }
}

void broadcast(std::vector<KernelCase>& cases) {
  {
    ModelBuilder b;
    b.input("x", {3, 1}).ints("shape", {2, 1, 4}).node("Expand", {"x", "shape"}, {"y"}).output("y");
    cases.push_back({.op = "Expand", .name = "Expand [3,1] to [2,3,4]", .model = b, .values = {{"x", {1, 2, 3}}},
                     .expect = {{"y", {1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}}}});
  }
  {
    ModelBuilder b;
    b.input("x", {2, 1, 4}).ints("shape", {3, 1, 1, 1}).node("Expand", {"x", "shape"}, {"y"}).output("y");
    cases.push_back({.op = "Expand", .name = "Expand [2,1,4] by [3,1,1,1]", .model = b});
  }
  {
    ModelBuilder b;
    b.input("x", {2, 3}).ints("r", {2, 3}).node("Tile", {"x", "r"}, {"y"}).output("y");
    cases.push_back({.op = "Tile", .name = "Tile [2,3] by [2,3]", .model = b, .values = {{"x", iota(6)}},
                     .expect = {{"y", {1, 2, 3, 1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6, 4, 5, 6, 1, 2, 3, 1, 2, 3, 1, 2, 3, 4, 5,
                                       6, 4, 5, 6, 4, 5, 6}}}});
  }
  {
    ModelBuilder b;
    b.input("x", {2, 1, 3}).ints("r", {1, 4, 2}).node("Tile", {"x", "r"}, {"y"}).output("y");
    cases.push_back({.op = "Tile", .name = "Tile [2,1,3] by [1,4,2]", .model = b});
  }
  {
    ModelBuilder b;
    b.input("x", {2, 3, 4}).node("Trilu", {"x"}, {"y"}).output("y");
    cases.push_back({.op = "Trilu", .name = "Trilu upper", .model = b, .values = {{"x", iota(24)}},
                     .expect = {{"y", {1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12, 13, 14, 15, 16, 0, 18, 19, 20, 0, 0, 23, 24}}}});
  }
  {
    ModelBuilder b;
    b.input("x", {3, 4}).ints("k", {-1}, {}).node("Trilu", {"x", "k"}, {"y"}).attr("upper", int64_t{0}).output("y");
    cases.push_back({.op = "Trilu", .name = "Trilu lower k -1", .model = b, .values = {{"x", iota(12)}},
                     .expect = {{"y", {0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0}}}});
  }
  {
    ModelBuilder b;
    b.input("x", {3, 4}).ints("k", {2}, {}).node("Trilu", {"x", "k"}, {"y"}).output("y");
    cases.push_back({.op = "Trilu", .name = "Trilu upper k 2", .model = b, .values = {{"x", iota(12)}},
                     .expect = {{"y", {0, 0, 3, 4, 0, 0, 0, 8, 0, 0, 0, 0}}}});
  }
}

}  // namespace

std::vector<KernelCase> movement_cases() {
  std::vector<KernelCase> cases;
  views(cases);
  transpose(cases);
  concat_split(cases);
  slice(cases);
  gather(cases);
  pad(cases);
  broadcast(cases);
  return cases;
}

TEST_CASE("kernels: layout forward and backward") {
  for (const KernelCase& c : movement_cases()) check_kernel(c);
}

TEST_CASE("kernels: layout refuses indices out of range, naming the node") {
  // Data [3, 4]; indices ([2] for Gather, [1, 2] for GatherElements, axis 0) hold 1 and `bad`.
  auto forward = [](const std::string& op, int64_t bad) {
    ModelBuilder b;
    b.input("d", {3, 4}).input("i", op == "Gather" ? std::vector<int64_t>{2} : std::vector<int64_t>{1, 2}, kInt64);
    b.node(op, {"d", "i"}, {"y"}, "lookup").output("y");
    Graph g = import_onnx_bytes(b.bytes(), op, {});
    runtime::cpu::CpuBackend backend;
    // The float data is zeros and the indices 1 and `bad`, wherever import classified them (data, parameter, buffer).
    auto make = [&](const Tensor& x, runtime::MemoryKind kind) {
      runtime::Array a(x.dtype, x.shape, backend.allocator(), kind);
      for (int64_t k = 0; k < a.numel(); ++k) {
        if (x.dtype == DType::F32) a.data<float>()[k] = 0;
        else a.data<int64_t>()[k] = k == 0 ? 1 : bad;
      }
      return a;
    };
    std::map<int, runtime::Array> state;
    std::vector<runtime::Array> inputs;
    for (size_t t = 0; t < g.tensors.size(); ++t) {
      const Tensor& x = g.tensors[t];
      if (x.kind == TensorKind::Parameter || x.kind == TensorKind::Buffer) state[static_cast<int>(t)] = make(x, runtime::MemoryKind::Parameters);
    }
    for (int t : g.inputs) inputs.push_back(make(g.tensors[static_cast<size_t>(t)], runtime::MemoryKind::Inputs));
    runtime::Executor ex(g, backend, state);
    ex.forward(inputs, runtime::StepContext{&backend.allocator(), false, 0, 1, 1});
  };
  CHECK_NOTHROW(forward("Gather", -3));
  CHECK_THROWS_WITH_AS(forward("Gather", 3), doctest::Contains("'lookup' (Gather): index 3 out of range"), InputError);
  CHECK_THROWS_WITH_AS(forward("Gather", -4), doctest::Contains("index -4 out of range for an axis of size 3"), InputError);
  CHECK_NOTHROW(forward("GatherElements", -3));
  CHECK_THROWS_WITH_AS(forward("GatherElements", 3), doctest::Contains("index 3 out of range"), InputError);
}

}  // namespace tensoropt::test
