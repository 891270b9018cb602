// Tutorial 07: layer normalization, backward.
//
// Triton's tutorial 05, backward pass, in C++. With x_hat = (x - mean) * rstd and
// y = x_hat * w + b (tutorial 05 computes y, mean and rstd), the gradients are
//   dx = (w dy - (x_hat c1 + c2)) * rstd,  c1 = mean(x_hat * w dy),  c2 = mean(w dy)  (per row)
//   dw = sum over rows of dy * x_hat,      db = sum over rows of dy.
// dx is row-local, like the forward pass. dw and db are sums over all M rows: one program per
// row cannot own them. Triton's answer, in two kernels:
//   1. each program adds its row's dy * x_hat and dy into one of GROUP_SIZE_M partial buffers
//      (row % GROUP_SIZE_M), which it owns for a moment by taking a spin lock with atomic_cas;
//   2. a second kernel sums the GROUP_SIZE_M partial rows into dw and db.
// You will learn:
//   * atomic_cas and atomic_xchg on scalars, and a spin lock with tl::while_;
//   * tl::if_ on a value loaded at run time (the first program into a buffer stores, later
//     ones accumulate), with a variable reassigned in one branch only;
//   * tl::debug_barrier so that every thread's stores land before the lock is released;
//   * 2-D blocks and tl::sum along axis 0 in the final reduction.
//
// Usage: 07_layer_norm_backward [--full | --small]
//   Checks forward and backward on 1151 x 8192 (the tutorial's shape; 16 x 8192 on the
//   interpreter or with --small) and 37 x 1000 against plain C++ in double, and where the
//   device is not the interpreter (or with --full) measures the backward on 4096 x {1024, 4096,
//   8192} (only 4096 x 1024 on the CPU without --full).

#include <tritium/tritium.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace tl = tritium::tl;
using tritium::Buffer;
using tritium::half;

// The forward pass of tutorial 05 for one row that fits a block; it also writes mean and rstd,
// which the backward pass reads.
void layer_norm_fwd_fused(tl::ptr<tl::f16> X, tl::ptr<tl::f16> Y, tl::ptr<tl::f16> W,
                          tl::ptr<tl::f16> B, tl::ptr<float> Mean, tl::ptr<float> Rstd,
                          tl::i32 stride, tl::i32 N, tl::f32 eps, tl::constexpr_<int> BLOCK_SIZE) {
  auto row = tl::program_id(0);
  Y += row * stride;
  X += row * stride;
  auto cols = tl::arange(0, BLOCK_SIZE);
  auto mask = cols < N;
  auto x = tl::load(X + cols, mask, 0.0).to<float>();
  auto mean = tl::sum(x, 0) / N;
  auto xc = tl::where(mask, x - mean, 0.f);
  auto var = tl::sum(xc * xc, 0) / N;
  auto rstd = 1.f / tl::sqrt(var + eps);
  tl::store(Mean + row, mean);
  tl::store(Rstd + row, rstd);
  auto w = tl::load(W + cols, mask).to<float>();
  auto b = tl::load(B + cols, mask).to<float>();
  tl::store(Y + cols, (x - mean) * rstd * w + b, mask);
}

void layer_norm_bwd_dx_fused(tl::ptr<tl::f16> DX, // pointer to the input gradient
                             tl::ptr<tl::f16> DY, // pointer to the output gradient
                             tl::ptr<tl::f16> DW, // pointer to the partial sum of weights gradient
                             tl::ptr<tl::f16> DB, // pointer to the partial sum of biases gradient
                             tl::ptr<tl::f16> X,  // pointer to the input
                             tl::ptr<tl::f16> W,  // pointer to the weights
                             tl::ptr<float> Mean, // pointer to the mean
                             tl::ptr<float> Rstd, // pointer to the 1/std
                             tl::ptr<int32_t> Lock, // pointer to the lock
                             tl::i32 stride,        // how much to increase the pointer by a row
                             tl::i32 N,             // number of columns in X
                             tl::constexpr_<int> GROUP_SIZE_M, tl::constexpr_<int> BLOCK_SIZE_N) {
  // Map the program id to the elements of X, DX, and DY it should compute.
  auto row = tl::program_id(0);
  auto cols = tl::arange(0, BLOCK_SIZE_N);
  auto mask = cols < N;
  X += row * stride;
  DY += row * stride;
  DX += row * stride;
  // Offset the lock and the weights/biases gradient pointer for parallel reduction.
  auto lock_id = row % GROUP_SIZE_M;
  Lock += lock_id;
  auto Count = Lock + GROUP_SIZE_M;
  auto DWp = DW + lock_id * N + cols;
  auto DBp = DB + lock_id * N + cols;
  // Load data to SRAM.
  auto x = tl::load(X + cols, mask, 0).to<float>();
  auto dy = tl::load(DY + cols, mask, 0).to<float>();
  auto w = tl::load(W + cols, mask).to<float>();
  auto mean = tl::load(Mean + row);
  auto rstd = tl::load(Rstd + row);
  // Compute dx.
  auto xhat = (x - mean) * rstd;
  auto wdy = w * dy;
  xhat = tl::where(mask, xhat, 0.f);
  wdy = tl::where(mask, wdy, 0.f);
  auto c1 = tl::sum(xhat * wdy, 0) / N;
  auto c2 = tl::sum(wdy, 0) / N;
  auto dx = (wdy - (xhat * c1 + c2)) * rstd;
  // Write dx.
  tl::store(DX + cols, dx, mask);
  // Accumulate partial sums for dw/db.
  auto partial_dw = (dy * xhat).to<half>();
  auto partial_db = dy.to<half>();
  tl::while_([&] { return tl::atomic_cas(Lock, 0, 1) == 1; }, [] {});
  auto count = tl::load(Count);
  // First store doesn't accumulate.
  tl::if_(
      count == 0, [&] { tl::atomic_xchg(Count, 1); },
      [&] {
        partial_dw += tl::load(DWp, mask);
        partial_db += tl::load(DBp, mask);
      });
  tl::store(DWp, partial_dw, mask);
  tl::store(DBp, partial_db, mask);
  // Every thread's stores are done before the lock is released.
  tl::debug_barrier();
  // Release the lock.
  tl::atomic_xchg(Lock, 0);
}

