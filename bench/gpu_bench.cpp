// GPU benchmarks, side by side with the baselines they must beat (bench/RESULTS.md):
//
//   launch   host time per cached launch of a tiny kernel (add_kernel on 128 elements), 20 000
//            launches: tritium::jit, the
//            compiled kernel's own launch (no jit layer), and a raw cuLaunchKernel loop on the
//            same stream, alternated so that drift hits all three alike; medians of 7 rounds.
//   vadd     vector add fp32, 2^20 … 2^28 elements, timed by tritium::bench (Triton's do_bench:
//            device events around each launch, the L2 cleared before it, the median); every
//            output checked against x + y.
//
//   first    time to the first result of a kernel new to the process (cold or warm cache).
//
// Usage: bench_gpu [launch] [vadd] [first] [--csv FILE]   (launch and vadd when none is named)
// bench/compare/*.py time Triton and PyTorch on the same workloads in the same run.
#include "runtime/cuda/cuda_api.hpp"
#include "runtime/cuda/cuda_backend.hpp"

#include "roofline/kernels.hpp"
#include <tests/support/vec_add_ptx.hpp>
#include <tritium/tritium.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace tl = tritium::tl;
using tritium::Buffer;
using tritium::Device;

namespace {

using roofline::add_kernel; // examples/01_vector_add.cpp's kernel

// The raw baseline's kernel: add_kernel's work and parameters, written by hand.
constexpr const char* kAddPtx = tritium::testing::vec_add_ptx;

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

struct Raw {
  tritium::cuda::CudaApi api;
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  CUmodule module = nullptr;
  CUfunction add = nullptr;

  void check(CUresult r, const char* what) {
    if (r != CUDA_SUCCESS)
      throw tritium::Error(fmt::format("{}: {}", what, api.describe(r)));
  }
  void init(tritium::Backend& backend) {
    std::string why;
    if (!api.load(&why))
      throw tritium::Error(why);
    check(api.cuInit(0), "cuInit");
    CUdevice dev = 0;
    check(api.cuDeviceGet(&dev, 0), "cuDeviceGet");
    // The primary context: the one tritium's CUDA backend uses too.
    check(api.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(api.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    // tritium's own stream, so that raw launches and events queue exactly as tritium's do.
    stream = static_cast<CUstream>(tritium::cuda::native_stream(backend));
    check(api.cuModuleLoadDataEx(&module, kAddPtx, 0, nullptr, nullptr), "cuModuleLoadDataEx");
    check(api.cuModuleGetFunction(&add, module, "vec_add"), "cuModuleGetFunction");
  }
};

// Fills `n` floats with a cheap deterministic pattern in [-1, 1).
void fill(std::vector<float>& v, uint64_t seed) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& x : v) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    x = static_cast<float>(static_cast<int32_t>(s >> 40) - (1 << 23)) / static_cast<float>(1 << 23);
  }
}

struct LaunchResult {
  double raw_us, backend_us, jit_us;
};

