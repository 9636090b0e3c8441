// Two backends on the same kernel case (kernel_check.h): the case's model runs forward and
// backward on each with the same inputs, weights and output gradients, and the outputs and input
// gradients are compared. This is how the CUDA backend is held to the CPU backend: over the host
// emulation of its kernels in every CI run (test_cuda_emulated.cc), and on a GPU when one is
// lent (test_cuda_gpu.cc, scripts/gpu-check).
#pragma once

#include <map>
#include <random>
#include <string>
#include <vector>

#include "launcher/runtime/backend.h"
#include "tests/launcher/runtime/kernel_check.h"

namespace tensoropt::test {

// Tensor `x`'s values `v` as a new array on `backend` (through Backend::write); and an array's
// values read back as doubles (any dtype the runtime holds).
runtime::Array array_of(const Tensor& x, const std::vector<double>& v, runtime::Backend& backend, runtime::MemoryKind kind);
std::vector<double> values_of(const runtime::Array& a, runtime::Backend& backend);

// The values a case's tensors take: those the case gives, else the importer's (a constant's),
// else uniform in the case's range (or ranges[name]) from a fixed seed, each drawn once, in the
// order first asked. An integer tensor without values is the case's mistake (std::runtime_error).
class CaseValues {
 public:
  explicit CaseValues(const KernelCase& c) : c_(c), rng_(12345) {}
  const std::vector<double>& operator()(const Tensor& x);
  void set(const std::string& name, std::vector<double> v) { values_[name] = std::move(v); }
  const std::vector<double>& at(const std::string& name) const { return values_.at(name); }

 private:
  const KernelCase& c_;
  std::mt19937_64 rng_;
  std::map<std::string, std::vector<double>> values_;
};

// The weights R of the objective sum over float outputs of <out, R>, each element uniform in
// [-1, 1) from `rng` (the output gradients a kernel test runs backward from); nullptr for
// non-float outputs.
struct OutputWeights {
  std::vector<runtime::Array> arrays;
  std::vector<const runtime::Array*> pointers;
};
OutputWeights random_output_weights(const Graph& g, runtime::Backend& backend, std::mt19937_64& rng);

// What one backend computed for a case: the graph outputs, then the gradients by tensor name.
struct CaseRun {
  std::string error;     // non-empty: the run threw
  bool refused = false;  // ... an InputError: a node without a kernel, an input a kernel refuses
  std::vector<std::vector<double>> outputs;
  std::map<std::string, std::vector<double>> gradients;
};

// Runs `c` on `backend` (inputs and weights uniform in the case's ranges from a fixed seed, so two
// backends see the same values), under mixed precision with `bf16` (ExecutorOptions::bf16). Never
// throws for what the backend throws: it lands in error.
CaseRun run_case(const KernelCase& c, runtime::Backend& backend, bool bf16 = false);

struct Comparison {
  std::string op, name;
  std::string status;        // "ok", "no kernel", "refused: <why>", "mismatch", "failed: <why>"
  double forward_error = 0;  // the largest |a - b| / (|b| + 1) over every output element
  double gradient_error = 0; // the same over every gradient element
};

// Compares `test` against `reference` on `c`; `tolerance` bounds both errors.
Comparison compare_backends(const KernelCase& c, runtime::Backend& reference, runtime::Backend& test, double tolerance);

// Every kernel case of every family (kernel_check.h).
std::vector<KernelCase> all_kernel_cases();

}  // namespace tensoropt::test
