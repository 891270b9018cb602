// One driver-API shape for the GPU backends. CUDA's driver API and HIP's module API are the same
// calls under two prefixes: a device made current on the calling thread, streams, events,
// modules loaded from an image, and a launch that takes an array of pointers to parameters.
// Each backend supplies a Driver, the table of those calls over its own dlopen'd library
// (runtime/cuda/cuda_driver.hpp, runtime/hip/hip_driver.hpp); everything written against the
// shape is here, once: the device's state, launching with packed parameters (and the per-stream
// global scratch some kernels take), faults that name the last kernel, streams, events, and the
// Backend on top. The AOT launcher (runtime/aot) uses the same pieces without libtritium.
//
// A Driver provides:
//   static constexpr std::string_view name;                 "cuda", "hip"
//   using Result, Stream, Event, Module, Function;  static constexpr Result success;
//   std::string describe(Result) const;
//   static constexpr std::string_view context_name;         "CUDA context"
//   bool context_lost(Result) const;   a sticky fault: the context can no longer be used
//   uintptr_t key() const;  Result get_current(uintptr_t*);  Result set_current(uintptr_t);
//   Result malloc(void**, size_t);  Result free(void*);
//   Result copy_h2d / copy_d2h / copy_d2d(void* dst, const void* src, size_t, Stream);
//   Result memset(void*, unsigned char, size_t, Stream);
//   Result stream_create(Stream*);  stream_destroy(Stream);  stream_synchronize(Stream);
//   Result stream_wait(Stream, Event);
//   Result event_create(Event*);  event_destroy(Event);  event_record(Event, Stream);
//   Result event_synchronize(Event);  event_query(Event) (success: reached);
//   Result event_elapsed_ms(float*, Event start, Event end);
//   Result module_load(Module*, const void* image);  module_unload(Module);
//   Result module_function(Function*, Module, const char* name);
//   Result launch(Function, const LaunchGrid&, unsigned threads, unsigned shared_bytes, Stream,
//                 void** params);
//
// Internal header of the runtime layer; it needs no vendor header itself.
#pragma once

#include "runtime/core/device_fault.hpp"
#include "runtime/core/kernel_params.hpp"

#include <tritium/error.hpp>
#include <tritium/runtime/backend.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tritium::driver {

// TRITIUM_LAUNCH_BLOCKING=1: wait after every launch, so that a fault names its kernel.
inline bool launch_blocking_from_env() {
  const char* v = std::getenv("TRITIUM_LAUNCH_BLOCKING");
  return v && *v && std::string_view(v) != "0";
}

// The state of one GPU. Never destroyed: buffers and compiled kernels are often released from
// static destructors at exit, in an order nobody controls, and the driver reclaims everything
// when the process ends.
template <class Driver>
struct Gpu {
  using Result = typename Driver::Result;
  using Stream = typename Driver::Stream;

  Driver drv;
  int ordinal = 0;
  std::string device_name; // "NVIDIA H200"
  std::string arch;        // "sm_90", "gfx942"
  int compute_units = 1;   // SMs, CUs
  int max_shared = 0;      // bytes of shared memory (LDS) a block may use
  // Bytes of shared memory of one SM (CU), and what the driver reserves of it per block: how
  // many blocks their shared memory lets share one.
  int shared_per_cu = 0, shared_reserved_per_block = 0;
  Stream stream{}; // the device's own stream
  bool launch_blocking = launch_blocking_from_env();

  // Names of every kernel loaded, stable for the process's life, so that the last launch can
  // be recorded as a pointer and named in a later error.
  std::mutex names_mutex;
  std::deque<std::string> names;
  std::atomic<const std::string*> last_kernel{nullptr};

  const std::string* intern(std::string name) {
    std::lock_guard<std::mutex> lock(names_mutex);
    return &names.emplace_back(std::move(name));
  }

  // Lost to a sticky fault (Driver::context_lost): its buffers and kernels refuse work, its
  // frees and unloads do nothing (the memory went with the context, and the address may
  // belong to a fresh device's buffer by now), and open_gpu tries a fresh device in its place.
  mutable std::atomic<bool> lost{false};