// The tiny kernel is the tutorial's add_kernel on 128 elements (one program): four
// parameters, as most small kernels have, and no work to speak of.
LaunchResult bench_launch(Device dev, Raw& raw, int launches, int rounds) {
  int n = 128;
  std::vector<float> hx(n), hy(n);
  fill(hx, 5);
  fill(hy, 6);
  auto x = dev.from_host(hx), y = dev.from_host(hy);
  auto out = dev.alloc<float>(n), raw_out = dev.alloc<float>(n);
  auto kernel = tritium::jit(add_kernel, "add_kernel");
  // Without the GPU code generator in this build, the backend's launch is still timed, on the
  // same kernel written by hand.
  std::unique_ptr<tritium::CompiledKernel> hand_written;
  tritium::CompiledKernel* compiled = nullptr;
  bool have_jit = true;
  try {
    kernel[{1}](x, y, out, n, 1024); // trace, compile, load, first launch
    dev.synchronize();
    compiled = &kernel.compiled(x, y, out, n, 1024);
  } catch (const tritium::Error& e) {
    fmt::print("jit unavailable ({}): timing the backend on hand-written PTX\n", e.what());
    have_jit = false;
    auto f32p = tritium::ir::DType::pointer_to(tritium::ir::ScalarKind::F32);
    hand_written = tritium::cuda::load_kernel(
        dev.backend(),
        {"vec_add", kAddPtx, 128, 0, {f32p, f32p, f32p, tritium::ir::ScalarKind::I32}, {}});
    compiled = hand_written.get();
  }
  tritium::ArgSlot slots[4] = {
      reinterpret_cast<uintptr_t>(x.data()), reinterpret_cast<uintptr_t>(y.data()),
      reinterpret_cast<uintptr_t>(out.data()), static_cast<tritium::ArgSlot>(n)};
  CUdeviceptr xp = reinterpret_cast<CUdeviceptr>(x.data());
  CUdeviceptr yp = reinterpret_cast<CUdeviceptr>(y.data());
  CUdeviceptr op = reinterpret_cast<CUdeviceptr>(raw_out.data());
  void* params[4] = {&xp, &yp, &op, &n};

  auto time_loop = [&](auto&& launch_once) {
    dev.synchronize();
    auto t0 = Clock::now();
    for (int i = 0; i < launches; ++i)
      launch_once();
    auto t1 = Clock::now();
    dev.synchronize();
    return std::chrono::duration<double, std::micro>(t1 - t0).count() / launches;
  };
  auto raw_once = [&] {
    raw.check(raw.api.cuLaunchKernel(raw.add, 1, 1, 1, 128, 1, 1, 0, raw.stream, params, nullptr),
              "cuLaunchKernel");
  };
  auto backend_once = [&] { compiled->launch({1}, slots); };
  auto jit_once = [&] { kernel[{1}](x, y, out, n, 1024); };

  // Warm-up of every path, then alternating rounds.
  time_loop(raw_once);
  time_loop(backend_once);
  if (have_jit)
    time_loop(jit_once);
  std::vector<double> r, b, j;
  for (int k = 0; k < rounds; ++k) {
    r.push_back(time_loop(raw_once));
    b.push_back(time_loop(backend_once));
    if (have_jit)
      j.push_back(time_loop(jit_once));
  }
  for (const auto& result : {out.to_host(), raw_out.to_host()})
    for (int i = 0; i < n; ++i)
      if (result[i] != hx[i] + hy[i])
        throw tritium::Error(fmt::format("launch benchmark: out[{}] = {}, expected {}", i,
                                         result[i], hx[i] + hy[i]));
  return {median(r), median(b), have_jit ? median(j) : 0.0};
}

struct VaddResult {
  int log2n;
  double gbps;
  double us;
};

std::vector<VaddResult> bench_vadd(Device dev, Raw& raw) {
  auto kernel = tritium::jit(add_kernel, "add_kernel");
  const size_t max_n = size_t{1} << 28;
  std::vector<float> hx(max_n), hy(max_n);
  fill(hx, 1);
  fill(hy, 2);
  std::vector<VaddResult> results;
  for (int lg = 20; lg <= 28; lg += 2) {
    size_t n = size_t{1} << lg;
    auto x = dev.from_host(std::span<const float>(hx.data(), n));
    auto y = dev.from_host(std::span<const float>(hy.data(), n));
    auto out = dev.alloc<float>(n);
    int ni = static_cast<int>(n);
    tritium::LaunchGrid grid{tritium::cdiv(static_cast<int64_t>(n), 1024)};
    // Outputs are poisoned (NaN) first, so the check below sees what the timed launches wrote.
    raw.check(raw.api.cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(out.data()), 0xff, out.bytes(),
                                      raw.stream),
              "cuMemsetD8Async");
    // Triton's do_bench: device events around each launch, 256 MB of cache cleared before it
    // (which also keeps the GPU busy while the launch is queued), the median.
    auto r = tritium::bench(dev, [&] { kernel[grid](x, y, out, ni, 1024); });
    auto got = out.to_host();
    for (size_t i = 0; i < n; ++i)
      if (got[i] != hx[i] + hy[i])
        throw tritium::Error(fmt::format("vector add 2^{}: out[{}] = {}, expected {}", lg, i,
                                         got[i], hx[i] + hy[i]));
    results.push_back({lg, r.gbps(3.0 * n * sizeof(float)), r.median_ms * 1e3});
  }
  return results;
}

