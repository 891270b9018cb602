// Pointer arithmetic takes integer offsets only.
// expect: no match for .*operator[+]
#include <tritium/tritium.hpp>
namespace tl = tritium::tl;

void kernel(tl::ptr<float> p, tl::f32 x) { auto q = p + x; }
