// bench_roofline: memory-bound kernels against the bandwidth roof, on any device.
//
//   vector_add_fp32   out = x + y                            12 bytes per element
//   silu_mul_fp16     h = g * sigmoid(g) * u (seed 003)      6 bytes per element
//   gelu_mul_fp16     h = gelu_tanh(g) * u (GeGLU)           6 bytes per element
//   softmax_fp32      Triton's tutorial 02, 4096 rows        x read, y written
//   layer_norm_fp16   Triton's tutorial 05 forward (looped)  x read, y written
//   layer_norm_row_fp16  the same with the row in one block  x read, y written
//   rmsnorm_fp16      RMSNorm, one block per row             x read, y written
//
// Bytes are counted as Triton's tutorials count them (weights, biases and per-row statistics
// left out). Every run is timed by tritium::bench (median of device times, caches flushed
// before each run) and checked against a double-precision reference on sampled rows.
//
// On the CPU each workload also runs its roof, "cpp_loop": a plain loop compiled -O3 that moves
// the same bytes (reads what the kernel reads, writes what it writes, one cheap operation per
// element), split over the same oneTBB threads as the CPU backend's programs. The two are timed
// round by round (tritium::bench_interleaved), and tritium's line ends with the median of the
// rounds' ratios ("0.86 x cpp_loop, paired"). The layer norms also run "cpp_kernel", the same
// algorithm written by hand (cpp_layer_norm.cpp; x86 with F16C), in the same rounds, and the
// note adds tritium's paired ratio to it. On a GPU the
// peers are Triton's kernels of the same source and PyTorch (bench/compare/roofline.py).
//
// Usage: bench_roofline [--device NAME] [--csv FILE] [--quick] [--no-flush] [--dump DIR] [--warps
// N]
//                       [--n N,N...] [--cols N,N...] [WORKLOAD...]
//   --quick: fewer sizes and 256 rows (a smoke test: every kernel compiled, run and checked)
//   --no-flush: leave the caches as the last run left them (inputs may stay cached)
//   --dump DIR: each workload's compiled kernels (TRITIUM_DUMP) in DIR/<workload>.<size>; with
//     an empty TRITIUM_CACHE_DIR, so that every kernel is compiled here. roofline.py
//     --tritium-ptx DIR times them under Triton's harness.
//   --warps N: num_warps for softmax and the norms instead of the tutorials' choice
//   --n, --cols: the sizes of the elementwise kernels, the row lengths of the row-wise ones
// CSV columns: workload,size,provider,gbps,median_ms,q20_ms,q80_ms
#include "cpp_layer_norm.hpp"
#include "kernels.hpp"

#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace tl = tritium::tl;
using tritium::Buffer;
using tritium::Device;
using tritium::half;

namespace {

struct Options {
  bool quick = false;
  bool flush = true;
  std::string dump;                // --dump DIR
  int warps = 0;                   // 0: the tutorials' num_warps
  std::vector<int64_t> flat, cols; // empty: the defaults
  std::vector<std::string> only;
  bool wanted(const std::string& w) const {
    return only.empty() || std::find(only.begin(), only.end(), w) != only.end();
  }
};

class Report {
public:
  explicit Report(FILE* csv) : csv_(csv) {}
  void add(const std::string& workload, int64_t size, const std::string& provider, double bytes,
           const tritium::BenchResult& r, const std::string& note = {}) {
    double gbps = r.gbps(bytes);
    fmt::print("  {:<20} {:>9} {:<9} {:9.1f} GB/s  {:9.4f} ms  [{:.4f}, {:.4f}]{}\n", workload,
               size, provider, gbps, r.median_ms, r.quantiles_ms[1], r.quantiles_ms[2], note);
    std::fflush(stdout);
    if (csv_)
      fmt::print(csv_, "{},{},{},{:.2f},{:.6f},{:.6f},{:.6f}\n", workload, size, provider, gbps,
                 r.median_ms, r.quantiles_ms[1], r.quantiles_ms[2]);
  }

private:
  FILE* csv_;
};

// Registers per thread and spilled bytes where the device reports them (CUDA).
std::string regs_note(const tritium::CompiledKernel& k) {
  std::string regs = k.artifact("registers");
  return regs.empty() ? "" : fmt::format("  {} regs, {} B local", regs, k.artifact("local_bytes"));
}

int next_pow2(int64_t n) {
  int b = 1;
  while (b < n)
    b *= 2;
  return b;
}

std::vector<float> random_floats(size_t n, uint32_t seed, float mean, float sd) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(mean, sd);
  std::vector<float> v(n);
  for (auto& x : v)
    x = dist(rng);
  return v;
}

