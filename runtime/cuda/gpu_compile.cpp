// The one place the CUDA backend meets the GPU code generator (codegen/gpu): IR -> PTX.
#include "cuda_backend.hpp"

#include <tritium/error.hpp>

#include <cstdlib>

#ifdef TRITIUM_HAVE_GPU_CODEGEN
#include "codegen/gpu/compile.hpp"
#include "codegen/gpu_ir/arch.hpp"
#endif

namespace tritium::cuda {

KernelImage compile_ptx(const ir::Function& f, const CompileOptions& options, int sm) {
#ifdef TRITIUM_HAVE_GPU_CODEGEN
  gpu::GpuTarget target;
  // A device takes its compute capability's architecture-specific target where the model has
  // one (sm_90: sm_90a, wgmma); TRITIUM_CUDA_ARCH overrides (e.g. sm_90 to compare mma.sync on
  // the same device).
  target.arch = "sm_" + std::to_string(sm);
  for (const gpu::Arch& a : gpu::known_archs())
    if (a.is_nvidia() && a.sm() == sm && a.arch_specific())
      target.arch = a.name;
  if (const char* a = std::getenv("TRITIUM_CUDA_ARCH"); a && *a)
    target.arch = a;
  gpu::GpuKernelBinary bin = gpu::compile_for_gpu(f, target, options);
  KernelImage image;
  image.name = std::move(bin.name);
  image.ptx = std::move(bin.assembly);
  image.num_threads = bin.num_threads;
  image.shared_bytes = bin.shared_bytes;
  image.global_scratch_bytes = bin.global_scratch_bytes;
  image.params = std::move(bin.params);
  image.stages = std::move(bin.stages);
  return image;
#else
  (void)options;
  (void)sm;
  throw Error("kernel '" + f.name +
              "': this build of tritium has no GPU code generator (codegen/gpu), so kernels "
              "cannot be compiled for the cuda device");
#endif
}

} // namespace tritium::cuda
