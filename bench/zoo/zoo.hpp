// The zoo: kernels written the ordinary Triton way (issue 35), each with a float64 host
// reference, small shapes checked on every CPU-side device in CI and full shapes timed on a GPU
// against their Triton twins (bench/compare/zoo.py) in paired rounds.
//
// An entry is one kernel (or one small pipeline of kernels, e.g. a forward and its backward).
// It registers itself from its own .cpp file:
//
//   static const int registered = zoo::add({"transpose_2d", "shape", shapes, run});
//
// `shapes(full)` lists its shape labels (full: the GPU benchmark's, else small ones that run
// in seconds on the interpreter). `run(ctx, shape)` makes deterministic inputs, launches the
// kernel through ctx.launch (which the driver times in benchmark mode), and checks the result
// against the float64 reference, returning what it found.
#pragma once

#include <tritium/tritium.hpp>

#include <functional>
#include <string>
#include <vector>

namespace zoo {

struct Outcome {
  bool ok = false;      // within tolerance of the float64 reference
  double worst = 0;     // the largest |y - ref| / (atol + rtol |ref|) (<= 1 passes)
  double bytes = 0;     // bytes the kernel must move (for GB/s), or 0
  double flops = 0;     // useful flops (for TFLOP/s), or 0
  std::string note;     // what failed, or anything worth printing
};

struct Context {
  const tritium::Device& dev;
  bool full = false; // the benchmark's shapes (GPU) rather than the small ones (CI)
  // Runs `launch` once (check mode) or times it as tritium::bench does and then runs it once
  // more (benchmark mode). `launch` must leave the same output each time it runs (reset any
  // accumulator inside it).
  std::function<void(const std::function<void()>& launch)> launch;
};

struct Entry {
  std::string name;   // the Triton twin's name in bench/compare/zoo.py
  std::string family; // elementwise, reduction, norm, shape, gather, scan, gemm, attention, ...
  std::vector<std::string> (*shapes)(bool full);
  Outcome (*run)(Context& ctx, const std::string& shape);
};

// Registers an entry; returns its index (for a static initializer).
int add(Entry e);
const std::vector<Entry>& entries();

} // namespace zoo
