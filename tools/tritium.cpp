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
// `opt` parses the IR (layouts included), runs the named passes in order, verifies, and prints
// the IR. Passes are the GPU pipeline's (compile.cpp runs them all, in the order `passes`
// lists) and analysis printers: print_axis_info annotates each op with its results' AxisInfo.
// Dashes and underscores are the same in pass names. tests/passes/*.tir check each pass.
//
// FILE.tir holds a kernel in the IR's text form (ir::print / ir::parse). Without --dump the
// final assembly is printed; with it, DIR/<kernel>.<stage> is written for every stage (IR
// after each pass, LLVM IR before and after O3, PTX or AMDGCN, the HSACO and its metadata).
#include "../codegen/gpu/arch.hpp"
#include "../codegen/gpu/compile.hpp"
#include "../codegen/gpu/layout.hpp"
#include "../codegen/passes/passes.hpp"
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

namespace {

constexpr const char* kUsage =
    "usage: tritium compile --target ARCH [--num-warps N] [--num-stages N] [--code-object 4|5]\n"
    "                       [--dump DIR]\n"
    "                       (--sample NAME | FILE.tir)\n"
    "       tritium opt --pass NAME [--pass NAME ...] [--num-warps N] [--target ARCH]\n"
    "                   [--warp-size N] [--matrix-unit UNIT] [--num-stages N] FILE.tir\n"
    "       tritium targets | samples | passes | help\n"
    "compile: lower a kernel for ARCH (`tritium targets`; host: the CPU backend) and print its\n"
    "  assembly, or write every stage to DIR. opt: run GPU passes (`tritium passes`) on IR\n"
    "  text (FILE \"-\": stdin) and print it.\n";

// A mistake on the command line: the usage on stderr, status 2.
int usage() {
  std::cerr << kUsage;
  return 2;
}

// --help: the usage on stdout, status 0.
int help() {
  std::cout << kUsage;
  return 0;
}

bool is_help(const std::string& a) {
  return a == "--help" || a == "-h" || a == "help";
}

// A numeric option's value: a whole number from `lo` to `hi`, or an error naming the option.
int whole_number(const std::string& option, const std::string& text, int lo, int hi) {
  int n = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), n);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size() || n < lo || n > hi)
    throw tritium::Error(
        fmt::format("{} takes a whole number from {} to {}, got '{}'", option, lo, hi, text));
  return n;
}

std::string read_text(const std::string& file) {
  std::stringstream ss;
  if (file == "-") {
    ss << std::cin.rdbuf();
    return ss.str();
  }
  std::ifstream in(file);
  if (!in)
    throw tritium::Error("cannot read " + file);
  ss << in.rdbuf();
  return ss.str();
}

// Analysis printers: annotate each op of the printed IR with what an analysis knows.
const char* const kPrinters[] = {"print_axis_info"};

int opt(int argc, char** argv) {
  using namespace tritium;
  gpu::GpuFeatures features;
  bool target_given = false;
  std::vector<std::string> passes;
  std::string file;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc)
        throw Error(a + " needs a value");
      return argv[++i];
    };
    auto number = [&]() { return whole_number(a, next(), 1, 1 << 16); };
    if (is_help(a)) {
      return help();
    } else if (a == "--pass") {
      std::string name = next();
      std::replace(name.begin(), name.end(), '-', '_');
      passes.push_back(name);
    } else if (a == "--num-warps") {
      features.num_warps = number();
    } else if (a == "--target") {
      const gpu::Arch& t = gpu::arch_of(next());
      features.warp_size = t.warp_size;
      features.matrix = t.matrix.unit;
      features.max_shared_bytes = t.shared_bytes;
      gpu::set_arch_features(features, t);
      target_given = true;
    } else if (a == "--warp-size") {
      features.warp_size = number();
    } else if (a == "--num-stages") {
      features.num_stages = number();
    } else if (a == "--matrix-unit") {
      std::string u = next();
      bool found = false;
      for (auto unit : {gpu::MatrixUnit::None, gpu::MatrixUnit::MmaSync, gpu::MatrixUnit::Wgmma,
                        gpu::MatrixUnit::Mfma, gpu::MatrixUnit::Wmma})
        if (u == gpu::matrix_unit_name(unit)) {
          features.matrix = unit;
          found = true;
        }
      if (!found)
        throw Error("unknown matrix unit '" + u + "' (none, mma_sync, wgmma, mfma, wmma)");
    } else if (file.empty() && (a == "-" || (!a.empty() && a[0] != '-'))) {
      file = a;
    } else {
      throw Error("unexpected argument '" + a + "'");
    }
  }
  if (file.empty() || passes.empty())
    return usage();
  // Without --target: AMD's matrix units come without asynchronous copies.
  if (!target_given)
    features.async_copy =
        features.matrix != gpu::MatrixUnit::Mfma && features.matrix != gpu::MatrixUnit::Wmma;
  bool axis_info = false;
  std::vector<const gpu::GpuPass*> run;
  for (const std::string& name : passes) {
    if (name == "print_axis_info") {
      axis_info = true;
      continue;
    }
    const gpu::GpuPass* found = nullptr;
    for (const gpu::GpuPass& p : gpu::gpu_passes())
      if (p.name == name)
        found = &p;
    if (!found) {
      std::string all;
      for (const gpu::GpuPass& p : gpu::gpu_passes())
        all += std::string(all.empty() ? "" : ", ") + std::string(p.name);
      for (const char* p : kPrinters)
        all += std::string(", ") + p;
      throw Error(fmt::format("no pass named '{}' (passes: {})", name, all));
    }
    run.push_back(found);
  }
  std::unique_ptr<ir::Function> f =
      ir::parse(read_text(file), gpu::parse_layout, file == "-" ? "<stdin>" : file);
  ir::verify(*f);
  for (const gpu::GpuPass* p : run) {
    p->run(*f, features);
    ir::verify(*f);
  }
  if (!axis_info) {
    std::cout << ir::print(*f);
    return 0;
  }
  gpu::AxisInfoMap info = gpu::analyze_axis_info(*f);
  std::cout << ir::print(*f, [&](const ir::Op& op) {
    std::string note;
    for (const ir::Value* r : op.results)
      if (auto it = info.find(r); it != info.end())
        note += (note.empty() ? "" : "; ") + gpu::to_string(it->second);
    return note;
  });
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  using namespace tritium;
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
    for (const gpu::GpuPass& p : gpu::gpu_passes())
      std::cout << p.name << "\n";
    for (const char* p : kPrinters)
      std::cout << p << "\n";
    return 0;
  }
  if (cmd == "opt") {
    try {
      return opt(argc, argv);
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
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc)
        throw Error(a + " needs a value");
      return argv[++i];
    };
    try {
      if (is_help(a))
        return help();
      else if (a == "--target")
        target.arch = next();
      else if (a == "--num-warps")
        options.num_warps = whole_number(a, next(), 1, 32);
      else if (a == "--num-stages")
        options.num_stages = whole_number(a, next(), 1, 8);
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
  if (target.arch.empty() || sample.empty() == file.empty())
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