  // Marks the device lost after a sticky error; returns what the error message should add.
  std::string mark_lost(Result r) const {
    if (!drv.context_lost(r))
      return {};
    lost.store(true);
    return fmt::format("; the {} is lost: this device's buffers and kernels can no longer be "
                       "used; tritium::device(\"{}\") tries a fresh device, which a driver that "
                       "keeps the fault for the whole process refuses (then restart the process)",
                       Driver::context_name, spec());
  }

  // Work on a lost device is refused, naming why.
  void refuse_if_lost(std::string_view what) const {
    if (lost.load(std::memory_order_relaxed)) [[unlikely]]
      throw Error(fmt::format("{}: cannot {}: this device was lost to an earlier device fault; "
                              "make a fresh one with tritium::device(\"{}\") and new buffers",
                              Driver::name, what, spec()));
  }

  std::string spec() const {
    return ordinal == 0 ? std::string(Driver::name) : fmt::format("{}:{}", Driver::name, ordinal);
  }

  void check(Result r, std::string_view what) const {
    if (r != Driver::success) [[unlikely]]
      throw Error(
          fmt::format("{}: {} failed: {}{}", Driver::name, what, drv.describe(r), mark_lost(r)));
  }

  Stream resolve(void* stream) const { return stream ? static_cast<Stream>(stream) : this->stream; }

  // Waits for `s`; a fault in an earlier kernel is reported here, naming it.
  void wait(Stream s, std::string_view while_doing) {
    Result r = drv.stream_synchronize(s);
    if (r == Driver::success) [[likely]]
      return;
    throw Error(detail::device_fault_message(Driver::name, while_doing,
                                             last_kernel.load(std::memory_order_relaxed),
                                             drv.describe(r), launch_blocking) +
                mark_lost(r));
  }

  // Global scratch (the kernel ABI of codegen/gpu/compile.hpp): one buffer per stream, because
  // launches on one stream run in order, so they can take turns in one buffer, while kernels of
  // two streams may overlap. Grow-only and kept for the device's life (a lost device's went with
  // its context; the fresh Gpu that replaces it starts with none).
  struct Scratch {
    // Held from sizing the buffer until the launch using it is queued: another thread growing
    // it in between would free it under that launch.
    std::mutex mutex;
    void* ptr = nullptr;
    size_t bytes = 0;
  };
  std::mutex scratch_mutex; // guards the map; each buffer has its own mutex
  std::map<Stream, std::unique_ptr<Scratch>> scratch;

  // The scratch entry of `s` (made empty on first use); stable while `s` lives.
  Scratch& scratch_of(Stream s) {
    std::lock_guard<std::mutex> lock(scratch_mutex);
    auto& buf = scratch[s];
    if (!buf)
      buf = std::make_unique<Scratch>();
    return *buf;
  }

  // Grows `buf`, the scratch of `s` (its mutex held, the device current), to at least `bytes`
  // for a launch of `kernel`: `programs` programs of `per_program` bytes each.
  void grow_scratch(Scratch& buf, Stream s, size_t bytes, const std::string& kernel,
                    uint64_t programs, unsigned per_program) {
    const size_t old = buf.bytes;
    if (buf.ptr) {
      // Kernels queued on `s` earlier may still be using the old buffer.
      wait(s, fmt::format("growing the global scratch for kernel '{}'", kernel));
      (void)drv.free(buf.ptr);
      buf.ptr = nullptr;
      buf.bytes = 0;
    }
    // At least double, so that a grid that creeps upwards waits for its stream a few times,
    // not at every launch; the exact size when double does not fit.
    size_t want = old <= SIZE_MAX / 2 ? std::max(bytes, 2 * old) : bytes;
    void* p = nullptr;
    Result r = drv.malloc(&p, want);
    if (r != Driver::success && want > bytes) {
      want = bytes;
      r = drv.malloc(&p, want);
    }
    if (r != Driver::success)
      throw Error(fmt::format("kernel '{}': cannot allocate {} bytes of global scratch ({} bytes "
                              "for each of {} programs) on {}: {}{}",
                              kernel, bytes, per_program, programs, device_name, drv.describe(r),
                              mark_lost(r)));
    // The ABI promises 128-byte alignment; both drivers' allocations are aligned to 256 bytes.
    if (reinterpret_cast<uintptr_t>(p) % 128 != 0) {
      (void)drv.free(p);
      throw Error(fmt::format("kernel '{}': the {} driver returned global scratch at {}, which "
                              "is not 128-byte aligned",
                              kernel, Driver::name, p));
    }
    buf.ptr = p;
    buf.bytes = want;
  }

