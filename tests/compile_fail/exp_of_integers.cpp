// Floating-point math on integers is a compile error (convert first with .to<float>()).
// expect: no matching function for call to .*exp
#include <tritium/tritium.hpp>
namespace tl = tritium::tl;

void kernel(tl::ptr<float> out) {
  auto i = tl::arange(0, 16);
  tl::store(out + i, tl::exp(i));
}
