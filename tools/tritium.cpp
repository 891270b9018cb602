// tritium: compile a kernel for a named target and dump every stage, or run GPU passes on IR.
//
//   tritium compile --target gfx942 [--num-warps 4] [--code-object 4] [--dump DIR]
//                   (--sample vector_add | FILE.tir)
//   tritium opt --pass NAME [--pass NAME ...] [--num-warps N] [--target ARCH] [--warp-size N]
//               [--matrix-unit UNIT] [--num-stages N] FILE.tir   (FILE "-": stdin)
//               (--target: the target's warp size, matrix unit, shared memory and TMA from
//               the architecture model; options after it change them)
//   tritium targets          list the targets ("host" goes through the CPU backend, when built)
//   tritium samples          list the built-in sample kernels
//   tritium passes           list what `opt --pass` takes
//
// `opt` (opt.cpp) parses the IR (layouts included), runs the named passes in order, verifies,
// and prints the IR. Passes are the target's pipeline's (the GPU's for an architecture, the
// CPU backend's for host) and analysis printers: print_axis_info annotates each op with its
// results' AxisInfo. Dashes and underscores are the same in pass names. tests/passes/*.tir
// check each pass. A file's `module {...}` line (ir::ModuleAttrs: target, num_warps,
// num_stages) stands for the options it names, for `opt` and `compile` alike.
//
// FILE.tir holds a kernel in the IR's text form (ir::print / ir::parse). Without --dump the
// final assembly is printed; with it, DIR/<kernel>.<stage> is written for every stage (IR
// after each pass, LLVM IR before and after O3, PTX or AMDGCN, the HSACO and its metadata).
#include "../codegen/gpu/compile.hpp"
#include "../codegen/gpu_ir/arch.hpp"
#include "../codegen/gpu_ir/layout.hpp"
#include "cli.hpp"
#include "sample_kernels.hpp"

#include <tritium/error.hpp>
#include <tritium/ir/printer.hpp>
#include <tritium/runtime/device.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

int main(int argc, char** argv) {
  using namespace tritium;
  using namespace tritium::cli;
  if (argc < 2)
    return usage();
  std::string cmd = argv[1];
  if (is_help(cmd))
    return help();
  if (cmd == "targets") {
    for (const auto& a : gpu::supported_gpu_archs())
      std::cout << a << "\n";
    std::cout << "host\n";
    return 0;
  }
  if (cmd == "samples") {
    for (const auto& [name, make] : samples::sample_kernels())
      std::cout << name << "\n";
    return 0;
  }
  if (cmd == "passes") {
    cli::list_passes(std::cout);
    return 0;
  }
  if (cmd == "opt") {
    try {
      return cli::opt(argc, argv);
    } catch (const std::exception& e) {
      std::cerr << "tritium: " << e.what() << "\n";
      return 1;
    }
  }
  if (cmd != "compile")
    return usage();
  gpu::GpuTarget target;
  CompileOptions options;
  std::string dump, sample, file;
  bool warps_given = false, stages_given = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return option_value(argc, argv, i); };
    try {
      if (is_help(a))
        return help();
      else if (a == "--target")
        target.arch = next();
      else if (a == "--num-warps")
        options.num_warps = whole_number(a, next(), 1, 32), warps_given = true;
      else if (a == "--num-stages")
        options.num_stages = whole_number(a, next(), 1, 8), stages_given = true;
      else if (a == "--code-object")
        target.code_object = whole_number(a, next(), 4, 5);
      else if (a == "--dump")
        dump = next();
      else if (a == "--sample")
        sample = next();
      else if (!a.empty() && a[0] != '-')
        file = a;
      else
        return usage();
    } catch (const std::exception& e) {
      std::cerr << "tritium: " << e.what() << "\n";
      return 2;
    }
  }
  if (sample.empty() == file.empty() || (target.arch.empty() && file.empty()))
    return usage();
  try {
    std::unique_ptr<ir::Function> f;
    if (!sample.empty()) {
      auto all = samples::sample_kernels();
      auto it = all.find(sample);
      if (it == all.end())
        throw Error("no sample kernel named '" + sample + "' (see `tritium samples`)");
      f = it->second();
    } else {
      f = ir::parse(read_text(file), gpu::parse_layout, file == "-" ? "<stdin>" : file);
      // What the file's module line records, where the options say nothing.
      if (target.arch.empty())
        target.arch = f->module.target;
      if (!warps_given && f->module.num_warps)
        options.num_warps = static_cast<int>(f->module.num_warps);
      if (!stages_given && f->module.num_stages)
        options.num_stages = static_cast<int>(f->module.num_stages);
      if (target.arch.empty())
        throw Error(file + ": no --target, and no `module {target = ...}` line names one");
    }
    if (target.arch == "host") {
      // The CPU backend compiles the host target; its stages come from CompiledKernel. Its
      // lowering trusts verified IR, as the GPU pipeline's first step makes sure; and it keeps
      // the LLVM and assembly texts only when asked to dump.
      ir::verify(*f);
      setenv("TRITIUM_DUMP", "1", 0);
      Device cpu = device("cpu");
      std::shared_ptr<const ir::Function> shared(std::move(f));
      auto k = cpu.backend().compile(shared, options);
      namespace fs = std::filesystem;
      if (!dump.empty())
        fs::create_directories(dump);
      int written = 0;
      for (const char* stage : {"ir", "ir.opt", "ll", "ll.opt", "asm"}) {
        std::string text = k->artifact(stage);
        if (text.empty())
          continue;
        ++written;
        if (dump.empty() && std::string(stage) == "asm")
          std::cout << text;
        else if (!dump.empty())
          std::ofstream(fs::path(dump) / fmt::format("{}.{}", shared->name, stage)) << text;
      }
      if (!dump.empty())
        std::cout << fmt::format("{}: {} stages in {}\n", shared->name, written, dump);
      return 0;
    }
    target.dump_dir = dump;
    gpu::GpuKernelBinary bin = gpu::compile_for_gpu(*f, target, options);
    for (const std::string& r : bin.remarks)
      std::cerr << "remark: " << r << "\n";
    if (dump.empty()) {
      std::cout << bin.assembly;
    } else {
      std::cout << fmt::format("{}: {} stages in {} ({} threads, {} bytes of shared memory)\n",
                               bin.name, bin.stages.size(), dump, bin.num_threads,
                               bin.shared_bytes);
    }
  } catch (const std::exception& e) {
    std::cerr << "tritium: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
