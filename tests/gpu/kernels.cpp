// The examples' kernels and the op kernels, run on every GPU and compared with the reference
// interpreter on the same inputs (differential testing).
#include "gpu_support.hpp"

#include <tritium/tritium.hpp>

#include <atomic>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace tl = tritium::tl;
using tritium::Buffer;
using tritium::Device;

namespace {

// examples/01_vector_add.cpp's kernel.
void add_kernel(tl::ptr<float> x_ptr, tl::ptr<float> y_ptr, tl::ptr<float> output_ptr,
                tl::i32 n_elements, tl::constexpr_<int> BLOCK_SIZE) {
  auto pid = tl::program_id(0);
  auto offsets = pid * BLOCK_SIZE + tl::arange(0, BLOCK_SIZE);
  auto mask = offsets < n_elements;
  auto x = tl::load(x_ptr + offsets, mask);
  auto y = tl::load(y_ptr + offsets, mask);
  tl::store(output_ptr + offsets, x + y, mask);
}

// Masked loads with a fill value, select, math functions, a float scalar argument.
void math_kernel(tl::ptr<float> x_ptr, tl::ptr<float> out_ptr, tl::i32 n, tl::f32 scale,
                 tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  auto x = tl::load(x_ptr + offs, mask, 1.0f);
  auto y = tl::where(x > 0.0f, tl::sqrt(x) * scale, tl::exp(x) - 1.0f);
  tl::store(out_ptr + offs, y + tl::abs(x), mask);
}

// One sum and one max per block: reductions across warps.
void reduce_kernel(tl::ptr<float> x_ptr, tl::ptr<float> sums, tl::ptr<float> maxes, tl::i32 n,
                   tl::constexpr_<int> BLOCK) {
  auto pid = tl::program_id(0);
  auto offs = pid * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  auto x = tl::load(x_ptr + offs, mask, 0.0f);
  tl::store(sums + pid, tl::sum(x));
  tl::store(maxes + pid, tl::max(tl::load(x_ptr + offs, mask, -1e30f)));
}

// Row sums of a 2-D tile and a prefix sum per row: expand_dims, broadcasting, axis reductions
// and scans.
void rows_kernel(tl::ptr<float> x_ptr, tl::ptr<float> row_sums, tl::ptr<float> prefix, tl::i32 cols,
                 tl::constexpr_<int> ROWS, tl::constexpr_<int> COLS) {
  auto r = tl::program_id(0) * ROWS + tl::arange(0, ROWS);
  auto c = tl::arange(0, COLS);
  auto offs = tl::expand_dims(r, 1) * cols + tl::expand_dims(c, 0);
  auto x = tl::load(x_ptr + offs);
  tl::store(row_sums + r, tl::sum(x, 1));
  tl::store(prefix + offs, tl::cumsum(x, 1));
}

// Conversions: f32 -> f16 -> f32 round trip and integer arithmetic with an i64 argument.
void convert_kernel(tl::ptr<float> x_ptr, tl::ptr<tritium::half> h_ptr, tl::ptr<int64_t> i_ptr,
                    tl::i64 bias, tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto x = tl::load(x_ptr + offs);
  tl::store(h_ptr + offs, tl::cast<tritium::half>(x * 3.0f));
  tl::store(i_ptr + offs, tl::cast<int64_t>(x * 1000.0f) + bias);
}

// Softmax of a 32768-float row per program: in 8 warps, 128 values per thread live across two
// reductions, more than the 128 registers a 16-warp budget leaves.
void wide_softmax_kernel(tl::ptr<float> x_ptr, tl::ptr<float> y_ptr, tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto x = tl::load(x_ptr + offs);
  auto e = tl::exp(x - tl::max(x, 0));
  tl::store(y_ptr + offs, e / tl::sum(e, 0));
}

std::vector<float> random_floats(size_t n, unsigned seed, float lo = -2.f, float hi = 2.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v)
    x = dist(rng);
  return v;
}

// Output buffers start poisoned, so an element a kernel fails to write cannot pass.
template <class T>
Buffer<T> poisoned(Device d, size_t n) {
  std::vector<T> host(n);
  std::memset(host.data(), 0x7f, n * sizeof(T));
  return d.from_host(host);
}

