// The CUDA backend: NVIDIA GPUs through the driver API (libcuda.so.1, opened at run time).
//
// One device per process (TRITIUM_CUDA_DEVICE picks it, default 0), its primary context (the
// one the CUDA runtime, PyTorch and Triton use too, so buffers can be shared), and one stream
// created with default flags: it orders with the legacy default stream, so work other code
// queues there is ordered with ours. Copies run on that stream and wait for it, so a copy to
// the host sees every kernel launched before it.
//
// Kernel launches are asynchronous: a fault inside a kernel surfaces at the next wait (copy,
// synchronize). The error then names the last kernel launched; TRITIUM_LAUNCH_BLOCKING=1
// waits after every launch, so the error names exactly the kernel that faulted.
#include "cuda_backend.hpp"
#include "cuda_api.hpp"
#include "runtime/core/device_fault.hpp"

#include "binary_cache.hpp"
#include "kernel_params.hpp"

#include <tritium/error.hpp>

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <string_view>

namespace tritium::cuda {

// Defined in gpu_compile.cpp: IR -> PTX through the GPU code generator.
KernelImage compile_ptx(const ir::Function& f, const CompileOptions& options, int sm);

namespace {

// Shared memory a block may use without opting in through cuFuncSetAttribute.
constexpr int kDefaultSharedLimit = 48 * 1024;

// The driver state of the chosen device. Never destroyed: the backend, compiled kernels and
// buffers can be released in any order at exit (some from static destructors), and the driver
// reclaims everything when the process ends.
struct CudaDevice {
  CudaApi api;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  int ordinal = 0;
  int sm = 0; // compute capability as 10 * major + minor
  int max_shared_optin = 0;
  int driver_version = 0;
  std::string device_name;
  bool launch_blocking = false;

  // Names of every kernel loaded, stable for the process's life, so that the last launch can
  // be recorded as a pointer and named in a later error.
  std::mutex names_mutex;
  std::deque<std::string> names;
  std::atomic<const std::string*> last_kernel{nullptr};

  const std::string* intern(std::string name) {
    std::lock_guard<std::mutex> lock(names_mutex);
    return &names.emplace_back(std::move(name));
  }

  // The driver launches on the calling thread's current context; each thread sets ours once.
  void make_current() {
    thread_local CUcontext current = nullptr;
    if (current != context) [[unlikely]] {
      check(api.cuCtxSetCurrent(context), "cuCtxSetCurrent");
      current = context;
    }
  }

  void check(CUresult r, std::string_view what) const {
    if (r != CUDA_SUCCESS) [[unlikely]]
      throw Error(fmt::format("cuda: {} failed: {}", what, api.describe(r)));
  }

  // Waits for the stream; a fault in an earlier kernel is reported here, naming it.
  void wait(std::string_view while_doing) {
    CUresult r = api.cuStreamSynchronize(stream);
    if (r == CUDA_SUCCESS) [[likely]]
      return;
    const std::string* k = last_kernel.load(std::memory_order_relaxed);
    throw Error(
        detail::device_fault_message("cuda", while_doing, k, api.describe(r), launch_blocking));
  }

  std::string arch() const { return fmt::format("sm_{}", sm); }
};

class CudaKernel final : public CompiledKernel {
public:
  CudaKernel(CudaDevice& dev, const KernelImage& image, std::vector<gpu::ParamKind> kinds,
             CUmodule module, CUfunction fn, std::string cache_state)
      : dev_(dev), module_(module), fn_(fn), name_(dev.intern(image.name)),
        kinds_(std::move(kinds)), threads_(static_cast<unsigned>(image.num_threads)),
        shared_(static_cast<unsigned>(image.shared_bytes)), stages_(image.stages), ptx_(image.ptx),
        cache_state_(std::move(cache_state)) {}

  ~CudaKernel() override {
    // Errors are ignored: at exit the driver may already be shut down.
    dev_.api.cuModuleUnload(module_);
  }

  void launch(const LaunchGrid& g, std::span<const ArgSlot> args) override {
    gpu::PackedParams params(kinds_, args, *name_);
    dev_.make_current();
    CUresult r = dev_.api.cuLaunchKernel(
        fn_, static_cast<unsigned>(g.x), static_cast<unsigned>(g.y), static_cast<unsigned>(g.z),
        threads_, 1, 1, shared_, dev_.stream, params.pointers(), nullptr);
    dev_.last_kernel.store(name_, std::memory_order_relaxed);
    if (r != CUDA_SUCCESS) [[unlikely]]
      throw Error(fmt::format("kernel '{}': launch of grid ({}, {}, {}) x {} threads failed: {}",
                              *name_, g.x, g.y, g.z, threads_, dev_.api.describe(r)));
    if (dev_.launch_blocking) [[unlikely]]
      dev_.wait(fmt::format("running kernel '{}'", *name_));
  }

