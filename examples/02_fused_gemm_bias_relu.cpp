// Tutorial 02: a fused GEMM + bias + ReLU.
//
// This is Triton's matrix multiplication tutorial (03), in C++, with an epilogue. You will learn:
//   * block-level matrix multiplication with tl::dot: fp16 inputs, f32 accumulation;
//   * multi-dimensional pointer arithmetic with x[{tl::_, tl::None}] (Triton's x[:, None]);
//   * a dynamic loop with tl::range whose carried values (the accumulator, the pointers) are
//     ordinary C++ variables reassigned in the body;
//   * program re-ordering ("grouped ordering") for better L2 cache reuse;
//   * fusing the bias add and the ReLU into the epilogue, so that C is written once;
//   * choosing tile sizes, num_warps and num_stages with tritium::autotune (Triton's
//     @triton.autotune): each configuration is timed on the first call for a shape, the
//     fastest kept in memory and on disk (TRITIUM_AUTOTUNE=print shows the table).
//
// Usage: 02_fused_gemm_bias_relu [--full | --small]
//   The reference interpreter (TRITIUM_DEVICE=interpreter) executes every op one element at a
//   time, so by default it runs only the two small shapes; other devices run every shape up to
//   1024^3, and GPUs also 4096^3. --full runs every shape on any device; --small only the small
//   ones.

#include <tritium/tritium.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

namespace tl = tritium::tl;
using tl::_;
using tl::None;
using tritium::half;

// C = relu(A @ B + bias): A is M x K, B is K x N (both fp16), bias has N entries (f32), C is
// M x N (fp16). Each program computes one BLOCK_SIZE_M x BLOCK_SIZE_N block of C.
void matmul_bias_relu_kernel(tl::ptr<tl::f16> a_ptr, tl::ptr<tl::f16> b_ptr,
                             tl::ptr<float> bias_ptr, tl::ptr<tl::f16> c_ptr,
                             // Matrix dimensions.
                             tl::i32 M, tl::i32 N, tl::i32 K,
                             // Strides: how far to move in memory to go one row or column on.
                             // A stride of 1 is specialized to a constant at launch.
                             tl::i32 stride_am, tl::i32 stride_ak, tl::i32 stride_bk,
                             tl::i32 stride_bn, tl::i32 stride_cm, tl::i32 stride_cn,
                             // Meta-parameters: part of the compiled kernel's specialization.
                             tl::constexpr_<int> BLOCK_SIZE_M, tl::constexpr_<int> BLOCK_SIZE_N,
                             tl::constexpr_<int> BLOCK_SIZE_K, tl::constexpr_<int> GROUP_SIZE_M,
                             tl::constexpr_<bool> FUSE_EPILOGUE) {
  // Which block of C this program computes. Programs are launched on a 1-D grid; walking it
  // row by row would make consecutive programs read all of B for each row of blocks. Instead,
  // GROUP_SIZE_M rows of blocks are walked column by column, so that programs running at the
  // same time share rows of A and columns of B in the L2 cache.
  auto pid = tl::program_id(0);
  auto num_pid_m = tl::cdiv(M, BLOCK_SIZE_M);
  auto num_pid_n = tl::cdiv(N, BLOCK_SIZE_N);
  auto num_pid_in_group = GROUP_SIZE_M * num_pid_n;
  auto group_id = pid / num_pid_in_group;
  auto first_pid_m = group_id * GROUP_SIZE_M;
  auto group_size_m =
      tl::minimum(num_pid_m - first_pid_m, GROUP_SIZE_M); // the last group may be short
  auto pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m);
  auto pid_n = (pid % num_pid_in_group) / group_size_m;
  // (tl::swizzle2d(i, j, size_i, size_j, GROUP_SIZE_M) computes the same mapping.)

  // Pointers to the first blocks of A and B. Rows past M and columns past N wrap around
  // (% M, % N): they compute garbage that the masked store never writes, and every load stays
  // in bounds without a mask.
  auto offs_am = (pid_m * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M)) % M;
  auto offs_bn = (pid_n * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N)) % N;
  auto offs_k = tl::arange(0, BLOCK_SIZE_K);
  // x[{_, None}] is Triton's x[:, None]: a column, which broadcasts against a row.
  auto a_ptrs = a_ptr + (offs_am[{_, None}] * stride_am + offs_k[{None, _}] * stride_ak);
  auto b_ptrs = b_ptr + (offs_k[{_, None}] * stride_bk + offs_bn[{None, _}] * stride_bn);

  // Walk K one block at a time, accumulating in f32. tl::range emits one loop: its body is
  // traced once, and `accumulator`, `a_ptrs` and `b_ptrs`, reassigned in it, become the loop's
  // carried values.
  auto accumulator = tl::zeros<float>({BLOCK_SIZE_M, BLOCK_SIZE_N});
  for (auto k : tl::range(0, tl::cdiv(K, BLOCK_SIZE_K))) {
    // The last block of K may be partial: masked lanes read 0, which adds nothing.
    auto k_remaining = K - k * BLOCK_SIZE_K;
    auto a = tl::load(a_ptrs, offs_k[{None, _}] < k_remaining, 0.0);
    auto b = tl::load(b_ptrs, offs_k[{_, None}] < k_remaining, 0.0);
    // fp16 x fp16 -> f32 on the matrix units.
    accumulator = tl::dot(a, b, accumulator);
    a_ptrs += BLOCK_SIZE_K * stride_ak;
    b_ptrs += BLOCK_SIZE_K * stride_bk;
  }

  // The epilogue, in registers: add the bias (one value per column, broadcast down the rows)
  // and apply the ReLU while the accumulator is still f32, then convert to fp16 once.
  if (FUSE_EPILOGUE) { // a C++ `if` on a constexpr_: decided while tracing
    auto bias = tl::load(bias_ptr + offs_bn);
    accumulator = tl::maximum(accumulator + bias[{None, _}], 0.f);
  }
  auto c = accumulator.to<half>();

  // The single store of C, masked to the matrix.
  auto offs_cm = pid_m * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M);
  auto offs_cn = pid_n * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
  auto c_ptrs = c_ptr + stride_cm * offs_cm[{_, None}] + stride_cn * offs_cn[{None, _}];
  auto c_mask = (offs_cm[{_, None}] < M) && (offs_cn[{None, _}] < N);
  tl::store(c_ptrs, c, c_mask);
}