std::vector<half> to_half(const std::vector<float>& v) {
  std::vector<half> h(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    h[i] = half(v[i]);
  return h;
}

// Rows checked against the reference: a spread of them, so that a wrong grid shows up.
std::vector<int64_t> sample_rows(int64_t m) {
  std::vector<int64_t> rows;
  for (int64_t r = 0; r < m; r += std::max<int64_t>(1, m / 37))
    rows.push_back(r);
  rows.push_back(m - 1);
  return rows;
}

void expect(bool ok, const std::string& what) {
  if (!ok)
    throw tritium::Error("bench_roofline: wrong result: " + what);
}

// Runs `body(lo, hi)` over [0, n) on the oneTBB threads the CPU backend launches programs on.
template <class F>
void on_threads(int64_t n, F body) {
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n),
                    [&](const tbb::blocked_range<int64_t>& r) { body(r.begin(), r.end()); });
}

// --- the roofs: plain loops moving the same bytes, out of line so nothing is known about
// their pointers ---------------------------------------------------------------------------
[[gnu::noinline]] void roof_add(const float* __restrict x, const float* __restrict y,
                                float* __restrict out, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i)
    out[i] = x[i] + y[i];
}
[[gnu::noinline]] void roof_combine16(const uint16_t* __restrict g, const uint16_t* __restrict u,
                                      uint16_t* __restrict h, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i)
    h[i] = g[i] ^ u[i];
}
[[gnu::noinline]] void roof_scale_rows(const float* __restrict x, float* __restrict y, int64_t n,
                                       int64_t lo, int64_t hi) {
  for (int64_t r = lo; r < hi; ++r)
    for (int64_t c = 0; c < n; ++c)
      y[r * n + c] = x[r * n + c] * 0.5f;
}
// fp16 rows: flips the sign bit (an fp16 negation) of every element.
[[gnu::noinline]] void roof_negate_rows16(const uint16_t* __restrict x, uint16_t* __restrict y,
                                          int64_t n, int64_t lo, int64_t hi) {
  for (int64_t r = lo; r < hi; ++r)
    for (int64_t c = 0; c < n; ++c)
      y[r * n + c] = x[r * n + c] ^ 0x8000;
}

class Bench {
public:
  Bench(Device dev, Options opt, Report& report)
      : dev_(dev), opt_(std::move(opt)), report_(report), cpu_(dev.name() == "cpu") {}

  void run() {
    fmt::print("device: {} ({}){}\n", dev_.name(), dev_.target(), opt_.quick ? ", --quick" : "");
    std::vector<int64_t> flat = !opt_.flat.empty() ? opt_.flat
                                : opt_.quick
                                    ? std::vector<int64_t>{1 << 16, 3 << 14}
                                    : std::vector<int64_t>{1 << 20, 1 << 22, 1 << 24, 1 << 26};
    std::vector<int64_t> cols =
        !opt_.cols.empty() ? opt_.cols
        : opt_.quick       ? std::vector<int64_t>{1000, 4096}
                           : std::vector<int64_t>{512, 1024, 2048, 4096, 8192, 12288, 16384};
    auto each = [&](const std::string& workload, const std::vector<int64_t>& sizes,
                    const std::function<void(int64_t)>& bench) {
      if (opt_.wanted(workload))
        for (int64_t n : sizes) {
          dumped(workload, n);
          bench(n);
        }
    };
    each("vector_add_fp32", flat, [&](int64_t n) { vector_add(n); });
    each("silu_mul_fp16", flat, [&](int64_t n) { silu_mul(n); });
    each("gelu_mul_fp16", flat, [&](int64_t n) { gelu_mul(n); });
    each("softmax_fp32", cols, [&](int64_t n) { softmax(rows(), n); });
    each("layer_norm_fp16", cols, [&](int64_t n) { layer_norm(rows(), n, true); });
    each("layer_norm_row_fp16", cols, [&](int64_t n) { layer_norm(rows(), n, false); });
    each("rmsnorm_fp16", cols, [&](int64_t n) { rmsnorm(rows(), n); });
  }

private:
  int64_t rows() const { return opt_.quick ? 256 : 4096; }

