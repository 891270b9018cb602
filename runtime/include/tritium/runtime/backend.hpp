// The interface every device backend implements (interpreter, CPU, CUDA, HIP). Public so that
// the header-only launch path can call it; users normally go through tritium::Device.
#pragma once

#include <tritium/ir/ir.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace tritium {

struct LaunchGrid {
  int64_t x = 1, y = 1, z = 1;
};

// Options that shape the compiled code; part of every cache key.
struct CompileOptions {
  int num_warps = 4;
  int num_stages = 3;
  friend bool operator==(const CompileOptions&, const CompileOptions&) = default;
};

// One launch argument per kernel parameter, in a 64-bit slot: integers sign- (or zero-)
// extended, floating-point values as the bits of a double, pointers as device addresses.
using ArgSlot = uint64_t;

class CompiledKernel {
public:
  virtual ~CompiledKernel() = default;
  virtual void launch(const LaunchGrid& grid, std::span<const ArgSlot> args) = 0;
  // Text of the stages the backend produced (IR, LLVM IR, PTX, …), for dumps and tools.
  virtual std::string artifact(std::string_view stage) const { return {}; }
};

class Backend {
public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0; // "interpreter", "cpu", "cuda", "hip"
  virtual std::string target() const = 0;    // e.g. "sm_90", "gfx942", "x86_64"
  virtual void* alloc(size_t bytes) = 0;
  virtual void free(void* p) = 0;
  virtual void copy_to_device(void* dst, const void* src, size_t bytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, size_t bytes) = 0;
  virtual void copy_device_to_device(void* dst, const void* src, size_t bytes) = 0;
  virtual void synchronize() {}
  virtual std::unique_ptr<CompiledKernel> compile(std::shared_ptr<const ir::Function> f,
                                                  const CompileOptions& options) = 0;
};

// A backend constructor registered under a name. make() returns null and sets `why` when the
// device is not usable on this machine.
struct BackendFactory {
  std::string name;
  int priority; // higher is preferred by default_device()
  std::unique_ptr<Backend> (*make)(std::string* why);
};
void register_backend(BackendFactory f);

} // namespace tritium
