// The HIP runtime API, opened at run time: every entry point tritium uses is listed once in
// TRITIUM_HIP_ENTRY_POINTS, typed from the HIP headers with decltype.
//
// Internal header: includes the HIP headers, so only runtime/hip sources use it.
#pragma once

#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__
#endif
#include <hip/hip_runtime_api.h>

#include <dlfcn.h>

#include <cstdlib>

#include <string>

#define TRITIUM_HIP_ENTRY_POINTS(X)                                                                \
  X(hipInit)                                                                                       \
  X(hipDriverGetVersion)                                                                           \
  X(hipGetErrorName)                                                                               \
  X(hipGetErrorString)                                                                             \
  X(hipGetDeviceCount)                                                                             \
  X(hipGetDevice)                                                                                  \
  X(hipSetDevice)                                                                                  \
  X(hipDeviceGetName)                                                                              \
  X(hipDeviceGetAttribute)                                                                         \
  X(hipGetDeviceProperties)                                                                        \
  X(hipFree)                                                                                       \
  X(hipHostGetDevicePointer)                                                                       \
  X(hipHostFree)                                                                                   \
  X(hipMemcpyHtoDAsync)                                                                            \
  X(hipMemcpyDtoHAsync)                                                                            \
  X(hipMemcpyDtoDAsync)                                                                            \
  X(hipMemsetD8Async)                                                                              \
  X(hipStreamCreate)                                                                               \
  X(hipStreamDestroy)                                                                              \
  X(hipStreamSynchronize)                                                                          \
  X(hipStreamWaitEvent)                                                                            \
  X(hipEventCreate)                                                                                \
  X(hipEventDestroy)                                                                               \
  X(hipEventRecord)                                                                                \
  X(hipEventSynchronize)                                                                           \
  X(hipEventQuery)                                                                                 \
  X(hipEventElapsedTime)                                                                           \
  X(hipModuleLoadData)                                                                             \
  X(hipModuleUnload)                                                                               \
  X(hipModuleGetFunction)                                                                          \
  X(hipModuleLaunchKernel)

// Entry points the C++ headers overload (hipMalloc has a typed template beside it): the
// signature picks the plain C function, and static_cast checks it against the header.
namespace tritium::hip::signatures {
using hipMalloc = hipError_t(void**, size_t);
using hipHostMalloc = hipError_t(void**, size_t, unsigned int);
} // namespace tritium::hip::signatures
#define TRITIUM_HIP_OVERLOADED_ENTRY_POINTS(X) X(hipMalloc) X(hipHostMalloc)

#define TRITIUM_HIP_STRINGIFY_EXPANDED(name) TRITIUM_HIP_STRINGIFY(name)
#define TRITIUM_HIP_STRINGIFY(name) #name

namespace tritium::hip {

struct HipApi {
#define TRITIUM_HIP_MEMBER(name) decltype(&::name) name = nullptr;
  TRITIUM_HIP_ENTRY_POINTS(TRITIUM_HIP_MEMBER)
#undef TRITIUM_HIP_MEMBER
#define TRITIUM_HIP_OVERLOADED_MEMBER(name)                                                        \
  decltype(static_cast<signatures::name*>(&::name)) name = nullptr;
  TRITIUM_HIP_OVERLOADED_ENTRY_POINTS(TRITIUM_HIP_OVERLOADED_MEMBER)
#undef TRITIUM_HIP_OVERLOADED_MEMBER

  // Opens the HIP runtime and resolves every entry point; false (and why) when it is missing.
  bool load(std::string* why) {
    void* lib = nullptr;
    if (const char* env = std::getenv("TRITIUM_HIP_LIBRARY"); env && *env) {
      if (!(lib = dlopen(env, RTLD_NOW | RTLD_LOCAL))) {
        if (why)
          *why = std::string("TRITIUM_HIP_LIBRARY=") + env +
                 ": the HIP runtime cannot be opened: " + dlerror();
        return false;
      }
    }
    // The unversioned name comes with the -dev package; the runtime packages ship these.
    for (const char* name : {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"})
      if (!lib && (lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)))
        break;
    if (!lib) {
      if (why)
        *why = "the HIP runtime (libamdhip64.so) is not installed";
      return false;
    }
#define TRITIUM_HIP_RESOLVE(name)                                                                  \
  name = reinterpret_cast<decltype(name)>(dlsym(lib, TRITIUM_HIP_STRINGIFY_EXPANDED(name)));       \
  if (!name) {                                                                                     \
    if (why)                                                                                       \
      *why = "the HIP runtime lacks " TRITIUM_HIP_STRINGIFY_EXPANDED(name) " (too old?)";          \
    return false;                                                                                  \
  }
    TRITIUM_HIP_ENTRY_POINTS(TRITIUM_HIP_RESOLVE)
#define TRITIUM_HIP_RESOLVE_OVERLOADED(name) TRITIUM_HIP_RESOLVE(name)
    TRITIUM_HIP_OVERLOADED_ENTRY_POINTS(TRITIUM_HIP_RESOLVE_OVERLOADED)
#undef TRITIUM_HIP_RESOLVE_OVERLOADED
#undef TRITIUM_HIP_RESOLVE
    return true;
  }

  std::string describe(hipError_t r) const {
    const char* name = hipGetErrorName ? hipGetErrorName(r) : nullptr;
    const char* text = hipGetErrorString ? hipGetErrorString(r) : nullptr;
    std::string s = name ? name : "HIP error " + std::to_string(static_cast<int>(r));
    if (text && (!name || std::string(text) != name))
      s += std::string(": ") + text;
    return s;
  }
};

} // namespace tritium::hip
