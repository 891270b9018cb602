// The HIP backend: AMD GPUs through the HIP runtime (libamdhip64.so, opened at run time).
//
// One device per process (TRITIUM_HIP_DEVICE picks it, default 0) and one stream; copies run on
// that stream and wait for it. Kernels come from the GPU code generator as HSACO code objects
// (compiled in process, so no driver JIT and nothing to cache on disk) and load with
// hipModuleLoadData. A fault inside a kernel surfaces at the next wait and names the last kernel
// launched; TRITIUM_LAUNCH_BLOCKING=1 waits after every launch to name it exactly.
//
// Where the HIP runtime is installed but no AMD GPU is present (hipInit fails, or finds no
// device), the backend reports itself unavailable and default_device() moves on.
#include "hip_api.hpp"
#include "runtime/core/device_fault.hpp"

#include "runtime/cuda/kernel_params.hpp"

#include <tritium/error.hpp>
#include <tritium/runtime/backend.hpp>

#include <fmt/format.h>

#ifdef TRITIUM_HAVE_GPU_CODEGEN
#include "codegen/gpu/compile.hpp"
#endif

#include <atomic>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <string_view>

namespace tritium::hip {

namespace {

// The runtime state of the chosen device. Never destroyed, for the reasons given for
// cuda::CudaDevice: release order at exit is not ours to choose.
struct HipDevice {
  HipApi api;
  int ordinal = 0;
  hipStream_t stream = nullptr;
  std::string arch; // "gfx942", without target features such as ":sramecc+:xnack-"
  std::string device_name;
  int max_shared = 0;
  bool launch_blocking = false;

  std::mutex names_mutex;
  std::deque<std::string> names;
  std::atomic<const std::string*> last_kernel{nullptr};

  const std::string* intern(std::string name) {
    std::lock_guard<std::mutex> lock(names_mutex);
    return &names.emplace_back(std::move(name));
  }

  // HIP's current device is per thread; each launching thread selects ours once.
  void make_current() {
    thread_local int current = -1;
    if (current != ordinal) [[unlikely]] {
      check(api.hipSetDevice(ordinal), "hipSetDevice");
      current = ordinal;
    }
  }

  void check(hipError_t r, std::string_view what) const {
    if (r != hipSuccess) [[unlikely]]
      throw Error(fmt::format("hip: {} failed: {}", what, api.describe(r)));
  }

  void wait(std::string_view while_doing) {
    hipError_t r = api.hipStreamSynchronize(stream);
    if (r == hipSuccess) [[likely]]
      return;
    const std::string* k = last_kernel.load(std::memory_order_relaxed);
    throw Error(
        detail::device_fault_message("hip", while_doing, k, api.describe(r), launch_blocking));
  }
};

class HipKernel final : public CompiledKernel {
public:
  HipKernel(HipDevice& dev, hipModule_t module, hipFunction_t fn, std::string name,
            std::vector<gpu::ParamKind> kinds, int num_threads, int shared_bytes,
            std::vector<std::pair<std::string, std::string>> stages)
      : dev_(dev), module_(module), fn_(fn), name_(dev.intern(std::move(name))),
        kinds_(std::move(kinds)), threads_(static_cast<unsigned>(num_threads)),
        shared_(static_cast<unsigned>(shared_bytes)), stages_(std::move(stages)) {}

  ~HipKernel() override { (void)dev_.api.hipModuleUnload(module_); }

  void launch(const LaunchGrid& g, std::span<const ArgSlot> args) override {
    gpu::PackedParams params(kinds_, args, *name_);
    dev_.make_current();
    hipError_t r = dev_.api.hipModuleLaunchKernel(
        fn_, static_cast<unsigned>(g.x), static_cast<unsigned>(g.y), static_cast<unsigned>(g.z),
        threads_, 1, 1, shared_, dev_.stream, params.pointers(), nullptr);
    dev_.last_kernel.store(name_, std::memory_order_relaxed);
    if (r != hipSuccess) [[unlikely]]
      throw Error(fmt::format("kernel '{}': launch of grid ({}, {}, {}) x {} threads failed: {}",
                              *name_, g.x, g.y, g.z, threads_, dev_.api.describe(r)));
    if (dev_.launch_blocking) [[unlikely]]
      dev_.wait(fmt::format("running kernel '{}'", *name_));
  }

  std::string artifact(std::string_view stage) const override {
    for (const auto& [key, text] : stages_)
      if (key == stage)
        return text;
    return {};
  }

private:
  HipDevice& dev_;
  hipModule_t module_;
  hipFunction_t fn_;
  const std::string* name_;
  std::vector<gpu::ParamKind> kinds_;
  unsigned threads_;
  unsigned shared_;
  std::vector<std::pair<std::string, std::string>> stages_;
};

class HipBackend final : public Backend {
public:
  explicit HipBackend(HipDevice& dev) : dev_(dev) {}

  std::string_view name() const override { return "hip"; }
  std::string target() const override { return dev_.arch; }

