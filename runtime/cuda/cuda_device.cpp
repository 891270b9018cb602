// Opening NVIDIA GPUs: the driver library once per process, each device once, never closed
// (see driver::Gpu). Shared by the cuda backend and the AOT launcher.
#include "runtime/cuda/cuda_driver.hpp"

#include <fmt/format.h>

#include <map>
#include <memory>
#include <mutex>

namespace tritium::cuda {
namespace {

// The driver library, loaded and initialized once; null with the reason when it cannot be.
const CudaApi* driver(std::string* why) {
  static std::string failure;
  static const CudaApi* api = []() -> const CudaApi* {
    // Never freed: the process keeps the driver open. Held by a static also when loading fails,
    // so that it is not a leak.
    static CudaApi* const a = new CudaApi;
    if (!a->load(&failure))
      return nullptr;
    if (CUresult r = a->cuInit(0); r != CUDA_SUCCESS) {
      failure = r == CUDA_ERROR_NO_DEVICE ? "no NVIDIA GPU found (cuInit: " + a->describe(r) + ")"
                                          : "the CUDA driver did not start: " + a->describe(r);
      return nullptr;
    }
    return a;
  }();
  if (!api && why)
    *why = failure;
  return api;
}

} // namespace

CudaGpu* open_gpu(int ordinal, std::string* why) {
  static std::mutex mutex;
  static std::map<int, CudaGpu*> opened;
  std::lock_guard<std::mutex> lock(mutex);
  bool reset = false;
  if (auto it = opened.find(ordinal); it != opened.end()) {
    if (!it->second->lost.load())
      return it->second;
    opened.erase(it); // the lost one is kept (never destroyed): see driver::Gpu
    reset = true;
  }
  const CudaApi* api = driver(why);
  if (!api)
    return nullptr;
  int count = 0;
  if (CUresult r = api->cuDeviceGetCount(&count); r != CUDA_SUCCESS || count == 0) {
    *why = "no NVIDIA GPU found";
    return nullptr;
  }
  if (ordinal < 0 || ordinal >= count) {
    *why = driver::no_such_device("cuda", "NVIDIA GPU", ordinal, count);
    return nullptr;
  }
  auto owned = std::make_unique<CudaGpu>();
  CudaGpu& gpu = *owned;
  gpu.drv.api = api;
  gpu.ordinal = ordinal;
  auto check = [&](CUresult r, const char* what) {
    if (r != CUDA_SUCCESS)
      throw Error(fmt::format("cuda:{}: {} failed: {}", ordinal, what, api->describe(r)));
  };
  check(api->cuDeviceGet(&gpu.drv.device, ordinal), "cuDeviceGet");
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    check(api->cuDeviceGetAttribute(&v, a, gpu.drv.device), "cuDeviceGetAttribute");
    return v;
  };
  char name[256] = {};
  check(api->cuDeviceGetName(name, sizeof name, gpu.drv.device), "cuDeviceGetName");
  gpu.device_name = name;
  gpu.drv.sm = 10 * attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) +
               attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  gpu.arch = fmt::format("sm_{}", gpu.drv.sm);
  gpu.max_shared = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  gpu.shared_per_cu = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  gpu.shared_reserved_per_block = attr(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
  gpu.compute_units = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  check(api->cuDriverGetVersion(&gpu.drv.driver_version), "cuDriverGetVersion");
  // After a fault the primary context is unusable until reset (this frees everything in it,
  // also what other libraries sharing it allocated: their work failed with the same error).
  if (reset)
    check(api->cuDevicePrimaryCtxReset(gpu.drv.device), "cuDevicePrimaryCtxReset after a fault");
  if (CUresult r = api->cuDevicePrimaryCtxRetain(&gpu.drv.context, gpu.drv.device);
      reset && gpu.drv.context_lost(r))
    // Seen on an H200 with driver 580: after an illegal-address fault the driver refuses every
    // new context in the process, reset or not (PyTorch's next op fails the same way).
    throw Error(fmt::format("cuda:{}: the CUDA driver refuses the GPU after the earlier device "
                            "fault (cuDevicePrimaryCtxRetain after a reset: {}); the fault is "
                            "sticky for the whole process: restart the process to use the GPU",
                            ordinal, api->describe(r)));
  else
    check(r, "cuDevicePrimaryCtxRetain");
  {
    driver::Current<CudaDriver> current(gpu);
    gpu.check(api->cuStreamCreate(&gpu.stream, CU_STREAM_DEFAULT), "cuStreamCreate");
  }
  return opened.emplace(ordinal, owned.release()).first->second;
}

void configure_loaded(CudaGpu& gpu, driver::LoadedKernel<CudaDriver>& k, int num_threads,
                      int shared_bytes) {
  // Shared memory a block may use without opting in through cuFuncSetAttribute.
  constexpr int kDefaultSharedLimit = 48 * 1024;
  const CudaApi& api = *gpu.drv.api;
  const std::string& name = *k.name;
  auto unload_and_throw = [&](std::string message) {
    api.cuModuleUnload(k.module);
    throw Error(std::move(message));
  };
  int max_threads = 0, static_shared = 0;
  gpu.check(
      api.cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k.function),
      "cuFuncGetAttribute");
  gpu.check(api.cuFuncGetAttribute(&static_shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k.function),
            "cuFuncGetAttribute");
  if (num_threads < 1 || num_threads > max_threads)
    unload_and_throw(fmt::format(
        "kernel '{}': needs {} threads per program but {} allows at most {} for it (its "
        "register use limits this): use fewer warps",
        name, num_threads, gpu.device_name, max_threads));
  int total_shared = static_shared + shared_bytes;
  if (total_shared > gpu.max_shared)
    unload_and_throw(fmt::format(
        "kernel '{}': needs {} bytes of shared memory but {} has at most {} per block: use "
        "smaller blocks or fewer stages",
        name, total_shared, gpu.device_name, gpu.max_shared));
  if (total_shared > kDefaultSharedLimit)
    if (CUresult r = api.cuFuncSetAttribute(
            k.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared_bytes);
        r != CUDA_SUCCESS)
      unload_and_throw(fmt::format("kernel '{}': cannot raise its shared memory to {} bytes: {}",
                                   name, total_shared, api.describe(r)));
}

} // namespace tritium::cuda
