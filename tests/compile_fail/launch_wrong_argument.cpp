// A launch whose argument does not fit its parameter does not compile, and the compiler's
// message names the parameter's position and both types.
// expect: launch_argument_check<1, tritium::lang::basic_tensor<tritium::pointer<float> >, int>
#include <tritium/tritium.hpp>
namespace tl = tritium::tl;

void kernel(tl::ptr<float> x, tl::ptr<float> y, tl::i32 n) {}

int main() {
  auto dev = tritium::default_device();
  auto x = dev.alloc<float>(16);
  auto k = tritium::jit(kernel);
  k[{1}](x, 3, 16); // parameter 1 is a pointer: an int does not fit
}
