// GEMM and GEMM+bias+ReLU on the default device, for bench/RESULTS.md, beside
// bench/compare/gemm.py (Triton's kernel of the same source, cuBLAS through PyTorch) in the
// same GPU command.
//
//   bench_gemm [--dtype f16|bf16|f8e4nv] [--shapes MxKxN,...]
//              [--config BMxBNxBK:warps:stages[:split_k],...]
//              [--autotune] [--descriptor] [--b-major k|n] [--max-imprecise N] [--reps N]
//              [--warmup N] [--only WORKLOAD] [--csv FILE] [--dump DIR]
//
// --b-major: B row-major (n: N contiguous) or column-major (k: K contiguous, as Triton's fp8
// tutorial, torch._scaled_mm and cuBLASLt take fp8 B, and what wgmma's fp8 form reads); the
// default is k for f8e4nv, n otherwise. --max-imprecise N (fp8): tl::dot's
// max_num_imprecise_acc, partial sums of N K added in f32 (0, the default: Triton's on sm_90).
// --descriptor: the kernel reads A and B through tensor descriptors (tl::make_tensor_descriptor)
// instead of pointers, and stores C through one; on sm_90a their loads are TMA copies. Its
// Triton peer is gemm.py --descriptor, the same source.
// --autotune: tritium::autotune chooses among the --config list (default: examples/02's) per
// shape, as Triton's autotuner does for its peer; the line names the winner.
//
// Each (shape, config) prints one CSV line: workload,peer,us,tflops,host_us. us: device time
// per call as Triton's do_bench measures it (tritium::bench: events around each call, caches
// cleared before it, median; --reps N fixes the timed runs); host_us: one call and its
// synchronization, median of 21 (launch cost included: what small shapes pay). Every result
// is checked on a sample of entries against a double-precision reference.
// --warmup N fixes the untimed runs before them; --only gemm|gemm_bias_relu runs one of the
// two. With both, the launches of a run are countable, for a profiler (ncu) that times each
// kernel alone, without launch gaps: bench/run_gemm_small_ncu.sh.
// --dump DIR (a GPU device): the kernel each line timed, compiled again under TRITIUM_DUMP into
// DIR/<gemm|gemm_bias_relu>.<MxKxN>/ with its configuration (config.json), for
// bench/compare/gemm.py --tritium-ptx DIR, which times it beside Triton and cuBLAS round by
// round in one process. Run with TRITIUM_CACHE_DIR=off (a cached kernel is not compiled again).
#include <tritium/tritium.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace tl = tritium::tl;
using tl::_;
using tl::None;

namespace {

// This program's block (row, column) of C in Triton's grouped ordering: GROUP_M rows of blocks
// walked column by column, so that programs running together share rows of A and columns of B
// in L2.
std::pair<tl::i32, tl::i32> grouped_pid(const tl::i32& M, const tl::i32& N, int BLOCK_M,
                                        int BLOCK_N, int GROUP_M) {
  auto pid = tl::program_id(0);
  auto num_pid_m = tl::cdiv(M, BLOCK_M);
  auto num_pid_n = tl::cdiv(N, BLOCK_N);
  auto num_pid_in_group = GROUP_M * num_pid_n;
  auto group_id = pid / num_pid_in_group;
  auto first_pid_m = group_id * GROUP_M;
  auto group_size_m = tl::minimum(num_pid_m - first_pid_m, GROUP_M);
  auto pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m);
  auto pid_n = (pid % num_pid_in_group) / group_size_m;
  return {pid_m, pid_n};
}

