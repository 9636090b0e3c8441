// The kernel test harness: one small model per case (usually one node), run through the executor
// on the CPU backend, so backward sees exactly what the catalogue saves. Checks the forward
// against expected values when given, and every gradient against central finite differences
// along random directions, input by input (fp32 kernels: epsilon 1e-2 relative to the input's
// scale; tolerance 2e-2 relative plus an absolute floor for float32 rounding of the sums).
//
// Each family's test file (test_kernels_<family>.cc) returns its cases from <family>_cases();
// test_kernel_coverage.cc requires a kernel and a case for every op of the catalogue.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tests/onnx_builder.h"

namespace tensoropt::test {

struct KernelCase {
  std::string op;                // the op type under test (coverage)
  std::string name;              // what this case checks, e.g. "Add broadcast [2,3]+[3]"
  ModelBuilder model;            // static-shaped inputs, the node(s), outputs
  // Values of inputs by name (row-major); float inputs not given are uniform in `range`
  // (or in ranges[name]); integer inputs must be given.
  std::map<std::string, std::vector<double>> values = {};
  std::map<std::string, std::pair<double, double>> ranges = {};
  std::pair<double, double> range = {-1.0, 1.0};
  // Expected outputs by name, checked to 1e-5 relative (plus 1e-6 absolute).
  std::map<std::string, std::vector<double>> expect = {};
  bool gradient = true;          // false: the op has no backward (comparisons, ArgMax, ...)
  double tolerance = 2e-2;
};

// Runs one case; reports failures through doctest with the case's name.
void check_kernel(const KernelCase& c);

std::vector<KernelCase> elementwise_cases();
std::vector<KernelCase> linear_cases();
std::vector<KernelCase> pool_cases();
std::vector<KernelCase> norm_cases();
std::vector<KernelCase> movement_cases();
std::vector<KernelCase> resample_cases();
std::vector<KernelCase> shape_cases();
std::vector<KernelCase> norm_large_cases();  // cuda_norm_cases.cc: compared between backends only

}  // namespace tensoropt::test
