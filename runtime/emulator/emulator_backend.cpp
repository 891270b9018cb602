// The "gpu-emulator" device: kernels go through the GPU pipeline (layouts, the GPU lowering)
// and run on the CPU through codegen/gpu's emulation, one OS thread per GPU thread, so that
// every test written against devices() also checks the GPU lowering against the interpreter
// on machines without a GPU. Never the default device (its priority is below the
// interpreter's).
//
//   TRITIUM_EMULATOR_WARP=64                 emulate wave64 (default 32)
//   TRITIUM_EMULATOR_MATRIX=mma_sync|wgmma|mfma|wmma
//                                            dot on that unit's instructions, their per-lane
//                                            semantics emulated (default: FMA units)
//   TRITIUM_EMULATOR_TARGETS=gfx942,sm_90,…  every kernel must also compile for these targets
#include "codegen/gpu/compile.hpp"
#include "codegen/gpu/emulate.hpp"

#include <tritium/error.hpp>
#include <tritium/runtime/backend.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tritium {
namespace {

int warp_size_from_env() {
  const char* w = std::getenv("TRITIUM_EMULATOR_WARP");
  if (!w || !*w || std::string_view(w) == "32")
    return 32;
  if (std::string_view(w) == "64")
    return 64;
  throw Error(fmt::format("TRITIUM_EMULATOR_WARP={}: the emulated warp size is 32 or 64", w));
}

gpu::MatrixUnit matrix_from_env(int warp_size) {
  const char* v = std::getenv("TRITIUM_EMULATOR_MATRIX");
  std::string_view s = v ? v : "";
  gpu::MatrixUnit u = gpu::MatrixUnit::None;
  int needs = 0;
  if (s == "mma_sync")
    u = gpu::MatrixUnit::MmaSync, needs = 32;
  else if (s == "wgmma")
    u = gpu::MatrixUnit::Wgmma, needs = 32;
  else if (s == "mfma")
    u = gpu::MatrixUnit::Mfma, needs = 64;
  else if (s == "wmma")
    u = gpu::MatrixUnit::Wmma, needs = 32;
  else if (!s.empty() && s != "none")
    throw Error(fmt::format(
        "TRITIUM_EMULATOR_MATRIX='{}': expected none, mma_sync, wgmma, mfma or wmma", s));
  if (needs && needs != warp_size)
    throw Error(fmt::format("TRITIUM_EMULATOR_MATRIX={} needs a warp of {} "
                            "(TRITIUM_EMULATOR_WARP={})",
                            s, needs, needs));
  return u;
}

// TRITIUM_EMULATOR_TARGETS: what CI checks for every test kernel, without GPUs.
void compile_for_listed_targets(const ir::Function& f, const CompileOptions& o) {
  const char* list = std::getenv("TRITIUM_EMULATOR_TARGETS");
  std::vector<std::string> targets;
  std::string_view rest = list ? list : "";
  while (!rest.empty()) {
    auto comma = rest.find(',');
    if (comma != 0)
      targets.emplace_back(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  // Every name checked before anything compiles: a misspelt target is reported as such, not
  // as whatever the first target's toolchain lacks.
  auto archs = gpu::supported_gpu_archs();
  for (const std::string& arch : targets)
    if (std::find(archs.begin(), archs.end(), arch) == archs.end())
      throw Error(fmt::format("TRITIUM_EMULATOR_TARGETS={}: unknown GPU architecture '{}' "
                              "(one of: {})",
                              list, arch, fmt::join(archs, ", ")));
  for (const std::string& arch : targets) {
    gpu::GpuTarget t;
    t.arch = arch;
    t.keep_stages = false;
    gpu::compile_for_gpu(f, t, o);
  }
}

class EmulatorKernel final : public CompiledKernel {
public:
  EmulatorKernel(const ir::Function& f, const CompileOptions& o, int ws)
      : name_(f.name), nparams_(f.args().size()), kernel_(f, o, ws, matrix_from_env(ws)) {}
  void launch(const LaunchGrid& grid, std::span<const ArgSlot> args, void*) override {
    if (args.size() != nparams_)
      throw Error(
          fmt::format("kernel '{}': {} arguments for {} parameters", name_, args.size(), nparams_));
    kernel_.run(grid, args);
  }
  std::string artifact(std::string_view stage) const override {
    if (stage == "ir.opt")
      return kernel_.ir();
    if (stage == "ll")
      return kernel_.ll();
    return {};
  }

private:
  std::string name_;
  size_t nparams_;
  gpu::EmulatedKernel kernel_;
};

class EmulatorBackend final : public Backend {
public:
  std::string_view name() const override { return "gpu-emulator"; }
  std::string target() const override {
    try {
      return fmt::format("gpu-emulator-wave{}", warp_size_from_env());
    } catch (const Error& e) {
      return e.what(); // listing devices does not fail; compiling a kernel reports it
    }
  }
  bool host_memory() const override { return true; }
  // Programs run one after another; a few "SMs" make persistent kernels step over tiles.
  int num_compute_units() const override { return 4; }
  void* alloc(size_t bytes) override {
    void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (!p)
      throw Error(fmt::format("gpu-emulator: cannot allocate {} bytes", bytes));
    return p;
  }
  void free(void* p) override { std::free(p); }
  void copy_to_device(void* d, const void* s, size_t n) override { std::memcpy(d, s, n); }
  void copy_to_host(void* d, const void* s, size_t n) override { std::memcpy(d, s, n); }
  void copy_device_to_device(void* d, const void* s, size_t n) override { std::memmove(d, s, n); }
  std::unique_ptr<CompiledKernel> compile(std::shared_ptr<const ir::Function> f,
                                          const CompileOptions& o) override {
    compile_for_listed_targets(*f, o);
    return std::make_unique<EmulatorKernel>(*f, o, warp_size_from_env());
  }
};

} // namespace

BackendFactory gpu_emulator_backend() {
  return {"gpu-emulator", -1, [](int index, std::string* why) -> std::unique_ptr<Backend> {
            if (index != 0) {
              *why = "there is one gpu-emulator device, gpu-emulator:0";
              return nullptr;
            }
            return std::make_unique<EmulatorBackend>();
          }};
}

} // namespace tritium
