// tritium: compile a kernel for a named target and dump every stage.
//
//   tritium compile --target gfx942 [--num-warps 4] [--code-object 4] [--dump DIR]
//                   (--sample vector_add | FILE.tir)
//   tritium targets          list the targets ("host" goes through the CPU backend, when built)
//   tritium samples          list the built-in sample kernels
//
// FILE.tir holds a kernel in the IR's text form (ir::print / ir::parse). Without --dump the
// final assembly is printed; with it, DIR/<kernel>.<stage> is written for every stage (IR
// after each pass, LLVM IR before and after O3, PTX or AMDGCN, the HSACO and its metadata).
#include "../codegen/gpu/compile.hpp"
#include "sample_kernels.hpp"

#include <tritium/error.hpp>
#include <tritium/ir/printer.hpp>
#include <tritium/runtime/device.hpp>

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace {

int usage() {
  std::cerr << "usage: tritium compile --target ARCH [--num-warps N] [--code-object 4|5] "
               "[--dump DIR] (--sample NAME | FILE.tir)\n"
               "       tritium targets | samples\n";
  return 2;
}

} // namespace

int main(int argc, char** argv) {
  using namespace tritium;
  if (argc < 2)
    return usage();
  std::string cmd = argv[1];
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
      if (a == "--target")
        target.arch = next();
      else if (a == "--num-warps")
        options.num_warps = std::stoi(next());
      else if (a == "--code-object")
        target.code_object = std::stoi(next());
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
      std::ifstream in(file);
      if (!in)
        throw Error("cannot read " + file);
      std::stringstream ss;
      ss << in.rdbuf();
      f = ir::parse(ss.str());
    }
    if (target.arch == "host") {
      // The CPU backend compiles the host target; its stages come from CompiledKernel.
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
