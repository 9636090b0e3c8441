#include "tests/launcher/runtime/cuda_emulation.h"

#include "launcher/runtime/cuda/device/driver_table.h"
#include "launcher/runtime/cuda/device/host_exec.h"

namespace tensoropt::test {

const TensoroptCudaDriver& emulated_cuda_driver() {
  static const TensoroptCudaDriver table = cuda_kernels::make_driver_table<cuda_kernels::HostExec>();
  return table;
}

}  // namespace tensoropt::test
