// Built-in sample kernels of the `tritium` tool, also compiled by tests/gpu_codegen: traced
// with the same specialization Triton's launcher would give (pointers 16-byte aligned,
// integer arguments multiples of 16), so their code can be compared with Triton's.
#pragma once

#include <tritium/tritium.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>

namespace tritium::samples {

namespace tl = tritium::tl;

inline void vector_add(tl::ptr<float> x, tl::ptr<float> y, tl::ptr<float> out, tl::i32 n,
                       tl::constexpr_<int> BLOCK) {
  auto pid = tl::program_id(0);
  auto offs = pid * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  tl::store(out + offs, tl::load(x + offs, mask) + tl::load(y + offs, mask), mask);
}

// C = A @ B (+ bias, ReLU) in fp16 with an f32 accumulator: Triton's tutorial 03 shape.
inline void matmul(tl::ptr<tl::f16> a, tl::ptr<tl::f16> b, tl::ptr<tl::f16> c, tl::i32 M, tl::i32 N,
                   tl::i32 K, tl::i32 stride_am, tl::i32 stride_bk, tl::i32 stride_cm,
                   tl::constexpr_<int> BM, tl::constexpr_<int> BN, tl::constexpr_<int> BK) {
  auto pid_m = tl::program_id(0);
  auto pid_n = tl::program_id(1);
  auto rm = pid_m * BM + tl::arange(0, BM);
  auto rn = pid_n * BN + tl::arange(0, BN);
  auto rk = tl::arange(0, BK);
  auto a_ptrs = a + tl::expand_dims(rm, 1) * stride_am + tl::expand_dims(rk, 0);
  auto b_ptrs = b + tl::expand_dims(rk, 1) * stride_bk + tl::expand_dims(rn, 0);
  auto acc = tl::zeros<float>({BM, BN});
  for (auto k : tl::range(0, K, BK)) {
    (void)k;
    auto x = tl::load(a_ptrs);
    auto y = tl::load(b_ptrs);
    acc = tl::dot(x, y, acc);
    a_ptrs = a_ptrs + BK;
    b_ptrs = b_ptrs + BK * stride_bk;
  }
  auto c_ptrs = c + tl::expand_dims(rm, 1) * stride_cm + tl::expand_dims(rn, 0);
  auto mask = (tl::expand_dims(rm, 1) < M) & (tl::expand_dims(rn, 0) < N);
  tl::store(c_ptrs, tl::cast<tl::f16>(acc), mask);
}

// Row softmax: reductions (max, sum) along the row, exp.
inline void softmax(tl::ptr<float> out, tl::ptr<float> in, tl::i32 stride, tl::i32 n_cols,
                    tl::constexpr_<int> BLOCK) {
  auto row = tl::program_id(0);
  auto cols = tl::arange(0, BLOCK);
  auto mask = cols < n_cols;
  auto x = tl::load(in + row * stride + cols, mask, -INFINITY);
  auto z = x - tl::max(x, 0);
  auto num = tl::exp(z);
  auto y = num / tl::sum(num, 0);
  tl::store(out + row * stride + cols, y, mask);
}

inline lang::ArgSpec ptr_arg() {
  lang::ArgSpec s;
  s.info.divisibility = 16;
  s.info.range32 = true; // a buffer smaller than 2 GiB, as Triton's AMD launcher specializes
  return s;
}
inline lang::ArgSpec int_arg(int64_t div = 16) {
  lang::ArgSpec s;
  s.info.divisibility = div;
  return s;
}
inline lang::ArgSpec const_arg(int64_t v) {
  lang::ArgSpec s;
  s.value = v;
  return s;
}

// name -> a freshly traced kernel.
inline std::map<std::string, std::function<std::unique_ptr<ir::Function>()>> sample_kernels() {
  return {
      {"vector_add",
       [] {
         lang::ArgSpec specs[] = {ptr_arg(), ptr_arg(), ptr_arg(), int_arg(), const_arg(1024)};
         return lang::trace(vector_add, "vector_add", specs);
       }},
      {"matmul",
       [] {
         lang::ArgSpec specs[] = {ptr_arg(), ptr_arg(),     ptr_arg(),     int_arg(),
                                  int_arg(), int_arg(),     int_arg(),     int_arg(),
                                  int_arg(), const_arg(64), const_arg(64), const_arg(32)};
         return lang::trace(matmul, "matmul", specs);
       }},
      {"softmax",
       [] {
         lang::ArgSpec specs[] = {ptr_arg(), ptr_arg(), int_arg(), int_arg(), const_arg(1024)};
         return lang::trace(softmax, "softmax", specs);
       }},
  };
}

} // namespace tritium::samples
