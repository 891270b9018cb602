// Opening AMD GPUs: the HIP runtime once per process, each device once, never closed (see
// driver::Gpu). Shared by the hip backend and the AOT launcher.
#include "codegen/gpu_ir/arch.hpp"
#include "runtime/hip/hip_driver.hpp"

#include <fmt/format.h>

#include <map>
#include <memory>
#include <mutex>

namespace tritium::hip {
namespace {

// The HIP runtime, loaded and initialized once; null with the reason when it cannot be (not
// installed, or installed on a machine without an AMD GPU).
const HipApi* runtime(std::string* why) {
  static std::string failure;
  static const HipApi* api = []() -> const HipApi* {
    // Never freed: the process keeps the runtime open. Held by a static also when loading fails,
    // so that it is not a leak.
    static HipApi* const a = new HipApi;
    if (!a->load(&failure))
      return nullptr;
    if (hipError_t r = a->hipInit(0); r != hipSuccess) {
      failure = "no AMD GPU found (the HIP runtime is installed; hipInit: " + a->describe(r) + ")";
      return nullptr;
    }
    return a;
  }();
  if (!api && why)
    *why = failure;
  return api;
}

} // namespace

HipGpu* open_gpu(int ordinal, std::string* why) {
  static std::mutex mutex;
  static std::map<int, HipGpu*> opened;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = opened.find(ordinal); it != opened.end())
    return it->second;
  const HipApi* api = runtime(why);
  if (!api)
    return nullptr;
  int count = 0;
  if (hipError_t r = api->hipGetDeviceCount(&count); r != hipSuccess || count == 0) {
    *why = "no AMD GPU found (the HIP runtime is installed but sees no device)";
    return nullptr;
  }
  if (ordinal < 0 || ordinal >= count) {
    *why = driver::no_such_device("hip", "AMD GPU", ordinal, count);
    return nullptr;
  }
  auto owned = std::make_unique<HipGpu>();
  HipGpu& gpu = *owned;
  gpu.drv.api = api;
  gpu.drv.device = ordinal;
  gpu.ordinal = ordinal;
  driver::Current<HipDriver> current(gpu);
  // hipGetDeviceProperties is resolved by its unversioned name, whose struct layout ROCm keeps
  // for programs built against older headers (ROCm 6 added a versioned symbol beside it).
  hipDeviceProp_t props{};
  gpu.check(api->hipGetDeviceProperties(&props, ordinal), "hipGetDeviceProperties");
  gpu.device_name = props.name;
  gpu.arch = gpu::strip_target_features(props.gcnArchName); // "gfx942:sramecc+:xnack-"
  gpu.compute_units = props.multiProcessorCount;
  gpu.check(api->hipDeviceGetAttribute(&gpu.max_shared, hipDeviceAttributeMaxSharedMemoryPerBlock,
                                       ordinal),
            "hipDeviceGetAttribute");
  gpu.check(api->hipStreamCreate(&gpu.stream), "hipStreamCreate");
  return opened.emplace(ordinal, owned.release()).first->second;
}

} // namespace tritium::hip
