// Runs a kernel through the GPU pipeline (layouts, the GPU lowering with a host TargetInfo)
// on the CPU: each program is num_warps x warp_size fibers meeting at barriers (a
// warp's at its own for shuffles and matrix instructions), shuffles go through memory. It exists to
// test the GPU lowering against the interpreter on machines without a GPU; it is slow. The
// gpu-emulator device (runtime/emulator) runs its kernels this way. Internal header, no LLVM.
#pragma once

#include "../../gpu_ir/layout.hpp"

#include <tritium/ir/ir.hpp>
#include <tritium/launch.hpp>

#include <memory>
#include <span>
#include <string>

namespace tritium::gpu {

struct Arch;

// A kernel compiled once for emulation (the JIT holding its code), run any number of times.
class EmulatedKernel {
public:
  EmulatedKernel(const ir::Function& f, const CompileOptions& options, int warp_size,
                 MatrixUnit matrix = MatrixUnit::None, int matrix_version = 0);
  ~EmulatedKernel();
  // args as emulate_gpu_kernel's below. One emulated launch runs at a time in the process.
  void run(const LaunchGrid& grid, std::span<const ArgSlot> args);
  const std::string& ir() const; // the IR after the GPU passes
  const std::string& ll() const; // the LLVM IR as lowered

private:
  struct Program;
  std::unique_ptr<Program> program_;
};

// args: one ArgSlot per kernel parameter, as Backend launches take them (pointers are host
// addresses). `warp_size` is 32 or 64, as the GPU targets; `matrix` the matrix instructions
// dot uses, their per-lane semantics emulated (None: FMA units), of generation
// `matrix_version` (arch.hpp's MatrixModel::version; 0: the unit as the targets named by
// emulated_matrix_arch have it).
void emulate_gpu_kernel(const ir::Function& f, const CompileOptions& options, int warp_size,
                        const LaunchGrid& grid, std::span<const ArgSlot> args,
                        MatrixUnit matrix = MatrixUnit::None, int matrix_version = 0);

// The target whose unit stands for `matrix` when only the unit is named (TRITIUM_EMULATOR_MATRIX,
// tests): sm_80 (mma.sync), sm_90a (wgmma), gfx942 (MFMA), gfx1100 (WMMA v1); null for None.
const Arch* emulated_matrix_arch(MatrixUnit matrix);

} // namespace tritium::gpu
