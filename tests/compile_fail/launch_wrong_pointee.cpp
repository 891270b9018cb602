// A buffer of another element type does not fit a pointer parameter.
// expect: launch_argument_check<0, tritium::lang::basic_tensor<tritium::pointer<float> >, tritium::Buffer<int> >
#include <tritium/tritium.hpp>
namespace tl = tritium::tl;

void kernel(tl::ptr<float> x) {}

int main() {
  auto dev = tritium::default_device();
  auto x = dev.alloc<int>(16);
  auto k = tritium::jit(kernel);
  k[{1}](x);
}