  // --dump DIR: the kernels compiled for the next workload land in DIR/<workload>.<size>
  // (a kernel already compiled for an earlier size, with the same specialization, is not
  // compiled, nor dumped, again).
  void dumped(const std::string& workload, int64_t size) const {
    if (!opt_.dump.empty())
      setenv("TRITIUM_DUMP", fmt::format("{}/{}.{}", opt_.dump, workload, size).c_str(), 1);
  }

  // A workload's kernel, and on the CPU its roof and, where there is one, the same algorithm
  // written by hand ("cpp_kernel"): timed round by round there (tritium::bench_interleaved), so
  // that the host's drift (its memory bus is shared with other guests) lands on all alike. The
  // note gives the median of the rounds' ratios.
  struct Timed {
    tritium::BenchResult kernel;
    std::optional<tritium::BenchResult> roof, hand;
    std::string note;
  };
  Timed time(const std::function<void()>& kernel, const std::function<void()>& roof,
             const std::function<void()>& hand = {}) {
    const tritium::BenchOptions o{.flush_l2 = opt_.flush, .quantiles = {0.5, 0.2, 0.8}};
    if (!cpu_)
      return {tritium::bench(dev_, kernel, o), std::nullopt, std::nullopt, {}};
    std::vector<std::function<void()>> fns{kernel, roof};
    if (hand)
      fns.push_back(hand);
    auto r = tritium::bench_interleaved(dev_, fns, o);
    // Median over rounds of (peer's time / kernel's time): the kernel's speed relative to it.
    auto paired = [&](const tritium::BenchResult& peer) {
      std::vector<double> ratios;
      for (size_t i = 0; i < r[0].times_ms.size(); ++i)
        ratios.push_back(peer.times_ms[i] / r[0].times_ms[i]);
      std::sort(ratios.begin(), ratios.end());
      double median = ratios[ratios.size() / 2];
      if (ratios.size() % 2 == 0)
        median = (median + ratios[ratios.size() / 2 - 1]) / 2;
      return median;
    };
    Timed t{r[0], r[1], std::nullopt, fmt::format("  {:.2f} x cpp_loop, paired", paired(r[1]))};
    if (hand) {
      t.hand = r[2];
      t.note += fmt::format(", {:.2f} x cpp_kernel", paired(r[2]));
    }
    return t;
  }
  void report(const std::string& workload, int64_t size, double bytes, const Timed& t,
              const std::string& note = {}) {
    report_.add(workload, size, "tritium", bytes, t.kernel, note + t.note);
    if (t.roof)
      report_.add(workload, size, "cpp_loop", bytes, *t.roof);
    if (t.hand)
      report_.add(workload, size, "cpp_kernel", bytes, *t.hand);
  }

  void vector_add(int64_t n) {
    auto hx = random_floats(n, 1, 0, 1), hy = random_floats(n, 2, 0, 1);
    auto x = dev_.from_host(hx), y = dev_.from_host(hy);
    auto out = dev_.alloc<float>(n);
    static auto k = tritium::jit(roofline::add_kernel, "add_kernel");
    tritium::LaunchGrid grid{tritium::cdiv(n, int64_t{1024})};
    auto o2 = cpu_ ? dev_.alloc<float>(n) : Buffer<float>();
    auto r = time([&] { k[grid](x, y, out, static_cast<int>(n), 1024); },
                  [&] {
                    on_threads(n, [&](int64_t lo, int64_t hi) {
                      roof_add(x.data(), y.data(), o2.data(), lo, hi);
                    });
                  });
    auto got = out.to_host();
    for (int64_t i = 0; i < n; i += 97)
      expect(got[i] == hx[i] + hy[i], fmt::format("vector add element {}", i));
    report("vector_add_fp32", n, 12.0 * n, r);
  }

