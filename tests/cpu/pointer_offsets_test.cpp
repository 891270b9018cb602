// Loop-carried pointer tensors (codegen/targets/cpu/pointer_offsets.cpp): advanced each trip by
// an invariant amount, the CPU carries them as one offset from their initial value. The
// results must be the interpreter's, bit for bit, whatever the loop does with the pointers,
// and a tiled matmul must no longer read its addresses back from memory.
#include "dump_stages.hpp"

#include <support/devices.hpp>

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

namespace tl = tritium::tl;
using tritium::Device;

namespace {

// Triton's tutorial 03 in fp32: a_ptrs and b_ptrs advance by BK and BK * stride after each dot.
// WRAP: rows and columns past the matrix wrap around (`% M`, `% N`) as in the tutorial (the
// divisions are computed once, before the loop: lower_kernel.cpp's division leaves);
// otherwise the loads are masked.
// HINT: each trip first marks the pointers with tl::multiple_of, as tutorial 08's grouped GEMM
// does (examples/10), so that the advanced pointers are the argument through a hint.
template <bool WRAP, bool HINT = false>
void matmul_kernel(tl::ptr<float> a, tl::ptr<float> b, tl::ptr<float> c, tl::i32 M, tl::i32 N,
                   tl::i32 K, tl::constexpr_<int> BM, tl::constexpr_<int> BN,
                   tl::constexpr_<int> BK) {
  auto rm = tl::program_id(0) * BM + tl::arange(0, BM);
  auto rn = tl::program_id(1) * BN + tl::arange(0, BN);
  auto rk = tl::arange(0, BK);
  auto am = WRAP ? rm % M : rm;
  auto bn = WRAP ? rn % N : rn;
  auto a_ptrs = a + tl::expand_dims(am, 1) * K + tl::expand_dims(rk, 0);
  auto b_ptrs = b + tl::expand_dims(rk, 1) * N + tl::expand_dims(bn, 0);
  auto acc = tl::zeros<float>({BM, BN});
  for (auto k : tl::range(0, tl::cdiv(K, BK))) {
    if constexpr (HINT) {
      a_ptrs = tl::multiple_of(a_ptrs, 16);
      b_ptrs = tl::multiple_of(b_ptrs, 16);
    }
    auto a_mask = (tl::expand_dims(am, 1) < M) & (tl::expand_dims(rk, 0) < K - k * BK);
    auto b_mask = (tl::expand_dims(rk, 1) < K - k * BK) & (tl::expand_dims(bn, 0) < N);
    auto ta = tl::load(a_ptrs, a_mask, 0.f);
    auto tb = tl::load(b_ptrs, b_mask, 0.f);
    acc = tl::dot(ta, tb, acc, "ieee");
    a_ptrs += BK;
    b_ptrs += BK * N;
  }
  auto mask = (tl::expand_dims(rm, 1) < M) & (tl::expand_dims(rn, 0) < N);
  tl::store(c + tl::expand_dims(rm, 1) * N + tl::expand_dims(rn, 0), acc, mask);
}

// Pointers carried in every way the rewrite must respect: a step computed in the body from an
// argument, one read before and after it advances in the same trip, the final pointers used
// after the loop, a step that differs per lane (not rewritten), and a nested loop that starts
// from the outer one's pointers.
void walk_kernel(tl::ptr<int32_t> x, tl::ptr<int32_t> out, tl::i32 n, tl::i32 stride,
                 tl::constexpr_<int> BLOCK) {
  auto cols = tl::arange(0, BLOCK);
  auto row = tl::program_id(0);
  auto p = x + row * BLOCK + cols; // by 2 * stride per trip, computed in the body
  auto q = x + cols;               // by the constant 3
  auto r = x + cols;               // by cols: per lane, stays a carried tensor
  auto acc = tl::zeros<int32_t>({BLOCK});
  for (auto t : tl::range(0, n)) {
    auto step = stride * 2;
    acc += tl::load(p) * (t + 1);
    auto p_next = p + step;
    acc += tl::load(p_next, cols < 4, 0) + tl::load(q) + tl::load(r);
    p = p_next;
    q = q + 3;
    r = r + cols;
    auto inner = q;
    for (auto u : tl::range(0, 2)) {
      acc += tl::load(inner) * u;
      inner = inner + 1;
    }
  }
  tl::store(out + row * BLOCK + cols, acc);
  tl::store(out + 4 * BLOCK + row * BLOCK + cols, tl::load(p) + tl::load(q)); // after the loop
}

std::vector<Device> interpreter_and_cpu() {
  return {tritium::device("interpreter"), tritium::device("cpu")};
}

} // namespace

