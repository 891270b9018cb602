// tl::dot on the GPU's matrix units against the reference interpreter, for every dtype pair
// the units take, at shapes that are and are not multiples of the tile (masked edges), with
// the tile shapes and warp counts that select each instruction family (mma.sync, wgmma on
// sm_90a, MFMA/WMMA on AMD) and the software pipeline (num_stages 3 and 4).
//
// Error bounds: both sides round, in different orders, so each may be off the exact sum by
// the accumulation's error; a difference is allowed up to twice that:
//   f32 accumulator: K * 2^-24 * sum_k |a_k b_k| (products of f16/bf16 are exact in f32);
//   tf32 inputs: plus 2 * 2^-11 * sum_k |a_k b_k| (each operand rounded to 10 mantissa bits);
//   f16 accumulator: K * 2^-11 * sum_k |a_k b_k|; i8 -> i32: exact.
#include "gpu_support.hpp"

#include <tritium/tritium.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace tl = tritium::tl;
using tritium::bfloat16;
using tritium::Device;
using tritium::half;

namespace {

// C = A @ B with masks on every edge: Triton's tutorial 03 without grouping. TF32 selects
// input_precision "tf32" for f32 operands.
template <class In, class Acc>
void dot_kernel(tl::ptr<In> a_ptr, tl::ptr<In> b_ptr, tl::ptr<Acc> c_ptr, tl::i32 M, tl::i32 N,
                tl::i32 K, tl::constexpr_<int> BM, tl::constexpr_<int> BN, tl::constexpr_<int> BK,
                tl::constexpr_<bool> TF32) {
  using tl::_;
  using tl::None;
  auto rm = tl::program_id(0) * BM + tl::arange(0, BM);
  auto rn = tl::program_id(1) * BN + tl::arange(0, BN);
  auto rk = tl::arange(0, BK);
  auto acc = tl::zeros<Acc>({BM, BN});
  for (auto k : tl::range(0, K, BK)) {
    auto ks = k + rk;
    auto a = tl::load(a_ptr + rm[{_, None}] * K + ks[{None, _}],
                      (rm[{_, None}] < M) && (ks[{None, _}] < K), 0);
    auto b = tl::load(b_ptr + ks[{_, None}] * N + rn[{None, _}],
                      (ks[{_, None}] < K) && (rn[{None, _}] < N), 0);
    acc = tl::dot(a, b, acc, TF32 ? "tf32" : "ieee");
  }
  tl::store(c_ptr + rm[{_, None}] * N + rn[{None, _}], acc,
            (rm[{_, None}] < M) && (rn[{None, _}] < N));
}

struct Tile {
  int bm, bn, bk, warps, stages;
};
struct Shape {
  int m, n, k;
};

template <class T>
std::vector<T> random_values(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<T> v(n);
  if constexpr (std::is_same_v<T, int8_t>) {
    std::uniform_int_distribution<int> d(-128, 127);
    for (auto& x : v)
      x = static_cast<int8_t>(d(rng));
  } else {
    std::uniform_real_distribution<float> d(-1.f, 1.f);
    for (auto& x : v)
      x = T(d(rng));
  }
  return v;
}

double as_double(half v) {
  return float(v);
}
double as_double(bfloat16 v) {
  return float(v);
}
double as_double(float v) {
  return v;
}
double as_double(int8_t v) {
  return v;
}
double as_double(int32_t v) {
  return v;
}

template <class In, class Acc>
void check_pair(const std::vector<Device>& gpus, const char* what, bool tf32) {
  const Tile tiles[] = {{64, 64, 32, 4, 3}, {128, 128, 64, 8, 4}, {16, 64, 64, 4, 3}};
  const Shape shapes[] = {{128, 128, 128}, {100, 72, 40}, {33, 130, 70}};
  auto kernel = tritium::jit(dot_kernel<In, Acc>, "dot_kernel");
  for (Shape s : shapes) {
    auto ha = random_values<In>(size_t(s.m) * s.k, s.m + s.k);
    auto hb = random_values<In>(size_t(s.k) * s.n, s.n + 3 * s.k);
    // sum_k |a_k b_k| per output, for the bound.
    std::vector<double> mag(size_t(s.m) * s.n, 0.0);
    for (int i = 0; i < s.m; ++i)
      for (int k = 0; k < s.k; ++k)
        for (int j = 0; j < s.n; ++j)
          mag[size_t(i) * s.n + j] +=
              std::fabs(as_double(ha[size_t(i) * s.k + k]) * as_double(hb[size_t(k) * s.n + j]));
    double unit = 0;
    if constexpr (std::is_same_v<Acc, float>)
      unit = s.k * std::ldexp(1.0, -24) + (tf32 ? 2 * std::ldexp(1.0, -11) : 0.0);
    else if constexpr (std::is_same_v<Acc, half>)
      unit = s.k * std::ldexp(1.0, -11);
    for (Tile t : tiles) {
      auto run = [&](Device d) {
        auto a = d.from_host(ha), b = d.from_host(hb);
        auto c = d.alloc<Acc>(size_t(s.m) * s.n);
        kernel.options({.num_warps = t.warps, .num_stages = t.stages});
        kernel[{tritium::cdiv(s.m, t.bm), tritium::cdiv(s.n, t.bn)}](a, b, c, s.m, s.n, s.k, t.bm,
                                                                     t.bn, t.bk, tf32);
        return c.to_host();
      };
      auto want = run(tritium::testing::interpreter());
      for (Device d : gpus) {
        CAPTURE(what);
        CAPTURE(d.target());
        CAPTURE(s.m);
        CAPTURE(s.n);
        CAPTURE(s.k);
        CAPTURE(t.bm);
        CAPTURE(t.bn);
        CAPTURE(t.bk);
        auto got = run(d);
        size_t bad = 0;
        for (size_t i = 0; i < got.size(); ++i) {
          double diff = std::fabs(as_double(got[i]) - as_double(want[i]));
          if (!(diff <= 2 * unit * mag[i]) && bad++ < 3)
            MESSAGE("C[" << i / s.n << ", " << i % s.n << "] = " << as_double(got[i])
                         << " on the GPU, " << as_double(want[i]) << " in the interpreter");
        }
        CHECK_MESSAGE(bad == 0, bad << " of " << got.size() << " elements out of bounds");
      }
    }
  }
}

} // namespace

TEST_CASE("gpu: dot for every dtype pair matches the interpreter within its error bound, at "
          "tile multiples and masked edges") {
  TRITIUM_REQUIRE_GPU(gpus);
  check_pair<half, float>(gpus, "f16 x f16 -> f32", false);
  check_pair<bfloat16, float>(gpus, "bf16 x bf16 -> f32", false);
  check_pair<float, float>(gpus, "f32 x f32 -> f32 (ieee)", false);
  check_pair<float, float>(gpus, "f32 x f32 -> f32 (tf32)", true);
  check_pair<half, half>(gpus, "f16 x f16 -> f16", false);
  check_pair<int8_t, int32_t>(gpus, "i8 x i8 -> i32", false);
}
