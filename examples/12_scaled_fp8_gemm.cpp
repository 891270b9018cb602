// Tutorial 12: a scaled fp8 GEMM, as LLM inference runs its linear layers (W8A8).
//
// Weights are stored in fp8 (float8e4nv: e4m3, 3 mantissa bits, largest value 448) with one
// scale per output channel, computed once offline, laid out as a linear layer keeps them (W is
// N x K, row-major: B = Wᵀ has K contiguous, the order fp8 matrix instructions read); activations
// arrive in fp16 and are quantized per token by a small prologue kernel just before the GEMM. You
// will learn:
//   * fp8 element types: tritium::float8e4nv buffers, tl::f8e4nv tensors, x.to<float8e4nv>()
//     rounding to nearest even and saturating at +-448 (Triton's rule);
//   * dynamic per-token quantization (one program per row, a block reduction for max|x|), or a
//     calibrated per-tensor scale;
//   * tl::dot on fp8 operands, accumulating in f32;
//   * a fused epilogue: the row and column scales (or one per-tensor scale each), the bias and
//     an activation applied to the f32 accumulator before C is written once in fp16.
//
// Usage: 12_scaled_fp8_gemm [--full | --small]
//   The interpreter runs the small shapes only; other devices also 1024^3, GPUs 4096^3 too.
//
// (On sm_90a the dot runs on wgmma's fp8 form, which reads both operands with K contiguous; a
// row-major B, or another GPU, reads them as f16 on the f16 matrix unit: correct, at the f16
// rate. bench/RESULTS.md has the numbers.)

#include <tritium/tritium.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace tl = tritium::tl;
using tl::_;
using tl::None;
using tritium::float8e4nv;
using tritium::half;

constexpr float kFp8Max = 448.f; // the largest finite float8e4nv

// q = x / scale in fp8 for each row of an M x K fp16 matrix, the whole row in one block, one
// program per row. DYNAMIC: each row's scale is max|x| / 448, computed here and stored (per
// token); otherwise scale[0] is a per-tensor scale calibrated beforehand.
void quantize_kernel(tl::ptr<tl::f16> x_ptr, tl::ptr<float8e4nv> q_ptr, tl::ptr<float> scale_ptr,
                     tl::i32 K, tl::constexpr_<int> BLOCK, tl::constexpr_<bool> DYNAMIC) {
  auto row = tl::program_id(0);
  auto cols = tl::arange(0, BLOCK);
  auto mask = cols < K;
  auto x = tl::load(x_ptr + row * K + cols, mask, 0.0).to<float>();
  if (DYNAMIC) {
    // A row of zeros gets a tiny scale rather than a division by zero.
    auto absmax = tl::maximum(tl::max(tl::abs(x)), 1e-10f);
    tl::store(q_ptr + row * K + cols, (x * (kFp8Max / absmax)).to<float8e4nv>(), mask);
    tl::store(scale_ptr + row, absmax / kFp8Max);
  } else { // values past the calibrated range saturate at +-448
    tl::store(q_ptr + row * K + cols, (x / tl::load(scale_ptr)).to<float8e4nv>(), mask);
  }
}

// C = act((A @ B) * a_scale * b_scale + bias) with A (M x K, row-major) and B (K x N, stored
// as W = Bᵀ: N x K row-major) in fp8, accumulated in f32. ROWWISE: a_scale has M entries (per
// token) and b_scale N (per channel); otherwise each is one per-tensor value. ACT: 0 none, 1 ReLU,
// 2 SiLU.
void scaled_fp8_matmul_kernel(tl::ptr<float8e4nv> a_ptr, tl::ptr<float8e4nv> b_ptr,
                              tl::ptr<float> a_scale_ptr, tl::ptr<float> b_scale_ptr,
                              tl::ptr<float> bias_ptr, tl::ptr<tl::f16> c_ptr, tl::i32 M, tl::i32 N,
                              tl::i32 K, tl::constexpr_<int> BLOCK_M, tl::constexpr_<int> BLOCK_N,
                              tl::constexpr_<int> BLOCK_K, tl::constexpr_<bool> ROWWISE,
                              tl::constexpr_<int> ACT) {
  auto pid_m = tl::program_id(0), pid_n = tl::program_id(1);
  auto offs_m = pid_m * BLOCK_M + tl::arange(0, BLOCK_M);
  auto offs_n = pid_n * BLOCK_N + tl::arange(0, BLOCK_N);
  auto offs_k = tl::arange(0, BLOCK_K);
  // Rows past M and columns past N wrap around: they compute values the store never writes.
  auto a_ptrs = a_ptr + ((offs_m % M)[{_, None}] * K + offs_k[{None, _}]);
  auto b_ptrs = b_ptr + (offs_k[{_, None}] + (offs_n % N)[{None, _}] * K);
  auto acc = tl::zeros<float>({BLOCK_M, BLOCK_N});
  for (auto k : tl::range(0, tl::cdiv(K, BLOCK_K))) {
    auto k_remaining = K - k * BLOCK_K;
    auto a = tl::load(a_ptrs, offs_k[{None, _}] < k_remaining, 0.0);
    auto b = tl::load(b_ptrs, offs_k[{_, None}] < k_remaining, 0.0);
    acc = tl::dot(a, b, acc); // fp8 x fp8 -> f32
    a_ptrs += BLOCK_K;
    b_ptrs += BLOCK_K;
  }
  // The scales factor out of the sum over K: applied once, to the f32 accumulator.
  if (ROWWISE) {
    auto sa = tl::load(a_scale_ptr + offs_m, offs_m < M, 0.f);
    auto sb = tl::load(b_scale_ptr + offs_n, offs_n < N, 0.f);
    acc = acc * sa[{_, None}] * sb[{None, _}];
  } else {
    acc = acc * (tl::load(a_scale_ptr) * tl::load(b_scale_ptr));
  }
  acc = acc + tl::load(bias_ptr + offs_n, offs_n < N, 0.f)[{None, _}];
  if (ACT == 1)
    acc = tl::maximum(acc, 0.f);
  else if (ACT == 2)
    acc = acc * tl::sigmoid(acc);
  auto mask = (offs_m[{_, None}] < M) && (offs_n[{None, _}] < N);
  tl::store(c_ptr + offs_m[{_, None}] * N + offs_n[{None, _}], acc.to<half>(), mask);
}

