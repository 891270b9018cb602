// Compile time against kernel size (issue 38: linear up to 200k IR ops on every target, a
// 20k-op kernel JITs in at most 2 s on the CPU). Three shapes of large kernel, each traced at
// growing sizes and compiled for every target this build has:
//   chain   one long dependent chain of elementwise ops on a block (a polynomial unrolled in C++)
//   wide    many independent masked load -> math -> store groups (an unrolled loop in C++)
//   loops   many small tl::range loops one after the other, each carrying a block
// Targets: the CPU JIT (the first launch, trace included), the interpreter's trace, and with the
// GPU backend sm_90a and gfx942 through an offline device (compile only). Prints one CSV line
// per (shape, ops, target): seconds, and seconds per 1k ops so that growth is easy to read.
// Usage: compile_scaling [--max OPS] [--targets cpu,sm_90a,gfx942] [--shapes chain,wide,loops]
#include <tritium/tritium.hpp>

#include "../amd/offline_device.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>
#include <stdlib.h>
#include <string>
#include <vector>

namespace tl = tritium::tl;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kBlock = 256;

void chain_kernel(tl::ptr<float> x, tl::ptr<float> y, tl::i32 n, tl::constexpr_<int> STEPS) {
  auto offs = tl::program_id(0) * kBlock + tl::arange(0, kBlock);
  auto mask = offs < n;
  auto v = tl::load(x + offs, mask, 0.0f);
  for (int i = 0; i < STEPS; ++i)
    v = v * 0.999f + float(i % 7) * 0.001f;
  tl::store(y + offs, v, mask);
}

void wide_kernel(tl::ptr<float> x, tl::ptr<float> y, tl::i32 n, tl::constexpr_<int> STEPS) {
  auto base = tl::program_id(0) * kBlock + tl::arange(0, kBlock);
  for (int i = 0; i < STEPS; ++i) {
    auto offs = base + i * kBlock;
    auto mask = offs < n;
    tl::store(y + offs, tl::exp(tl::load(x + offs, mask, 0.0f)) * 2.0f, mask);
  }
}

void loops_kernel(tl::ptr<float> x, tl::ptr<float> y, tl::i32 n, tl::constexpr_<int> STEPS) {
  auto offs = tl::program_id(0) * kBlock + tl::arange(0, kBlock);
  auto mask = offs < n;
  auto v = tl::load(x + offs, mask, 0.0f);
  for (int i = 0; i < STEPS; ++i)
    for (auto k : tl::range(0, 2))
      v = v * 0.5f + 1.0f;
  tl::store(y + offs, v, mask);
}

using Kernel = void (*)(tl::ptr<float>, tl::ptr<float>, tl::i32, tl::constexpr_<int>);

struct Shape {
  std::string name;
  Kernel fn;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    out.push_back(item);
  return out;
}

size_t count_ops(const tritium::ir::Function& f) {
  size_t n = 0;
  tritium::ir::walk(f.entry(), [&](const tritium::ir::Op&) { ++n; });
  return n;
}

// Seconds for the first launch on `dev` (trace, compile, and one program of the kernel).
double first_launch(tritium::Device dev, Kernel fn, const std::string& name, int steps) {
  auto x = dev.alloc<float>(kBlock), y = dev.alloc<float>(kBlock);
  auto k = tritium::jit(fn, name);
  auto t0 = Clock::now();
  k[{1}](x, y, kBlock, steps);
  dev.synchronize();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

} // namespace

int main(int argc, char** argv) {
  int max_ops = 200000;
  std::vector<std::string> targets = {"cpu", "trace"};
  targets.insert(targets.end(), {"sm_90a", "gfx942"});
  std::vector<std::string> shapes = {"chain", "wide", "loops"};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--max" && i + 1 < argc)
      max_ops = std::atoi(argv[++i]);
    else if (a == "--targets" && i + 1 < argc)
      targets = split(argv[++i]);
    else if (a == "--shapes" && i + 1 < argc)
      shapes = split(argv[++i]);
    else {
      std::fprintf(stderr,
                   "usage: %s [--max OPS] [--targets cpu,trace,sm_90a,gfx942] "
                   "[--shapes chain,wide,loops]\n",
                   argv[0]);
      return 2;
    }
  }
  const std::vector<Shape> all = {
      {"chain", chain_kernel}, {"wide", wide_kernel}, {"loops", loops_kernel}};
  // Compiles are what is measured: the CPU's disk cache would turn a repeated size into a load.
  ::setenv("TRITIUM_CACHE_DIR", "off", 1);
  // One-time costs (the AMD device libraries, LLVM's target set-up) are not a kernel's: each
  // target compiles a small kernel once before the sizes are timed.
  {
    for (const std::string& t : targets) {
      const std::string name = "warm_up_" + t;
      if (t == "cpu" || t == "interpreter" || t == "gpu-emulator")
        first_launch(tritium::device(t), chain_kernel, name, 4);
      else if (t != "trace")
        first_launch(tritium::xcompile::OfflineGpu(t, "").device(), chain_kernel, name, 4);
    }
  }
  fmt::print("shape,ops,target,seconds,seconds_per_kop\n");
  for (const Shape& s : all) {
    if (std::find(shapes.begin(), shapes.end(), s.name) == shapes.end())
      continue;
    // Steps per IR op, from a small trace, so that each size is a number of IR ops.
    auto probe = tritium::jit(s.fn, s.name);
    auto cpu = tritium::device("cpu");
    auto px = cpu.alloc<float>(kBlock);
    const double per_step = double(count_ops(*probe.trace(px, px, kBlock, 100)) -
                                   count_ops(*probe.trace(px, px, kBlock, 0))) /
                            100.0;
    for (int ops : {1000, 3000, 10000, 20000, 50000, 100000, 200000}) {
      if (ops > max_ops)
        break;
      const int steps = int(ops / per_step);
      const size_t real_ops = count_ops(*probe.trace(px, px, kBlock, steps));
      for (const std::string& t : targets) {
        double sec = 0;
        std::string name = fmt::format("{}_{}", s.name, ops);
        auto t0 = Clock::now();
        if (t == "trace") {
          probe.trace(px, px, kBlock, steps);
          sec = std::chrono::duration<double>(Clock::now() - t0).count();
        } else if (t == "cpu" || t == "interpreter" || t == "gpu-emulator") {
          sec = first_launch(tritium::device(t), s.fn, name, steps);
        } else {
          tritium::xcompile::OfflineGpu gpu(t, "");
          sec = first_launch(gpu.device(), s.fn, name, steps);
        }
        fmt::print("{},{},{},{:.3f},{:.4f}\n", s.name, real_ops, t, sec, sec * 1000 / real_ops);
        std::fflush(stdout);
      }
    }
  }
}
