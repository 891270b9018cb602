// The "gpu-emulator" device: kernels go through the GPU pipeline (layouts, the GPU lowering)
// and run on the CPU through codegen/gpu's emulation, one fiber per GPU thread, so that
// every test written against devices() also checks the GPU lowering against the interpreter
// on machines without a GPU. Never the default device (its priority is below the
// interpreter's).
//
//   TRITIUM_EMULATOR_ARCH=gfx942             emulate that target's warp size and matrix unit
//                                            (codegen/gpu_ir/arch.hpp's model of it)
//   TRITIUM_EMULATOR_WARP=64                 emulate wave64 (default 32)
//   TRITIUM_EMULATOR_MATRIX=mma_sync|wgmma|mfma|wmma|wmma_v2
//                                            dot on that unit's instructions, their per-lane
//                                            semantics emulated (default: FMA units)
//   TRITIUM_EMULATOR_TARGETS=gfx942,sm_90,…  every kernel must also compile for these targets
// With TRITIUM_EMULATOR_ARCH, WARP and MATRIX may be set only to what the target has.
#include "codegen/gpu/compile.hpp"
#include "codegen/gpu_ir/arch.hpp"
#include "codegen/targets/emulator/emulate.hpp"

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

std::string_view env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// What the emulator emulates: a warp size and a matrix unit of some generation.
struct Emulated {
  int warp_size = 32;
  gpu::MatrixUnit matrix = gpu::MatrixUnit::None;
  int version = 0; // 0: as emulated_matrix_arch's target has the unit
};

int warp_size_from_env() {
  std::string_view w = env("TRITIUM_EMULATOR_WARP");
  if (w.empty() || w == "32")
    return 32;
  if (w == "64")
    return 64;
  throw Error(fmt::format("TRITIUM_EMULATOR_WARP={}: the emulated warp size is 32 or 64", w));
}

// TRITIUM_EMULATOR_MATRIX: a unit, "wmma_v2" for a later generation; the target that stands
// for it gives the warp size it needs.
Emulated matrix_from_env(int warp_size) {
  std::string_view s = env("TRITIUM_EMULATOR_MATRIX");
  Emulated e{warp_size};
  if (s.empty() || s == "none")
    return e;
  for (const gpu::Arch& a : gpu::known_archs()) {
    const std::string name =
        fmt::format("{}{}", gpu::matrix_unit_name(a.matrix.unit),
                    a.matrix.unit == gpu::MatrixUnit::Wmma && a.matrix.version > 1
                        ? fmt::format("_v{}", a.matrix.version)
                        : "");
    if (s != name)
      continue;
    if (a.warp_size != warp_size)
      throw Error(fmt::format("TRITIUM_EMULATOR_MATRIX={} needs a warp of {} "
                              "(TRITIUM_EMULATOR_WARP={})",
                              s, a.warp_size, a.warp_size));
    e.matrix = a.matrix.unit;
    e.version = a.matrix.unit == gpu::MatrixUnit::Wmma ? a.matrix.version : 0;
    return e;
  }
  throw Error(fmt::format(
      "TRITIUM_EMULATOR_MATRIX='{}': expected none, mma_sync, wgmma, mfma, wmma or wmma_v2", s));
}

// TRITIUM_EMULATOR_ARCH names a target; WARP and MATRIX, if also set, must agree with it.
Emulated emulated_from_env() {
  std::string_view arch = env("TRITIUM_EMULATOR_ARCH");
  if (arch.empty())
    return matrix_from_env(warp_size_from_env());
  const gpu::Arch* a = gpu::find_arch(arch);
  if (!a)
    throw Error(fmt::format("TRITIUM_EMULATOR_ARCH={}: unknown GPU architecture (known: {})", arch,
                            gpu::known_arch_list()));
  Emulated e{a->warp_size, a->matrix.unit, a->matrix.version};
  if (std::string_view w = env("TRITIUM_EMULATOR_WARP");
      !w.empty() && w != std::to_string(a->warp_size))
    throw Error(fmt::format("TRITIUM_EMULATOR_WARP={} conflicts with TRITIUM_EMULATOR_ARCH={}, "
                            "whose warp size is {} (unset one of them)",
                            w, arch, a->warp_size));
  if (!env("TRITIUM_EMULATOR_MATRIX").empty()) {
    Emulated m = matrix_from_env(a->warp_size);
    if (m.matrix != e.matrix || (m.version && m.version != e.version))
      throw Error(fmt::format("TRITIUM_EMULATOR_MATRIX={} conflicts with "
                              "TRITIUM_EMULATOR_ARCH={}, whose matrix unit is {} v{} (unset one "
                              "of them)",
                              env("TRITIUM_EMULATOR_MATRIX"), arch, gpu::matrix_unit_name(e.matrix),
                              e.version));
  }
  return e;
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
  for (const std::string& arch : targets)
    if (!gpu::find_arch(arch))
      throw Error(fmt::format("TRITIUM_EMULATOR_TARGETS={}: unknown GPU architecture '{}' "
                              "(one of: {})",
                              list, arch, gpu::known_arch_list()));
  for (const std::string& arch : targets) {
    gpu::GpuTarget t;
    t.arch = arch;
    t.keep_stages = false;
    gpu::compile_for_gpu(f, t, o);
  }
}

class EmulatorKernel final : public CompiledKernel {
public:
  EmulatorKernel(const ir::Function& f, const CompileOptions& o, const Emulated& e)
      : name_(f.name), nparams_(f.args().size()), kernel_(f, o, e.warp_size, e.matrix, e.version) {}
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
      return fmt::format("gpu-emulator-wave{}", emulated_from_env().warp_size);
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
    return std::make_unique<EmulatorKernel>(*f, o, emulated_from_env());
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