struct Shape {
  int M, K, N;
};

// Weights (N x K) quantized offline: per output channel (row of W), or one scale for the tensor.
void quantize_weights(const std::vector<float>& w, int K, int N, bool rowwise,
                      std::vector<float8e4nv>& q, std::vector<float>& scale) {
  scale.assign(rowwise ? N : 1, 0.f);
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k) {
      float& s = scale[rowwise ? n : 0];
      s = std::max(s, std::fabs(w[size_t(n) * K + k]));
    }
  for (float& s : scale)
    s = std::max(s, 1e-10f) / kFp8Max;
  q.resize(w.size());
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k)
      q[size_t(n) * K + k] = float8e4nv(w[size_t(n) * K + k] / scale[rowwise ? n : 0]);
}

bool run_shape(const tritium::Device& dev, Shape s, bool rowwise, int act) {
  const int M = s.M, K = s.K, N = s.N;
  std::mt19937 rng(M * 7 + N * 3 + K + rowwise);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<half> hx(size_t(M) * K);
  std::vector<float> hw(size_t(N) * K), hbias(N); // W: N x K
  for (int m = 0; m < M; ++m) { // tokens of different magnitudes, as activations have
    const float range = std::exp(2.f * dist(rng));
    for (int k = 0; k < K; ++k)
      hx[size_t(m) * K + k] = half(range * dist(rng));
  }
  for (auto& v : hw)
    v = 0.05f * dist(rng);
  for (auto& v : hbias)
    v = dist(rng);
  std::vector<float8e4nv> hwq;
  std::vector<float> hws;
  quantize_weights(hw, K, N, rowwise, hwq, hws);

  auto x = dev.from_host(hx);
  auto wq = dev.from_host(hwq);
  auto ws = dev.from_host(hws);
  auto bias = dev.from_host(hbias);
  auto xq = dev.alloc<float8e4nv>(size_t(M) * K);
  // Per-tensor: the activations' scale calibrated on this batch (max |x| / 448).
  float calibrated = 1e-10f;
  for (half v : hx)
    calibrated = std::max(calibrated, std::fabs(float(v)));
  auto xs = dev.from_host(std::vector<float>(rowwise ? M : 1, calibrated / kFp8Max));
  auto c = dev.alloc<half>(size_t(M) * N);

  static auto quantize = tritium::jit(quantize_kernel, "quantize_kernel");
  static auto gemm = tritium::jit(scaled_fp8_matmul_kernel, "scaled_fp8_matmul_kernel");
  const bool gpu = dev.name() == "cuda" || dev.name() == "hip";
  const int bm = gpu ? 128 : 64, bn = gpu ? 128 : 64, bk = gpu ? 64 : 32;
  gemm.options({.num_warps = gpu ? 8 : 4, .num_stages = 3});
  int qblock = 1;
  while (qblock < K)
    qblock *= 2;
  quantize.options({.num_warps = std::clamp(qblock / 256, 1, 16)});
  auto forward = [&] {
    quantize[{M}](x, xq, xs, K, qblock, rowwise);
    gemm[{tritium::cdiv(M, bm), tritium::cdiv(N, bn)}](xq, wq, xs, ws, bias, c, M, N, K, bm, bn, bk,
                                                       rowwise, act);
  };
  forward();
  dev.synchronize();
  std::vector<float8e4nv> gxq = xq.to_host();
  std::vector<float> gxs = xs.to_host();
  std::vector<half> got = c.to_host();

  // Reference in double from the quantized operands the kernels used (the quantization is
  // checked separately: every code is the rounding of x / scale), and the fp16 GEMM's result
  // on the unquantized values for the error fp8 costs.
  std::vector<size_t> check;
  if (size_t(M) * N <= 65536) {
    for (size_t i = 0; i < size_t(M) * N; ++i)
      check.push_back(i);
  } else {
    std::uniform_int_distribution<size_t> pick(0, size_t(M) * N - 1);
    for (int i = 0; i < 4096; ++i)
      check.push_back(pick(rng));
  }
  int bad_codes = 0;
  for (int m = 0; m < M; ++m) {
    double absmax = 1e-10;
    for (int k = 0; k < K; ++k)
      absmax = std::max(absmax, std::fabs(double(float(hx[size_t(m) * K + k]))));
    if (!rowwise)
      absmax = calibrated;
    else if (std::fabs(gxs[m] - absmax / kFp8Max) > 1e-6 * absmax / kFp8Max)
      ++bad_codes;
    for (int k = 0; k < K; ++k) { // within half an fp8 step of x / scale (e4m3: 2^-4 relative)
      const double v = double(float(hx[size_t(m) * K + k])) * kFp8Max / absmax;
      if (std::fabs(double(float(gxq[size_t(m) * K + k])) - v) >
          std::ldexp(1.0, -10) + 0.0626 * std::fabs(v))
        ++bad_codes;
    }
  }
  auto activate = [act](double v) {
    return act == 1 ? std::max(v, 0.0) : act == 2 ? v / (1 + std::exp(-v)) : v;
  };
  double max_err = 0, max_ref = 0, max_q_err = 0;
  for (size_t idx : check) {
    size_t i = idx / N, j = idx % N;
    double acc = 0, exact = 0;
    for (int k = 0; k < K; ++k) {
      acc += double(float(gxq[i * K + k])) * double(float(hwq[size_t(j) * K + k]));
      exact += double(float(hx[i * K + k])) * hw[size_t(j) * K + k];
    }
    const double ref = activate(acc * gxs[rowwise ? i : 0] * hws[rowwise ? j : 0] + hbias[j]);
    max_ref = std::max(max_ref, std::fabs(ref));
    max_err = std::max(max_err, std::fabs(double(float(got[idx])) - ref));
    max_q_err = std::max(max_q_err, std::fabs(ref - activate(exact + hbias[j])));
  }
  const double rel = max_err / std::max(max_ref, 1e-30);
  const bool ok = rel <= 4e-3 && bad_codes == 0; // fp16 output and f32 accumulation

  const int reps = dev.name() == "interpreter" || dev.name() == "gpu-emulator" ? 1 : 10;
  const double ms = tritium::bench(dev, forward, {.warmup = 0, .reps = reps}).median_ms;
  fmt::print("(M, K, N) = ({:4}, {:4}, {:4}) {} scales, act {}: max relative error {:.2e} "
             "(bound 4e-3; fp8 against the unquantized product: {:.2e}), {} bad codes, "
             "{:9.3f} ms ({:.2f} TFLOP/s with the quantization)  {}\n",
             M, K, N, rowwise ? "per-channel" : "per-tensor", act, rel,
             max_q_err / std::max(max_ref, 1e-30), bad_codes, ms,
             2.0 * M * N * K / (ms * 1e-3) / 1e12, ok ? "ok" : "WRONG");
  return ok;
}

int main(int argc, char** argv) {
  try {
    bool full = false, small = false;
    for (int i = 1; i < argc; ++i) {
      if (std::strcmp(argv[i], "--full") == 0)
        full = true;
      else if (std::strcmp(argv[i], "--small") == 0)
        small = true;
      else {
        fmt::print(stderr, "usage: {} [--full | --small]\n", argv[0]);
        return 2;
      }
    }
    tritium::Device dev = tritium::default_device();
    fmt::print("device: {}\n", dev.str());
    const bool interpreter = dev.name() == "interpreter" || dev.name() == "gpu-emulator";
    const bool gpu = dev.name() == "cuda" || dev.name() == "hip";
    std::vector<Shape> shapes = {{64, 256, 128}, {100, 320, 72}};
    if (full || (!small && !interpreter))
      shapes.push_back({1024, 1024, 1024});
    if (full || (!small && gpu))
      shapes.push_back({4096, 4096, 4096});
    bool ok = true;
    int act = 0;
    for (Shape s : shapes)
      for (bool rowwise : {true, false})
        ok = run_shape(dev, s, rowwise, act++ % 3) && ok;
    fmt::print("{}\n", ok ? "all shapes ok" : "SOME SHAPES WRONG");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