  // Frees the scratch of `s` before `s` is destroyed: its handle may name the next stream
  // created, whose kernels must not share the buffer with this one's last ones. Never throws
  // (called from a stream's destructor); errors surface at the next wait.
  void release_scratch(Stream s) noexcept {
    std::unique_ptr<Scratch> buf;
    {
      std::lock_guard<std::mutex> lock(scratch_mutex);
      auto it = scratch.find(s);
      if (it == scratch.end())
        return;
      buf = std::move(it->second);
      scratch.erase(it);
    }
    if (!buf->ptr || lost.load())
      return;
    (void)drv.stream_synchronize(s); // its last kernels may still use the buffer
    (void)drv.free(buf->ptr);
  }

  // An opened Gpu is never destroyed (see above); one that open_gpu gave up on is, and any
  // scratch it holds is freed, unless the device was lost (then the memory went with it).
  ~Gpu() {
    if (scratch.empty() || lost.load())
      return;
    uintptr_t previous = 0;
    bool switched = drv.get_current(&previous) == Driver::success && previous != drv.key() &&
                    drv.set_current(drv.key()) == Driver::success;
    for (auto& [s, buf] : scratch)
      if (buf->ptr)
        (void)drv.free(buf->ptr);
    if (switched)
      (void)drv.set_current(previous);
  }
};

// Makes the device current on this thread for the guard's life and gives the caller's back:
// code around tritium (the CUDA runtime, cuBLAS, PyTorch) keeps the device it had chosen. In
// the common case the device is current already and this is one read of the driver's
// thread-local state.
template <class Driver>
class Current {
public:
  explicit Current(Gpu<Driver>& gpu) : gpu_(gpu) {
    gpu.check(gpu.drv.get_current(&previous_), "reading the current device");
    if (previous_ != gpu.drv.key()) [[unlikely]] {
      gpu.check(gpu.drv.set_current(gpu.drv.key()), "making the device current");
      restore_ = true;
    }
  }
  ~Current() {
    if (restore_)
      (void)gpu_.drv.set_current(previous_);
  }
  Current(const Current&) = delete;
  Current& operator=(const Current&) = delete;

private:
  Gpu<Driver>& gpu_;
  uintptr_t previous_ = 0;
  bool restore_ = false;
};

// What launching one loaded kernel needs; shared by the JIT's kernels and the AOT launcher.
template <class Driver>
struct LoadedKernel {
  typename Driver::Module module{};
  typename Driver::Function function{};
  const std::string* name = nullptr; // interned in the Gpu
  std::vector<gpu::ParamKind> kinds;
  unsigned threads = 0;
  unsigned shared_bytes = 0;
  // Global scratch per program (codegen/gpu/compile.hpp); > 0: the launch passes the stream's
  // scratch buffer as one more, last parameter. Set by the loader that knows it (cuda).
  unsigned global_scratch_bytes = 0;