void layer_norm_bwd_dwdb(tl::ptr<tl::f16> DW, // pointer to the partial sum of weights gradient
                         tl::ptr<tl::f16> DB, // pointer to the partial sum of biases gradient
                         tl::ptr<tl::f16> FINAL_DW, // pointer to the weights gradient
                         tl::ptr<tl::f16> FINAL_DB, // pointer to the biases gradient
                         tl::i32 M,                 // GROUP_SIZE_M
                         tl::i32 N,                 // number of columns
                         tl::constexpr_<int> BLOCK_SIZE_M, tl::constexpr_<int> BLOCK_SIZE_N) {
  // Map the program id to the elements of DW and DB it should compute.
  auto pid = tl::program_id(0);
  auto cols = pid * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
  auto dw = tl::zeros<float>({BLOCK_SIZE_M, BLOCK_SIZE_N});
  auto db = tl::zeros<float>({BLOCK_SIZE_M, BLOCK_SIZE_N});
  // Iterate through the rows of DW and DB to sum the partial sums.
  for (auto i : tl::range(0, M, BLOCK_SIZE_M)) {
    auto rows = i + tl::arange(0, BLOCK_SIZE_M);
    auto mask = (rows[{tl::_, tl::None}] < M) && (cols[{tl::None, tl::_}] < N);
    auto offs = rows[{tl::_, tl::None}] * N + cols[{tl::None, tl::_}];
    dw += tl::load(DW + offs, mask, 0.);
    db += tl::load(DB + offs, mask, 0.);
  }
  // Write the final sum to the output.
  auto sum_dw = tl::sum(dw, 0);
  auto sum_db = tl::sum(db, 0);
  tl::store(FINAL_DW + cols, sum_dw, cols < N);
  tl::store(FINAL_DB + cols, sum_db, cols < N);
}

// Sets n ints to zero (the locks and counts, before each backward pass).
void zero_kernel(tl::ptr<int32_t> P, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  tl::store(P + offs, 0, offs < n);
}

int next_pow2(int n) {
  int b = 1;
  while (b < n)
    b *= 2;
  return b;
}

// The launch parameters the tutorial derives from the row length.
struct Config {
  int block_size, num_warps, group_size_m;
  explicit Config(int N) {
    // Less than 64 KB per feature: enqueue the fused kernel.
    const int max_fused_size = 65536 / int(sizeof(half));
    block_size = std::min(max_fused_size, next_pow2(N));
    if (N > block_size)
      throw tritium::Error("this layer norm doesn't support feature dim >= 64KB");
    num_warps = std::min(std::max(block_size / 256, 1), 8);
    group_size_m = N <= 1024 ? 256 : N <= 4096 ? 128 : N <= 8192 ? 96 : 64;
  }
};

struct Forward {
  Buffer<half> y;
  Buffer<float> mean, rstd;
};
struct Backward {
  Buffer<half> dx, dw, db;
  Buffer<half> partial_dw, partial_db; // GROUP_SIZE_M x N
  Buffer<int32_t> locks;               // GROUP_SIZE_M locks, then GROUP_SIZE_M counts
};

