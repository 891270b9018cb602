// amd_kernels: compiles every example's kernels for a GPU this machine does not have, at the
// configurations the example's autotuner offers there, as a program launching them on that GPU
// would (bench/amd/offline_device.hpp); writes each kernel's stages and prints one line per
// compilation. Exit status 1 if any configuration did not compile.
//
//   amd_kernels --arch gfx942 [--dump DIR] [--only 08] [--list]
//
// Files are DIR/<example number>.<kernel>[.<variant>][.<autotuner configuration>].<stage>;
// bench/compare/amd_parity.py reads their .amdgcn beside Triton's ISA of the same kernels.
#include "example_prelude.hpp"

#include <tritium/error.hpp>

#include <cstdio>
#include <string_view>

namespace tritium::xcompile {
void run_01(const Device&);
void run_02(const Device&);
void run_03(const Device&);
void run_04(const Device&);
void run_05(const Device&);
void run_06(const Device&);
void run_07(const Device&);
void run_08(const Device&);
void run_09(const Device&);
void run_10(const Device&);
void run_11(const Device&);

constexpr Example kExamples[] = {
    {"01_vector_add", run_01},          {"02_fused_gemm_bias_relu", run_02},
    {"03_llama_mlp", run_03},           {"04_fused_softmax", run_04},
    {"05_layer_norm", run_05},          {"06_low_memory_dropout", run_06},
    {"07_layer_norm_backward", run_07}, {"08_fused_attention", run_08},
    {"09_extern_functions", run_09},    {"10_grouped_gemm", run_10},
    {"11_persistent_matmul", run_11},
};
} // namespace tritium::xcompile

int main(int argc, char** argv) {
  using namespace tritium::xcompile;
  std::string arch, dir;
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--arch" && i + 1 < argc)
      arch = argv[++i];
    else if (a == "--dump" && i + 1 < argc)
      dir = argv[++i];
    else if (a == "--only" && i + 1 < argc)
      only.emplace_back(argv[++i]);
    else if (a == "--list") {
      for (const Example& e : kExamples)
        std::printf("%s\n", e.name);
      return 0;
    } else {
      std::fprintf(stderr, "usage: %s --arch ARCH [--dump DIR] [--only NN]... [--list]\n", argv[0]);
      return 2;
    }
  }
  if (arch.empty()) {
    std::fprintf(stderr, "usage: %s --arch ARCH [--dump DIR] [--only NN]... [--list]\n", argv[0]);
    return 2;
  }
  // Nothing read from or written to the autotuner's disk store: every configuration compiles.
  ::setenv("TRITIUM_CACHE_DIR", "off", 1);
  int failed = 0;
  try {
    OfflineGpu gpu(arch, dir);
    for (const Example& e : kExamples) {
      if (!only.empty() && std::none_of(only.begin(), only.end(), [&](const std::string& o) {
            return std::string_view(e.name).starts_with(o);
          }))
        continue;
      size_t before = gpu.compiled().size();
      std::string error;
      try {
        Label label(std::string(e.name).substr(0, 2));
        e.run(gpu.device());
      } catch (const tritium::Error& err) {
        error = err.what();
      }
      for (size_t i = before; i < gpu.compiled().size(); ++i) {
        const Compiled& c = gpu.compiled()[i];
        failed += !c.error.empty();
        std::printf("%-26s %-36s %-58s %6.2f s  %s\n", e.name, c.kernel.c_str(),
                    c.config.empty() ? fmt::format("w{}-s{}", c.num_warps, c.num_stages).c_str()
                                     : c.config.c_str(),
                    c.seconds,
                    c.error.empty() ? fmt::format("ok, {} B shared", c.shared_bytes).c_str()
                                    : ("FAILED: " + c.error.substr(0, c.error.find('\n'))).c_str());
      }
      if (!error.empty() && gpu.compiled().size() == before) {
        ++failed;
        std::printf("%-26s FAILED: %s\n", e.name, error.c_str());
      }
    }
  } catch (const tritium::Error& e) {
    std::fprintf(stderr, "amd_kernels: %s\n", e.what());
    return 2;
  }
  std::printf("%d compilation(s) failed on %s\n", failed, arch.c_str());
  return failed ? 1 : 0;
}