TEST_CASE("cpu: a tiled matmul with carried pointers computes what the interpreter computes") {
  struct Shape {
    int M, N, K, BM, BN, BK;
  };
  const Shape shapes[] = {{64, 64, 64, 32, 32, 16},
                          {70, 50, 45, 32, 32, 16},
                          {33, 97, 130, 16, 32, 32},
                          {128, 64, 256, 64, 64, 32}};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (const Shape& s : shapes) {
    CAPTURE(s.M);
    CAPTURE(s.N);
    CAPTURE(s.K);
    std::vector<float> ha(static_cast<size_t>(s.M) * s.K), hb(static_cast<size_t>(s.K) * s.N);
    for (float& v : ha)
      v = u(rng);
    for (float& v : hb)
      v = u(rng);
    for (bool wrap : {false, true}) {
      CAPTURE(wrap);
      std::vector<std::vector<float>> got;
      for (Device d : interpreter_and_cpu()) {
        auto a = d.from_host(ha), b = d.from_host(hb);
        auto c = d.from_host(std::vector<float>(static_cast<size_t>(s.M) * s.N, -7.f));
        tritium::LaunchGrid grid{tritium::cdiv(s.M, s.BM), tritium::cdiv(s.N, s.BN)};
        if (wrap)
          tritium::jit(matmul_kernel<true>, "matmul_wrapped")[grid](a, b, c, s.M, s.N, s.K, s.BM,
                                                                    s.BN, s.BK);
        else
          tritium::jit(matmul_kernel<false>, "matmul_masked")[grid](a, b, c, s.M, s.N, s.K, s.BM,
                                                                    s.BN, s.BK);
        got.push_back(c.to_host());
      }
      CHECK(got[0] == got[1]); // dot is bit for bit on the CPU (docs/cpu-backend.md)
    }
  }
}

TEST_CASE("cpu: a matmul whose pointers pass through hints each trip computes what the "
          "interpreter computes") {
  const int n = 128; // rows of 512 bytes: every tile row starts 16-byte aligned, as hinted
  std::vector<float> ha(n * n), hb(n * n);
  for (int i = 0; i < n * n; ++i) {
    ha[i] = static_cast<float>(i % 97) * 0.25f - 12.f;
    hb[i] = static_cast<float>(i % 89) * 0.5f - 20.f;
  }
  std::vector<std::vector<float>> got;
  for (Device d : interpreter_and_cpu()) {
    auto a = d.from_host(ha), b = d.from_host(hb);
    auto c = d.alloc<float>(n * n);
    tritium::jit(matmul_kernel<false, true>, "matmul_hinted")[{n / 64, n / 64}](a, b, c, n, n, n,
                                                                                64, 64, 32);
    got.push_back(c.to_host());
  }
  CHECK(got[0] == got[1]);
}

TEST_CASE("cpu: pointers carried through loops in every way read what the interpreter reads") {
  const int block = 16, rows = 4;
  std::vector<int32_t> hx(4096);
  for (size_t i = 0; i < hx.size(); ++i)
    hx[i] = static_cast<int32_t>(i * 7 % 1000);
  for (int n : {0, 1, 5})
    for (int stride : {1, 3}) {
      CAPTURE(n);
      CAPTURE(stride);
      std::vector<std::vector<int32_t>> got;
      for (Device d : interpreter_and_cpu()) {
        auto x = d.from_host(hx);
        auto out = d.alloc<int32_t>(8 * block);
        tritium::jit(walk_kernel, "walk_kernel")[{rows}](x, out, n, stride, block);
        got.push_back(out.to_host());
      }
      CHECK(got[0] == got[1]);
    }
}

TEST_CASE("cpu: a tiled matmul's loads do not read their addresses from memory") {
  // Carried as a tensor, each trip's addresses were stored to a buffer and loaded back, one
  // pointer per element (`load ptr` in the optimized IR).
  std::string masked, wrapped, hinted;
  {
    tritium::testing::DumpStages dump("tritium-pointer-offsets-");
    auto dev = tritium::device("cpu");
    auto a = dev.alloc<float>(128 * 128), b = dev.alloc<float>(128 * 128),
         c = dev.alloc<float>(128 * 128);
    masked = tritium::jit(matmul_kernel<false>, "matmul_masked_stages")
                 .compiled(a, b, c, 128, 128, 128, 64, 64, 32)
                 .artifact("ll.opt");
    wrapped = tritium::jit(matmul_kernel<true>, "matmul_wrapped_stages")
                  .compiled(a, b, c, 128, 128, 128, 64, 64, 32)
                  .artifact("ll.opt");
    hinted = tritium::jit(matmul_kernel<false, true>, "matmul_hinted_stages")
                 .compiled(a, b, c, 128, 128, 128, 64, 64, 32)
                 .artifact("ll.opt");
  }
  REQUIRE(!masked.empty());
  REQUIRE(!wrapped.empty());
  CHECK(masked.find("load ptr") == std::string::npos);
  CHECK(wrapped.find("load ptr") == std::string::npos);
  REQUIRE(!hinted.empty());
  CHECK(hinted.find("load ptr") == std::string::npos);
}
