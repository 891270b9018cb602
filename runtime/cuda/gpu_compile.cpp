// The one place the CUDA backend meets the GPU code generator (codegen/gpu): IR -> PTX.
#include "cuda_backend.hpp"

#include <tritium/error.hpp>

#ifdef TRITIUM_HAVE_GPU_CODEGEN
#include "codegen/gpu/compile.hpp"
#endif

namespace tritium::cuda {

KernelImage compile_ptx(const ir::Function& f, const CompileOptions& options, int sm) {
#ifdef TRITIUM_HAVE_GPU_CODEGEN
  GpuTarget target = GpuTarget::nvptx(sm);
  GpuKernelBinary bin = compile_for_gpu(f, target, options);
  KernelImage image;
  image.name = bin.name;
  image.ptx = std::move(bin.ptx);
  image.num_threads = bin.num_threads;
  image.shared_bytes = bin.shared_bytes;
  image.params = bin.params;
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