  void launch(Gpu<Driver>& gpu, const LaunchGrid& g, std::span<const ArgSlot> args,
              void* stream) const {
    gpu::PackedParams params(kinds, args, *name);
    gpu.refuse_if_lost(fmt::format("launch kernel '{}'", *name));
    Current<Driver> current(gpu);
    auto s = gpu.resolve(stream);
    auto r = global_scratch_bytes == 0
                 ? gpu.drv.launch(function, g, threads, shared_bytes, s, params.pointers())
                 : launch_with_scratch(gpu, g, s, params);
    gpu.last_kernel.store(name, std::memory_order_relaxed);
    if (r != Driver::success) [[unlikely]]
      throw Error(fmt::format("kernel '{}': launch of grid ({}, {}, {}) x {} threads failed: {}{}",
                              *name, g.x, g.y, g.z, threads, gpu.drv.describe(r),
                              gpu.mark_lost(r)));
    if (gpu.launch_blocking) [[unlikely]]
      gpu.wait(s, fmt::format("running kernel '{}'", *name));
  }

private:
  // Out of line: kernels without global scratch, nearly all, keep today's launch path.
  [[gnu::noinline]] typename Driver::Result launch_with_scratch(Gpu<Driver>& gpu,
                                                                const LaunchGrid& g,
                                                                typename Driver::Stream s,
                                                                gpu::PackedParams& params) const {
    uint64_t programs = 0;
    size_t bytes = 0;
    // A grid with an empty dimension needs none (the driver refuses the launch itself).
    if (g.x > 0 && g.y > 0 && g.z > 0 &&
        (__builtin_mul_overflow(static_cast<uint64_t>(g.x), static_cast<uint64_t>(g.y),
                                &programs) ||
         __builtin_mul_overflow(programs, static_cast<uint64_t>(g.z), &programs) ||
         __builtin_mul_overflow(programs, static_cast<uint64_t>(global_scratch_bytes), &bytes)))
      throw Error(fmt::format("kernel '{}': a grid of ({}, {}, {}) programs with {} bytes of "
                              "global scratch each needs more memory than can be addressed",
                              *name, g.x, g.y, g.z, global_scratch_bytes));
    typename Gpu<Driver>::Scratch& buf = gpu.scratch_of(s);
    std::lock_guard<std::mutex> lock(buf.mutex);
    if (buf.bytes < bytes)
      gpu.grow_scratch(buf, s, bytes, *name, programs, global_scratch_bytes);
    // The kernel reads the parameter as a 64-bit global address.
    uint64_t address = reinterpret_cast<uintptr_t>(buf.ptr);
    return gpu.drv.launch(function, g, threads, shared_bytes, s, params.pointers_with(&address));
  }
};

// Loads `image` (a cubin, PTX text or HSACO) and finds `name` in it, checking the kernel's
// shared memory against the device. The caller adds backend-specific checks.
template <class Driver>
LoadedKernel<Driver> load_kernel(Gpu<Driver>& gpu, const void* image, const std::string& name,
                                 std::span<const ir::DType> params, int threads, int shared_bytes) {
  LoadedKernel<Driver> k;
  k.kinds = gpu::param_kinds(params, name);
  if (shared_bytes > gpu.max_shared)
    throw Error(fmt::format("kernel '{}': needs {} bytes of shared memory but {} has at most {} "
                            "per block: use smaller blocks or fewer stages",
                            name, shared_bytes, gpu.device_name, gpu.max_shared));
  Current<Driver> current(gpu);
  if (auto r = gpu.drv.module_load(&k.module, image); r != Driver::success)
    throw Error(fmt::format("kernel '{}': the {} driver could not load it for {}: {}", name,
                            Driver::name, gpu.arch, gpu.drv.describe(r)));
  if (auto r = gpu.drv.module_function(&k.function, k.module, name.c_str()); r != Driver::success) {
    (void)gpu.drv.module_unload(k.module);
    throw Error(fmt::format("kernel '{}': not found in its module: {}", name, gpu.drv.describe(r)));
  }
  k.name = gpu.intern(name);
  k.threads = static_cast<unsigned>(threads);
  k.shared_bytes = static_cast<unsigned>(shared_bytes);
  return k;
}