// examples/02_fused_gemm_bias_relu.cpp's kernel (Triton's matmul tutorial with grouped
// ordering), for fp16, bf16 or fp8 operands (C in O: fp8 gives f16, as torch._scaled_mm is
// asked here); EPILOGUE adds the bias and applies the ReLU.
//
// SPLIT_K > 1 splits the K loop over SPLIT_K programs per tile of C (grid axis 1), for grids
// whose tiles alone leave SMs idle (decode shapes, 1024^3 on 132 SMs). Each program stores its
// f32 partial tile into `partials` ([SPLIT_K][tiles][BLOCK_M * BLOCK_N]) and counts itself in
// its tile's `arrivals` counter; the last to arrive adds the partials in split order (the same
// result on every run, unlike atomic adds into C), applies the epilogue, stores C and resets
// the counter for the next launch. arrivals must be zero before the first launch.
template <class T, class O>
void matmul_kernel(tl::ptr<T> a_ptr, tl::ptr<T> b_ptr, tl::ptr<float> bias_ptr, tl::ptr<O> c_ptr,
                   tl::ptr<float> partials, tl::ptr<tl::i32> arrivals, tl::i32 M, tl::i32 N,
                   tl::i32 K, tl::i32 stride_am, tl::i32 stride_ak, tl::i32 stride_bk,
                   tl::i32 stride_bn, tl::i32 stride_cm, tl::i32 stride_cn,
                   tl::constexpr_<int> BLOCK_M, tl::constexpr_<int> BLOCK_N,
                   tl::constexpr_<int> BLOCK_K, tl::constexpr_<int> GROUP_M,
                   tl::constexpr_<bool> EPILOGUE, tl::constexpr_<int> IMPRECISE,
                   tl::constexpr_<int> SPLIT_K) {
  auto [pid_m, pid_n] = grouped_pid(M, N, BLOCK_M, BLOCK_N, GROUP_M);
  auto offs_am = (pid_m * BLOCK_M + tl::arange(0, BLOCK_M)) % M;
  auto offs_bn = (pid_n * BLOCK_N + tl::arange(0, BLOCK_N)) % N;
  auto offs_k = tl::arange(0, BLOCK_K);
  auto a_ptrs = a_ptr + (offs_am[{_, None}] * stride_am + offs_k[{None, _}] * stride_ak);
  auto b_ptrs = b_ptr + (offs_k[{_, None}] * stride_bk + offs_bn[{None, _}] * stride_bn);
  auto acc = tl::zeros<float>({BLOCK_M, BLOCK_N});
  auto k_loop = [&](const auto& k_first, const auto& k_end) {
    for (auto k : tl::range(k_first, k_end)) {
      auto k_remaining = K - k * BLOCK_K;
      auto a = tl::load(a_ptrs, offs_k[{None, _}] < k_remaining, 0.0);
      auto b = tl::load(b_ptrs, offs_k[{_, None}] < k_remaining, 0.0);
      acc = tl::dot(a, b, acc, {.max_num_imprecise_acc = IMPRECISE});
      a_ptrs += BLOCK_K * stride_ak;
      b_ptrs += BLOCK_K * stride_bk;
    }
  };
  if (SPLIT_K == 1) {
    k_loop(0, tl::cdiv(K, BLOCK_K));
  } else { // this program's contiguous share of the K blocks
    auto k_blocks = tl::cdiv(K, BLOCK_K);
    auto per_split = tl::cdiv(k_blocks, SPLIT_K);
    auto k_first = tl::program_id(1) * per_split;
    a_ptrs += k_first * BLOCK_K * stride_ak;
    b_ptrs += k_first * BLOCK_K * stride_bk;
    k_loop(k_first, tl::minimum(k_first + per_split, k_blocks));
  }
  auto offs_cm = pid_m * BLOCK_M + tl::arange(0, BLOCK_M);
  auto offs_cn = pid_n * BLOCK_N + tl::arange(0, BLOCK_N);
  auto c_ptrs = c_ptr + stride_cm * offs_cm[{_, None}] + stride_cn * offs_cn[{None, _}];
  auto c_mask = (offs_cm[{_, None}] < M) && (offs_cn[{None, _}] < N);
  auto finish = [&](tl::tensor<float> sum) {
    if (EPILOGUE)
      sum = tl::maximum(sum + tl::load(bias_ptr + offs_bn)[{None, _}], 0.f);
    tl::store(c_ptrs, sum.to<tl::element_of_t<O>>(), c_mask);
  };
  if (SPLIT_K == 1)
    return finish(acc);
  auto tile = tl::program_id(0);
  auto tiles = tl::num_programs(0);
  auto in_tile = tl::arange(0, BLOCK_M)[{_, None}] * BLOCK_N + tl::arange(0, BLOCK_N)[{None, _}];
  tl::store(partials + (tl::program_id(1) * tiles + tile) * (BLOCK_M * BLOCK_N) + in_tile, acc);
  // Every thread's partial is stored before the count releases it (acq_rel, gpu scope).
  tl::debug_barrier();
  auto arrived = tl::atomic_add(arrivals + tile, 1);
  tl::if_(arrived == SPLIT_K - 1, [&] {
    auto sum = tl::zeros<float>({BLOCK_M, BLOCK_N});
    // .cg: from L2, where the other programs' partials are, never a stale L1 line.
    for (int64_t s : tl::static_range(SPLIT_K))
      sum += tl::load(partials + (int(s) * tiles + tile) * (BLOCK_M * BLOCK_N) + in_tile,
                      {.cache_modifier = ".cg"});
    finish(sum);
    tl::atomic_xchg(arrivals + tile, 0);
  });
}

