// The backends compiled into this build, named explicitly so that static linking keeps them.
#include <tritium/runtime/backend.hpp>

#include <vector>

namespace tritium {

BackendFactory interpreter_backend();
#ifdef TRITIUM_HAVE_CPU
BackendFactory cpu_backend();
#endif
#ifdef TRITIUM_HAVE_CUDA
BackendFactory cuda_backend();
#endif
#ifdef TRITIUM_HAVE_HIP
BackendFactory hip_backend();
#endif
#ifdef TRITIUM_HAVE_GPU_EMULATOR
BackendFactory gpu_emulator_backend();
#endif

std::vector<BackendFactory> builtin_backends() {
  std::vector<BackendFactory> f{interpreter_backend()};
#ifdef TRITIUM_HAVE_CPU
  f.push_back(cpu_backend());
#endif
#ifdef TRITIUM_HAVE_CUDA
  f.push_back(cuda_backend());
#endif
#ifdef TRITIUM_HAVE_HIP
  f.push_back(hip_backend());
#endif
#ifdef TRITIUM_HAVE_GPU_EMULATOR
  f.push_back(gpu_emulator_backend());
#endif
  return f;
}

} // namespace tritium
