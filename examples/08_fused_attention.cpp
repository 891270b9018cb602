// Tutorial 08: fused attention (forward).
//
// Triton's tutorial 06, forward pass, in C++: the Flash Attention v2 algorithm (Tri Dao,
// https://tridao.me/publications/flash2/flash2.pdf). For each batch b and head h,
//   O = softmax(Q K^T * sm_scale) V        (Q, K, V, O: fp16 [B, H, N_CTX, HEAD_DIM])
// without ever storing the N_CTX x N_CTX score matrix: each program owns BLOCK_M rows of Q and
// walks over K and V in blocks of BLOCK_N rows, keeping a running maximum m_i and a running sum
// l_i of the exponentials per row ("online softmax"): when a new block raises the maximum, the
// accumulator and the sum so far are rescaled by 2^(m_old - m_new). The kernel also writes
// M = m_i + log2(l_i), the base-2 logsumexp of each row, which a backward pass needs.
// You will learn:
//   * tensor descriptors (tl::make_tensor_descriptor, desc.load / desc.store) over a 2-D view
//     [B * H * N_CTX, HEAD_DIM] of each tensor;
//   * tl::dot on fp16 blocks with an f32 accumulator, and tl::trans;
//   * exp2 with the scale folded in: 2^(x * sm_scale * log2(e)) = e^(x * sm_scale);
//   * causal attention in two stages (blocks fully below the diagonal, then the diagonal
//     block with a mask), chosen by a constexpr, so each stage compiles to its own loop;
//   * tritium::autotune over BLOCK_M, BLOCK_N, num_warps and num_stages, as the tutorial's
//     @triton.autotune (TRITIUM_AUTOTUNE=print shows each shape's table).
// The kernel and its launcher live in attention_forward.hpp, which tutorial 14 (the backward
// pass) includes too.
//
// Usage: 08_fused_attention [--full | --small]
//   Checks B = 1, H = 2, N_CTX = 1024 (the tutorial's test; 64 on the interpreter or with
//   --small), HEAD_DIM 64 and 128, causal and not, against plain C++ in double; where the
//   device is a GPU (or with --full) measures B = 4, H = 32, N_CTX {1024, 4096}.

#include "attention_forward.hpp"

#include <tritium/tritium.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <tuple>
#include <vector>