// The same through tensor descriptors: A [M, K], B [K, N], C [M, N], row-major.
template <class T, class O>
void matmul_desc_kernel(tl::ptr<T> a_ptr, tl::ptr<T> b_ptr, tl::ptr<float> bias_ptr,
                        tl::ptr<O> c_ptr, tl::i32 M, tl::i32 N, tl::i32 K,
                        tl::constexpr_<int> BLOCK_M, tl::constexpr_<int> BLOCK_N,
                        tl::constexpr_<int> BLOCK_K, tl::constexpr_<int> GROUP_M,
                        tl::constexpr_<bool> EPILOGUE) {
  auto [pid_m, pid_n] = grouped_pid(M, N, BLOCK_M, BLOCK_N, GROUP_M);
  auto a_desc = tl::make_tensor_descriptor(a_ptr, {M, K}, {K, 1}, {BLOCK_M, BLOCK_K});
  auto b_desc = tl::make_tensor_descriptor(b_ptr, {K, N}, {N, 1}, {BLOCK_K, BLOCK_N});
  auto c_desc = tl::make_tensor_descriptor(c_ptr, {M, N}, {N, 1}, {BLOCK_M, BLOCK_N});
  auto acc = tl::zeros<float>({BLOCK_M, BLOCK_N});
  for (auto k : tl::range(0, tl::cdiv(K, BLOCK_K))) {
    auto a = a_desc.load({pid_m * BLOCK_M, k * BLOCK_K});
    auto b = b_desc.load({k * BLOCK_K, pid_n * BLOCK_N});
    acc = tl::dot(a, b, acc);
  }
  if (EPILOGUE) {
    auto offs_bn = pid_n * BLOCK_N + tl::arange(0, BLOCK_N);
    acc = tl::maximum(acc + tl::load(bias_ptr + offs_bn, offs_bn < N, 0.f)[{None, _}], 0.f);
  }
  c_desc.store({pid_m * BLOCK_M, pid_n * BLOCK_N}, acc.to<tl::element_of_t<O>>());
}

struct Config {
  int bm, bn, bk, warps, stages, split_k = 1;
  std::string str() const {
    return fmt::format("{}x{}x{}:{}:{}", bm, bn, bk, warps, stages) +
           (split_k > 1 ? fmt::format(":{}", split_k) : "");
  }
  int tiles(int m, int n) const { return tritium::cdiv(m, bm) * tritium::cdiv(n, bn); }
};
struct Shape {
  int m, k, n;
};

// The tile the examples use: small problems take small tiles so that every SM gets work.
Config default_config(Shape s) {
  if (int64_t{s.m} * s.n <= 256 * 256)
    return {64, 64, 32, 4, 3};
  return {128, 128, 64, 8, 3};
}

