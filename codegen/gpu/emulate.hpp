// Runs a kernel through the GPU pipeline (layouts, the GPU lowering with a host TargetInfo)
// on the CPU: each program is num_warps x warp_size OS threads meeting at real barriers, warp
// shuffles go through memory. It exists to test the GPU lowering against the interpreter on
// machines without a GPU; it is slow and not a backend. Internal header, no LLVM.
#pragma once

#include <tritium/ir/ir.hpp>
#include <tritium/runtime/backend.hpp>

#include <span>

namespace tritium::gpu {

// args: one ArgSlot per kernel parameter, as Backend launches take them (pointers are host
// addresses). `warp_size` is 32 or 64, as the GPU targets.
void emulate_gpu_kernel(const ir::Function& f, const CompileOptions& options, int warp_size,
                        const LaunchGrid& grid, std::span<const ArgSlot> args);

} // namespace tritium::gpu