// The second kernel of the unfused baseline: y = relu(x + bias) over an M x N matrix, one row
// block of BLOCK_SIZE columns per program.
void bias_relu_kernel(tl::ptr<tl::f16> x_ptr, tl::ptr<float> bias_ptr, tl::ptr<tl::f16> y_ptr,
                      tl::i32 N, tl::constexpr_<int> BLOCK_SIZE) {
  auto row = tl::program_id(0);
  auto cols = tl::program_id(1) * BLOCK_SIZE + tl::arange(0, BLOCK_SIZE);
  auto mask = cols < N;
  auto x = tl::load(x_ptr + row * N + cols, mask).to<float>();
  auto bias = tl::load(bias_ptr + cols, mask);
  tl::store(y_ptr + row * N + cols, tl::maximum(x + bias, 0.f).to<half>(), mask);
}

// The configurations the autotuner tries (Triton's tutorial 03 does the same with
// @triton.autotune): on a GPU, tiles that feed the matrix units with 3-4 pipeline stages; the
// interpreter and the CPU run one small tile (nothing to choose, so nothing is timed).
std::vector<tritium::Config> configs_for(const tritium::Device& dev) {
  auto tile = [](int m, int n, int k, int warps, int stages) {
    return tritium::Config{
        {{"BLOCK_SIZE_M", m}, {"BLOCK_SIZE_N", n}, {"BLOCK_SIZE_K", k}, {"GROUP_SIZE_M", 8}},
        warps,
        stages};
  };
  std::vector<tritium::Config> gpu = {tile(128, 256, 64, 8, 4), tile(256, 128, 64, 8, 4),
                                      tile(128, 128, 64, 8, 4), tile(128, 128, 64, 4, 4),
                                      tile(128, 64, 64, 4, 4),  tile(64, 128, 64, 4, 4),
                                      tile(64, 64, 64, 4, 3),   tile(128, 128, 32, 4, 3)};
  // Narrow tiles for the smallest shapes, where more programs in flight beat bigger tiles
  // (wgmma takes N = 16 or 32; on an H200 the seed's 64 x 256 x 128 GEMM+bias+ReLU ran
  // 4.45 us at 64 x 16 against 4.67 at 64 x 64, by Nsight Compute).
  if (dev.name() == "cuda") {
    gpu.push_back(tile(64, 32, 64, 4, 4));
    gpu.push_back(tile(64, 16, 64, 4, 4));
  }
  if (dev.name() == "cuda" || dev.name() == "hip")
    return gpu;
  return {tile(64, 64, 32, 4, 3)};
}