  void silu_mul(int64_t n) {
    static auto k = tritium::jit(roofline::silu_mul_kernel, "silu_mul_kernel");
    gated("silu_mul_fp16", k, n, [](double g) { return g / (1 + std::exp(-g)); });
  }

  void gelu_mul(int64_t n) {
    static auto k = tritium::jit(roofline::gelu_mul_kernel, "gelu_mul_kernel");
    gated("gelu_mul_fp16", k, n, [](double g) {
      return 0.5 * g * (1 + std::tanh(0.7978845608028654 * (g + 0.044715 * g * g * g)));
    });
  }

  // h = act(g) * u in f16: 6 bytes an element; the roof reads g and u and writes h.
  template <class Kernel>
  void gated(const std::string& workload, Kernel& k, int64_t n, double (*act)(double)) {
    auto hg = to_half(random_floats(n, 3, 0, 2)), hu = to_half(random_floats(n, 4, 0, 1));
    auto g = dev_.from_host(hg), u = dev_.from_host(hu);
    auto h = dev_.alloc<half>(n);
    tritium::LaunchGrid grid{tritium::cdiv(n, int64_t{1024})};
    auto h2 = cpu_ ? dev_.alloc<half>(n) : Buffer<half>();
    auto r = time([&] { k[grid](g, u, h, static_cast<int>(n), 1024); },
                  [&] {
                    on_threads(n, [&](int64_t lo, int64_t hi) {
                      roof_combine16(reinterpret_cast<const uint16_t*>(g.data()),
                                     reinterpret_cast<const uint16_t*>(u.data()),
                                     reinterpret_cast<uint16_t*>(h2.data()), lo, hi);
                    });
                  });
    auto got = h.to_host();
    for (int64_t i = 0; i < n; i += 97) {
      double ref = act(float(hg[i])) * float(hu[i]);
      expect(std::fabs(float(got[i]) - ref) <= 2e-3 + 2e-3 * std::fabs(ref),
             fmt::format("{} element {}: {} vs {}", workload, i, float(got[i]), ref));
    }
    report(workload, n, 6.0 * n, r);
  }

  void softmax(int64_t m, int64_t n) {
    auto hx = random_floats(m * n, 5, 0, 3);
    auto x = dev_.from_host(hx);
    auto y = dev_.alloc<float>(m * n);
    static auto k = tritium::jit(roofline::softmax_kernel, "softmax_kernel");
    // As Triton's tutorial: 8 warps; one program per row.
    k.options({.num_warps = opt_.warps ? opt_.warps : 8, .num_stages = 4});
    const int block = next_pow2(n), mi = static_cast<int>(m), ni = static_cast<int>(n);
    auto y2 = cpu_ ? dev_.alloc<float>(m * n) : Buffer<float>();
    auto r = time([&] { k[{m}](y, x, ni, ni, mi, ni, block); },
                  [&] {
                    on_threads(m, [&](int64_t lo, int64_t hi) {
                      roof_scale_rows(x.data(), y2.data(), n, lo, hi);
                    });
                  });
    auto got = y.to_host();
    for (int64_t row : sample_rows(m)) {
      const float* xr = &hx[row * n];
      double mx = *std::max_element(xr, xr + n), sum = 0;
      for (int64_t c = 0; c < n; ++c)
        sum += std::exp(double(xr[c]) - mx);
      for (int64_t c = 0; c < n; ++c) {
        double ref = std::exp(double(xr[c]) - mx) / sum;
        expect(std::fabs(got[row * n + c] - ref) <= 1e-6 + 1e-4 * ref,
               fmt::format("softmax {}x{} at ({}, {}): {} vs {}", m, n, row, c, got[row * n + c],
                           ref));
      }
    }
    double bytes = 2.0 * m * n * sizeof(float);
    report("softmax_fp32", n, bytes, r, regs_note(k.compiled(y, x, ni, ni, mi, ni, block)));
  }

