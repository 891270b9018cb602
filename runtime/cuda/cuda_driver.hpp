// The CUDA driver API in the shape runtime/core/gpu_driver.hpp describes: one call per member,
// over the table cuda_api.hpp opens at run time. HIP has the same table under other names
// (runtime/hip/hip_driver.hpp).
//
// Internal header: includes cuda.h, so only runtime/cuda and the AOT runtime use it.
#pragma once

#include "runtime/core/gpu_driver.hpp"
#include "runtime/cuda/cuda_api.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace tritium::cuda {

struct CudaDriver {
  static constexpr std::string_view name = "cuda";
  using Result = CUresult;
  using Stream = CUstream;
  using Event = CUevent;
  using Module = CUmodule;
  using Function = CUfunction;
  static constexpr Result success = CUDA_SUCCESS;

  const CudaApi* api = nullptr;
  CUcontext context = nullptr; // the device's primary context
  // NVIDIA-only facts about the device, for the backend's compile and load.
  CUdevice device = 0;
  int sm = 0; // compute capability as 10 * major + minor
  int driver_version = 0;

  static CUdeviceptr dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

  std::string describe(Result r) const { return api->describe(r); }
  static constexpr std::string_view context_name = "CUDA context";
  // CUDA's "sticky" errors: after one, every call in the context fails the same way.
  bool context_lost(Result r) const {
    switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
      return true;
    default:
      return false;
    }
  }
  uintptr_t key() const { return reinterpret_cast<uintptr_t>(context); }
  Result get_current(uintptr_t* k) const {
    CUcontext c = nullptr;
    Result r = api->cuCtxGetCurrent(&c);
    *k = reinterpret_cast<uintptr_t>(c);
    return r;
  }
  Result set_current(uintptr_t k) const {
    return api->cuCtxSetCurrent(reinterpret_cast<CUcontext>(k));
  }
  Result malloc(void** p, size_t n) const {
    CUdeviceptr d = 0;
    Result r = api->cuMemAlloc(&d, n);
    *p = reinterpret_cast<void*>(d);
    return r;
  }
  Result free(void* p) const { return api->cuMemFree(dptr(p)); }
  // Pinned host memory the device reads and writes in place; `*d` is its device address.
  Result host_alloc_mapped(void** h, void** d, size_t n) const {
    if (Result r = api->cuMemHostAlloc(h, n, CU_MEMHOSTALLOC_DEVICEMAP); r != CUDA_SUCCESS)
      return r;
    CUdeviceptr p = 0;
    Result r = api->cuMemHostGetDevicePointer(&p, *h, 0);
    *d = reinterpret_cast<void*>(p);
    return r;
  }
  Result host_free(void* h) const { return api->cuMemFreeHost(h); }
  Result copy_h2d(void* dst, const void* src, size_t n, Stream s) const {
    return api->cuMemcpyHtoDAsync(dptr(dst), src, n, s);
  }
  Result copy_d2h(void* dst, const void* src, size_t n, Stream s) const {
    return api->cuMemcpyDtoHAsync(dst, dptr(src), n, s);
  }
  Result copy_d2d(void* dst, const void* src, size_t n, Stream s) const {
    return api->cuMemcpyDtoDAsync(dptr(dst), dptr(src), n, s);
  }
  Result memset(void* dst, unsigned char v, size_t n, Stream s) const {
    return api->cuMemsetD8Async(dptr(dst), v, n, s);
  }
  // Default flags: the stream orders with the legacy default stream, as PyTorch's do not.
  Result stream_create(Stream* s) const { return api->cuStreamCreate(s, CU_STREAM_DEFAULT); }
  Result stream_destroy(Stream s) const { return api->cuStreamDestroy(s); }
  Result stream_synchronize(Stream s) const { return api->cuStreamSynchronize(s); }
  Result stream_wait(Stream s, Event e) const { return api->cuStreamWaitEvent(s, e, 0); }
  Result event_create(Event* e) const { return api->cuEventCreate(e, CU_EVENT_DEFAULT); }
  Result event_destroy(Event e) const { return api->cuEventDestroy(e); }
  Result event_record(Event e, Stream s) const { return api->cuEventRecord(e, s); }
  Result event_synchronize(Event e) const { return api->cuEventSynchronize(e); }
  Result event_query(Event e) const { return api->cuEventQuery(e); }
  Result event_elapsed_ms(float* ms, Event start, Event end) const {
    return api->cuEventElapsedTime(ms, start, end);
  }
  Result module_load(Module* m, const void* image) const {
    return api->cuModuleLoadDataEx(m, image, 0, nullptr, nullptr);
  }
  Result module_unload(Module m) const { return api->cuModuleUnload(m); }
  Result module_function(Function* f, Module m, const char* name) const {
    return api->cuModuleGetFunction(f, m, name);
  }
  Result launch(Function f, const LaunchGrid& g, unsigned threads, unsigned shared, Stream s,
                void** params) const {
    return api->cuLaunchKernel(f, static_cast<unsigned>(g.x), static_cast<unsigned>(g.y),
                               static_cast<unsigned>(g.z), threads, 1, 1, shared, s, params,
                               nullptr);
  }
};

using CudaGpu = driver::Gpu<CudaDriver>;

// Opens NVIDIA GPU `ordinal` (its primary context, the one the CUDA runtime, PyTorch and Triton
// use, so memory and streams can be shared, and a stream of its own), once per process, and
// again after it was lost to a fault (resetting the primary context first); null with the
// reason when the driver or the device is missing.
CudaGpu* open_gpu(int ordinal, std::string* why);

// Checks a loaded kernel against the device (threads its registers allow, static plus dynamic
// shared memory) and opts it in to more than 48 KiB of shared memory where it needs that;
// unloads it and throws tritium::Error naming it when it cannot run.
void configure_loaded(CudaGpu& gpu, driver::LoadedKernel<CudaDriver>& k, int num_threads,
                      int shared_bytes);

} // namespace tritium::cuda
