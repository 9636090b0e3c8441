// Every op of the catalogue has a CPU kernel and at least one kernel case (kernel_check.h), except
// the ops import always folds (Constant, Shape, Size: their values are known at import).
#include <doctest/doctest.h>

#include <set>

#include "graph/op_catalogue.h"
#include "launcher/runtime/cpu/backend.h"
#include "tests/runtime/kernel_check.h"

namespace tensoropt::test {

TEST_CASE("kernels: every catalogue op has a CPU kernel and a kernel case") {
  std::set<std::string> covered;
  for (auto family : {elementwise_cases, linear_cases, pool_cases, norm_cases, layout_cases, resample_cases, shape_cases}) {
    for (const KernelCase& c : family()) covered.insert(c.op);
  }
  const std::set<std::string> folded = {"Constant", "Shape", "Size"};
  runtime::cpu::CpuBackend backend;
  std::string missing_kernel, missing_case;
  for (const OpDef& d : all_ops()) {
    if (folded.count(d.type)) continue;
    if (!backend.kernel(d.type)) missing_kernel += " " + d.type;
    if (!covered.count(d.type)) missing_case += " " + d.type;
  }
  CHECK_MESSAGE(missing_kernel.empty(), "no CPU kernel:" << missing_kernel);
  CHECK_MESSAGE(missing_case.empty(), "no kernel case:" << missing_case);
}

}  // namespace tensoropt::test
