// The CUDA driver API, opened at run time. Every entry point tritium uses is listed once in
// TRITIUM_CUDA_ENTRY_POINTS; its type is taken from cuda.h with decltype, so a signature can
// never drift from the vendor's. cuda.h maps many names to versioned symbols (cuMemAlloc ->
// cuMemAlloc_v2); the symbol looked up is the expanded name, the one a linked program would use.
//
// Internal header: includes cuda.h, so only runtime/cuda sources, tests/gpu and bench use it.
#pragma once

#include <cuda.h>

#include <dlfcn.h>

#include <cstdlib>

#include <string>

#define TRITIUM_CUDA_ENTRY_POINTS(X)                                                               \
  X(cuInit)                                                                                        \
  X(cuDriverGetVersion)                                                                            \
  X(cuGetErrorName)                                                                                \
  X(cuGetErrorString)                                                                              \
  X(cuDeviceGetCount)                                                                              \
  X(cuDeviceGet)                                                                                   \
  X(cuDeviceGetName)                                                                               \
  X(cuDeviceGetAttribute)                                                                          \
  X(cuDevicePrimaryCtxRetain)                                                                      \
  X(cuDevicePrimaryCtxRelease)                                                                     \
  X(cuDevicePrimaryCtxReset)                                                                       \
  X(cuCtxGetCurrent)                                                                               \
  X(cuCtxSetCurrent)                                                                               \
  X(cuCtxSynchronize)                                                                              \
  X(cuMemAlloc)                                                                                    \
  X(cuMemFree)                                                                                     \
  X(cuMemHostAlloc)                                                                                \
  X(cuMemHostGetDevicePointer)                                                                     \
  X(cuMemFreeHost)                                                                                 \
  X(cuMemcpyHtoDAsync)                                                                             \
  X(cuMemcpyDtoHAsync)                                                                             \
  X(cuMemcpyDtoDAsync)                                                                             \
  X(cuMemsetD8Async)                                                                               \
  X(cuStreamCreate)                                                                                \
  X(cuStreamDestroy)                                                                               \
  X(cuStreamSynchronize)                                                                           \
  X(cuStreamWaitEvent)                                                                             \
  X(cuEventCreate)                                                                                 \
  X(cuEventDestroy)                                                                                \
  X(cuEventRecord)                                                                                 \
  X(cuEventSynchronize)                                                                            \
  X(cuEventQuery)                                                                                  \
  X(cuEventElapsedTime)                                                                            \
  X(cuModuleLoadDataEx)                                                                            \
  X(cuModuleUnload)                                                                                \
  X(cuModuleGetFunction)                                                                           \
  X(cuFuncGetAttribute)                                                                            \
  X(cuFuncSetAttribute)                                                                            \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                                                   \
  X(cuLaunchKernel)                                                                                \
  X(cuLinkCreate)                                                                                  \
  X(cuLinkAddData)                                                                                 \
  X(cuLinkComplete)                                                                                \
  X(cuLinkDestroy)

#define TRITIUM_CUDA_STRINGIFY_EXPANDED(name) TRITIUM_CUDA_STRINGIFY(name)
#define TRITIUM_CUDA_STRINGIFY(name) #name

namespace tritium::cuda {

struct CudaApi {
#define TRITIUM_CUDA_MEMBER(name) decltype(&::name) name = nullptr;
  TRITIUM_CUDA_ENTRY_POINTS(TRITIUM_CUDA_MEMBER)
#undef TRITIUM_CUDA_MEMBER

  // Opens libcuda.so.1 (or $TRITIUM_CUDA_LIBRARY) and resolves every entry point. Returns
  // false and says why when the driver is missing or too old; the handle stays open for the
  // life of the process.
  bool load(std::string* why) {
    const char* env = std::getenv("TRITIUM_CUDA_LIBRARY");
    const bool named = env && *env;
    void* lib = dlopen(named ? env : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      if (why)
        *why = named ? std::string("TRITIUM_CUDA_LIBRARY=") + env +
                           ": the CUDA driver cannot be opened: " + dlerror()
                     : std::string("the CUDA driver (libcuda.so.1) is not installed: ") + dlerror();
      return false;
    }
#define TRITIUM_CUDA_RESOLVE(name)                                                                 \
  name = reinterpret_cast<decltype(name)>(dlsym(lib, TRITIUM_CUDA_STRINGIFY_EXPANDED(name)));      \
  if (!name) {                                                                                     \
    if (why)                                                                                       \
      *why = "the CUDA driver lacks " TRITIUM_CUDA_STRINGIFY_EXPANDED(name) " (driver too old?)";  \
    return false;                                                                                  \
  }
    TRITIUM_CUDA_ENTRY_POINTS(TRITIUM_CUDA_RESOLVE)
#undef TRITIUM_CUDA_RESOLVE
    return true;
  }

  // "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"
  std::string describe(CUresult r) const {
    const char* name = nullptr;
    const char* text = nullptr;
    if (cuGetErrorName)
      cuGetErrorName(r, &name);
    if (cuGetErrorString)
      cuGetErrorString(r, &text);
    return std::string(name ? name : "CUDA error " + std::to_string(static_cast<int>(r))) +
           (text ? std::string(": ") + text : std::string());
  }
};

} // namespace tritium::cuda
