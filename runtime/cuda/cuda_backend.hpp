// The CUDA backend's internal interface, for the GPU compiler glue, tests and benchmarks.
// No vendor header here: callers need not find cuda.h.
#pragma once

#include <tritium/ir/types.hpp>
#include <tritium/runtime/backend.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tritium::cuda {

// A kernel ready for the driver: PTX text and how to launch it.
struct KernelImage {
  std::string name; // the .entry symbol in the PTX
  std::string ptx;
  int num_threads = 128;         // threads per program (block)
  int shared_bytes = 0;          // dynamic shared memory per block
  std::vector<ir::DType> params; // one per launch argument slot, in order
  // The compiler's stages ("ir", "ll", "ptx", …) for CompiledKernel::artifact().
  std::vector<std::pair<std::string, std::string>> stages;
  // Global scratch per program (TMA descriptors on sm_90a); > 0: the kernel takes one more,
  // last .u64 parameter, not in `params`, that the launch fills (codegen/gpu/compile.hpp).
  // Last, so that positional initializers written before it still mean what they did.
  int global_scratch_bytes = 0;
};

// Loads `image` on `backend`, which must be the "cuda" backend: PTX -> cubin through the
// driver's JIT, or straight from the on-disk cache. The result launches like any kernel.
std::unique_ptr<CompiledKernel> load_kernel(Backend& backend, KernelImage image);

// The CUstream the "cuda" backend launches and copies on, for code that must order its own
// driver calls (events, raw launches) with tritium's.
void* native_stream(Backend& backend);

} // namespace tritium::cuda
