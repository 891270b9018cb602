// Products of a uniform scalar and a tile's registers that differ by constants, (x + c_i) * s,
// become one x * s plus c_i * s each (distribute_uniform_products.cpp), after LLVM's
// optimizations of an AMDGPU kernel.
#pragma once

namespace llvm {
class Function;
}

namespace tritium::gpu {

void distribute_uniform_products(llvm::Function& f);

} // namespace tritium::gpu
