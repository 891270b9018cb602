// A plain C++ int parameter would be frozen into the kernel when it is traced: one error, which
// names the fix (tl::i32 or tl::constexpr_<int>).
// expect: For a plain C\+\+ `int` or `float` parameter write tl::i32 / tl::f32
#include <tritium/tritium.hpp>
namespace tl = tritium::tl;

void kernel(tl::ptr<float> out, int n) {
  auto i = tl::arange(0, 16);
  tl::store(out + i, tl::full<float>({16}, 1.0f), i < n);
}

int main() {
  auto dev = tritium::device("cpu");
  auto out = dev.alloc<float>(16);
  auto k = tritium::jit(kernel, "kernel");
  k[{1}](out, 16);
}
