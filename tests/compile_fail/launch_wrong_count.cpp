// A launch with too few arguments does not compile.
// expect: passes a different number of arguments than the kernel has parameters
#include <tritium/tritium.hpp>
namespace tl = tritium::tl;

void kernel(tl::ptr<float> x, tl::i32 n) {}

int main() {
  auto dev = tritium::default_device();
  auto x = dev.alloc<float>(16);
  auto k = tritium::jit(kernel);
  k[{1}](x);
}
