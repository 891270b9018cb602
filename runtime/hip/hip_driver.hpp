// The HIP runtime in the shape runtime/core/gpu_driver.hpp describes: one call per member, over
// the table hip_api.hpp opens at run time (the CUDA twin is runtime/cuda/cuda_driver.hpp).
//
// Internal header: includes the HIP headers, so only runtime/hip and the AOT runtime use it.
#pragma once

#include "runtime/core/gpu_driver.hpp"
#include "runtime/hip/hip_api.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace tritium::hip {

struct HipDriver {
  static constexpr std::string_view name = "hip";
  using Result = hipError_t;
  using Stream = hipStream_t;
  using Event = hipEvent_t;
  using Module = hipModule_t;
  using Function = hipFunction_t;
  static constexpr Result success = hipSuccess;

  const HipApi* api = nullptr;
  int device = 0; // HIP's current device is a per-thread ordinal

  std::string describe(Result r) const { return api->describe(r); }
  static constexpr std::string_view context_name = "HIP context";
  // Never: ROCm ends the process on a GPU memory fault ("Memory access fault by GPU node"),
  // so no later call could see a lost device.
  bool context_lost(Result) const { return false; }
  uintptr_t key() const { return static_cast<uintptr_t>(device); }
  Result get_current(uintptr_t* k) const {
    int d = 0;
    Result r = api->hipGetDevice(&d);
    *k = static_cast<uintptr_t>(d);
    return r;
  }
  Result set_current(uintptr_t k) const { return api->hipSetDevice(static_cast<int>(k)); }
  Result malloc(void** p, size_t n) const { return api->hipMalloc(p, n); }
  Result free(void* p) const { return api->hipFree(p); }
  // Pinned host memory the device reads and writes in place; `*d` is its device address.
  Result host_alloc_mapped(void** h, void** d, size_t n) const {
    if (Result r = api->hipHostMalloc(h, n, hipHostMallocMapped); r != hipSuccess)
      return r;
    return api->hipHostGetDevicePointer(d, *h, 0);
  }
  Result host_free(void* h) const { return api->hipHostFree(h); }
  Result copy_h2d(void* dst, const void* src, size_t n, Stream s) const {
    return api->hipMemcpyHtoDAsync(dst, const_cast<void*>(src), n, s);
  }
  Result copy_d2h(void* dst, const void* src, size_t n, Stream s) const {
    return api->hipMemcpyDtoHAsync(dst, const_cast<void*>(src), n, s);
  }
  Result copy_d2d(void* dst, const void* src, size_t n, Stream s) const {
    return api->hipMemcpyDtoDAsync(dst, const_cast<void*>(src), n, s);
  }
  Result memset(void* dst, unsigned char v, size_t n, Stream s) const {
    return api->hipMemsetD8Async(reinterpret_cast<hipDeviceptr_t>(dst), v, n, s);
  }
  Result stream_create(Stream* s) const { return api->hipStreamCreate(s); }
  Result stream_destroy(Stream s) const { return api->hipStreamDestroy(s); }
  Result stream_synchronize(Stream s) const { return api->hipStreamSynchronize(s); }
  Result stream_wait(Stream s, Event e) const { return api->hipStreamWaitEvent(s, e, 0); }
  Result event_create(Event* e) const { return api->hipEventCreate(e); }
  Result event_destroy(Event e) const { return api->hipEventDestroy(e); }
  Result event_record(Event e, Stream s) const { return api->hipEventRecord(e, s); }
  Result event_synchronize(Event e) const { return api->hipEventSynchronize(e); }
  Result event_query(Event e) const { return api->hipEventQuery(e); }
  Result event_elapsed_ms(float* ms, Event start, Event end) const {
    return api->hipEventElapsedTime(ms, start, end);
  }
  Result module_load(Module* m, const void* image) const {
    return api->hipModuleLoadData(m, image);
  }
  Result module_unload(Module m) const { return api->hipModuleUnload(m); }
  Result module_function(Function* f, Module m, const char* name) const {
    return api->hipModuleGetFunction(f, m, name);
  }
  Result launch(Function f, const LaunchGrid& g, unsigned threads, unsigned shared, Stream s,
                void** params) const {
    return api->hipModuleLaunchKernel(f, static_cast<unsigned>(g.x), static_cast<unsigned>(g.y),
                                      static_cast<unsigned>(g.z), threads, 1, 1, shared, s, params,
                                      nullptr);
  }
};

using HipGpu = driver::Gpu<HipDriver>;

// Opens AMD GPU `ordinal` and a stream of its own, once per process; null with the reason when
// the HIP runtime or the device is missing.
HipGpu* open_gpu(int ordinal, std::string* why);

} // namespace tritium::hip
