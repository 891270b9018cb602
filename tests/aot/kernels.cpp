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

// q = x * s rounded to fp8 e4m3 (saturating): fp8 pointers and an fp8 scalar parameter.
void fp8_scale_kernel(tl::ptr<float> x, tl::ptr<tritium::float8e4nv> q, tl::f8e4nv s, tl::i32 n,
                      tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  tl::store(q + offs, (tl::load(x + offs, mask) * s).to<tritium::float8e4nv>(), mask);
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

// C = A B through tensor descriptors: on sm_90a its loads are TMA copies, which AOT export
// refuses (aot.bad_spec.tma); sm_90 copies them through pointers.
void desc_matmul_kernel(tl::ptr<tl::f16> a, tl::ptr<tl::f16> b, tl::ptr<tl::f16> c, tl::i32 M,
                        tl::i32 N, tl::i32 K) {
  auto a_desc = tl::make_tensor_descriptor(a, {M, K}, {K, 1}, {64, 64});
  auto b_desc = tl::make_tensor_descriptor(b, {K, N}, {N, 1}, {64, 64});
  auto c_desc = tl::make_tensor_descriptor(c, {M, N}, {N, 1}, {64, 64});
  auto acc = tl::zeros<float>({64, 64});
  for (auto k : tl::range(0, tl::cdiv(K, 64)))
    acc = tl::dot(a_desc.load({tl::program_id(0) * 64, k * 64}),
                  b_desc.load({k * 64, tl::program_id(1) * 64}), acc);
  c_desc.store({tl::program_id(0) * 64, tl::program_id(1) * 64}, acc.to<tritium::half>());
}
