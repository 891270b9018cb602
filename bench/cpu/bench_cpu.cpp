// CPU backend benchmark, everything measured side by side in one run:
//   * vector add fp32 through tritium's CPU JIT vs a plain C++ loop compiled -O3 (one thread,
//     and split over the same oneTBB threads as the CPU backend uses);
//   * a 2-D fp16 transpose (64x64 tiles, 8192^2) vs memcpy of the same bytes split over the same
//     threads, in alternating rounds;
//   * GEMM fp32 (512^3, 1024^3) through tl::dot vs OpenBLAS sgemm, and vs the interpreter on
//     a size it finishes (128^3);
//   * cold JIT compile time of the vector add (first kernel in the process, and a new
//     specialization of an already-warm JIT), and a check that a cached launch compiles nothing.
// Usage: bench_cpu [--quick]
#include <tritium/tritium.hpp>

#include <cblas.h>
#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

namespace tl = tritium::tl;
using Clock = std::chrono::steady_clock;

void add_kernel(tl::ptr<float> x, tl::ptr<float> y, tl::ptr<float> out, tl::i32 n,
                tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  tl::store(out + offs, tl::load(x + offs, mask) + tl::load(y + offs, mask), mask);
}

// Triton's tile transpose (the zoo's transpose_2d): both the loads and the stores run along rows.
void transpose_kernel(tl::ptr<tl::f16> x, tl::ptr<tl::f16> y, tl::i32 M, tl::i32 N,
                      tl::constexpr_<int> B) {
  auto rm = tl::program_id(0) * B + tl::arange(0, B);
  auto rn = tl::program_id(1) * B + tl::arange(0, B);
  auto mask = (rm[{tl::_, tl::None}] < M) && (rn[{tl::None, tl::_}] < N);
  auto v = tl::load(x + rm[{tl::_, tl::None}] * N + rn[{tl::None, tl::_}], mask);
  tl::store(y + rn[{tl::_, tl::None}] * M + rm[{tl::None, tl::_}], tl::trans(v), tl::trans(mask));
}

// Triton's matmul tutorial kernel (row-major A MxK, B KxN, C MxN), fp32 with ieee precision.
void matmul_kernel(tl::ptr<float> a, tl::ptr<float> b, tl::ptr<float> c, tl::i32 M, tl::i32 N,
                   tl::i32 K, tl::constexpr_<int> BM, tl::constexpr_<int> BN,
                   tl::constexpr_<int> BK) {
  auto pid_m = tl::program_id(0);
  auto pid_n = tl::program_id(1);
  auto rm = pid_m * BM + tl::arange(0, BM);
  auto rn = pid_n * BN + tl::arange(0, BN);
  auto rk = tl::arange(0, BK);
  auto a_ptrs = a + tl::expand_dims(rm, 1) * K + tl::expand_dims(rk, 0);
  auto b_ptrs = b + tl::expand_dims(rk, 1) * N + tl::expand_dims(rn, 0);
  auto acc = tl::zeros<float>({BM, BN});
  for (auto k : tl::range(0, tl::cdiv(K, BK))) {
    auto a_mask = tl::expand_dims(rk, 0) < K - k * BK;
    auto b_mask = tl::expand_dims(rk, 1) < K - k * BK;
    auto ta = tl::load(a_ptrs, a_mask, 0.0f);
    auto tb = tl::load(b_ptrs, b_mask, 0.0f);
    acc = tl::dot(ta, tb, acc, "ieee");
    a_ptrs = a_ptrs + BK;
    b_ptrs = b_ptrs + BK * N;
  }
  auto c_ptrs = c + tl::expand_dims(rm, 1) * N + tl::expand_dims(rn, 0);
  auto c_mask = (tl::expand_dims(rm, 1) < M) & (tl::expand_dims(rn, 0) < N);
  tl::store(c_ptrs, acc, c_mask);
}

// The peer: a plain loop, compiled -O3 by the host compiler, out of line so that nothing is
// known about its pointers.
[[gnu::noinline]] void add_plain(const float* __restrict x, const float* __restrict y,
                                 float* __restrict out, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i)
    out[i] = x[i] + y[i];
}