// examples/02's list (with its two narrow tiles for the smallest shapes); for fp8 also the
// tiles of 128 K Triton's matmul tutorial adds for fp8 (gemm.py offers its peer the same).
// Beyond the tutorial, for the shapes its tiles leave the GPU idle on: tiles with K steps of
// 128 (1024^3: 11.1 us against the tutorial's best 12.4 on an H200), tiles of 16 and 32 rows
// when M is small (decode: the weights are the traffic, and a program needs
// many bytes in flight), and each tile split along K when its grid has fewer programs than
// the device has SMs.
std::vector<Config> tuning_configs(bool fp8, Shape s, int units) {
  std::vector<Config> c{{128, 256, 64, 8, 4}, {256, 128, 64, 8, 4}, {128, 128, 64, 8, 4},
                        {128, 128, 64, 4, 4}, {128, 64, 64, 4, 4},  {64, 128, 64, 4, 4},
                        {64, 64, 64, 4, 3},   {128, 128, 32, 4, 3}, {64, 32, 64, 4, 4},
                        {64, 16, 64, 4, 4}};
  if (fp8)
    c.insert(c.end(), {{128, 256, 128, 8, 3},
                       {256, 128, 128, 8, 3},
                       {256, 64, 128, 4, 4},
                       {64, 256, 128, 4, 4},
                       {128, 128, 128, 4, 4}});
  c.insert(c.end(), {{64, 64, 128, 4, 3}, {64, 128, 128, 4, 3}});
  if (s.m <= 64)
    c.push_back({32, 64, 128, 4, 4});
  if (s.m <= 32)
    c.insert(c.end(),
             {{16, 64, 128, 4, 4}, {16, 128, 128, 4, 4}, {16, 32, 256, 4, 4}, {16, 64, 256, 4, 3}});
  const int k_blocks_min = 4; // K blocks a split keeps, so that its pipeline still fills
  std::vector<Config> split;
  for (const Config& t : c) {
    const int tiles = t.tiles(s.m, s.n);
    if (tiles >= units)
      continue;
    int k = 2; // the smallest split that fills 90 % of the SMs, and twice it
    while (tiles * k * 10 < units * 9)
      k *= 2;
    for (int f : {k, 2 * k})
      if (tritium::cdiv(s.k, t.bk * f) >= k_blocks_min) {
        Config v = t;
        v.split_k = f;
        split.push_back(v);
      }
  }
  c.insert(c.end(), split.begin(), split.end());
  return c;
}

tritium::Config to_tuned(const Config& c) {
  return {{{"BM", c.bm}, {"BN", c.bn}, {"BK", c.bk}, {"SPLIT_K", c.split_k}}, c.warps, c.stages};
}