  std::string artifact(std::string_view stage) const override {
    if (stage == "ptx")
      return ptx_;
    if (stage == "cache") // "hit", "miss" or "off": whether the cubin came from the disk cache
      return cache_state_;
    for (const auto& [key, text] : stages_)
      if (key == stage)
        return text;
    return {};
  }

private:
  CudaDevice& dev_;
  CUmodule module_;
  CUfunction fn_;
  const std::string* name_;
  std::vector<gpu::ParamKind> kinds_;
  unsigned threads_;
  unsigned shared_;
  std::vector<std::pair<std::string, std::string>> stages_;
  std::string ptx_;
  std::string cache_state_;
};

class CudaBackend final : public Backend {
public:
  explicit CudaBackend(CudaDevice& dev) : dev_(dev) {}

  std::string_view name() const override { return "cuda"; }
  std::string target() const override { return dev_.arch(); }
  CudaDevice& device() { return dev_; }

  void* alloc(size_t bytes) override {
    dev_.make_current();
    CUdeviceptr p = 0;
    CUresult r = dev_.api.cuMemAlloc(&p, bytes);
    if (r != CUDA_SUCCESS)
      throw Error(fmt::format("cuda: cannot allocate {} bytes on {}: {}", bytes, dev_.device_name,
                              dev_.api.describe(r)));
    return reinterpret_cast<void*>(p);
  }
  void free(void* p) override {
    // Called from Buffer's destructor, so it must not throw; an error here (after a fault)
    // surfaces at the next wait.
    dev_.make_current();
    dev_.api.cuMemFree(reinterpret_cast<CUdeviceptr>(p));
  }
  void copy_to_device(void* dst, const void* src, size_t n) override {
    dev_.make_current();
    dev_.check(dev_.api.cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst), src, n, dev_.stream),
               "copy to the device");
    dev_.wait("copying to the device");
  }
  void copy_to_host(void* dst, const void* src, size_t n) override {
    dev_.make_current();
    dev_.check(dev_.api.cuMemcpyDtoHAsync(dst, reinterpret_cast<CUdeviceptr>(src), n, dev_.stream),
               "copy to the host");
    dev_.wait("copying to the host");
  }
  void copy_device_to_device(void* dst, const void* src, size_t n) override {
    dev_.make_current();
    dev_.check(dev_.api.cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(dst),
                                          reinterpret_cast<CUdeviceptr>(src), n, dev_.stream),
               "copy on the device");
  }
  void synchronize() override {
    dev_.make_current();
    dev_.wait("synchronizing");
  }
  std::unique_ptr<CompiledKernel> compile(std::shared_ptr<const ir::Function> f,
                                          const CompileOptions& options) override {
    return load_kernel(*this, compile_ptx(*f, options, dev_.sm));
  }

private:
  CudaDevice& dev_;
};

// PTX -> cubin through the driver's JIT linker, which (unlike cuModuleLoadData on PTX) hands
// back the cubin, so it can be cached.
std::string jit_ptx(CudaDevice& dev, const KernelImage& image) {
  const CudaApi& api = dev.api;
  std::string error_log(16 * 1024, '\0');
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {error_log.data(), reinterpret_cast<void*>(error_log.size())};
  CUlinkState link = nullptr;
  dev.check(api.cuLinkCreate(2, opts, values, &link), "cuLinkCreate");
  auto fail = [&](CUresult r, std::string_view step) {
    api.cuLinkDestroy(link);
    error_log.resize(error_log.find('\0'));
    throw Error(fmt::format("kernel '{}': the CUDA driver could not {} its PTX for {}: {}{}{}",
                            image.name, step, dev.arch(), api.describe(r),
                            error_log.empty() ? "" : "\n", error_log));
  };
  // The PTX must be NUL-terminated: pass the terminator too.
  if (CUresult r = api.cuLinkAddData(link, CU_JIT_INPUT_PTX, const_cast<char*>(image.ptx.c_str()),
                                     image.ptx.size() + 1, image.name.c_str(), 0, nullptr, nullptr);
      r != CUDA_SUCCESS)
    fail(r, "compile");
  void* cubin = nullptr;
  size_t size = 0;
  if (CUresult r = api.cuLinkComplete(link, &cubin, &size); r != CUDA_SUCCESS)
    fail(r, "link");
  std::string out(static_cast<const char*>(cubin), size); // owned by the link state
  api.cuLinkDestroy(link);
  return out;
}