  void* alloc(size_t bytes) override {
    dev_.make_current();
    void* p = nullptr;
    if (hipError_t r = dev_.api.hipMalloc(&p, bytes); r != hipSuccess)
      throw Error(fmt::format("hip: cannot allocate {} bytes on {}: {}", bytes, dev_.device_name,
                              dev_.api.describe(r)));
    return p;
  }
  void free(void* p) override {
    dev_.make_current();
    (void)dev_.api.hipFree(
        p); // must not throw (Buffer's destructor); errors surface at the next wait
  }
  void copy_to_device(void* dst, const void* src, size_t n) override {
    dev_.make_current();
    dev_.check(dev_.api.hipMemcpyHtoDAsync(dst, const_cast<void*>(src), n, dev_.stream),
               "copy to the device");
    dev_.wait("copying to the device");
  }
  void copy_to_host(void* dst, const void* src, size_t n) override {
    dev_.make_current();
    dev_.check(dev_.api.hipMemcpyDtoHAsync(dst, const_cast<void*>(src), n, dev_.stream),
               "copy to the host");
    dev_.wait("copying to the host");
  }
  void copy_device_to_device(void* dst, const void* src, size_t n) override {
    dev_.make_current();
    dev_.check(dev_.api.hipMemcpyDtoDAsync(dst, const_cast<void*>(src), n, dev_.stream),
               "copy on the device");
  }
  void synchronize() override {
    dev_.make_current();
    dev_.wait("synchronizing");
  }

  std::unique_ptr<CompiledKernel> compile(std::shared_ptr<const ir::Function> f,
                                          const CompileOptions& options) override {
#ifdef TRITIUM_HAVE_GPU_CODEGEN
    gpu::GpuTarget target;
    target.arch = dev_.arch;
    gpu::GpuKernelBinary bin = gpu::compile_for_gpu(*f, target, options);
    if (bin.shared_bytes > dev_.max_shared)
      throw Error(fmt::format("kernel '{}': needs {} bytes of LDS but {} has {} per work-group: "
                              "use smaller blocks or fewer stages",
                              bin.name, bin.shared_bytes, dev_.device_name, dev_.max_shared));
    std::vector<gpu::ParamKind> kinds = gpu::param_kinds(bin.params, bin.name);
    if (bin.binary.empty())
      throw Error(fmt::format("kernel '{}': the GPU compiler returned no code object for {}",
                              bin.name, dev_.arch));
    dev_.make_current();
    hipModule_t module = nullptr;
    if (hipError_t r = dev_.api.hipModuleLoadData(&module, bin.binary.data()); r != hipSuccess)
      throw Error(fmt::format("kernel '{}': the HIP runtime could not load its code object for "
                              "{}: {}",
                              bin.name, dev_.arch, dev_.api.describe(r)));
    hipFunction_t fn = nullptr;
    if (hipError_t r = dev_.api.hipModuleGetFunction(&fn, module, bin.name.c_str());
        r != hipSuccess) {
      (void)dev_.api.hipModuleUnload(module);
      throw Error(fmt::format("kernel '{}': not found in its code object: {}", bin.name,
                              dev_.api.describe(r)));
    }
    return std::make_unique<HipKernel>(dev_, module, fn, bin.name, std::move(kinds),
                                       bin.num_threads, bin.shared_bytes, std::move(bin.stages));
#else
    (void)options;
    throw Error("kernel '" + f->name +
                "': this build of tritium has no GPU code generator (codegen/gpu), so kernels "
                "cannot be compiled for the hip device");
#endif
  }

private:
  HipDevice& dev_;
};

std::unique_ptr<Backend> make_hip_backend(std::string* why) {
  auto dev = std::make_unique<HipDevice>();
  HipApi& api = dev->api;
  if (!api.load(why))
    return nullptr;
  int count = 0;
  if (hipError_t r = api.hipInit(0); r != hipSuccess) {
    *why = "no AMD GPU found (the HIP runtime is installed; hipInit: " + api.describe(r) + ")";
    return nullptr;
  }
  if (hipError_t r = api.hipGetDeviceCount(&count); r != hipSuccess || count == 0) {
    *why = "no AMD GPU found (the HIP runtime is installed but sees no device)";
    return nullptr;
  }
  if (const char* env = std::getenv("TRITIUM_HIP_DEVICE"); env && *env) {
    char* end = nullptr;
    long i = std::strtol(env, &end, 10);
    if (*end || i < 0 || i >= count) {
      *why = fmt::format("TRITIUM_HIP_DEVICE={} is not a device index (this machine has {})", env,
                         count);
      return nullptr;
    }
    dev->ordinal = static_cast<int>(i);
  }
  dev->make_current();
  // hipGetDeviceProperties is resolved by its unversioned name, whose struct layout ROCm keeps
  // for programs built against older headers (ROCm 6 added a versioned symbol beside it).
  hipDeviceProp_t props{};
  dev->check(api.hipGetDeviceProperties(&props, dev->ordinal), "hipGetDeviceProperties");
  dev->device_name = props.name;
  dev->arch = props.gcnArchName;
  dev->arch = dev->arch.substr(0, dev->arch.find(':'));
  dev->check(api.hipDeviceGetAttribute(&dev->max_shared, hipDeviceAttributeMaxSharedMemoryPerBlock,
                                       dev->ordinal),
             "hipDeviceGetAttribute");
  dev->check(api.hipStreamCreate(&dev->stream), "hipStreamCreate");
  const char* blocking = std::getenv("TRITIUM_LAUNCH_BLOCKING");
  dev->launch_blocking = blocking && *blocking && std::string_view(blocking) != "0";
  return std::make_unique<HipBackend>(*dev.release()); // never freed: see HipDevice
}

} // namespace

} // namespace tritium::hip

namespace tritium {

BackendFactory hip_backend() {
  return {"hip", 100, &hip::make_hip_backend};
}

} // namespace tritium
