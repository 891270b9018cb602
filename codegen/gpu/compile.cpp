// The GPU pipeline, one named stage after another (Triton's make_ttir -> make_ttgir ->
// make_llir -> make_ptx / make_amdgcn). Every stage's artefact is kept in
// GpuKernelBinary::stages, in this order:
//   ir                          the kernel as traced (verified)
//   ir.<pass>                   after each GPU pass (layouts on every tensor type)
//   ir.opt                      the IR that is lowered (= the last pass's)
//   ll                          LLVM IR as lowered
//   ll.opt                      after device libraries and O3
//   ptx | amdgcn (+ hsaco.meta) the target's assembly (and the HSACO's metadata note)
#include "gpu/compile.hpp"

#include "gpu/target_info.hpp"
#include "gpu_ir/arch.hpp"
#include "passes/passes.hpp"

#include <tritium/error.hpp>
#include <tritium/ir/dump_stem.hpp>
#include <tritium/ir/printer.hpp>

#include <fmt/format.h>

#include <llvm/IR/LLVMContext.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

namespace tritium::gpu {
namespace {

std::string print_module(const llvm::Module& m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os, nullptr);
  return os.str();
}

std::unique_ptr<TargetInfo> make_target(const GpuTarget& t) {
  return arch_of(t.arch).is_nvidia() ? make_nvptx_target(t) : make_amdgpu_target(t);
}

} // namespace

bool GpuTarget::is_amdgpu() const {
  const Arch* a = find_arch(arch);
  return a && a->is_amd();
}

bool GpuTarget::is_nvptx() const {
  const Arch* a = find_arch(arch);
  return a && a->is_nvidia();
}

std::vector<std::string> supported_gpu_archs() {
  std::vector<std::string> out;
  for (const Arch& a : known_archs())
    out.emplace_back(a.name);
  return out;
}

void set_arch_features(GpuFeatures& features, const Arch& arch) {
  features.tma = arch.has(Feature::Tma);
  features.async_copy = arch.has(Feature::AsyncCopy);
  features.matrix_version = arch.matrix.version;
  features.mma_sync_version = std::max(arch.mma_sync_version, 1);
  features.buffer_ops = arch.has(Feature::BufferOps);
  features.gathers_join_class = arch.vendor == Vendor::Amd;
}

LoweredKernel
lower_kernel(const ir::Function& f, TargetInfo& ti, const GpuFeatures& features,
             const ir::ModuleAttrs& module, llvm::LLVMContext& ctx, bool fp_fusion,
             const std::function<void(const std::string&, const ir::Function&)>& after_pass) {
  LoweredKernel k;
  k.ir = prepare_gpu_ir(f, features, after_pass, module);
  k.module = lower_to_llvm(*k.ir, ti, ctx, features.num_warps, fp_fusion, &k.shared_bytes,
                           &k.global_scratch_bytes);
  return k;
}