// A kernel of the JIT: a loaded module and the compiler's stages.
template <class Driver>
class Kernel final : public CompiledKernel {
public:
  Kernel(Gpu<Driver>& gpu, LoadedKernel<Driver> k,
         std::vector<std::pair<std::string, std::string>> artifacts)
      : gpu_(gpu), k_(std::move(k)), artifacts_(std::move(artifacts)) {}
  // Errors are ignored: at exit the driver may already be shut down. A lost device's module
  // went with its context (and its handle may now name another module).
  ~Kernel() override {
    if (!gpu_.lost.load())
      (void)gpu_.drv.module_unload(k_.module);
  }

  void launch(const LaunchGrid& g, std::span<const ArgSlot> args, void* stream) override {
    k_.launch(gpu_, g, args, stream);
  }
  std::string artifact(std::string_view stage) const override {
    for (const auto& [key, text] : artifacts_)
      if (key == stage)
        return text;
    return {};
  }

private:
  Gpu<Driver>& gpu_;
  LoadedKernel<Driver> k_;
  std::vector<std::pair<std::string, std::string>> artifacts_;
};

template <class Driver>
class GpuEvent final : public DeviceEvent {
public:
  explicit GpuEvent(Gpu<Driver>& gpu) : gpu_(gpu) {
    Current<Driver> current(gpu_);
    gpu_.check(gpu_.drv.event_create(&event_), "creating an event");
  }
  ~GpuEvent() override { (void)gpu_.drv.event_destroy(event_); }
  void record(void* stream) override {
    Current<Driver> current(gpu_);
    gpu_.check(gpu_.drv.event_record(event_, gpu_.resolve(stream)), "recording an event");
    recorded_ = true;
  }
  void synchronize() override {
    require_recorded("wait for");
    if (gpu_.drv.event_synchronize(event_) != Driver::success)
      gpu_.wait(gpu_.stream, "waiting for an event"); // names the kernel that faulted
  }
  bool done() override {
    require_recorded("query");
    return gpu_.drv.event_query(event_) == Driver::success;
  }
  double ms_since(const DeviceEvent& start) override {
    auto* s = dynamic_cast<const GpuEvent*>(&start);
    if (!s || &s->gpu_ != &gpu_)
      throw Error(fmt::format("{}: an event can only be timed against an event of its device",
                              Driver::name));
    if (!s->recorded_)
      throw Error("tritium::Event: the start event was never recorded");
    synchronize();
    float ms = 0;
    gpu_.check(gpu_.drv.event_elapsed_ms(&ms, s->event_, event_), "timing events");
    return ms;
  }
  typename Driver::Event handle() const { return event_; }
  void require_recorded(const char* what) const {
    if (!recorded_)
      throw Error(fmt::format("tritium::Event: cannot {} an event that was never recorded", what));
  }

private:
  Gpu<Driver>& gpu_;
  typename Driver::Event event_{};
  bool recorded_ = false;
};

// Everything a GPU Backend does but compile(), which each backend writes for its binaries.
template <class Driver>
class GpuBackend : public Backend {
public:
  explicit GpuBackend(Gpu<Driver>& gpu) : gpu_(gpu) {}

  std::string_view name() const override { return Driver::name; }
  int index() const override { return gpu_.ordinal; }
  std::string target() const override { return gpu_.arch; }
  int num_compute_units() const override { return gpu_.compute_units; }
  bool lost() const override { return gpu_.lost.load(); }
  Gpu<Driver>& gpu() { return gpu_; }