// Launches the fused kernel (or, with fuse = false, the plain GEMM) on row-major matrices,
// with the configuration the autotuner chose for this shape on this device.
void matmul(const tritium::Buffer<half>& a, const tritium::Buffer<half>& b,
            const tritium::Buffer<float>& bias, tritium::Buffer<half>& c, int M, int N, int K,
            bool fuse) {
  static auto kernel = tritium::autotune(matmul_bias_relu_kernel, "matmul_bias_relu_kernel",
                                         configs_for(a.device()));
  kernel(
      fmt::format("M={} N={} K={} fuse={}", M, N, K, fuse),
      [&](auto& k, const tritium::Config& cfg) {
        int grid =
            tritium::cdiv(M, int(cfg["BLOCK_SIZE_M"])) * tritium::cdiv(N, int(cfg["BLOCK_SIZE_N"]));
        k[{grid}](a, b, bias, c, M, N, K, /*stride_am=*/K, /*stride_ak=*/1, /*stride_bk=*/N,
                  /*stride_bn=*/1, /*stride_cm=*/N, /*stride_cn=*/1, cfg["BLOCK_SIZE_M"],
                  cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"], cfg["GROUP_SIZE_M"], fuse);
      },
      a.device());
}

void bias_relu(const tritium::Buffer<half>& x, const tritium::Buffer<float>& bias,
               tritium::Buffer<half>& y, int M, int N) {
  static auto kernel = tritium::jit(bias_relu_kernel, "bias_relu_kernel");
  constexpr int block = 1024;
  kernel[{M, tritium::cdiv(N, block)}](x, bias, y, N, block);
}

// Median time of `reps` runs after one that compiles, in milliseconds (tritium::bench: device
// events on GPUs, the caches flushed before each run).
double time_ms(const tritium::Device& dev, const std::function<void()>& fn, int reps) {
  return tritium::bench(dev, fn, {.warmup = 0, .reps = reps}).median_ms;
}

struct Shape {
  int M, K, N;
};

// Runs one shape; returns false if the result is wrong.
bool run_shape(const tritium::Device& dev, Shape s, bool interpreter) {
  const int M = s.M, K = s.K, N = s.N;
  std::mt19937 rng(M * 7 + N * 3 + K);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<half> ha(size_t(M) * K), hb(size_t(K) * N);
  std::vector<float> hbias(N);
  for (auto& v : ha)
    v = half(dist(rng));
  for (auto& v : hb)
    v = half(dist(rng));
  for (auto& v : hbias)
    v = dist(rng);
  auto a = dev.from_host(ha);
  auto b = dev.from_host(hb);
  auto bias = dev.from_host(hbias);
  auto c = dev.alloc<half>(size_t(M) * N);
  auto tmp = dev.alloc<half>(size_t(M) * N);
  auto c_unfused = dev.alloc<half>(size_t(M) * N);

  matmul(a, b, bias, c, M, N, K, /*fuse=*/true);
  matmul(a, b, bias, tmp, M, N, K, /*fuse=*/false);
  bias_relu(tmp, bias, c_unfused, M, N);
  dev.synchronize();
  std::vector<half> got = c.to_host(), got_unfused = c_unfused.to_host();

  // Plain C++ reference in double. Large shapes check a sample of 4096 entries (each costs K
  // multiply-adds on the host); small shapes check every entry.
  std::vector<size_t> check;
  if (size_t(M) * N <= 65536) {
    for (size_t i = 0; i < size_t(M) * N; ++i)
      check.push_back(i);
  } else {
    std::uniform_int_distribution<size_t> pick(0, size_t(M) * N - 1);
    for (int i = 0; i < 4096; ++i)
      check.push_back(pick(rng));
  }
  double max_err = 0, max_ref = 0, max_err_unfused = 0;
  for (size_t idx : check) {
    size_t i = idx / N, j = idx % N;
    double acc = 0;
    for (int k = 0; k < K; ++k)
      acc += double(float(ha[i * K + k])) * double(float(hb[size_t(k) * N + j]));
    double ref = std::max(acc + hbias[j], 0.0);
    max_ref = std::max(max_ref, std::fabs(ref));
    max_err = std::max(max_err, std::fabs(double(float(got[idx])) - ref));
    max_err_unfused = std::max(max_err_unfused, std::fabs(double(float(got_unfused[idx])) - ref));
  }
  // fp16 output: 2^-11 relative rounding, plus f32 accumulation error over K terms.
  const double bound = 4e-3;
  double rel = max_err / std::max(max_ref, 1e-30);
  double rel_unfused = max_err_unfused / std::max(max_ref, 1e-30);
  bool ok = rel <= bound && rel_unfused <= bound;

  std::string timing;
  {
    // The interpreter and the gpu-emulator (the GPU lowering run on the CPU) time one run.
    int reps = interpreter || dev.name() == "gpu-emulator" ? 1 : 10;
    double fused = time_ms(
        dev, [&] { matmul(a, b, bias, c, M, N, K, true); }, reps);
    double unfused = time_ms(
        dev,
        [&] {
          matmul(a, b, bias, tmp, M, N, K, false);
          bias_relu(tmp, bias, c_unfused, M, N);
        },
        reps);
    double tflops = 2.0 * M * N * K / (fused * 1e-3) / 1e12;
    timing = fmt::format("fused {:9.3f} ms ({:7.3f} TFLOP/s), unfused {:9.3f} ms", fused, tflops,
                         unfused);
  }
  fmt::print("(M, K, N) = ({:4}, {:4}, {:4}): max relative error {:.2e} (unfused {:.2e}, bound "
             "{:.0e}, {} entries checked)  {}  {}\n",
             M, K, N, rel, rel_unfused, bound, check.size(), timing, ok ? "ok" : "WRONG");
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
    auto dev = tritium::default_device();
    const bool interpreter = dev.name() == "interpreter";
    const bool gpu = dev.name() == "cuda" || dev.name() == "hip";
    fmt::print("device: {} ({})\n", dev.name(), dev.target());
    fmt::print("C = relu(A @ B + bias), A and B fp16, accumulation f32, C fp16\n");

    // The seed's shapes, then 4096^3.
    std::vector<Shape> shapes{
        {64, 256, 128}, {128, 256, 256}, {1024, 1024, 1024}, {4096, 4096, 4096}};
    size_t count = shapes.size();
    if (!full) {
      if (small || interpreter)
        count = 2;
      else if (!gpu)
        count = 3;
    }
    if (count < shapes.size())
      fmt::print("running {} of {} shapes on this device ({}); pass --full for all of them\n",
                 count, shapes.size(),
                 interpreter ? "the interpreter runs one element at a time"
                             : (small ? "--small" : "4096^3 runs on GPUs"));
    if (interpreter)
      fmt::print("note: interpreter timings measure the reference interpreter, not a GPU\n");

    bool ok = true;
    for (size_t i = 0; i < count; ++i)
      ok = run_shape(dev, shapes[i], interpreter) && ok;
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
