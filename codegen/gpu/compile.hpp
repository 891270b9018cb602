// The GPU compiler's entry point, for the GPU runtimes (runtime/cuda, runtime/hip) and tools.
// Internal header: it includes no LLVM, but it is not installed with the public headers.
//
// Kernel ABI (both targets): the kernel takes the IR function's arguments in order, one
// kernel parameter per IR argument, nothing added:
//   * pointers (ptr<T>)      -> a 64-bit global address (NVPTX: .u64 param; AMDGPU: global
//                               pointer, addrspace(1), 8 bytes, 8-byte aligned)
//   * i1                     -> one byte (LLVM i1 as a kernel parameter is passed as i8 0/1)
//   * i8/u8, i16/u16         -> 1 / 2 bytes, naturally aligned
//   * i32/u32, f32           -> 4 bytes; i64/u64, f64 -> 8 bytes; f16/bf16 -> 2 bytes
// AMDGPU: the kernarg segment holds them at naturally aligned offsets in order (the HSACO
// metadata lists each offset; `kernarg_size` includes the hidden arguments of code object
// v5 that the HIP runtime fills itself). NVPTX: cuLaunchKernel's kernelParams holds one
// pointer per parameter, to a value of the size above.
// One exception: a kernel with global_scratch_bytes > 0 (TMA descriptors, sm_90a) takes one
// more, last parameter: a 64-bit global pointer to grid.x * grid.y * grid.z *
// global_scratch_bytes bytes, 128-byte aligned, that no other kernel running at the same time
// uses (program p's part starts at p * global_scratch_bytes, p the linear program id
// x + grid.x * (y + grid.y * z)); its contents on entry are undefined.
// Launch: blockDim = (num_threads, 1, 1); gridDim = the launch grid (program_id(axis) is
// blockIdx.{x,y,z}); dynamic shared memory = shared_bytes (0 if none; NVPTX needs
// cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) above 48 KiB).
#pragma once

#include <tritium/ir/ir.hpp>
#include <tritium/launch.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tritium::gpu {

struct GpuTarget {
  std::string arch;        // a known target (arch.hpp): "sm_90a", "gfx942", "gfx942:xnack-", …
  int code_object = 5;     // AMDGPU code object version: 5 (default) or 4
  bool keep_stages = true; // fill GpuKernelBinary::stages (IR after each pass, LLVM IR, …)
  // When set, each stage is also written to <dump_dir>/<kernel>.<stage> as soon as it is
  // produced, so that a failing compilation leaves the stages before the failure behind.
  std::string dump_dir;

  // By the architecture model; false for an unknown target.
  bool is_amdgpu() const;
  bool is_nvptx() const;
};

struct GpuKernelBinary {
  std::string name;              // the kernel's symbol in the PTX / HSACO
  std::string assembly;          // PTX text (NVPTX) or AMDGCN assembly (AMDGPU)
  std::vector<uint8_t> binary;   // the HSACO (AMDGPU); empty for NVPTX (load `assembly`)
  int num_threads = 0;           // threads per block / work-group: num_warps * warp size
  int warp_size = 32;            // 32, or 64 on CDNA (gfx908, gfx90a, gfx94x)
  int shared_bytes = 0;          // dynamic shared memory (LDS) per block
  int global_scratch_bytes = 0;  // per program; > 0: the extra last parameter described above
  std::vector<ir::DType> params; // one per kernel parameter, as described above (not the
                                 // scratch pointer)
  // Every stage's artefact in pipeline order ("ir", "ir.<pass>", "ll", "ll.opt", "ptx" or
  // "amdgcn", "hsaco.meta"); keys are the stage names CompiledKernel::artifact() answers.
  std::vector<std::pair<std::string, std::string>> stages;
  // What the passes chose not to do and why (a pipeline's stages cut to fit shared memory),
  // one line each; printed to stderr as they are made when TRITIUM_REMARKS is set.
  std::vector<std::string> remarks;

  const std::string* stage(const std::string& key) const {
    for (const auto& [k, v] : stages)
      if (k == key)
        return &v;
    return nullptr;
  }
};

struct Arch;
struct GpuFeatures;
// What the GPU passes take from the architecture model itself (its matrix unit's generation,
// TMA, asynchronous copies, buffer instructions, the vendor's coalescing rule for gathers): one
// place for the compiler and `tritium opt`.
void set_arch_features(GpuFeatures& features, const Arch& arch);

// Compiles one kernel for one GPU; throws tritium::Error naming the kernel, op and source
// line when something cannot be compiled. Thread-safe (no global state is mutated after
// LLVM's targets are initialized once).
GpuKernelBinary compile_for_gpu(const ir::Function& f, const GpuTarget& target,
                                const CompileOptions& options);

// The architectures compile_for_gpu accepts (arch.hpp's table), for tools and error messages.
std::vector<std::string> supported_gpu_archs();

} // namespace tritium::gpu