  void* alloc(size_t bytes) override {
    gpu_.refuse_if_lost(fmt::format("allocate {} bytes", bytes));
    Current<Driver> current(gpu_);
    void* p = nullptr;
    if (auto r = gpu_.drv.malloc(&p, bytes); r != Driver::success)
      throw Error(fmt::format("{}: cannot allocate {} bytes on {}: {}", Driver::name, bytes,
                              gpu_.device_name, gpu_.drv.describe(r)));
    return p;
  }
  // Called from Buffer's destructor, so it must not throw; an error here (after a fault)
  // surfaces at the next wait. See Gpu::lost.
  void free(void* p) override {
    if (gpu_.lost.load())
      return;
    Current<Driver> current(gpu_);
    (void)gpu_.drv.free(p);
  }
  void* alloc_mapped(size_t bytes, void** device) override {
    gpu_.refuse_if_lost(fmt::format("allocate {} bytes of mapped host memory", bytes));
    Current<Driver> current(gpu_);
    void* h = nullptr;
    if (auto r = gpu_.drv.host_alloc_mapped(&h, device, bytes); r != Driver::success)
      throw Error(fmt::format("{}: cannot allocate {} bytes of host memory mapped for {}: {}",
                              Driver::name, bytes, gpu_.device_name, gpu_.drv.describe(r)));
    return h;
  }
  void free_mapped(void* h) override {
    if (gpu_.lost.load())
      return;
    Current<Driver> current(gpu_);
    (void)gpu_.drv.host_free(h);
  }
  // Copies run on the device's own stream and wait for it, so a copy to the host sees every
  // kernel launched before it on that stream.
  void copy_to_device(void* dst, const void* src, size_t n) override {
    gpu_.refuse_if_lost("copy to the device");
    Current<Driver> current(gpu_);
    gpu_.check(gpu_.drv.copy_h2d(dst, src, n, gpu_.stream), "copy to the device");
    gpu_.wait(gpu_.stream, "copying to the device");
  }
  void copy_to_host(void* dst, const void* src, size_t n) override {
    gpu_.refuse_if_lost("copy to the host");
    Current<Driver> current(gpu_);
    gpu_.check(gpu_.drv.copy_d2h(dst, src, n, gpu_.stream), "copy to the host");
    gpu_.wait(gpu_.stream, "copying to the host");
  }
  void copy_device_to_device(void* dst, const void* src, size_t n) override {
    gpu_.refuse_if_lost("copy on the device");
    Current<Driver> current(gpu_);
    gpu_.check(gpu_.drv.copy_d2d(dst, src, n, gpu_.stream), "copy on the device");
  }
  void synchronize() override { synchronize_stream(nullptr); }
  void fill(void* dst, unsigned char byte, size_t n) override {
    Current<Driver> current(gpu_);
    gpu_.check(gpu_.drv.memset(dst, byte, n, gpu_.stream), "memset on the device");
  }

  void* default_stream() override { return gpu_.stream; }
  void* create_stream() override {
    Current<Driver> current(gpu_);
    typename Driver::Stream s{};
    gpu_.check(gpu_.drv.stream_create(&s), "creating a stream");
    return s;
  }
  void destroy_stream(void* s) override {
    Current<Driver> current(gpu_);
    gpu_.release_scratch(static_cast<typename Driver::Stream>(s));
    (void)gpu_.drv.stream_destroy(static_cast<typename Driver::Stream>(s));
  }
  void synchronize_stream(void* s) override {
    gpu_.refuse_if_lost("synchronize");
    Current<Driver> current(gpu_);
    gpu_.wait(gpu_.resolve(s), "synchronizing");
  }
  void stream_wait(void* s, DeviceEvent& e) override {
    auto* ev = dynamic_cast<GpuEvent<Driver>*>(&e);
    if (!ev)
      throw Error(
          fmt::format("{}: a stream can only wait for an event of its device", Driver::name));
    ev->require_recorded("wait for");
    Current<Driver> current(gpu_);
    gpu_.check(gpu_.drv.stream_wait(gpu_.resolve(s), ev->handle()), "making a stream wait");
  }
  std::unique_ptr<DeviceEvent> new_event() override {
    return std::make_unique<GpuEvent<Driver>>(gpu_);
  }

protected:
  Gpu<Driver>& gpu_;
};

// "this machine has 2 NVIDIA GPUs (cuda:0 … cuda:1)": for a device index out of range.
inline std::string no_such_device(std::string_view backend, std::string_view what, int index,
                                  int count) {
  return fmt::format("{}:{}: this machine has {} {}{}{}", backend, index, count, what,
                     count == 1 ? "" : "s",
                     count == 1 ? fmt::format(" ({}:0)", backend)
                                : fmt::format(" ({}:0 … {}:{})", backend, backend, count - 1));
}

} // namespace tritium::driver