void check_close(const std::vector<float>& got, const std::vector<float>& want, double rtol,
                 const char* what) {
  REQUIRE(got.size() == want.size());
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double tol = rtol * std::max(1.0, std::fabs(static_cast<double>(want[i])));
    if (!(std::fabs(static_cast<double>(got[i]) - want[i]) <= tol) && bad++ < 5)
      MESSAGE(what << "[" << i << "]: " << got[i] << " on the GPU, " << want[i]
                   << " in the interpreter");
  }
  CHECK_MESSAGE(bad == 0, what << ": " << bad << " of " << got.size() << " elements differ");
}

} // namespace

TEST_CASE("gpu: vector add (examples/01) matches the interpreter") {
  TRITIUM_REQUIRE_GPU(gpus);
  auto kernel = tritium::jit(add_kernel, "add_kernel");
  for (size_t n : {size_t{1}, size_t{98432}, size_t{1} << 20}) {
    auto hx = random_floats(n, 1), hy = random_floats(n, 2);
    auto run = [&](Device d) {
      auto x = d.from_host(hx), y = d.from_host(hy);
      auto out = poisoned<float>(d, n);
      kernel[{tritium::cdiv(static_cast<int64_t>(n), 1024)}](x, y, out, static_cast<int>(n), 1024);
      return out.to_host();
    };
    auto want = run(tritium::testing::interpreter());
    for (Device d : gpus) {
      CAPTURE(n);
      CAPTURE(d.target());
      check_close(run(d), want, 0.0, "x + y");
    }
  }
}

TEST_CASE("gpu: masked math matches the interpreter") {
  TRITIUM_REQUIRE_GPU(gpus);
  auto kernel = tritium::jit(math_kernel, "math_kernel");
  const int n = 10000;
  auto hx = random_floats(n, 3);
  auto run = [&](Device d) {
    auto x = d.from_host(hx);
    auto out = poisoned<float>(d, n);
    kernel[{tritium::cdiv(n, 256)}](x, out, n, 0.5, 256);
    return out.to_host();
  };
  auto want = run(tritium::testing::interpreter());
  for (Device d : gpus)
    check_close(run(d), want, 1e-5, "where(x > 0, sqrt(x) * s, exp(x) - 1) + |x|");
}

TEST_CASE("gpu: block reductions match the interpreter") {
  TRITIUM_REQUIRE_GPU(gpus);
  auto kernel = tritium::jit(reduce_kernel, "reduce_kernel");
  const int n = 5000, block = 1024, blocks = (n + block - 1) / block;
  auto hx = random_floats(n, 4);
  auto run = [&](Device d) {
    auto x = d.from_host(hx);
    auto sums = poisoned<float>(d, blocks), maxes = poisoned<float>(d, blocks);
    kernel[{blocks}](x, sums, maxes, n, block);
    return std::pair(sums.to_host(), maxes.to_host());
  };
  auto want = run(tritium::testing::interpreter());
  for (Device d : gpus) {
    auto got = run(d);
    // The GPU adds in another order than the interpreter: sums agree to rounding.
    check_close(got.first, want.first, 1e-4, "sum");
    check_close(got.second, want.second, 0.0, "max");
  }
}

TEST_CASE("gpu: 2-D row sums and prefix sums match the interpreter") {
  TRITIUM_REQUIRE_GPU(gpus);
  auto kernel = tritium::jit(rows_kernel, "rows_kernel");
  const int rows = 64, cols = 128, tile_rows = 16;
  auto hx = random_floats(rows * cols, 5);
  auto run = [&](Device d) {
    auto x = d.from_host(hx);
    auto sums = poisoned<float>(d, rows), prefix = poisoned<float>(d, rows * cols);
    kernel[{rows / tile_rows}](x, sums, prefix, cols, tile_rows, cols);
    return std::pair(sums.to_host(), prefix.to_host());
  };
  auto want = run(tritium::testing::interpreter());
  for (Device d : gpus) {
    auto got = run(d);
    check_close(got.first, want.first, 1e-4, "row sum");
    check_close(got.second, want.second, 1e-4, "cumsum");
  }
}

TEST_CASE("gpu: conversions and i64 arguments match the interpreter") {
  TRITIUM_REQUIRE_GPU(gpus);
  auto kernel = tritium::jit(convert_kernel, "convert_kernel");
  const int n = 4096;
  auto hx = random_floats(n, 6);
  const int64_t bias = int64_t{1} << 40;
  auto run = [&](Device d) {
    auto x = d.from_host(hx);
    auto h = poisoned<tritium::half>(d, n);
    auto i = poisoned<int64_t>(d, n);
    kernel[{n / 512}](x, h, i, bias, 512);
    return std::pair(h.to_host(), i.to_host());
  };
  auto want = run(tritium::testing::interpreter());
  for (Device d : gpus) {
    auto got = run(d);
    size_t bad_h = 0, bad_i = 0;
    for (int k = 0; k < n; ++k) {
      bad_h += got.first[k].bits != want.first[k].bits;
      bad_i += got.second[k] != want.second[k];
    }
    CHECK_MESSAGE(bad_h == 0, bad_h << " f16 results differ");
    CHECK_MESSAGE(bad_i == 0, bad_i << " i64 results differ");
  }
}

