// The kernels of the ahead-of-time example: ordinary tritium kernels, compiled at build time by
// tritium_add_kernels (CMakeLists.txt) instead of at run time by tritium::jit. This file is not
// compiled into the program; the build's kernel compiler includes it.
#include <tritium/tritium.hpp>

namespace tl = tritium::tl;

// out = alpha * x + y, one block of BLOCK elements per program.
void axpy_kernel(tl::ptr<float> x, tl::ptr<float> y, tl::ptr<float> out, tl::f32 alpha, tl::i32 n,
                 tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  tl::store(out + offs, alpha * tl::load(x + offs, mask) + tl::load(y + offs, mask), mask);
}
