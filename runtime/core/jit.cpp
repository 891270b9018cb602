// Out-of-line helpers of the launch path: kernel names, grid checks, stage dumps.
#include <tritium/ir/dump_stem.hpp>
#include <tritium/ir/printer.hpp>
#include <tritium/runtime/autotune.hpp>
#include <tritium/runtime/jit.hpp>

#include <cxxabi.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>

namespace tritium {

namespace {
std::mutex compile_stats_mutex;
CompileStats compile_totals;
} // namespace

CompileStats compile_stats() {
  std::lock_guard<std::mutex> lock(compile_stats_mutex);
  return compile_totals;
}

namespace detail {

void note_compile(std::chrono::steady_clock::duration took) {
  std::lock_guard<std::mutex> lock(compile_stats_mutex);
  ++compile_totals.kernels;
  compile_totals.seconds += std::chrono::duration<double>(took).count();
}

std::string function_symbol_name(const void* fn) {
  Dl_info info{};
  if (!dladdr(fn, &info) || !info.dli_sname)
    return {};
  int status = 0;
  char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
  std::string name = status == 0 && demangled ? demangled : info.dli_sname;
  std::free(demangled);
  // "ns::add_kernel(tritium::lang::basic_tensor<…>, …)" -> "add_kernel"
  if (auto paren = name.find('('); paren != std::string::npos)
    name.resize(paren);
  if (auto colon = name.rfind("::"); colon != std::string::npos)
    name = name.substr(colon + 2);
  return name;
}

std::string default_kernel_name(const void* fn, const std::source_location& where) {
  if (std::string name = function_symbol_name(fn); !name.empty())
    return name;
  std::string stem = std::filesystem::path(where.file_name()).stem().string();
  for (char& c : stem)
    if (!std::isalnum(static_cast<unsigned char>(c)))
      c = '_';
  return fmt::format("kernel_{}_{}", stem, where.line());
}

void check_grid(const LaunchGrid& g, std::string_view kernel) {
  if (g.x < 0 || g.y < 0 || g.z < 0)
    throw Error(fmt::format("kernel '{}': launch grid ({}, {}, {}) has a negative dimension",
                            kernel, g.x, g.y, g.z));
  if (g.x > 0x7fffffff || g.y > 65535 || g.z > 65535)
    throw Error(fmt::format("kernel '{}': launch grid ({}, {}, {}) is too large (at most "
                            "2^31-1 x 65535 x 65535 programs)",
                            kernel, g.x, g.y, g.z));
}

void check_options(const CompileOptions& o, std::string_view kernel) {
  // GPUs run at most 1024 threads a program: 32 warps of 32 (wave64 targets allow 16, which
  // their compiler checks). The same bounds on every device keep a kernel portable.
  if (o.num_warps < 1 || o.num_warps > 32 || (o.num_warps & (o.num_warps - 1)))
    throw Error(fmt::format("kernel '{}': num_warps = {}: it must be a power of two from 1 to 32",
                            kernel, o.num_warps));
  if (o.num_stages < 0)
    throw Error(
        fmt::format("kernel '{}': num_stages = {}: it must be 0 or more", kernel, o.num_stages));
}

void dump_artifacts(std::string_view kernel, const ir::Function& f, const CompileOptions& o,
                    const CompiledKernel& k, const Backend& backend) {
  const char* dir = std::getenv("TRITIUM_DUMP");
  if (!dir || !*dir)
    return;
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw Error(fmt::format("TRITIUM_DUMP={}: cannot create the folder for kernel '{}': {}", dir,
                            kernel, ec ? ec.message() : "a file of that name exists"));
  // An autotuned kernel's configuration is part of the name; each further specialization of
  // the same kernel gets its own files too (ir::dump_stem), named as the GPU compiler names
  // the stages it writes as it goes.
  const std::string config = current_config();
  const std::string stem = ir::dump_stem(
      dir, config.empty() ? std::string(kernel) : fmt::format("{}.{}", kernel, config),
      ir::print(f), o.num_warps, o.num_stages);
  auto write = [&](std::string_view stage, const std::string& text) {
    if (text.empty())
      return;
    fs::path path = fs::path(dir) / fmt::format("{}.{}", stem, stage);
    if (!(std::ofstream(path) << text))
      throw Error(fmt::format("TRITIUM_DUMP={}: cannot write {}", dir, path.string()));
  };
  // The traced IR with each op's source line: `tritium compile` of this file reports errors at
  // the kernel's C++ lines. Its module line names what it was compiled for (the GPU's
  // architecture, or the host), so the file compiles as it is; the interpreter's and the
  // gpu-emulator's names are no target `tritium compile` knows, and are left out.
  std::unique_ptr<ir::Function> traced = ir::clone(f);
  const std::string_view device = backend.name();
  traced->module.target = device == "cpu"                       ? std::string("host")
                          : device == "cuda" || device == "hip" ? backend.target()
                                                                : std::string();
  traced->module.num_warps = o.num_warps;
  traced->module.num_stages = o.num_stages;
  write("ir", ir::print_with_locations(*traced));
  for (const char* stage : {"ir.opt", "ll", "ll.opt", "ptx", "jit", "amdgcn", "asm"})
    write(stage, k.artifact(stage));
}

} // namespace detail
} // namespace tritium