std::unique_ptr<Backend> make_cuda_backend(std::string* why) {
  auto* dev = new CudaDevice; // never freed: see CudaDevice
  std::unique_ptr<CudaDevice> guard(dev);
  CudaApi& api = dev->api;
  if (!api.load(why))
    return nullptr;
  if (CUresult r = api.cuInit(0); r != CUDA_SUCCESS) {
    *why = r == CUDA_ERROR_NO_DEVICE ? "no NVIDIA GPU found (cuInit: " + api.describe(r) + ")"
                                     : "the CUDA driver did not start: " + api.describe(r);
    return nullptr;
  }
  int count = 0;
  if (CUresult r = api.cuDeviceGetCount(&count); r != CUDA_SUCCESS || count == 0) {
    *why = "no NVIDIA GPU found";
    return nullptr;
  }
  if (const char* env = std::getenv("TRITIUM_CUDA_DEVICE"); env && *env) {
    char* end = nullptr;
    long i = std::strtol(env, &end, 10);
    if (*end || i < 0 || i >= count) {
      *why = fmt::format("TRITIUM_CUDA_DEVICE={} is not a device index (this machine has {})", env,
                         count);
      return nullptr;
    }
    dev->ordinal = static_cast<int>(i);
  }
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    dev->check(api.cuDeviceGetAttribute(&v, a, dev->device), "cuDeviceGetAttribute");
    return v;
  };
  dev->check(api.cuDeviceGet(&dev->device, dev->ordinal), "cuDeviceGet");
  char name[256] = {};
  dev->check(api.cuDeviceGetName(name, sizeof name, dev->device), "cuDeviceGetName");
  dev->device_name = name;
  dev->sm = 10 * attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) +
            attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  dev->max_shared_optin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  dev->check(api.cuDriverGetVersion(&dev->driver_version), "cuDriverGetVersion");
  dev->check(api.cuDevicePrimaryCtxRetain(&dev->context, dev->device), "cuDevicePrimaryCtxRetain");
  dev->make_current();
  dev->check(api.cuStreamCreate(&dev->stream, CU_STREAM_DEFAULT), "cuStreamCreate");
  const char* blocking = std::getenv("TRITIUM_LAUNCH_BLOCKING");
  dev->launch_blocking = blocking && *blocking && std::string_view(blocking) != "0";
  guard.release();
  return std::make_unique<CudaBackend>(*dev);
}

} // namespace

std::unique_ptr<CompiledKernel> load_kernel(Backend& backend, KernelImage image) {
  auto* cuda = dynamic_cast<CudaBackend*>(&backend);
  if (!cuda)
    throw Error(fmt::format("kernel '{}': PTX loads only on the cuda device, not on '{}'",
                            image.name, backend.name()));
  CudaDevice& dev = cuda->device();
  const CudaApi& api = dev.api;
  std::vector<gpu::ParamKind> kinds = gpu::param_kinds(image.params, image.name);
  dev.make_current();

  // Everything that shapes the cubin: the PTX, the chip, the driver's compiler, its options.
  gpu::CacheKey key;
  key.add("cubin/1").add(image.ptx).add(dev.arch()).add(dev.driver_version).add("O4");
  // Opened per load (loads are rare), so TRITIUM_CACHE_DIR set after start-up still counts.
  gpu::BinaryCache cache("cuda");
  CUmodule module = nullptr;
  std::string cache_state = cache.enabled() ? "hit" : "off";
  if (auto cubin = cache.load(key);
      !cubin || api.cuModuleLoadDataEx(&module, cubin->data(), 0, nullptr, nullptr) != 0) {
    module = nullptr;
    std::string fresh = jit_ptx(dev, image);
    cache.store(key, fresh);
    if (cache.enabled())
      cache_state = "miss";
    dev.check(api.cuModuleLoadDataEx(&module, fresh.data(), 0, nullptr, nullptr),
              fmt::format("loading kernel '{}'", image.name));
  }
  auto unload_and_throw = [&](std::string message) {
    api.cuModuleUnload(module);
    throw Error(std::move(message));
  };
  CUfunction fn = nullptr;
  if (CUresult r = api.cuModuleGetFunction(&fn, module, image.name.c_str()); r != CUDA_SUCCESS)
    unload_and_throw(
        fmt::format("kernel '{}': not found in its module: {}", image.name, api.describe(r)));

  int max_threads = 0, static_shared = 0;
  dev.check(api.cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn),
            "cuFuncGetAttribute");
  dev.check(api.cuFuncGetAttribute(&static_shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn),
            "cuFuncGetAttribute");
  if (image.num_threads < 1 || image.num_threads > max_threads)
    unload_and_throw(fmt::format(
        "kernel '{}': needs {} threads per program but {} allows at most {} for it (its "
        "register use limits this): use fewer warps",
        image.name, image.num_threads, dev.device_name, max_threads));
  int total_shared = static_shared + image.shared_bytes;
  if (total_shared > dev.max_shared_optin)
    unload_and_throw(fmt::format(
        "kernel '{}': needs {} bytes of shared memory but {} has at most {} per block: use "
        "smaller blocks or fewer stages",
        image.name, total_shared, dev.device_name, dev.max_shared_optin));
  if (total_shared > kDefaultSharedLimit)
    if (CUresult r = api.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                            image.shared_bytes);
        r != CUDA_SUCCESS)
      unload_and_throw(fmt::format("kernel '{}': cannot raise its shared memory to {} bytes: {}",
                                   image.name, total_shared, api.describe(r)));
  return std::make_unique<CudaKernel>(dev, image, std::move(kinds), module, fn,
                                      std::move(cache_state));
}

void* native_stream(Backend& backend) {
  auto* cuda = dynamic_cast<CudaBackend*>(&backend);
  if (!cuda)
    throw Error(fmt::format("native_stream: '{}' is not the cuda device", backend.name()));
  return cuda->device().stream;
}

} // namespace tritium::cuda

namespace tritium {

BackendFactory cuda_backend() {
  return {"cuda", 100, &cuda::make_cuda_backend};
}

} // namespace tritium
