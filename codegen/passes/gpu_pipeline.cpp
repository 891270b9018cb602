// The GPU passes in pipeline order: the one list compile.cpp (prepare_gpu_ir) and
// `tritium opt` share. A new pass is a file with one entry function and a line here.
#include "passes/passes.hpp"

#include <tritium/ir/printer.hpp>

namespace tritium::gpu {

std::span<const GpuPass> gpu_passes() {
  static constexpr GpuPass passes[] = {
      {"combine", [](ir::Function& f, const GpuFeatures&) { combine(f); }},
      {"canonicalize_pointers", canonicalize_pointers},
      {"assign_layouts", assign_layouts},
      {"coalesce", coalesce},
      {"widen_dot_operands", widen_dot_operands},
      {"accelerate_matmul", [](ir::Function& f, const GpuFeatures& t) { accelerate_matmul(f, t); }},
      {"propagate_mma_layout",
       [](ir::Function& f, const GpuFeatures&) { propagate_mma_layout(f); }},
      {"remove_layout_conversions",
       [](ir::Function& f, const GpuFeatures&) { remove_layout_conversions(f); }},
      {"hoist_loads", hoist_loads},
      {"expand_loads", expand_loads},
      {"pipeline", [](ir::Function& f, const GpuFeatures& t) { pipeline(f, t); }},
      {"carry_ahead", [](ir::Function& f, const GpuFeatures&) { carry_ahead(f); }},
      {"optimize_dot_operands", optimize_dot_operands},
  };
  return passes;
}

std::unique_ptr<ir::Function>
prepare_gpu_ir(const ir::Function& f, const GpuFeatures& t,
               const std::function<void(const std::string&, const ir::Function&)>& after_pass,
               const ir::ModuleAttrs& module) {
  ir::verify(f);
  std::unique_ptr<ir::Function> g = ir::clone(f);
  if (!module.empty())
    g->module = module;
  for (const GpuPass& pass : gpu_passes()) {
    pass.run(*g, t);
    if (after_pass)
      after_pass(std::string(pass.name), *g);
  }
  return g;
}

} // namespace tritium::gpu