void layer_norm_forward(const Buffer<half>& x, const Buffer<half>& w, const Buffer<half>& b,
                        Forward& f, int M, int N, float eps) {
  static auto kernel = tritium::jit(layer_norm_fwd_fused, "layer_norm_fwd_fused");
  Config cfg(N);
  kernel.options({.num_warps = cfg.num_warps});
  kernel[{M}](x, f.y, w, b, f.mean, f.rstd, N, N, eps, cfg.block_size);
}

void layer_norm_backward(const Buffer<half>& dy, const Buffer<half>& x, const Buffer<half>& w,
                         const Forward& f, Backward& g, int M, int N) {
  static auto zero = tritium::jit(zero_kernel, "zero_kernel");
  static auto dx_kernel = tritium::jit(layer_norm_bwd_dx_fused, "layer_norm_bwd_dx_fused");
  static auto dwdb_kernel = tritium::jit(layer_norm_bwd_dwdb, "layer_norm_bwd_dwdb");
  Config cfg(N);
  const int locks = 2 * cfg.group_size_m;
  zero[{tritium::cdiv(locks, 1024)}](g.locks, locks, 1024);
  dx_kernel.options({.num_warps = cfg.num_warps});
  dx_kernel[{M}](g.dx, dy, g.partial_dw, g.partial_db, x, w, f.mean, f.rstd, g.locks, N, N,
                 cfg.group_size_m, cfg.block_size);
  // Accumulate partial sums in a separate kernel.
  const int block_m = 32, block_n = 128;
  dwdb_kernel[{tritium::cdiv(N, block_n)}](g.partial_dw, g.partial_db, g.dw, g.db,
                                           std::min(cfg.group_size_m, M), N, block_m, block_n);
}

Backward alloc_backward(const tritium::Device& dev, int M, int N) {
  Config cfg(N);
  size_t partial = size_t(std::min(cfg.group_size_m, M)) * N;
  return {dev.alloc<half>(size_t(M) * N),
          dev.alloc<half>(N),
          dev.alloc<half>(N),
          dev.alloc<half>(partial),
          dev.alloc<half>(partial),
          dev.alloc<int32_t>(2 * cfg.group_size_m)};
}

bool check(const tritium::Device& dev, int M, int N) {
  std::mt19937 rng(M * 7 + N);
  std::normal_distribution<float> dist(0.f, 1.f);
  std::uniform_real_distribution<float> uni(0.f, 1.f);
  // As the tutorial: x = -2.3 + 0.5 randn, dy = 0.1 randn, w and b random.
  std::vector<half> hx(size_t(M) * N), hdy(size_t(M) * N), hw(N), hb(N);
  for (auto& v : hx)
    v = half(-2.3f + 0.5f * dist(rng));
  for (auto& v : hdy)
    v = half(0.1f * dist(rng));
  for (auto& v : hw)
    v = half(uni(rng));
  for (auto& v : hb)
    v = half(uni(rng));
  const float eps = 1e-5f;
  auto x = dev.from_host(hx), dy = dev.from_host(hdy), w = dev.from_host(hw), b = dev.from_host(hb);
  Forward f{dev.alloc<half>(hx.size()), dev.alloc<float>(M), dev.alloc<float>(M)};
  Backward g = alloc_backward(dev, M, N);
  layer_norm_forward(x, w, b, f, M, N, eps);
  layer_norm_backward(dy, x, w, f, g, M, N);
  auto y = f.y.to_host();
  auto dx = g.dx.to_host(), dw = g.dw.to_host(), db = g.db.to_host();

  // Plain C++, in double.
  std::vector<double> ref_dw(N, 0.0), ref_db(N, 0.0), abs_dw(N, 0.0), abs_db(N, 0.0);
  double err_y = 0, err_dx = 0;
  for (int i = 0; i < M; ++i) {
    const half* xr = &hx[size_t(i) * N];
    const half* dyr = &hdy[size_t(i) * N];
    double m = 0, v = 0;
    for (int j = 0; j < N; ++j)
      m += float(xr[j]);
    m /= N;
    for (int j = 0; j < N; ++j)
      v += (float(xr[j]) - m) * (float(xr[j]) - m);
    v /= N;
    double rs = 1.0 / std::sqrt(v + eps), c1 = 0, c2 = 0;
    for (int j = 0; j < N; ++j) {
      double xhat = (float(xr[j]) - m) * rs, wdy = float(hw[j]) * float(dyr[j]);
      err_y = std::max(
          err_y, std::fabs(float(y[size_t(i) * N + j]) - (xhat * float(hw[j]) + float(hb[j]))));
      c1 += xhat * wdy;
      c2 += wdy;
      ref_dw[j] += float(dyr[j]) * xhat;
      ref_db[j] += float(dyr[j]);
      abs_dw[j] += std::fabs(float(dyr[j]) * xhat);
      abs_db[j] += std::fabs(float(dyr[j]));
    }
    c1 /= N;
    c2 /= N;
    for (int j = 0; j < N; ++j) {
      double xhat = (float(xr[j]) - m) * rs, wdy = float(hw[j]) * float(dyr[j]);
      double ref = (wdy - (xhat * c1 + c2)) * rs;
      err_dx = std::max(err_dx, std::fabs(float(dx[size_t(i) * N + j]) - ref));
    }
  }
  // dw and db are summed in fp16, as the tutorial does: each partial buffer adds up to
  // r = ceil(M / GROUP_SIZE_M) terms, each addition off by at most 2^-11 of the running sum,
  // which is at most the sum of the terms' magnitudes; the final sum and store add one
  // rounding of the result. Worst case per column: 2^-11 (r + 1) sum|terms| + 2^-11 |sum|.
  Config cfg(N);
  const int r = (M + cfg.group_size_m - 1) / cfg.group_size_m;
  double worst_dwdb = 0; // the largest error as a fraction of its bound
  for (int j = 0; j < N; ++j) {
    double bw = std::ldexp(1.0, -11) * ((r + 1) * abs_dw[j] + std::fabs(ref_dw[j])) + 1e-6;
    double bb = std::ldexp(1.0, -11) * ((r + 1) * abs_db[j] + std::fabs(ref_db[j])) + 1e-6;
    worst_dwdb = std::max({worst_dwdb, std::fabs(float(dw[j]) - ref_dw[j]) / bw,
                           std::fabs(float(db[j]) - ref_db[j]) / bb});
  }
  // y is fp16 of magnitude up to ~4 (half an ulp: 2^-9); dx is fp16 of magnitude below 1 (half
  // an ulp: 2^-12), computed in f32.
  const double bound_y = 4e-3, bound_dx = 1e-3;
  bool ok = err_y <= bound_y && err_dx <= bound_dx && worst_dwdb <= 1.0;
  fmt::print("{} x {}: y within {:.1e} (bound {:.0e}), dx within {:.1e} (bound {:.0e}), dw/db at "
             "{:.2f} of their fp16 accumulation bound  {}\n",
             M, N, err_y, bound_y, err_dx, bound_dx, worst_dwdb, ok ? "ok" : "WRONG");
  return ok;
}