GpuKernelBinary compile_for_gpu(const ir::Function& f, const GpuTarget& target_in,
                                const CompileOptions& options) {
  std::unique_ptr<TargetInfo> ti = make_target(target_in);
  const int warps = options.num_warps;
  if (warps < 1 || (warps & (warps - 1)) || warps * ti->warp_size() > 1024)
    throw Error(fmt::format("kernel '{}': num_warps = {} on {} (warp size {}): it must be a power "
                            "of two with num_warps x warp size <= 1024",
                            f.name, warps, target_in.arch, ti->warp_size()));
  // TRITIUM_DUMP=dir from any program: every stage lands in dir as it is produced (the
  // runtime's dump_artifacts adds what it asks CompiledKernel::artifact for).
  GpuTarget target = target_in;
  if (const char* dir = std::getenv("TRITIUM_DUMP"); dir && *dir && target.dump_dir.empty())
    target.dump_dir = dir;
  GpuKernelBinary out;
  out.name = f.name;
  out.warp_size = ti->warp_size();
  out.num_threads = warps * ti->warp_size();
  for (const ir::Value* a : f.args())
    out.params.push_back(a->type.elem);
  // Each specialization its own files, named as the runtime names the stages it adds.
  const std::string stem =
      target.dump_dir.empty()
          ? f.name
          : ir::dump_stem(target.dump_dir, f.name, ir::print(f), warps, options.num_stages);
  auto keep = [&](std::string stage, std::function<std::string()> text) {
    if (!target.dump_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(target.dump_dir, ec);
      auto path = std::filesystem::path(target.dump_dir) / fmt::format("{}.{}", stem, stage);
      if (ec || !(std::ofstream(path) << text()))
        throw Error(fmt::format("kernel '{}': cannot write the {} stage to {}{}", f.name, stage,
                                path.string(), ec ? ": " + ec.message() : std::string()));
    }
    if (target.keep_stages)
      out.stages.emplace_back(std::move(stage), text());
  };

  // make_ttir + make_ttgir: a private copy of the kernel, verified, then layouts. Each stage's
  // text names the target, so that `tritium opt` and `tritium compile` take it as it is.
  const ir::ModuleAttrs module{target_in.arch, warps, options.num_stages};
  keep("ir", [&] {
    std::unique_ptr<ir::Function> c = ir::clone(f);
    c->module = module;
    return ir::print(*c);
  });
  GpuFeatures features{warps, ti->warp_size(), ti->matrix_unit(), options.num_stages,
                       ti->max_shared_bytes()};
  set_arch_features(features, arch_of(target_in.arch));
  features.remarks = &out.remarks;
  // make_ttgir + make_llir: the passes, then the lowering (lower_kernel, which the gpu-emulator
  // shares).
  llvm::LLVMContext ctx;
  LoweredKernel k = lower_kernel(f, *ti, features, module, ctx, options.enable_fp_fusion,
                                 [&](const std::string& pass, const ir::Function& h) {
                                   keep(fmt::format("ir.{}", pass), [&] { return ir::print(h); });
                                 });
  keep("ir.opt", [&] { return ir::print(*k.ir); });
  if (const char* v = std::getenv("TRITIUM_REMARKS"); v && *v)
    for (const std::string& r : out.remarks)
      std::fprintf(stderr, "tritium: remark: kernel '%s' (%s): %s\n", f.name.c_str(),
                   target.arch.c_str(), r.c_str());
  std::unique_ptr<llvm::Module>& m = k.module;
  out.shared_bytes = k.shared_bytes;
  out.global_scratch_bytes = k.global_scratch_bytes;
  if (out.shared_bytes > ti->max_shared_bytes())
    throw Error(fmt::format("kernel '{}': needs {} bytes of shared memory on {}, more than the {} "
                            "a block may use (smaller blocks, or fewer values live across "
                            "layout conversions, reductions and dots)",
                            f.name, out.shared_bytes, target.arch, ti->max_shared_bytes()));
  keep("ll", [&] { return print_module(*m); });
  ti->prepare_module(*m);
  ti->optimize(*m);
  keep("ll.opt", [&] { return print_module(*m); });

  // make_ptx / make_amdgcn (+ the HSACO).
  size_t before = out.stages.size();
  ti->emit(*m, out, options.enable_fp_fusion);
  if (!target.dump_dir.empty()) {
    if (!out.binary.empty())
      std::ofstream(std::filesystem::path(target.dump_dir) / fmt::format("{}.hsaco", stem),
                    std::ios::binary)
          .write(reinterpret_cast<const char*>(out.binary.data()),
                 static_cast<std::streamsize>(out.binary.size()));
    // What a launcher outside tritium needs besides the PTX (bench/compare/roofline.py times
    // our kernels under Triton's harness with it), as Triton's metadata .json does.
    std::ofstream(std::filesystem::path(target.dump_dir) / fmt::format("{}.json", stem))
        << fmt::format("{{\"name\": \"{}\", \"num_threads\": {}, \"shared_bytes\": {}, "
                       "\"global_scratch_bytes\": {}}}\n",
                       out.name, out.num_threads, out.shared_bytes, out.global_scratch_bytes);
    for (size_t i = before; i < out.stages.size(); ++i)
      std::ofstream(std::filesystem::path(target.dump_dir) /
                    fmt::format("{}.{}", stem, out.stages[i].first))
          << out.stages[i].second;
  }
  if (!target.keep_stages)
    out.stages.clear();
  return out;
}

} // namespace tritium::gpu
