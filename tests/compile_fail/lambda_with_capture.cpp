// A lambda that captures cannot be a kernel (the capture would be frozen at the first trace);
// one without captures can (see tests/runtime). The error names the fix.
// expect: a kernel is a function, or a lambda without captures
#include <tritium/tritium.hpp>
namespace tl = tritium::tl;

int main() {
  auto dev = tritium::device("cpu");
  auto out = dev.alloc<float>(16);
  int n = 16;
  auto k = tritium::jit(
      [n](tl::ptr<float> out) {
        auto i = tl::arange(0, 16);
        tl::store(out + i, tl::full<float>({16}, 1.0f), i < n);
      },
      "kernel");
  k[{1}](out);
}