void benchmark(const tritium::Device& dev, int M, int N) {
  std::vector<half> hx(size_t(M) * N), hdy(size_t(M) * N, half(0.1f)), hw(N, half(1.f)),
      hb(N, half(0.f));
  for (size_t i = 0; i < hx.size(); ++i)
    hx[i] = half(float(i % 7) - 3.f);
  auto x = dev.from_host(hx), dy = dev.from_host(hdy), w = dev.from_host(hw), b = dev.from_host(hb);
  Forward f{dev.alloc<half>(hx.size()), dev.alloc<float>(M), dev.alloc<float>(M)};
  Backward g = alloc_backward(dev, M, N);
  layer_norm_forward(x, w, b, f, M, N, 1e-5f);
  layer_norm_backward(dy, x, w, f, g, M, N);
  dev.synchronize();
  // Device time between two events, as Triton's benchmarks take it: no host launch
  // overhead on GPUs (host devices time on the host clock).
  auto start = dev.create_event(), stop = dev.create_event();
  double best = 1e30;
  for (int i = 0; i < 10; ++i) {
    start.record();
    layer_norm_backward(dy, x, w, f, g, M, N);
    stop.record();
    best = std::min(best, stop.elapsed_ms_since(start) * 1e-3);
  }
  // As the tutorial counts the backward pass: x and dy read, dx written.
  double gbps = 3.0 * hx.size() * sizeof(half) / best / 1e9;
  fmt::print("backward {} x {}: {:.3f} ms, {:.1f} GB/s\n", M, N, best * 1e3, gbps);
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
    const bool reduced = small || (interpreter && !full);
    fmt::print("device: {} ({})\n", dev.name(), dev.target());
    if (reduced)
      fmt::print("checking 16 x 8192 instead of the tutorial's 1151 x 8192 ({}); pass --full for "
                 "it\n",
                 small ? "--small" : "the interpreter runs one element at a time");
    // 260 x 1000 has more rows than GROUP_SIZE_M (256), so programs share partial buffers.
    bool ok = check(dev, reduced ? 16 : 1151, 8192) && check(dev, 37, 1000) &&
              check(dev, reduced ? 260 : 3000, 1000);
    // GPUs (and --full) measure the tutorial's three widths; the CPU only the first.
    const bool gpu = dev.name() == "cuda" || dev.name() == "hip";
    if (!reduced) {
      for (int n : {1024, 4096, 8192})
        if (gpu || full || n == 1024)
          benchmark(dev, 4096, n);
    } else {
      fmt::print("benchmark shapes 4096 x {{1024, 4096, 8192}} skipped\n");
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
