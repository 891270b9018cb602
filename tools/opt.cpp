// `tritium opt`: parse IR text, run passes by name, verify after each, print the IR.
//
// What the passes compile for comes from the file's `module {target = ..., num_warps = ...}`
// line (ir::ModuleAttrs), then from the options, which win and are recorded in the printed
// module line, so that the output runs again as it is. A target's passes are its pipeline's:
// the GPU's (passes/gpu_pipeline.cpp) for an architecture, the CPU backend's
// (targets/cpu/cpu_passes.cpp) for `host`.
#include "../codegen/gpu/compile.hpp"
#include "../codegen/gpu_ir/arch.hpp"
#include "../codegen/gpu_ir/layout.hpp"
#include "../codegen/passes/passes.hpp"
#include "../codegen/targets/cpu/cpu_passes.hpp"
#include "cli.hpp"

#include <tritium/ir/printer.hpp>

#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <vector>

namespace tritium::cli {
namespace {

constexpr std::array kPrinters = {std::string_view("print_axis_info")};
constexpr std::array kMatrixUnits = {gpu::MatrixUnit::None, gpu::MatrixUnit::MmaSync,
                                     gpu::MatrixUnit::Wgmma, gpu::MatrixUnit::Mfma,
                                     gpu::MatrixUnit::Wmma};

std::vector<std::string_view> cpu_pass_names() {
  std::vector<std::string_view> names;
  for (const cpu::CpuPass& p : cpu::cpu_passes())
    names.push_back(p.name);
  return names;
}

std::string all_pass_names() {
  std::string names;
  auto add = [&](std::string_view name, std::string_view note = {}) {
    names += fmt::format("{}{}{}", names.empty() ? "" : ", ", name, note);
  };
  for (const gpu::GpuPass& p : gpu::gpu_passes())
    add(p.name);
  for (const cpu::CpuPass& p : cpu::cpu_passes())
    add(p.name, " (host)");
  for (std::string_view p : kPrinters)
    add(p);
  return names;
}

// The GPU passes' view of the module's target.
gpu::GpuFeatures gpu_features(const ir::ModuleAttrs& m) {
  gpu::GpuFeatures features;
  if (!m.target.empty()) {
    const gpu::Arch& t = gpu::arch_of(m.target);
    features.warp_size = t.warp_size;
    features.matrix = t.matrix.unit;
    features.max_shared_bytes = t.shared_bytes;
    gpu::set_arch_features(features, t);
  }
  if (m.num_warps)
    features.num_warps = static_cast<int>(m.num_warps);
  if (m.num_stages)
    features.num_stages = static_cast<int>(m.num_stages);
  if (m.warp_size)
    features.warp_size = static_cast<int>(m.warp_size);
  if (!m.matrix_unit.empty()) {
    auto it = std::find_if(kMatrixUnits.begin(), kMatrixUnits.end(), [&](gpu::MatrixUnit u) {
      return m.matrix_unit == gpu::matrix_unit_name(u);
    });
    if (it == kMatrixUnits.end())
      throw Error("unknown matrix unit '" + m.matrix_unit +
                  "' (none, mma_sync, wgmma, mfma, wmma)");
    features.matrix = *it;
  }
  // Without a target: AMD's matrix units come without asynchronous copies.
  if (m.target.empty())
    features.async_copy =
        features.matrix != gpu::MatrixUnit::Mfma && features.matrix != gpu::MatrixUnit::Wmma;
  return features;
}

void run_gpu_pass(std::string_view name, ir::Function& f) {
  for (const gpu::GpuPass& p : gpu::gpu_passes())
    if (p.name == name) {
      p.run(f, gpu_features(f.module));
      return;
    }
  for (const cpu::CpuPass& p : cpu::cpu_passes())
    if (p.name == name)
      throw Error(fmt::format("pass '{}' is the CPU backend's: it runs for the target host, not {}",
                              name, f.module.target.empty() ? "a GPU" : f.module.target));
  throw Error(fmt::format("no pass named '{}' (passes: {})", name, all_pass_names()));
}

std::unique_ptr<ir::Function> run_cpu_pass(std::string_view name, std::unique_ptr<ir::Function> f) {
  for (const cpu::CpuPass& p : cpu::cpu_passes())
    if (p.name == name) {
      std::unique_ptr<ir::Function> g = p.run(*f);
      if (!g)
        return f;
      g->module = f->module;
      return g;
    }
  for (const gpu::GpuPass& p : gpu::gpu_passes())
    if (p.name == name)
      throw Error(fmt::format("pass '{}' is a GPU pass: the target host runs {}", name,
                              fmt::join(cpu_pass_names(), ", ")));
  throw Error(fmt::format("no pass named '{}' (passes: {})", name, all_pass_names()));
}

std::string print_with_axis_info(const ir::Function& f) {
  gpu::AxisInfoMap info = gpu::analyze_axis_info(f);
  return ir::print(f, [&](const ir::Op& op) {
    std::string note;
    for (const ir::Value* r : op.results)
      if (auto it = info.find(r); it != info.end())
        note += (note.empty() ? "" : "; ") + gpu::to_string(it->second);
    return note;
  });
}

} // namespace

void list_passes(std::ostream& out) {
  for (const gpu::GpuPass& p : gpu::gpu_passes())
    out << p.name << "\n";
  for (const cpu::CpuPass& p : cpu::cpu_passes())
    out << p.name << "  (host)\n";
  for (std::string_view p : kPrinters)
    out << p << "\n";
}

int opt(int argc, char** argv) {
  ir::ModuleAttrs given; // the options; each set one overrides the file's
  std::vector<std::string> passes;
  std::string file;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return option_value(argc, argv, i); };
    auto number = [&]() { return whole_number(a, next(), 1, 1 << 16); };
    if (is_help(a))
      return help();
    if (a == "--pass") {
      std::string name = next();
      std::replace(name.begin(), name.end(), '-', '_');
      passes.push_back(name);
    } else if (a == "--num-warps") {
      given.num_warps = number();
    } else if (a == "--target") {
      given.target = next();
      if (given.target != "host")
        gpu::arch_of(given.target); // an unknown architecture: its error, now
    } else if (a == "--warp-size") {
      given.warp_size = number();
    } else if (a == "--num-stages") {
      given.num_stages = number();
    } else if (a == "--matrix-unit") {
      given.matrix_unit = next();
    } else if (file.empty() && (a == "-" || (!a.empty() && a[0] != '-'))) {
      file = a;
    } else {
      throw Error("unexpected argument '" + a + "'");
    }
  }
  if (file.empty() || passes.empty())
    return usage();
  std::unique_ptr<ir::Function> f =
      ir::parse(read_text(file), gpu::parse_layout, file == "-" ? "<stdin>" : file);
  ir::ModuleAttrs& m = f->module;
  if (!given.target.empty()) {
    // A new target: the file's warp size and matrix unit were the old one's.
    m = ir::ModuleAttrs{given.target, m.num_warps, m.num_stages};
  }
  for (auto [from, to] :
       {std::pair{given.num_warps, &m.num_warps}, std::pair{given.num_stages, &m.num_stages},
        std::pair{given.warp_size, &m.warp_size}})
    if (from)
      *to = from;
  if (!given.matrix_unit.empty())
    m.matrix_unit = given.matrix_unit;
  ir::verify(*f);
  bool axis_info = false;
  for (const std::string& name : passes) {
    if (std::find(kPrinters.begin(), kPrinters.end(), name) != kPrinters.end())
      axis_info = true;
    else if (f->module.target == "host")
      f = run_cpu_pass(name, std::move(f));
    else
      run_gpu_pass(name, *f);
    ir::verify(*f);
  }
  std::cout << (axis_info ? print_with_axis_info(*f) : ir::print(*f));
  return 0;
}

} // namespace tritium::cli
