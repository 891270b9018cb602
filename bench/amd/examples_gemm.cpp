// The GEMM-shaped examples (02, 03, 10, 11) at their benchmark shapes.
#include "example_prelude.hpp"

#define main example_02_main
namespace ex02 {
#include "../../examples/02_fused_gemm_bias_relu.cpp"
}
#undef main
#define main example_03_main
namespace ex03 {
#include "../../examples/03_llama_mlp.cpp"
}
#undef main
#define main example_10_main
namespace ex10 {
#include "../../examples/10_grouped_gemm.cpp"
}
#undef main
#define main example_11_main
namespace ex11 {
#include "../../examples/11_persistent_matmul.cpp"
}
#undef main

namespace tritium::xcompile {

void run_02(const Device& dev) {
  const int M = 4096, N = 4096, K = 4096;
  auto a = dev.alloc<half>(size_t(M) * K), b = dev.alloc<half>(size_t(K) * N);
  auto c = dev.alloc<half>(size_t(M) * N);
  auto bias = dev.alloc<float>(N);
  {
    Label l("fused");
    ex02::matmul(a, b, bias, c, M, N, K, true);
  }
  {
    Label l("plain");
    ex02::matmul(a, b, bias, c, M, N, K, false);
  }
  ex02::bias_relu(c, bias, c, M, N);
}

void run_03(const Device& dev) {
  const int hidden = 4096, inter = 11008;
  ex03::Weights w{dev.alloc<half>(hidden), dev.alloc<half>(size_t(hidden) * inter),
                  dev.alloc<half>(size_t(hidden) * inter), dev.alloc<half>(size_t(inter) * hidden)};
  for (int tokens : {16, 4096}) {
    Label l(tokens < ex03::kPrefillTokens ? "decode" : "prefill");
    auto x = dev.alloc<half>(size_t(tokens) * hidden),
         xn = dev.alloc<half>(size_t(tokens) * hidden);
    auto h = dev.alloc<half>(size_t(tokens) * inter),
         out = dev.alloc<half>(size_t(tokens) * hidden);
    ex03::mlp_fused(x, w, xn, h, out, tokens, hidden, inter);
  }
}

void run_10(const Device& dev) {
  const int n = 1024;
  std::vector<Buffer<half>> A, B, C;
  for (int g = 0; g < 4; ++g) {
    A.push_back(dev.alloc<half>(size_t(n) * n));
    B.push_back(dev.alloc<half>(size_t(n) * n));
    C.push_back(dev.alloc<half>(size_t(n) * n));
  }
  std::vector<int> d(4, n);
  ex10::Tiles tiles = ex10::tiles_for(dev);
  ex10::group_gemm(ex10::make_tables(A, B, C, d, d, d, tiles), tiles, dev.num_compute_units());
}

void run_11(const Device& dev) {
  const int n = 4096;
  auto a = dev.alloc<half>(size_t(n) * n), b = dev.alloc<half>(size_t(n) * n);
  auto c = dev.alloc<half>(size_t(n) * n);
  ex11::matmul_persistent(a, b, c, n, n, n);
  ex11::matmul_descriptor_persistent(a, b, c, n, n, n);
}

} // namespace tritium::xcompile