template <class H, bool DESC>
double run(tritium::Device& dev, Shape s, Config cfg, bool epilogue, bool b_k_major, int imprecise,
           int reps, int warmup, bool* ok, double* host_us, std::string* chosen,
           const std::vector<Config>* tune, const std::string& dump_dir) {
  std::mt19937 rng(s.m + 3 * s.n + 7 * s.k);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<H> ha(size_t(s.m) * s.k), hb(size_t(s.k) * s.n);
  std::vector<float> hbias(s.n);
  for (auto& v : ha)
    v = H(dist(rng));
  for (auto& v : hb)
    v = H(dist(rng));
  for (auto& v : hbias)
    v = dist(rng);
  auto a = dev.from_host(ha), b = dev.from_host(hb);
  auto bias = dev.from_host(hbias);
  constexpr bool fp8 = std::is_same_v<H, tritium::float8e4nv>;
  using OH = std::conditional_t<fp8, tritium::half, H>;
  auto c = dev.alloc<OH>(size_t(s.m) * s.n);
  // Split-K's workspace, sized for the largest split of any configuration run here.
  size_t partial_floats = 1, counters = 1;
  for (const Config& t : tune ? *tune : std::vector<Config>{cfg})
    if (t.split_k > 1) {
      partial_floats =
          std::max(partial_floats, size_t(t.split_k) * t.tiles(s.m, s.n) * t.bm * t.bn);
      counters = std::max(counters, size_t(t.tiles(s.m, s.n)));
    }
  auto partials = dev.alloc<float>(partial_floats);
  auto arrivals = dev.from_host(std::vector<int32_t>(counters, 0));
  using T = tl::tensor<H>;
  using O = tl::tensor<OH>;
  static auto kernel = [] {
    if constexpr (DESC)
      return tritium::jit(matmul_desc_kernel<T, O>, "matmul_desc_kernel");
    else
      return tritium::jit(matmul_kernel<T, O>, "matmul_kernel");
  }();
  // The launch arguments after the pointers (the descriptor kernel takes no strides).
  // B's strides along K and N (hb is [K, N] row-major, or [N, K] when K-major).
  const int sbk = b_k_major ? 1 : s.n, sbn = b_k_major ? s.k : 1;
  auto launch_with = [&, s, epilogue, sbk, sbn, imprecise](auto& k, int bm, int bn, int bk,
                                                           int split_k) {
    const int tiles = Config{bm, bn, bk, 0, 0}.tiles(s.m, s.n);
    if constexpr (DESC)
      k[{tiles}](a, b, bias, c, s.m, s.n, s.k, bm, bn, bk, 8, epilogue);
    else
      k[{tiles, split_k}](a, b, bias, c, partials, arrivals, s.m, s.n, s.k, s.k, 1, sbk, sbn, s.n,
                          1, bm, bn, bk, 8, epilogue, imprecise, split_k);
  };
  std::function<void()> launch;
  if (tune) {
    std::vector<tritium::Config> configs;
    std::string space;
    for (const Config& c : *tune)
      if (!DESC || c.split_k == 1) { // the descriptor kernel has no split-K
        configs.push_back(to_tuned(c));
        space += c.str() + " ";
      }
    auto make = [&] {
      if constexpr (DESC)
        return tritium::autotune(matmul_desc_kernel<T, O>, "matmul_desc_kernel", configs);
      else
        return tritium::autotune(matmul_kernel<T, O>, "matmul_kernel", configs);
    };
    // One autotuner per configuration space (the space depends on the shape), kept across
    // shapes so that its compiled kernels are too.
    using Tuner = decltype(make());
    static std::map<std::string, std::unique_ptr<Tuner>> tuners;
    auto& slot = tuners[space];
    if (!slot)
      slot.reset(new Tuner(make())); // not movable: built in place
    Tuner& tuned = *slot;
    const std::string key = fmt::format("{}x{}x{} epilogue={}", s.m, s.k, s.n, epilogue);
    auto go = [launch_with](auto& k, const tritium::Config& t) {
      launch_with(k, t["BM"], t["BN"], t["BK"], t["SPLIT_K"]);
    };
    launch = [&tuned, key, go, &dev] { tuned(key, go, dev); };
    // One launch first: it checks a choice stored by an earlier run against this run's IR (and
    // tunes again where it differs), so that the line names the configuration timed.
    launch();
    const tritium::Config& best = tuned.best(key, go, dev);
    cfg = Config{int(best["BM"]), int(best["BN"]), int(best["BK"]),
                 best.num_warps,  best.num_stages, int(best["SPLIT_K"])};
  } else {
    kernel.options({.num_warps = cfg.warps, .num_stages = cfg.stages});
    if (DESC && cfg.split_k > 1)
      throw tritium::Error(fmt::format("--config {}: --descriptor has no split-K", cfg.str()));
    launch = [&] { launch_with(kernel, cfg.bm, cfg.bn, cfg.bk, cfg.split_k); };
  }
  *chosen = cfg.str();
  launch();
  dev.synchronize();
  // A sample of entries against a double reference.
  std::vector<OH> got = c.to_host();
  double max_err = 0, max_ref = 1e-30;
  for (int t = 0; t < 256; ++t) {
    size_t i = rng() % s.m, j = rng() % s.n;
    double acc = 0;
    for (int k = 0; k < s.k; ++k)
      acc += double(float(ha[i * s.k + k])) * double(float(hb[size_t(k) * sbk + size_t(j) * sbn]));
    if (epilogue)
      acc = std::max(acc + hbias[j], 0.0);
    max_ref = std::max(max_ref, std::fabs(acc));
    max_err = std::max(max_err, std::fabs(double(float(got[i * s.n + j])) - acc));
  }
  // fp8 on sm_90a's wgmma accumulates as Triton's fp8 dot does by default there (its
  // max_num_imprecise_acc unset): with the tensor core's own precision, under f32's, which
  // grows with K (4096^3: 2.5e-3 of the largest entry); the bound is gemm.py's for Triton.
  const double bound = fp8 ? 2e-2 : std::is_same_v<OH, tritium::half> ? 4e-3 : 2e-2;
  *ok = max_err / max_ref <= bound;
  if (!*ok || fp8)
    fmt::print(stderr, "{}x{}x{}: largest error {:.3g} of the largest entry (bound {:.3g})\n", s.m,
               s.k, s.n, max_err / max_ref, bound);
  // Device time as Triton's do_bench measures it (events around each call, caches cleared
  // before it, median); host time: one call and its synchronization, median of 21.
  tritium::BenchOptions opts;
  if (reps > 0)
    opts.reps = reps;
  if (warmup >= 0)
    opts.warmup = warmup;
  *host_us = 0;
  std::vector<double> host;
  for (int i = 0; i < 21; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    launch();
    dev.synchronize();
    host.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(host.begin(), host.end());
  *host_us = host[host.size() / 2];
  const double us = tritium::bench(dev, launch, opts).median_ms * 1e3;
  if (!dump_dir.empty()) {
    // The timed configuration compiled once more under TRITIUM_DUMP (a fresh kernel object, so
    // that it compiles), for bench/compare/gemm.py --tritium-ptx to launch beside its peers.
    namespace fs = std::filesystem;
    fs::remove_all(dump_dir);
    setenv("TRITIUM_DUMP", dump_dir.c_str(), 1);
    auto fresh = [] {
      if constexpr (DESC)
        return tritium::jit(matmul_desc_kernel<T, O>, "matmul_desc_kernel");
      else
        return tritium::jit(matmul_kernel<T, O>, "matmul_kernel");
    }();
    fresh.options({.num_warps = cfg.warps, .num_stages = cfg.stages});
    launch_with(fresh, cfg.bm, cfg.bn, cfg.bk, cfg.split_k);
    dev.synchronize();
    unsetenv("TRITIUM_DUMP");
    const char* name = DESC ? "matmul_desc_kernel" : "matmul_kernel";
    if (!fs::exists(fs::path(dump_dir) / fmt::format("{}.json", name)))
      throw tritium::Error(fmt::format(
          "--dump: no GPU kernel written in {} (a GPU device is needed, and a kernel that "
          "TRITIUM_CACHE_DIR serves is not compiled again: set TRITIUM_CACHE_DIR=off)",
          dump_dir));
    std::ofstream(fs::path(dump_dir) / "config.json")
        << fmt::format("{{\"BM\": {}, \"BN\": {}, \"BK\": {}, \"SPLIT_K\": {}, "
                       "\"num_warps\": {}, \"num_stages\": {}}}\n",
                       cfg.bm, cfg.bn, cfg.bk, cfg.split_k, cfg.warps, cfg.stages);
  }
  return us;
}

template <class T>
std::vector<T> parse_list(const std::string& s, T (*one)(const std::string&)) {
  std::vector<T> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    out.push_back(one(item));
  return out;
}

Shape parse_shape(const std::string& s) {
  Shape r{};
  if (std::sscanf(s.c_str(), "%dx%dx%d", &r.m, &r.k, &r.n) != 3 || r.m <= 0 || r.k <= 0 || r.n <= 0)
    throw tritium::Error(fmt::format("--shapes: '{}' is not MxKxN", s));
  return r;
}

Config parse_config(const std::string& s) {
  Config c{};
  const int n = std::sscanf(s.c_str(), "%dx%dx%d:%d:%d:%d", &c.bm, &c.bn, &c.bk, &c.warps,
                            &c.stages, &c.split_k);
  if ((n != 5 && n != 6) || c.split_k < 1)
    throw tritium::Error(fmt::format("--config: '{}' is not BMxBNxBK:warps:stages[:split_k]", s));
  return c;
}

} // namespace

