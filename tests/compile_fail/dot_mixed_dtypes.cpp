// tl::dot of int8 by fp32 operands: the error says to convert one operand first.
// expect: tl::dot: both operands must have the same dtype. Convert one first
#include <tritium/tritium.hpp>
namespace tl = tritium::tl;

void kernel(tl::ptr<int8_t> a, tl::ptr<float> b, tl::ptr<float> c) {
  auto r = tl::arange(0, 16);
  auto idx = r[{tl::_, tl::None}] * 16 + r[{tl::None, tl::_}];
  tl::store(c + idx, tl::dot(tl::load(a + idx), tl::load(b + idx)));
}