  struct NormData {
    std::vector<half> hx, hw, hb;
    Buffer<half> x, w, b, y, y2; // y2: the roof's output (CPU)
  };
  NormData norm_data(int64_t m, int64_t n) {
    NormData d;
    d.hx = to_half(random_floats(m * n, 6, -2.3f, 0.5f));
    d.hw = to_half(random_floats(n, 7, 0.5f, 0.3f));
    d.hb = to_half(random_floats(n, 8, 0.5f, 0.3f));
    d.x = dev_.from_host(d.hx);
    d.w = dev_.from_host(d.hw);
    d.b = dev_.from_host(d.hb);
    d.y = dev_.alloc<half>(m * n);
    if (cpu_)
      d.y2 = dev_.alloc<half>(m * n);
    return d;
  }
  // The fp16 rows' roof, writing d.y2.
  std::function<void()> roof16(int64_t m, int64_t n, const NormData& d) {
    return [this, m, n, &d] {
      on_threads(m, [&](int64_t lo, int64_t hi) {
        roof_negate_rows16(reinterpret_cast<const uint16_t*>(d.x.data()),
                           reinterpret_cast<uint16_t*>(d.y2.data()), n, lo, hi);
      });
    };
  }
  // Triton's tutorial: num_warps = min(max(BLOCK_SIZE // 256, 1), 8).
  int norm_warps(int block) const {
    return opt_.warps ? opt_.warps : std::clamp(block / 256, 1, 8);
  }

  void layer_norm(int64_t m, int64_t n, bool looped) {
    auto d = norm_data(m, n);
    auto mean = dev_.alloc<float>(m), rstd = dev_.alloc<float>(m);
    static auto k_loop = tritium::jit(roofline::layer_norm_fwd_fused, "layer_norm_fwd_fused");
    static auto k_row = tritium::jit(roofline::layer_norm_fwd_row, "layer_norm_fwd_row");
    auto& k = looped ? k_loop : k_row;
    const int block = next_pow2(n), ni = static_cast<int>(n);
    k.options({.num_warps = norm_warps(block)});
    const float eps = 1e-5f;
    // The hand-written layer norm (x86 with F16C) writes its own output and statistics.
    const bool by_hand = cpu_ && roofline::cpp_layer_norm_available();
    const int64_t own = by_hand ? m : 1;
    auto y3 = dev_.alloc<half>(own * n);
    auto mean2 = dev_.alloc<float>(own), rstd2 = dev_.alloc<float>(own);
    std::function<void()> hand;
    if (by_hand)
      hand = [&] {
        on_threads(m, [&](int64_t lo, int64_t hi) {
          roofline::cpp_layer_norm_rows(reinterpret_cast<const uint16_t*>(d.x.data()),
                                        reinterpret_cast<const uint16_t*>(d.w.data()),
                                        reinterpret_cast<const uint16_t*>(d.b.data()),
                                        reinterpret_cast<uint16_t*>(y3.data()), mean2.data(),
                                        rstd2.data(), n, eps, lo, hi);
        });
      };
    auto r = time([&] { k[{m}](d.x, d.y, d.w, d.b, mean, rstd, ni, ni, eps, block); },
                  roof16(m, n, d), hand);
    auto got = d.y.to_host();
    auto got2 = hand ? y3.to_host() : std::vector<half>();
    for (int64_t row : sample_rows(m)) {
      double mu = 0, var = 0;
      for (int64_t c = 0; c < n; ++c)
        mu += float(d.hx[row * n + c]);
      mu /= n;
      for (int64_t c = 0; c < n; ++c)
        var += (float(d.hx[row * n + c]) - mu) * (float(d.hx[row * n + c]) - mu);
      double rs = 1 / std::sqrt(var / n + eps);
      for (int64_t c = 0; c < n; ++c) {
        double ref = (float(d.hx[row * n + c]) - mu) * rs * float(d.hw[c]) + float(d.hb[c]);
        expect(std::fabs(float(got[row * n + c]) - ref) <= 1e-2,
               fmt::format("layer norm {}x{} at ({}, {}): {} vs {}", m, n, row, c,
                           float(got[row * n + c]), ref));
        if (hand)
          expect(std::fabs(float(got2[row * n + c]) - ref) <= 1e-2,
                 fmt::format("hand-written layer norm {}x{} at ({}, {}): {} vs {}", m, n, row, c,
                             float(got2[row * n + c]), ref));
      }
    }
    std::string workload = looped ? "layer_norm_fp16" : "layer_norm_row_fp16";
    report(workload, n, 2.0 * m * n * sizeof(half), r,
           regs_note(k.compiled(d.x, d.y, d.w, d.b, mean, rstd, ni, ni, eps, block)));
  }