int main(int argc, char** argv) {
  try {
    std::string dtype = "f16", csv;
    std::vector<Shape> shapes{{64, 256, 128},
                              {128, 256, 256},
                              {1024, 1024, 1024},
                              {4096, 4096, 4096},
                              {8192, 8192, 8192}};
    std::vector<Config> configs;
    int reps = -1, warmup = -1; // tritium::bench's budget
    std::string only, dump;
    bool autotune = false, descriptor = false;
    std::string b_major;
    int imprecise = 0;
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc)
          throw tritium::Error(fmt::format("{} needs a value", a));
        return argv[++i];
      };
      if (a == "--dtype")
        dtype = value();
      else if (a == "--shapes")
        shapes = parse_list<Shape>(value(), parse_shape);
      else if (a == "--config")
        configs = parse_list<Config>(value(), parse_config);
      else if (a == "--autotune")
        autotune = true;
      else if (a == "--descriptor")
        descriptor = true;
      else if (a == "--b-major")
        b_major = value();
      else if (a == "--max-imprecise") {
        const std::string v = value();
        if ((imprecise = std::atoi(v.c_str())) <= 0)
          throw tritium::Error(fmt::format("--max-imprecise {}: expected a positive K count", v));
      } else if (a == "--reps")
        reps = std::max(1, std::atoi(value().c_str()));
      else if (a == "--warmup")
        warmup = std::max(0, std::atoi(value().c_str()));
      else if (a == "--only")
        only = value();
      else if (a == "--csv")
        csv = value();
      else if (a == "--dump")
        dump = value();
      else
        throw tritium::Error(fmt::format("unknown argument '{}' (see the file's header)", a));
    }
    if (!only.empty() && only != "gemm" && only != "gemm_bias_relu")
      throw tritium::Error(fmt::format("--only {}: expected gemm or gemm_bias_relu", only));
    if (dtype != "f16" && dtype != "bf16" && dtype != "f8e4nv")
      throw tritium::Error(fmt::format("--dtype {}: expected f16, bf16 or f8e4nv", dtype));
    if (b_major.empty())
      b_major = dtype == "f8e4nv" ? "k" : "n";
    if (b_major != "k" && b_major != "n")
      throw tritium::Error(fmt::format("--b-major {}: expected k or n", b_major));
    if (descriptor && b_major == "k")
      throw tritium::Error("--descriptor reads a row-major B: add --b-major n");
    const bool b_k_major = b_major == "k";
    if (!dump.empty() && !autotune && configs.size() > 1)
      throw tritium::Error(
          "--dump writes one kernel a shape: add --autotune, or give one --config");
    auto dev = tritium::default_device();
    FILE* out = csv.empty() ? nullptr : std::fopen(csv.c_str(), "w");
    fmt::print("workload,peer,us,tflops,host_us\n");
    bool all_ok = true;
    for (Shape s : shapes)
      for (bool epi : {false, true}) {
        if (!only.empty() && (only == "gemm_bias_relu") != epi)
          continue;
        std::vector<Config> list =
            configs.empty() ? std::vector<Config>{default_config(s)} : configs;
        const std::vector<Config> tune_list =
            configs.empty() ? tuning_configs(dtype == "f8e4nv", s, dev.num_compute_units())
                            : configs;
        if (autotune)
          list = {list.front()}; // one line: the autotuner's choice
        for (Config cfg : list) {
          bool ok = false;
          std::string chosen;
          const std::string case_dump =
              dump.empty() ? std::string()
                           : fmt::format("{}/{}.{}x{}x{}", dump, epi ? "gemm_bias_relu" : "gemm",
                                         s.m, s.k, s.n);
          double host = 0;
          const std::vector<Config>* tune = autotune ? &tune_list : nullptr;
          auto go = [&](auto h, auto desc) {
            return run<decltype(h), decltype(desc)::value>(dev, s, cfg, epi, b_k_major, imprecise,
                                                           reps, warmup, &ok, &host, &chosen, tune,
                                                           case_dump);
          };
          auto by_dtype = [&](auto h) {
            return descriptor ? go(h, std::true_type{}) : go(h, std::false_type{});
          };
          double us = dtype == "f16"    ? by_dtype(tritium::half{})
                      : dtype == "bf16" ? by_dtype(tritium::bfloat16{})
                                        : by_dtype(tritium::float8e4nv{});
          double tflops = 2.0 * s.m * s.n * s.k / (us * 1e-6) / 1e12;
          std::string line = fmt::format(
              "{} {} {}x{}x{},tritium {}{}{},{:.1f},{:.1f},{:.1f}{}",
              epi ? "gemm_bias_relu" : "gemm", dtype, s.m, s.k, s.n,
              descriptor ? "descriptor " : "",
              std::string(b_k_major ? "B k-major " : "") +
                  (imprecise ? fmt::format("imprecise {} ", imprecise) : ""),
              (autotune ? "autotuned " : "") + chosen, us, tflops, host, ok ? "" : ",WRONG");
          fmt::print("{}\n", line);
          if (out)
            fmt::print(out, "{}\n", line);
          all_ok = all_ok && ok;
        }
      }
    if (out)
      std::fclose(out);
    return all_ok ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_gemm: {}\n", e.what());
    return 2;
  }
}
