// amd_kernels: compiles every example's kernels for a GPU this machine does not have, at the
// configurations the example's autotuner offers there, as a program launching them on that GPU
// would (bench/amd/offline_device.hpp); writes each kernel's stages and prints one line per
// compilation. Exit status 1 if any configuration did not compile.
//
//   amd_kernels --arch gfx942 [--dump DIR] [--only 08] [--list]
//   amd_kernels --arch gfx942 --zoo [--dump DIR] [--only NAME]
//
// Files are DIR/<example number>.<kernel>[.<variant>][.<autotuner configuration>].<stage>;
// bench/compare/amd_parity.py reads their .amdgcn beside Triton's ISA of the same kernels.
// --zoo does the same for the zoo (bench/zoo) at its GPU benchmark's shapes, into
// DIR/zoo.<entry>.<shape>.<kernel>...; bench/compare/amd_zoo.py reads those. The zoo's checks
// against its float64 references are skipped: nothing runs.
#include "example_prelude.hpp"

#include "bench/zoo/zoo.hpp"

#include <tritium/error.hpp>

#include <cstdio>
#include <exception>
#include <functional>
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
// Compiles one zoo entry at every full shape; returns how many shapes failed outside a compile
// (a compile failure is counted from OfflineGpu::compiled()).
// Nothing runs on the offline device, so an entry stops once its kernels are compiled: the
// float64 reference it would compute next, over the GPU shapes, took 2 of the 5 minutes the zoo
// took for one target (2 cores, 2026-12-01). Thrown from the launch, caught here as done.
struct Launched {};

int run_zoo_entry(const Device& dev, const zoo::Entry& e) {
  int failed = 0;
  for (const std::string& shape : e.shapes(true)) {
    Label label(fmt::format("zoo.{}.{}", e.name, shape));
    zoo::Context ctx{dev, true, [](const std::function<void()>& launch) {
                       launch();
                       throw Launched{};
                     }};
    try {
      (void)e.run(ctx, shape);
      std::printf("%-26s %-20s FAILED: returned without launching\n", e.name.c_str(),
                  shape.c_str());
      ++failed;
    } catch (const Launched&) {
    } catch (const std::exception& err) {
      std::printf("%-26s %-20s FAILED: %s\n", e.name.c_str(), shape.c_str(), err.what());
      ++failed;
    }
  }
  return failed;
}

} // namespace tritium::xcompile

int main(int argc, char** argv) {
  using namespace tritium::xcompile;
  std::string arch, dir;
  std::vector<std::string> only;
  bool with_zoo = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--arch" && i + 1 < argc)
      arch = argv[++i];
    else if (a == "--dump" && i + 1 < argc)
      dir = argv[++i];
    else if (a == "--only" && i + 1 < argc)
      only.emplace_back(argv[++i]);
    else if (a == "--zoo")
      with_zoo = true;
    else if (a == "--list") {
      for (const Example& e : kExamples)
        std::printf("%s\n", e.name);
      return 0;
    } else {
      std::fprintf(stderr,
                   "usage: %s --arch ARCH [--zoo] [--dump DIR] [--only NN|NAME]... [--list]\n",
                   argv[0]);
      return 2;
    }
  }
  if (arch.empty()) {
    std::fprintf(stderr,
                 "usage: %s --arch ARCH [--zoo] [--dump DIR] [--only NN|NAME]... [--list]\n",
                 argv[0]);
    return 2;
  }
  // Nothing read from or written to the autotuner's disk store: every configuration compiles.
  ::setenv("TRITIUM_CACHE_DIR", "off", 1);
  int failed = 0;
  try {
    OfflineGpu gpu(arch, dir);
    // What runs: the examples, or the zoo's entries; each prints a line per compilation.
    std::vector<std::pair<std::string, std::function<int()>>> units;
    auto wanted = [&](std::string_view name) {
      return only.empty() || std::any_of(only.begin(), only.end(),
                                         [&](const std::string& o) { return name.starts_with(o); });
    };
    if (with_zoo) {
      for (const zoo::Entry& e : zoo::entries())
        if (wanted(e.name))
          units.emplace_back(e.name, [&gpu, &e] { return run_zoo_entry(gpu.device(), e); });
    } else {
      for (const Example& e : kExamples)
        if (wanted(e.name))
          units.emplace_back(e.name, [&gpu, &e] {
            Label label(std::string(e.name).substr(0, 2));
            e.run(gpu.device());
            return 0;
          });
    }
    for (auto& [name, run] : units) {
      size_t before = gpu.compiled().size();
      std::string error;
      try {
        failed += run();
      } catch (const tritium::Error& err) {
        error = err.what();
      }
      for (size_t i = before; i < gpu.compiled().size(); ++i) {
        const Compiled& c = gpu.compiled()[i];
        failed += !c.error.empty();
        std::printf("%-26s %-36s %-58s %6.2f s  %s\n", name.c_str(), c.kernel.c_str(),
                    c.config.empty() ? fmt::format("w{}-s{}", c.num_warps, c.num_stages).c_str()
                                     : c.config.c_str(),
                    c.seconds,
                    c.error.empty() ? fmt::format("ok, {} B shared", c.shared_bytes).c_str()
                                    : ("FAILED: " + c.error.substr(0, c.error.find('\n'))).c_str());
        for (const std::string& r : c.remarks)
          std::printf("%-26s   remark: %s\n", "", r.c_str());
      }
      if (!error.empty() && gpu.compiled().size() == before) {
        ++failed;
        std::printf("%-26s FAILED: %s\n", name.c_str(), error.c_str());
      }
      std::fflush(stdout);
    }
  } catch (const tritium::Error& e) {
    std::fprintf(stderr, "amd_kernels: %s\n", e.what());
    return 2;
  }
  std::printf("%d compilation(s) failed on %s\n", failed, arch.c_str());
  return failed ? 1 : 0;
}