// Time to the first result of a kernel never launched in this process: trace, LLVM, PTX, then
// the driver's JIT or the on-disk cubin cache. Run twice with one TRITIUM_CACHE_DIR to see a
// cold and a warm process.
void bench_first_launch(Device dev) {
  const int n = 1 << 20;
  std::vector<float> hx(n), hy(n);
  fill(hx, 3);
  fill(hy, 4);
  auto x = dev.from_host(hx), y = dev.from_host(hy);
  auto out = dev.alloc<float>(n);
  auto kernel = tritium::jit(add_kernel, "add_kernel");
  auto t0 = Clock::now();
  kernel[{n / 1024}](x, y, out, n, 1024);
  dev.synchronize();
  double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  auto got = out.to_host();
  for (int i = 0; i < n; ++i)
    if (got[i] != hx[i] + hy[i])
      throw tritium::Error(
          fmt::format("first launch: out[{}] = {}, expected {}", i, got[i], hx[i] + hy[i]));
  tritium::CompiledKernel& compiled = kernel.compiled(x, y, out, n, 1024);
  fmt::print("first launch of add_kernel (trace + compile + load + run): {:.1f} ms, cubin cache: "
             "{}\n",
             ms, compiled.artifact("cache"));
  // The module load alone, from the same PTX: through the driver's JIT (cache off), then from
  // the disk cache.
  auto f32p = tritium::ir::DType::pointer_to(tritium::ir::ScalarKind::F32);
  tritium::cuda::KernelImage image{"add_kernel",
                                   compiled.artifact("ptx"),
                                   128,
                                   0,
                                   {f32p, f32p, f32p, tritium::ir::ScalarKind::I32},
                                   {}};
  const char* dir = std::getenv("TRITIUM_CACHE_DIR");
  std::string saved = dir ? dir : "";
  auto time_load = [&] {
    auto t = Clock::now();
    auto k = tritium::cuda::load_kernel(dev.backend(), image);
    return std::pair(std::chrono::duration<double, std::milli>(Clock::now() - t).count(),
                     k->artifact("cache"));
  };
  ::setenv("TRITIUM_CACHE_DIR", "off", 1);
  auto [jit_ms, s1] = time_load();
  if (saved.empty())
    ::unsetenv("TRITIUM_CACHE_DIR");
  else
    ::setenv("TRITIUM_CACHE_DIR", saved.c_str(), 1);
  auto [cached_ms, s2] = time_load();
  fmt::print("module load from PTX: driver JIT {:.2f} ms (cache {}), from the disk cache {:.2f} "
             "ms (cache {})\n",
             jit_ms, s1, cached_ms, s2);
}

} // namespace

int main(int argc, char** argv) {
  bool do_launch = false, do_vadd = false, do_first = false;
  std::string csv;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "launch")
      do_launch = true;
    else if (a == "vadd")
      do_vadd = true;
    else if (a == "first")
      do_first = true;
    else if (a == "--csv" && i + 1 < argc)
      csv = argv[++i];
  }
  if (!do_launch && !do_vadd && !do_first)
    do_launch = do_vadd = true;
  try {
    Device dev;
    try {
      dev = tritium::device("cuda");
    } catch (const tritium::Error& e) {
      fmt::print("bench_gpu: no CUDA GPU, nothing to measure ({})\n", e.what());
      return 0;
    }
    Raw raw;
    raw.init(dev.backend());
    FILE* out = csv.empty() ? nullptr : std::fopen(csv.c_str(), "w");
    fmt::print("device: cuda ({})\n", dev.target());
    if (do_first) {
      try {
        bench_first_launch(dev);
      } catch (const tritium::Error& e) {
        fmt::print("first launch not measured: {}\n", e.what());
      }
    }
    if (do_launch) {
      auto r = bench_launch(dev, raw, 20000, 7);
      fmt::print("host time per launch, tiny kernel, 20000 launches, median of 7 rounds:\n");
      fmt::print("  raw cuLaunchKernel          {:6.2f} us\n", r.raw_us);
      fmt::print("  tritium compiled.launch()   {:6.2f} us  ({:.3f}x raw)\n", r.backend_us,
                 r.backend_us / r.raw_us);
      if (r.jit_us > 0)
        fmt::print("  tritium jit kernel[grid]()  {:6.2f} us  ({:.3f}x raw)\n", r.jit_us,
                   r.jit_us / r.raw_us);
      if (out) {
        std::fprintf(out, "launch,raw,%.3f\nlaunch,tritium_backend,%.3f\n", r.raw_us, r.backend_us);
        if (r.jit_us > 0)
          std::fprintf(out, "launch,tritium,%.3f\n", r.jit_us);
      }
    }
    if (do_vadd) {
      fmt::print("vector add fp32 (BLOCK 1024, 4 warps), median device time per launch:\n");
      std::vector<VaddResult> results;
      try {
        results = bench_vadd(dev, raw);
      } catch (const tritium::Error& e) {
        fmt::print("  not measured: {}\n", e.what());
      }
      for (const auto& v : results) {
        fmt::print("  2^{}  {:9.1f} us  {:7.0f} GB/s\n", v.log2n, v.us, v.gbps);
        if (out)
          std::fprintf(out, "vadd_%d,tritium,%.1f\n", v.log2n, v.gbps);
      }
    }
    if (out)
      std::fclose(out);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_gpu: error: {}\n", e.what());
    return 1;
  }
}