// Median of `reps` timed runs of f after one warm-up, in seconds (tritium::bench on the CPU:
// the host clock, the caches flushed before each run), for ours and the peer alike.
double time_it(const std::function<void()>& f, int reps) {
  return tritium::bench(tritium::device("cpu"), f, {.warmup = 1, .reps = reps}).median_ms / 1e3;
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

int main(int argc, char** argv) {
  bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  auto dev = tritium::device("cpu");
  auto interp = tritium::device("interpreter");
  int threads = tbb::this_task_arena::max_concurrency();
  fmt::print("tritium CPU benchmark: device {} ({}), {} threads (oneTBB), OpenBLAS {} threads\n",
             dev.name(), dev.target(), threads, openblas_get_num_threads());

  // --- cold compile of the vector add ---
  {
    auto x = dev.alloc<float>(1024), y = dev.alloc<float>(1024), o = dev.alloc<float>(1024);
    auto k = tritium::jit(add_kernel, "add_kernel_cold");
    auto t0 = Clock::now();
    k.compiled(x, y, o, 1024, 1024);
    double first = ms_since(t0);
    t0 = Clock::now();
    k.compiled(x, y, o, 1024, 2048); // a new specialization: traced and compiled again
    double second = ms_since(t0);
    t0 = Clock::now();
    for (int i = 0; i < 1000; ++i)
      k[{1}](x, y, o, 1024, 1024);
    double cached = ms_since(t0) / 1000;
    fmt::print("cold compile, vector add (trace + lower + O3 + JIT): first in process {:.1f} ms, "
               "new specialization {:.1f} ms; cached launch {:.1f} us; specializations compiled "
               "after 1000 launches: {}\n",
               first, second, cached * 1000, k.num_compiled());
  }

  // --- vector add ---
  {
    const int64_t n = int64_t{1} << 25;
    std::vector<float> hx(n), hy(n);
    std::mt19937 rng(0);
    std::uniform_real_distribution<float> dist(0, 1);
    for (int64_t i = 0; i < n; ++i)
      hx[i] = dist(rng), hy[i] = dist(rng);
    auto x = dev.from_host(hx), y = dev.from_host(hy);
    auto o = dev.alloc<float>(n);
    auto k = tritium::jit(add_kernel, "add_kernel");
    const int block = 4096;
    double t_jit =
        time_it([&] { k[{tritium::cdiv(n, block)}](x, y, o, static_cast<int>(n), block); }, 20);
    auto out = o.to_host();
    for (int64_t i = 0; i < n; ++i)
      if (out[i] != hx[i] + hy[i]) {
        fmt::print("vector add: wrong result at {}\n", i);
        return 1;
      }
    // The same host buffers (the CPU device's memory is host memory) for the plain loop.
    auto o2 = dev.alloc<float>(n);
    const float *px = x.data(), *py = y.data();
    float* po = o2.data();
    double t_plain1 = time_it([&] { add_plain(px, py, po, 0, n); }, 20);
    double t_plain = time_it(
        [&] {
          tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, 1 << 16),
                            [&](const auto& r) { add_plain(px, py, po, r.begin(), r.end()); });
        },
        20);
    double bytes = 3.0 * 4 * n;
    fmt::print("vector add fp32, n = 2^25, BLOCK {}: tritium cpu {:.1f} GB/s; plain C++ -O3 loop "
               "{:.1f} GB/s on {} threads ({:.1f} GB/s on 1 thread); ratio {:.2f}\n",
               block, bytes / t_jit / 1e9, bytes / t_plain / 1e9, threads, bytes / t_plain1 / 1e9,
               t_plain / t_jit);
    // The tutorial's BLOCK (1024): four times as many programs, same bytes.
    double t_1024 =
        time_it([&] { k[{tritium::cdiv(n, 1024)}](x, y, o, static_cast<int>(n), 1024); }, 20);
    fmt::print("vector add fp32, n = 2^25, BLOCK 1024: tritium cpu {:.1f} GB/s; ratio to the plain "
               "loop {:.2f}\n",
               bytes / t_1024 / 1e9, t_plain / t_1024);
  }

  // --- transpose against memcpy, paired rounds (the machine's bandwidth drifts by a third
  // within minutes on a shared VM) ---
  {
    const int s = 8192;
    const size_t n = size_t(s) * s;
    std::vector<tritium::half> h(n);
    for (size_t i = 0; i < n; ++i)
      h[i] = tritium::half(static_cast<float>(i % 2039));
    auto x = dev.from_host(h);
    auto y = dev.alloc<tritium::half>(n), z = dev.alloc<tritium::half>(n);
    auto k = tritium::jit(transpose_kernel, "transpose_kernel");
    const size_t bytes = n * sizeof(tritium::half);
    auto r = tritium::bench_interleaved(
        dev,
        {[&] {
           k[{s / 64, s / 64}](x, y, s, s, 64);
         },
         [&] {
           tbb::parallel_for(tbb::blocked_range<size_t>(0, size_t(threads)), [&](const auto& t) {
             for (size_t i = t.begin(); i < t.end(); ++i)
               std::memcpy(reinterpret_cast<char*>(z.data()) + bytes / threads * i,
                           reinterpret_cast<const char*>(x.data()) + bytes / threads * i,
                           bytes / threads);
           });
         }},
        {.reps = quick ? 5 : 20});
    auto out = y.to_host();
    for (size_t i = 0; i < n; i += 4099)
      if (std::memcmp(&out[(i % s) * s + i / s], &h[i], 2) != 0) {
        fmt::print("transpose: wrong result at {}\n", i);
        return 1;
      }
    const double moved = 2.0 * static_cast<double>(bytes);
    fmt::print("transpose fp16 {}^2 (64x64 tiles): tritium cpu {:.2f} ms, {:.1f} GB/s; memcpy of "
               "the same bytes on {} threads {:.2f} ms, {:.1f} GB/s; ratio {:.2f}\n",
               s, r[0].median_ms, moved / r[0].median_ms / 1e6, threads, r[1].median_ms,
               moved / r[1].median_ms / 1e6, r[1].median_ms / r[0].median_ms);
  }

  // --- GEMM ---
  auto gemm = [&](int64_t s, bool with_blas, bool with_interp, int reps) {
    std::vector<float> ha(s * s), hb(s * s);
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist(-1, 1);
    for (auto& v : ha)
      v = dist(rng);
    for (auto& v : hb)
      v = dist(rng);
    auto k = tritium::jit(matmul_kernel, "matmul_kernel");
    const int BM = 64, BN = 64, BK = 32;
    tritium::LaunchGrid grid{tritium::cdiv(s, BM), tritium::cdiv(s, BN), 1};
    // Ours and OpenBLAS's in alternating rounds (paired: this VM's speed drifts by a fifth
    // within a minute); the interpreter on its own.
    auto a = dev.from_host(ha), b = dev.from_host(hb);
    auto c = dev.alloc<float>(s * s);
    const int si = static_cast<int>(s);
    auto t0 = Clock::now();
    k.compiled(a, b, c, si, si, si, BM, BN, BK);
    double compile_ms = ms_since(t0);
    std::vector<float> hc(s * s);
    std::vector<std::function<void()>> fns = {[&] { k[grid](a, b, c, si, si, si, BM, BN, BK); }};
    if (with_blas)
      fns.push_back([&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s, s, s, 1.0f, ha.data(), s,
                    hb.data(), s, 0.0f, hc.data(), s);
      });
    auto times = tritium::bench_interleaved(dev, fns, {.warmup = 1, .reps = reps});
    std::vector<float> ours = c.to_host();
    double t_ours = times[0].median_ms / 1e3;
    double flops = 2.0 * s * s * s;
    std::string line = fmt::format("GEMM fp32 {}^3 (BM {} BN {} BK {}): tritium cpu {:.1f} GFLOP/s "
                                   "(compile {:.0f} ms)",
                                   s, BM, BN, BK, flops / t_ours / 1e9, compile_ms);
    if (with_blas) {
      double t_blas = times[1].median_ms / 1e3;
      double err = 0;
      for (int64_t i = 0; i < s * s; ++i)
        err = std::max(err, static_cast<double>(std::fabs(hc[i] - ours[i])));
      line += fmt::format("; OpenBLAS {:.1f} GFLOP/s; ratio {:.2f}; max |diff| {:.2g}",
                          flops / t_blas / 1e9, t_blas / t_ours, err);
    }
    if (with_interp) {
      auto ai = interp.from_host(ha), bi = interp.from_host(hb);
      auto ci = interp.alloc<float>(s * s);
      double t_int = time_it([&] { k[grid](ai, bi, ci, si, si, si, BM, BN, BK); }, 1);
      std::vector<float> ref = ci.to_host();
      bool same = ref == ours;
      line += fmt::format("; interpreter {:.3f} GFLOP/s (ratio {:.0f}x), results {}",
                          flops / t_int / 1e9, t_int / t_ours, same ? "bit-identical" : "DIFFER");
    }
    fmt::print("{}\n", line);
  };
  gemm(128, true, true, 20);
  gemm(512, true, false, quick ? 3 : 10);
  gemm(1024, true, false, quick ? 2 : 30);
  return 0;
}
