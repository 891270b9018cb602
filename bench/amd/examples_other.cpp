// The elementwise, normalization and attention examples (01, 04-09) at their benchmark shapes.
#include "example_prelude.hpp"

#define main example_01_main
namespace ex01 {
#include "../../examples/01_vector_add.cpp"
}
#undef main
#define main example_04_main
namespace ex04 {
#include "../../examples/04_fused_softmax.cpp"
}
#undef main
#define main example_05_main
namespace ex05 {
#include "../../examples/05_layer_norm.cpp"
}
#undef main
#define main example_06_main
namespace ex06 {
#include "../../examples/06_low_memory_dropout.cpp"
}
#undef main
#define main example_07_main
namespace ex07 {
#include "../../examples/07_layer_norm_backward.cpp"
}
#undef main
#define main example_08_main
namespace ex08 {
#include "../../examples/08_fused_attention.cpp"
}
#undef main
#define main example_09_main
namespace ex09 {
#include "../../examples/09_extern_functions.cpp"
}
#undef main

namespace tritium::xcompile {

void run_01(const Device& dev) {
  const size_t n = 98432;
  auto x = dev.alloc<float>(n), y = dev.alloc<float>(n);
  ex01::add(x, y);
}

void run_04(const Device& dev) {
  const int rows = 4096, cols = 1024;
  auto x = dev.alloc<float>(size_t(rows) * cols), y = dev.alloc<float>(size_t(rows) * cols);
  ex04::softmax(x, y, rows, cols);
}

void run_05(const Device& dev) {
  const int M = 4096, N = 4096;
  auto x = dev.alloc<half>(size_t(M) * N), w = dev.alloc<half>(N), b = dev.alloc<half>(N);
  ex05::Result r{dev.alloc<half>(size_t(M) * N), dev.alloc<float>(M), dev.alloc<float>(M)};
  ex05::layer_norm(x, w, b, r, M, N, 1e-5f);
}

void run_06(const Device& dev) {
  const size_t n = 1 << 20;
  auto x = dev.alloc<float>(n), out = dev.alloc<float>(n);
  auto keep = dev.alloc<int8_t>(n);
  ex06::dropout(x, keep, out, 0.5f);
  ex06::seeded_dropout(x, out, 0.5f, 123);
}

void run_07(const Device& dev) {
  const int M = 4096, N = 4096;
  auto x = dev.alloc<half>(size_t(M) * N), w = dev.alloc<half>(N), b = dev.alloc<half>(N);
  auto dy = dev.alloc<half>(size_t(M) * N);
  ex07::Forward f{dev.alloc<half>(size_t(M) * N), dev.alloc<float>(M), dev.alloc<float>(M)};
  ex07::layer_norm_forward(x, w, b, f, M, N, 1e-5f);
  ex07::Backward g = ex07::alloc_backward(dev, M, N);
  ex07::layer_norm_backward(dy, x, w, f, g, M, N);
}

void run_08(const Device& dev) {
  const int Z = 1, H = 2, N_CTX = 1024;
  for (int d : {64, 128})
    for (bool causal : {false, true}) {
      Label l(fmt::format("d{}{}", d, causal ? "-causal" : ""));
      const size_t n = size_t(Z) * H * N_CTX * d;
      auto q = dev.alloc<half>(n), k = dev.alloc<half>(n), v = dev.alloc<half>(n);
      auto out = dev.alloc<half>(n);
      auto lse = dev.alloc<float>(size_t(Z) * H * N_CTX);
      ex08::attention(q, k, v, out, lse, Z, H, N_CTX, d, causal, 0.5f);
    }
}

void run_09(const Device& dev) {
  const size_t n = 1 << 16;
  auto x = dev.alloc<float>(n), y = dev.alloc<float>(n);
  ex09::asin(x, y);
  auto out = dev.alloc<float>(3 * n);
  static auto more = tritium::jit(ex09::more_kernel, "more_kernel");
  more[{tritium::cdiv(int(n), ex09::block_size)}](x, y, out, int(n), ex09::block_size);
}

} // namespace tritium::xcompile
