// Storing through a value that is not a pointer is a compile error.
// expect: no matching function for call to .*store
#include <tritium/tritium.hpp>
namespace tl = tritium::tl;

void kernel(tl::f32 x) { tl::store(x, x); }
