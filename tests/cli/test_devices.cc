// The CUDA libraries are the CUDA module's (launcher/runtime/cuda/module_abi.h): the tensoropt
// binary needs none of them and `--version` loads none; `devices` loads the module and reports
// what it finds, here on a machine with or without a GPU; a missing module is one line and exit 2.
#include <doctest/doctest.h>

#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tests/cli/binary.h"

namespace tensoropt {
namespace {

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

const std::vector<std::string> kCudaLibraries = {"libcudart", "libcublas", "libcublasLt", "libcudnn", "libnccl", "libcuda.so"};

// What `command` prints on stdout.
std::string output_of(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  REQUIRE(pipe != nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  for (size_t n; (n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0;) out.append(buf.data(), n);
  return out;
}

// The libraries the dynamic loader opened for `args` (LD_DEBUG=files: a "file=NAME [0];" line each).
std::string loaded_by(const std::string& args) {
  const test::CliResult r = test::run_cli(args, "LD_DEBUG=files");
  CAPTURE(r.out);
  return r.err;
}

// The binary without the module beside it: a hard link (a copy across file systems) in a fresh
// directory of the build tree, removed at scope exit.
struct LoneBinary {
  std::filesystem::path dir, binary;
  LoneBinary() {
    dir = std::filesystem::path(TENSOROPT_BINARY).parent_path().parent_path() / ("lone_binary_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    binary = dir / "tensoropt";
    std::error_code ec;
    std::filesystem::create_hard_link(TENSOROPT_BINARY, binary, ec);
    if (ec) std::filesystem::copy_file(TENSOROPT_BINARY, binary);
  }
  ~LoneBinary() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

}  // namespace

TEST_CASE("devices: the tensoropt binary needs no CUDA library (its ELF DT_NEEDED entries)") {
  const std::string dynamic = output_of("readelf -d " + std::string(TENSOROPT_BINARY));
  REQUIRE(has(dynamic, "(NEEDED)"));
  CHECK(has(dynamic, "[libc.so.6]"));  // the listing is the one a CUDA library would be in
  for (const std::string& lib : kCudaLibraries) {
    CAPTURE(lib);
    CHECK(!has(dynamic, "[" + lib));
  }
#ifdef TENSOROPT_HAVE_CUDA
  // ... and the module does need them: this is where they went.
  const std::string module_dynamic = output_of("readelf -d " + std::filesystem::path(TENSOROPT_BINARY).parent_path().string() + "/libtensoropt_cuda.so");
  CHECK(has(module_dynamic, "[libcudart.so"));
  CHECK(has(module_dynamic, "[libnccl.so"));
#endif
}

TEST_CASE("devices: --version loads no CUDA library, and says what it was compiled against") {
  const test::CliResult r = test::run_cli("--version");
  CHECK(r.code == 0);
  CHECK(r.out.rfind("tensoropt 0.1.0\n", 0) == 0);
  const std::string loaded = loaded_by("--version");
  CHECK(has(loaded, "file=libc.so.6"));  // LD_DEBUG works here: the check below can see a load
  for (const std::string& lib : kCudaLibraries) {
    CAPTURE(lib);
    CHECK(!has(loaded, "file=" + lib));
  }
  CHECK(!has(loaded, "libtensoropt_cuda.so"));
#ifdef TENSOROPT_HAVE_CUDA
  CHECK(has(r.out, "CUDA support: yes, in libtensoropt_cuda.so"));
  CHECK(has(r.out, "compiled against: CUDA runtime "));
  CHECK(has(r.out, ", cuDNN "));
  CHECK(has(r.out, ", cuBLAS "));
  CHECK(has(r.out, ", NCCL "));
  CHECK(has(r.out, "versions loaded and GPUs visible: tensoropt devices\n"));
  // `devices` does load them, through the module.
  const std::string by_devices = loaded_by("devices");
  CHECK(has(by_devices, "file=libcudart.so"));
  CHECK(has(by_devices, "libtensoropt_cuda.so"));
#else
  CHECK(has(r.out, "CUDA support: no"));
#endif
}

TEST_CASE("devices: reports the CPU and, with CUDA support, the libraries loaded and the GPUs visible (zero here, with why)") {
  const test::CliResult r = test::run_cli("devices");
  CAPTURE(r.err);
  CHECK(r.code == 0);
  CHECK(r.out.rfind("cpu: ", 0) == 0);
#ifdef TENSOROPT_HAVE_CUDA
  CHECK(has(r.out, "\nCUDA module: " + std::filesystem::path(TENSOROPT_BINARY).parent_path().string() + "/libtensoropt_cuda.so\n"));
  for (const char* key : {"\nCUDA runtime: ", "\ncuDNN: ", "\ncuBLAS: ", "\nNCCL: ", "\nGPUs visible: "}) CHECK(has(r.out, key));
  if (has(r.out, "GPUs visible: 0")) {
    CHECK(has(r.out, "GPUs visible: 0 ("));  // with the CUDA runtime's reason
    // and `run --device cuda` refuses in one line, with the same reason
    const test::CliResult run = test::run_cli("run " + std::string(TENSOROPT_SOURCE_DIR) + "/models/resnet18.onnx --device cuda");
    CHECK(run.code == 2);
    CHECK(test::lines(run.err) == 1);
    CHECK(has(run.err, "tensoropt: error: --device cuda: no GPU visible ("));
  } else {
    CHECK(has(r.out, "\n  GPU 0: "));
    CHECK(has(r.out, "GPU kernel launch: ok"));
  }
#else
  CHECK(has(r.out, "CUDA support: no"));
#endif
}

#ifdef TENSOROPT_HAVE_CUDA
TEST_CASE("devices: without the module beside the binary, devices and run --device cuda say so in one line, and --version does not care") {
  LoneBinary lone;
  const std::string module = (lone.dir / "libtensoropt_cuda.so").string();
  const test::CliResult d = test::run_cli("devices", "", lone.binary.string());
  CHECK(d.code == 2);
  CHECK(d.out.empty());
  CHECK(d.err == "tensoropt: error: devices: the CUDA module " + module +
                     " is missing (the build writes it next to the tensoropt binary; install it there)\n");
  const test::CliResult r = test::run_cli("run " + std::string(TENSOROPT_SOURCE_DIR) + "/models/resnet18.onnx --device cuda", "", lone.binary.string());
  CHECK(r.code == 2);
  CHECK(test::lines(r.err) == 1);
  CHECK(has(r.err, "tensoropt: error: --device cuda: the CUDA module " + module + " is missing"));
  const test::CliResult v = test::run_cli("--version", "", lone.binary.string());
  CHECK(v.code == 0);
  CHECK(has(v.out, "CUDA support: yes"));
}
#endif

}  // namespace tensoropt