TEST_CASE("gpu: kernels without dots get room for 16 warps per SM where registers would deny "
          "it, unless they would spill for it") {
  TRITIUM_REQUIRE_GPU(gpus);
  auto reduce = tritium::jit(reduce_kernel, "reduce_kernel");
  auto wide = tritium::jit(wide_softmax_kernel, "wide_softmax_kernel");
  wide.options({.num_warps = 8});
  const int block = 32768, rows = 3;
  auto hx = random_floats(size_t(rows) * block, 12, -4.f, 4.f);
  auto run = [&](Device d) {
    auto x = d.from_host(hx);
    auto y = poisoned<float>(d, hx.size());
    wide[{rows}](x, y, block);
    return y.to_host();
  };
  auto want = run(tritium::testing::interpreter());
  for (Device d : gpus) {
    check_close(run(d), want, 1e-5, "wide softmax");
    if (d.name() != "cuda")
      continue;
    auto x = d.alloc<float>(4096);
    // 4 warps: the PTX asks for four blocks' worth of registers; the kernel fits four blocks
    // without the request, so it is assembled without it (the assembler spends registers up
    // to a stated bound).
    auto& r = reduce.compiled(x, x, x, 4096, 1024);
    INFO("reduce: " << r.artifact("min_blocks"));
    CHECK(r.artifact("ll.opt").find("minctasm") != std::string::npos);
    CHECK(r.artifact("ptx").find(".minnctapersm") == std::string::npos);
    CHECK(std::stoi(r.artifact("registers")) <= 128);
    // The wide rows would spill under the request: assembled without it, they do not.
    auto& k = wide.compiled(x, x, block);
    INFO("registers " << k.artifact("registers") << "; " << k.artifact("min_blocks"));
    CHECK(k.artifact("local_bytes") == "0");
  }
}

TEST_CASE("gpu: a cached launch reuses the compiled kernel") {
  TRITIUM_REQUIRE_GPU(gpus);
  auto kernel = tritium::jit(add_kernel, "add_kernel");
  for (Device d : gpus) {
    auto x = d.from_host(random_floats(4096, 7)), y = d.from_host(random_floats(4096, 8));
    auto out = d.alloc<float>(4096);
    size_t before = kernel.num_compiled();
    for (int i = 0; i < 10; ++i)
      kernel[{4}](x, y, out, 4096, 1024);
    d.synchronize();
    CHECK(kernel.num_compiled() == before + 1);
  }
}

TEST_CASE("gpu: threads launch one cached kernel concurrently") {
  TRITIUM_REQUIRE_GPU(gpus);
  auto kernel = tritium::jit(add_kernel, "add_kernel");
  const int n = 1 << 16, threads = 4, launches = 200;
  for (Device d : gpus) {
    auto hx = random_floats(n, 9), hy = random_floats(n, 10);
    auto x = d.from_host(hx), y = d.from_host(hy);
    std::vector<Buffer<float>> outs;
    for (int t = 0; t < threads; ++t)
      outs.push_back(poisoned<float>(d, n));
    size_t before = kernel.num_compiled();
    kernel[{n / 1024}](x, y, outs[0], n, 1024); // compiled once, before the threads start
    std::vector<std::thread> pool;
    std::atomic<int> errors{0};
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        try {
          for (int i = 0; i < launches; ++i)
            kernel[{n / 1024}](x, y, outs[t], n, 1024);
        } catch (const std::exception&) {
          ++errors;
        }
      });
    for (auto& th : pool)
      th.join();
    d.synchronize();
    CHECK(errors == 0);
    CHECK(kernel.num_compiled() == before + 1);
    for (int t = 0; t < threads; ++t) {
      auto got = outs[t].to_host();
      int bad = 0;
      for (int i = 0; i < n; ++i)
        bad += got[i] != hx[i] + hy[i];
      CHECK_MESSAGE(bad == 0, "thread " << t << ": " << bad << " wrong elements");
    }
  }
}