  void rmsnorm(int64_t m, int64_t n) {
    auto d = norm_data(m, n);
    static auto k = tritium::jit(roofline::rmsnorm_kernel, "rmsnorm_kernel");
    const int block = next_pow2(n), ni = static_cast<int>(n);
    k.options({.num_warps = norm_warps(block)});
    const float eps = 1e-6f;
    auto r = time([&] { k[{m}](d.x, d.w, d.y, ni, eps, block); }, roof16(m, n, d));
    auto got = d.y.to_host();
    for (int64_t row : sample_rows(m)) {
      double ss = 0;
      for (int64_t c = 0; c < n; ++c)
        ss += double(float(d.hx[row * n + c])) * float(d.hx[row * n + c]);
      double rs = 1 / std::sqrt(ss / n + eps);
      for (int64_t c = 0; c < n; ++c) {
        double ref = float(d.hx[row * n + c]) * rs * float(d.hw[c]);
        expect(std::fabs(float(got[row * n + c]) - ref) <= 1e-2,
               fmt::format("rmsnorm {}x{} at ({}, {}): {} vs {}", m, n, row, c,
                           float(got[row * n + c]), ref));
      }
    }
    report("rmsnorm_fp16", n, 2.0 * m * n * sizeof(half), r,
           regs_note(k.compiled(d.x, d.w, d.y, ni, eps, block)));
  }

  Device dev_;
  Options opt_;
  Report& report_;
  bool cpu_;
};

} // namespace

// "1024,4096" -> {1024, 4096}; every entry a positive integer.
std::vector<int64_t> parse_sizes(const std::string& flag, const std::string& list) {
  std::vector<int64_t> out;
  size_t at = 0;
  while (at <= list.size()) {
    size_t end = std::min(list.find(',', at), list.size());
    std::string item = list.substr(at, end - at);
    char* stop = nullptr;
    long long v = std::strtoll(item.c_str(), &stop, 10);
    if (item.empty() || *stop || v <= 0)
      throw tritium::Error(
          fmt::format("bench_roofline: {} {}: '{}' is not a positive size", flag, list, item));
    out.push_back(v);
    at = end + 1;
  }
  return out;
}

int main(int argc, char** argv) {
  Options opt;
  std::string csv, device_name;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick")
      opt.quick = true;
    else if (a == "--no-flush")
      opt.flush = false;
    else if (a == "--dump" && i + 1 < argc)
      opt.dump = argv[++i];
    else if (a == "--warps" && i + 1 < argc)
      opt.warps = std::atoi(argv[++i]);
    else if ((a == "--n" || a == "--cols") && i + 1 < argc) {
      try {
        (a == "--n" ? opt.flat : opt.cols) = parse_sizes(a, argv[i + 1]);
      } catch (const std::exception& e) {
        fmt::print(stderr, "{}\n", e.what());
        return 2;
      }
      ++i;
    } else if (a == "--csv" && i + 1 < argc)
      csv = argv[++i];
    else if (a == "--device" && i + 1 < argc)
      device_name = argv[++i];
    else if (!a.empty() && a[0] != '-')
      opt.only.push_back(a);
    else {
      fmt::print(
          stderr,
          "usage: {} [--device NAME] [--csv FILE] [--quick] [--no-flush] [--dump DIR] [--warps N] "
          "[--n N,N...] [--cols N,N...] [WORKLOAD...]\n",
          argv[0]);
      return 2;
    }
  }
  try {
    Device dev = device_name.empty() ? tritium::default_device() : tritium::device(device_name);
    FILE* out = nullptr;
    if (!csv.empty() && !(out = std::fopen(csv.c_str(), "w")))
      throw tritium::Error("cannot write " + csv);
    Report report(out);
    Bench(dev, opt, report).run();
    if (out)
      std::fclose(out);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_roofline: error: {}\n", e.what());
    return 1;
  }
}
