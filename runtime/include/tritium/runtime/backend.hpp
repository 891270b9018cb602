// The interface every device backend implements (interpreter, cpu, gpu-emulator, cuda, hip).
// Public so that the header-only launch path can call it; users normally go through
// tritium::Device, Stream and Event.
#pragma once

#include <tritium/ir/ir.hpp>
#include <tritium/launch.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace tritium {

class CompiledKernel {
public:
  virtual ~CompiledKernel() = default;
  // Queues the kernel on `stream`, a native stream of the kernel's device (CUstream,
  // hipStream_t; null: the device's own stream). Host devices run it before returning.
  virtual void launch(const LaunchGrid& grid, std::span<const ArgSlot> args, void* stream) = 0;
  void launch(const LaunchGrid& grid, std::span<const ArgSlot> args) {
    launch(grid, args, nullptr);
  }
  // Text of the stages the backend produced (IR, LLVM IR, PTX, …), for dumps and tools.
  virtual std::string artifact(std::string_view stage) const { return {}; }
};

// A point in a device's stream of work, for timing and for ordering streams. record(s) marks
// the point after everything queued on `s` so far; the others wait for that point, or ask.
class DeviceEvent {
public:
  virtual ~DeviceEvent() = default;
  virtual void record(void* stream) = 0;
  void record() { record(nullptr); }
  virtual void synchronize() = 0;
  virtual bool done() = 0;
  // Waits for this event; the device time since `start`, an event of the same device recorded
  // before it, in milliseconds.
  virtual double ms_since(const DeviceEvent& start) = 0;
};

class Backend {
public:
  virtual ~Backend() = default;
  // Expires when the backend is destroyed: what holds device memory past its owner's life (a
  // kernel in a static, its bounds-check record, at exit) frees it only while this holds.
  std::weak_ptr<const void> lifetime() const { return lifetime_; }
  virtual std::string_view name() const = 0; // "interpreter", "cpu", "cuda", "hip", …
  virtual int index() const { return 0; }    // which device of its kind: cuda:1 is 1
  virtual std::string target() const = 0;    // e.g. "sm_90", "gfx942", "x86_64"
  // Whether the device's memory is the host's (cpu, interpreter, gpu-emulator): its buffers
  // are host pointers, and host memory from elsewhere can be adopted.
  virtual bool host_memory() const { return false; }
  virtual void* alloc(size_t bytes) = 0;
  virtual void free(void* p) = 0;
  // Memory the backend did not allocate (a DLPack tensor, a framework's buffer) is about to be
  // used as a buffer, or no longer is; the interpreter checks accesses against it.
  virtual void adopt(void* /*p*/, size_t /*bytes*/) {}
  virtual void release_adopted(void* /*p*/) {}
  // A few bytes of host memory that kernels read and write in place (pinned and mapped on a
  // GPU), for words the host reads after a launch without a copy (TRITIUM_CHECK's record):
  // returns the host address and sets `device` to the one kernels use. Where the device's
  // memory is the host's, an allocation of its own.
  virtual void* alloc_mapped(size_t bytes, void** device);
  virtual void free_mapped(void* host);
  // Synchronous copies on the device's own stream.
  virtual void copy_to_device(void* dst, const void* src, size_t bytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, size_t bytes) = 0;
  virtual void copy_device_to_device(void* dst, const void* src, size_t bytes) = 0;
  // Waits for the device's own stream.
  virtual void synchronize() {}
  // How many programs run at once at most, for persistent kernels (grid = this many): SMs on
  // NVIDIA and compute units on AMD (driver::GpuBackend), hardware threads on the CPU, 1 on
  // the interpreter.
  virtual int num_compute_units() const { return 1; }
  // Whether the device was lost (a GPU fault destroyed its context). A lost backend refuses
  // work with an error; tritium::device() then tries a fresh one (which the driver may refuse
  // until the process restarts).
  virtual bool lost() const { return false; }

  // Streams are native handles (CUstream, hipStream_t). Host devices finish every launch
  // before returning and have none: their streams are null and their defaults below suffice.
  virtual void* default_stream() { return nullptr; } // the device's own stream
  virtual void* create_stream() { return nullptr; }
  virtual void destroy_stream(void* /*stream*/) {}
  virtual void synchronize_stream(void* /*stream*/) { synchronize(); }
  // Work queued on `stream` after this call waits until `event` is reached.
  virtual void stream_wait(void* /*stream*/, DeviceEvent& event) { event.synchronize(); }
  // Events; the default reads the host clock, exact where a launch returns when the kernel
  // is done (cpu, interpreter, gpu-emulator).
  virtual std::unique_ptr<DeviceEvent> new_event();

  // Sets `bytes` bytes at `dst` (device memory) to `byte`, in order with the work queued on the
  // device's own stream. The default goes through copy_to_device; GPU backends use a memset.
  virtual void fill(void* dst, unsigned char byte, size_t bytes);
  // How many bytes to overwrite between timed runs so that no input is left in the caches
  // (tritium::bench's flush_l2); 0 when the device has no cache worth flushing.
  virtual size_t cache_flush_bytes() const { return 0; }

  virtual std::unique_ptr<CompiledKernel> compile(std::shared_ptr<const ir::Function> f,
                                                  const CompileOptions& options) = 0;

private:
  std::shared_ptr<const int> lifetime_ = std::make_shared<const int>(0);
};

// A backend constructor registered under a name. make(index, why) opens device `index` of
// this kind (cuda:1 is index 1); it returns null and sets `why` when that device is not usable
// on this machine.
struct BackendFactory {
  std::string name;
  int priority; // higher is preferred by default_device()
  std::unique_ptr<Backend> (*make)(int index, std::string* why);
};
void register_backend(BackendFactory f);

} // namespace tritium
