// What the compilers need from the machine: ld.lld for AMD's HSACO, libdevice for NVIDIA's math
// functions, a GPU target that exists, and a writable TRITIUM_DUMP folder.
#include "common.hpp"

#include "../../codegen/gpu/compile.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace bad_inputs {
namespace {

namespace fs = std::filesystem;

void exp_kernel(tl::ptr<float> x, tl::ptr<float> out, tl::constexpr_<int> BLOCK) {
  auto offs = tl::arange(0, BLOCK);
  tl::store(out + offs, tl::exp(tl::load(x + offs)));
}

std::shared_ptr<const tritium::ir::Function> exp_ir() {
  auto k = tritium::jit(exp_kernel, "exp_kernel");
  auto x = tritium::device("interpreter").alloc<float>(128);
  return k.trace(x, x, 128);
}

// f32 tl::exp lowers to ex2.approx on NVPTX; tl::sin is a libdevice call, so only this kernel
// makes the NVPTX backend read libdevice.
void sin_kernel(tl::ptr<float> x, tl::ptr<float> out, tl::constexpr_<int> BLOCK) {
  auto offs = tl::arange(0, BLOCK);
  tl::store(out + offs, tl::sin(tl::load(x + offs)));
}

std::shared_ptr<const tritium::ir::Function> sin_ir() {
  auto k = tritium::jit(sin_kernel, "sin_kernel");
  auto x = tritium::device("interpreter").alloc<float>(128);
  return k.trace(x, x, 128);
}

tritium::gpu::GpuKernelBinary compile_for(const std::string& arch,
                                          std::shared_ptr<const tritium::ir::Function> fn = {}) {
  tritium::gpu::GpuTarget t;
  t.arch = arch;
  return tritium::gpu::compile_for_gpu(fn ? *fn : *exp_ir(), t, tritium::CompileOptions{});
}

fs::path scratch(const std::string& name) {
  return fs::temp_directory_path() / ("tritium-bad-inputs-" + std::to_string(::getpid()) + name);
}

TEST_CASE("bad input: a GPU target that does not exist") {
  CHECK_ERROR(compile_for("gfx999"), "unknown GPU architecture 'gfx999'", "gfx942", "gfx1200");
  CHECK_ERROR(compile_for("tpu_v4"), "unknown GPU architecture 'tpu_v4'", "gfx942", "sm_90");
  CHECK_ERROR(compile_for("sm_75"), "unknown GPU architecture 'sm_75'", "sm_80");
  CHECK_ERROR(compile_for(""), "unknown GPU architecture ''");
}

// A histogram's 32,768 bins: 128 KiB of counters in shared memory, more than the 64 KiB of LDS
// a gfx942 work-group has (an H100/H200 block may opt in to 227 KiB). (A large transpose no
// longer is one: its conversion goes through shared memory in rounds of 16 KiB.)
void big_histogram(tl::ptr<int32_t> x, tl::ptr<int32_t> out) {
  auto offs = tl::arange(0, 1024);
  tl::store(out + tl::arange(0, 32768), tl::histogram(tl::load(x + offs), 32768));
}

TEST_CASE("bad input: more shared memory than the GPU has") {
  auto k = tritium::jit(big_histogram, "big_histogram");
  auto x = tritium::device("interpreter").alloc<int32_t>(32768);
  auto f = k.trace(x, x);
  tritium::gpu::GpuTarget t;
  t.arch = "gfx942";
  CHECK_ERROR(tritium::gpu::compile_for_gpu(*f, t, tritium::CompileOptions{}),
              "kernel 'big_histogram': needs", "bytes of shared memory on gfx942");
}

TEST_CASE("bad input: ld.lld is missing") {
  ::setenv("TRITIUM_LLD", "/nonexistent/ld.lld", 1);
  CHECK_ERROR(compile_for("gfx942"), "TRITIUM_LLD=/nonexistent/ld.lld is not an executable file",
              "lld-19");
  fs::path plain = scratch("-not-executable");
  std::ofstream(plain) << "#!/bin/sh\n";
  fs::permissions(plain, fs::perms::owner_read | fs::perms::owner_write);
  ::setenv("TRITIUM_LLD", plain.c_str(), 1);
  if (::geteuid() != 0) // root may execute anything
    CHECK_ERROR(compile_for("gfx1100"), "is not an executable file");
  fs::remove(plain);
  ::unsetenv("TRITIUM_LLD");
  // Found again where Debian installs it; a machine without lld-19 (the GPU machine, which runs
  // NVIDIA's toolchain only) gets the error that names the package.
  bool installed = false;
  for (const char* c : {"/usr/bin/ld.lld-19", "/usr/lib/llvm-19/bin/ld.lld", "/usr/bin/ld.lld"})
    installed |= fs::exists(c);
  if (installed)
    CHECK_FALSE(compile_for("gfx942").binary.empty());
  else
    CHECK_ERROR(compile_for("gfx942"), "ld.lld (Debian package lld-19) is needed");
}

TEST_CASE("bad input: ld.lld fails") {
  ::setenv("TRITIUM_LLD", "/bin/false", 1);
  CHECK_ERROR(compile_for("gfx942"), "kernel 'exp_kernel': linking the HSACO with /bin/false",
              "exit status 1");
  fs::path junk = scratch("-junk-program"); // executable, but not a program
  std::ofstream(junk) << "\x01\x02 not an ELF file";
  fs::permissions(junk, fs::perms::owner_all);
  ::setenv("TRITIUM_LLD", junk.c_str(), 1);
  CHECK_ERROR(compile_for("gfx942"), "linking the HSACO with", "failed: cannot run it");
  fs::remove(junk);
  ::unsetenv("TRITIUM_LLD");
}

TEST_CASE("bad input: libdevice is missing") {
  ::setenv("TRITIUM_LIBDEVICE", "/nonexistent/libdevice.10.bc", 1);
  CHECK_ERROR(compile_for("sm_90"), "TRITIUM_LIBDEVICE=/nonexistent/libdevice.10.bc is not a file",
              "TRITIUM_NO_LIBDEVICE=1");
  ::unsetenv("TRITIUM_LIBDEVICE");
  // Without any libdevice the PTX approximations stand in (TRITIUM_NO_LIBDEVICE=1).
  ::setenv("TRITIUM_NO_LIBDEVICE", "1", 1);
  CHECK(compile_for("sm_90").assembly.find("ex2.approx") != std::string::npos);
  ::unsetenv("TRITIUM_NO_LIBDEVICE");
}

TEST_CASE("bad input: libdevice is not bitcode") {
  fs::path fake = scratch("-libdevice.bc");
  std::ofstream(fake) << "not LLVM bitcode";
  ::setenv("TRITIUM_LIBDEVICE", fake.c_str(), 1);
  CHECK_ERROR(compile_for("sm_90", sin_ir()), "NVPTX: libdevice: cannot parse", fake.c_str(),
              "bitcode");
  ::unsetenv("TRITIUM_LIBDEVICE");
  fs::remove(fake);
}

// tl::extern_elementwise is an ocml call on AMD targets: the only kernel that reads ocml.
void cbrt_kernel(tl::ptr<float> x, tl::ptr<float> out, tl::constexpr_<int> BLOCK) {
  auto offs = tl::arange(0, BLOCK);
  tl::store(out + offs, tl::extern_elementwise("cbrt", tl::load(x + offs)));
}

TEST_CASE("bad input: ocml is not bitcode") {
  auto k = tritium::jit(cbrt_kernel, "cbrt_kernel");
  auto x = tritium::device("interpreter").alloc<float>(128);
  auto ir = k.trace(x, x, 128);
  fs::path fake = scratch("-ocml.bc");
  std::ofstream(fake) << "not LLVM bitcode";
  ::setenv("TRITIUM_OCML", fake.c_str(), 1);
  CHECK_ERROR(compile_for("gfx942", ir), "AMDGPU: ocml: cannot parse", fake.c_str(), "bitcode");
  ::unsetenv("TRITIUM_OCML");
  fs::remove(fake);
}

TEST_CASE("bad input: TRITIUM_DUMP names a file, not a folder") {
  fs::path file = scratch("-dump-file");
  std::ofstream(file) << "in the way";
  ::setenv("TRITIUM_DUMP", file.c_str(), 1);
  auto k = tritium::jit(add_one, "add_one");
  for (Device d : host_devices()) {
    CAPTURE(d.name());
    auto x = d.alloc<float>(16);
    CHECK_ERROR((k[{1}](x, x, 16, 16)), (std::string("TRITIUM_DUMP=") + file.string()).c_str(),
                "cannot create the folder for kernel 'add_one'");
    CHECK(k.num_compiled() == 0);
  }
  CHECK_ERROR(compile_for("sm_90"), "kernel 'exp_kernel': cannot write the ir stage", file.c_str());
  ::unsetenv("TRITIUM_DUMP");
  fs::remove(file);
}

} // namespace
} // namespace bad_inputs
