// The hip device: AMD GPUs through the HIP runtime (libamdhip64.so, opened at run time).
// Everything a GPU backend shares with cuda is runtime/core/gpu_driver.hpp; what is AMD's own is
// here: the GPU compiler produces the HSACO in process (no driver JIT, nothing to cache on
// disk), loaded with hipModuleLoadData.
//
// hip:N is device N (TRITIUM_HIP_DEVICE picks the bare name's, default 0), with a stream of its
// own; launches may go on any stream of the device (Device::create_stream, or a hipStream_t
// from hipBLAS, RCCL or PyTorch through Device::wrap_stream). Where the HIP runtime is
// installed but no AMD GPU is present, the device reports itself unavailable and
// default_device() moves on.
#include "runtime/hip/hip_driver.hpp"

#include <tritium/error.hpp>
#include <tritium/runtime/backend.hpp>

#include <fmt/format.h>

#ifdef TRITIUM_HAVE_GPU_CODEGEN
#include "codegen/gpu/compile.hpp"
#endif

namespace tritium::hip {
namespace {

class HipBackend final : public driver::GpuBackend<HipDriver> {
public:
  using GpuBackend::GpuBackend;
  // Twice the MI300's 256 MB Infinity Cache (do_bench clears 256 MB on every GPU).
  size_t cache_flush_bytes() const override { return size_t{512} << 20; }

  std::unique_ptr<CompiledKernel> compile(std::shared_ptr<const ir::Function> f,
                                          const CompileOptions& options) override {
#ifdef TRITIUM_HAVE_GPU_CODEGEN
    gpu::GpuTarget target;
    target.arch = gpu_.arch;
    gpu::GpuKernelBinary bin = gpu::compile_for_gpu(*f, target, options);
    if (bin.binary.empty())
      throw Error(fmt::format("kernel '{}': the GPU compiler returned no code object for {}",
                              bin.name, gpu_.arch));
    auto k = driver::load_kernel(gpu_, bin.binary.data(), bin.name, bin.params, bin.num_threads,
                                 bin.shared_bytes);
    k.global_scratch_bytes = static_cast<unsigned>(bin.global_scratch_bytes); // none on AMD yet
    return std::make_unique<driver::Kernel<HipDriver>>(gpu_, std::move(k), std::move(bin.stages));
#else
    (void)options;
    throw Error("kernel '" + f->name +
                "': this build of tritium has no GPU code generator (codegen/gpu), so kernels "
                "cannot be compiled for the hip device");
#endif
  }
};

std::unique_ptr<Backend> make_hip_backend(int index, std::string* why) {
  HipGpu* gpu = open_gpu(index, why);
  return gpu ? std::make_unique<HipBackend>(*gpu) : nullptr;
}

} // namespace
} // namespace tritium::hip

namespace tritium {

BackendFactory hip_backend() {
  return {"hip", 100, &hip::make_hip_backend};
}

} // namespace tritium
