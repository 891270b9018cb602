// Kernels of the AOT tests (tests/aot/CMakeLists.txt builds them ahead of time).
#include <tritium/tritium.hpp>

namespace tl = tritium::tl;

// out = s * x.
void scale_kernel(tl::ptr<float> x, tl::ptr<float> out, tl::f32 s, tl::i32 n,
                  tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  tl::store(out + offs, s * tl::load(x + offs, mask), mask);
}

namespace more {
// out[i] = ±value (f16), over a 2-D grid of programs: every parameter kind but pointers to f32.
void fill_kernel(tl::ptr<tl::f16> out, tl::f64 value, tl::i64 n, tl::constexpr_<bool> NEGATE,
                 tl::constexpr_<int> BLOCK) {
  auto pid = tl::program_id(1) * tl::num_programs(0) + tl::program_id(0);
  auto offs = pid.to<int64_t>() * BLOCK + tl::arange(0, BLOCK).to<int64_t>();
  auto v = tl::full<double>({BLOCK}, NEGATE ? -1.0 : 1.0) * value;
  tl::store(out + offs, v.to<tritium::half>(), offs < n);
}
} // namespace more