bool check(const tritium::Device& dev, int Z, int H, int N_CTX, int HEAD_DIM, bool causal) {
  std::mt19937 rng(Z * 1000 + H * 100 + N_CTX + HEAD_DIM + causal);
  std::normal_distribution<float> dist(0.f, 0.5f); // as the tutorial: normal(0, 0.5)
  const size_t n = size_t(Z) * H * N_CTX * HEAD_DIM;
  std::vector<half> hq(n), hk(n), hv(n);
  for (auto* t : {&hq, &hk, &hv})
    for (auto& x : *t)
      x = half(dist(rng));
  const float sm_scale = 0.5f;
  auto q = dev.from_host(hq), k = dev.from_host(hk), v = dev.from_host(hv);
  auto out = dev.alloc<half>(n);
  auto lse = dev.alloc<float>(size_t(Z) * H * N_CTX);
  attention(q, k, v, out, lse, Z, H, N_CTX, HEAD_DIM, causal, sm_scale);
  auto o = out.to_host();
  auto m = lse.to_host();

  // Plain C++, in double, as the tutorial's reference: p = softmax(q k^T * sm_scale), rounded
  // to fp16, times v.
  double err_o = 0, err_m = 0;
  std::vector<double> s(N_CTX);
  for (int zh = 0; zh < Z * H; ++zh) {
    const size_t base = size_t(zh) * N_CTX * HEAD_DIM;
    for (int i = 0; i < N_CTX; ++i) {
      int last = causal ? i : N_CTX - 1;
      double mx = -INFINITY;
      for (int j = 0; j <= last; ++j) {
        double d = 0;
        for (int c = 0; c < HEAD_DIM; ++c)
          d += double(float(hq[base + size_t(i) * HEAD_DIM + c])) *
               float(hk[base + size_t(j) * HEAD_DIM + c]);
        s[j] = d * sm_scale;
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (int j = 0; j <= last; ++j)
        sum += std::exp(s[j] - mx);
      double ref_m = (mx + std::log(sum)) / std::log(2.0);
      err_m = std::max(err_m, std::fabs(m[size_t(zh) * N_CTX + i] - ref_m));
      for (int c = 0; c < HEAD_DIM; ++c) {
        double acc = 0;
        for (int j = 0; j <= last; ++j)
          acc += double(float(half(float(std::exp(s[j] - mx) / sum)))) *
                 float(hv[base + size_t(j) * HEAD_DIM + c]);
        err_o = std::max(err_o, std::fabs(float(o[base + size_t(i) * HEAD_DIM + c]) - acc));
      }
    }
  }
  // The tutorial's tolerance for the output (atol 1e-2); the logsumexp is f32 arithmetic.
  const double bound_o = 1e-2, bound_m = 1e-3;
  bool ok = err_o <= bound_o && err_m <= bound_m;
  fmt::print("Z {} H {} N_CTX {} HEAD_DIM {} {}: output within {:.1e} (bound {:.0e}), logsumexp "
             "within {:.1e} (bound {:.0e})  {}\n",
             Z, H, N_CTX, HEAD_DIM, causal ? "causal" : "non-causal", err_o, bound_o, err_m,
             bound_m, ok ? "ok" : "WRONG");
  return ok;
}

void benchmark(const tritium::Device& dev, int Z, int H, int N_CTX, int HEAD_DIM, bool causal) {
  const size_t n = size_t(Z) * H * N_CTX * HEAD_DIM;
  std::vector<half> h(n);
  for (size_t i = 0; i < n; ++i)
    h[i] = half(float(int(i % 13) - 6) * 0.05f);
  auto q = dev.from_host(h), k = dev.from_host(h), v = dev.from_host(h);
  auto out = dev.alloc<half>(n);
  auto lse = dev.alloc<float>(size_t(Z) * H * N_CTX);
  attention(q, k, v, out, lse, Z, H, N_CTX, HEAD_DIM, causal, 0.5f);
  dev.synchronize();
  // Device time between two events, as Triton's benchmarks take it: no host launch
  // overhead on GPUs (host devices time on the host clock).
  auto start = dev.create_event(), stop = dev.create_event();
  double best = 1e30;
  for (int i = 0; i < 10; ++i) {
    start.record();
    attention(q, k, v, out, lse, Z, H, N_CTX, HEAD_DIM, causal, 0.5f);
    stop.record();
    best = std::min(best, stop.elapsed_ms_since(start) * 1e-3);
  }
  // As the tutorial counts it: two matmuls of 2 N_CTX^2 HEAD_DIM flops per head, half of them
  // when causal.
  double flops = 4.0 * Z * H * double(N_CTX) * N_CTX * HEAD_DIM * (causal ? 0.5 : 1.0);
  fmt::print("Z {} H {} N_CTX {} HEAD_DIM {} {}: {:.3f} ms, {:.1f} TFLOP/s\n", Z, H, N_CTX,
             HEAD_DIM, causal ? "causal" : "non-causal", best * 1e3, flops / best / 1e12);
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
    auto dev = tritium::default_device();
    const bool interpreter = dev.name() == "interpreter";
    const bool gpu = dev.name() == "cuda" || dev.name() == "hip";
    const bool reduced = small || (interpreter && !full);
    fmt::print("device: {} ({})\n", dev.name(), dev.target());
    // The tutorial's test: Z 1, H 2, N_CTX 1024; the CPU checks 256 to stay within seconds.
    const int n_ctx = reduced ? 64 : (gpu || full) ? 1024 : 256;
    if (n_ctx != 1024)
      fmt::print("checking N_CTX {} instead of the tutorial's 1024 ({}); pass --full for it\n",
                 n_ctx,
                 small         ? "--small"
                 : interpreter ? "the interpreter"
                               : "the CPU");
    bool ok = true;
    for (int d : {64, 128})
      for (bool causal : {false, true})
        ok = check(dev, 1, 2, n_ctx, d, causal) && ok;
    if (gpu || full) {
      for (int n : {1024, 4096})
        for (int d : {64, 128})
          for (bool causal : {false, true})
            benchmark(dev, 4, 32, n, d, causal);
    } else {
      fmt::print("benchmark shapes Z 4 H 32 N_CTX {{1024, 4096}} run on GPUs (or with --full)\n");
    }
    if (!ok) {
      fmt::print("FAILED: results differ from the plain C++ reference\n");
      return 1;
    }
    fmt::print("OK\n");
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
