// The consumer's kernel, compiled at build time by tritium_add_kernels.
#include <tritium/tritium.hpp>

namespace tl = tritium::tl;

void triple_kernel(tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  tl::store(out + offs, 3.f * tl::load(x + offs, offs < n), offs < n);
}
