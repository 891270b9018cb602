// Streaming stores (codegen/targets/cpu/lower_streaming_store.cpp): which stores become
// non-temporal, read from the optimized LLVM IR that TRITIUM_DUMP keeps, and that kernels
// storing so compute what the interpreter computes wherever their rows start (aligned or not),
// whatever their element size, in place, in loops, and with streaming on and off.
#include "compare.hpp"
#include "dump_stages.hpp"
#include "row_kernels.hpp"

#include <support/devices.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <random>
#include <regex>
#include <string>
#include <vector>

namespace tl = tritium::tl;
using tritium::Device;
using tritium::half;
using tritium::testing::DumpStages;
using tritium::testing::rms_kernel;
using tritium::testing::same_bits;
using tritium::testing::softmax_close;
using tritium::testing::softmax_kernel;

namespace {

// Each program scales its block into `out` starting `shift` elements in: a shift moves every
// row's first aligned lane.
template <class T>
void shifted_scale_kernel(tl::ptr<T> out, tl::ptr<T> in, tl::i32 n, tl::i32 shift,
                          tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  auto v = tl::load(in + offs, mask);
  tl::store(out + shift + offs, v + v, mask);
}

// An f16 output computed in f32, as row-wise kernels write theirs.
void widened_scale_kernel(tl::ptr<half> out, tl::ptr<half> in, tl::i32 n,
                          tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  auto v = tl::load(in + offs, mask).to<float>();
  tl::store(out + offs, (v * 3.f).to<half>(), mask);
}

// Triton's looped form: the store runs once per block of the row.
void looped_scale_kernel(tl::ptr<float> out, tl::ptr<float> in, tl::i32 n,
                         tl::constexpr_<int> BLOCK) {
  auto row = tl::program_id(0);
  for (auto k : tl::range(0, n, BLOCK)) {
    auto cols = k + tl::arange(0, BLOCK);
    auto v = tl::load(in + row * n + cols, cols < n, 0.f);
    tl::store(out + row * n + cols, v * 3.f, cols < n);
  }
}

// Programs that count with atomics talk to each other: nothing streams.
void count_kernel(tl::ptr<float> out, tl::ptr<int32_t> count, tl::i32 n,
                  tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  tl::store(out + offs, tl::full<float>({BLOCK}, 1.f), mask);
  tl::atomic_add(count + (offs & 0), tl::full<int32_t>({BLOCK}, 1), mask);
}

// Stores with the hint, and on x86 the 16-bit float vector stores written as the instruction
// (nontemporal_stores.cpp).
int nontemporal_stores(const std::string& ll) {
  std::regex store(
      R"((store <[0-9]+ x [a-z0-9]+> [^\n]*!nontemporal)|(call void asm "vmovntdq \$1, \$0"))");
  return static_cast<int>(
      std::distance(std::sregex_iterator(ll.begin(), ll.end(), store), std::sregex_iterator()));
}

// While it lives, launches stream from `bytes` ("0": always) or never ("off").
struct StreamingFrom {
  explicit StreamingFrom(const char* bytes) { ::setenv("TRITIUM_CPU_STREAMING_STORES", bytes, 1); }
  StreamingFrom(const StreamingFrom&) = delete;
  StreamingFrom& operator=(const StreamingFrom&) = delete;
  ~StreamingFrom() { ::unsetenv("TRITIUM_CPU_STREAMING_STORES"); }
};

template <class T>
std::vector<T> random_values(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-4.f, 4.f);
  std::vector<T> v(n);
  for (T& x : v)
    x = static_cast<T>(dist(gen));
  return v;
}

template <class T>
void check_shifted_scale(const char* tag) {
  CAPTURE(tag);
  const int block = 1024;
  for (int n : {8 * block, 8 * block - 5, 3 * block + 17, 200}) {
    for (int shift : {0, 1, 3, 16}) {
      CAPTURE(n);
      CAPTURE(shift);
      auto hx = random_values<T>(static_cast<size_t>(n), 5 + n + shift);
      std::vector<std::vector<T>> out;
      for (Device d : {tritium::device("interpreter"), tritium::device("cpu")}) {
        auto x = d.from_host(hx);
        // Sentinels around the stored range: a lane stored past the mask changes them.
        auto y = d.from_host(std::vector<T>(static_cast<size_t>(n) + shift + block, T(7)));
        tritium::jit(shifted_scale_kernel<T>,
                     "shifted_scale")[{(n + block - 1) / block}](y, x, n, shift, block);
        out.push_back(y.to_host());
      }
      CHECK(same_bits(out[0], out[1]));
    }
  }
}

} // namespace

TEST_CASE("cpu: the one store of a wide row streams; small blocks and kernels with atomics "
          "keep plain stores") {
  std::string softmax, scale16, small, atomics, looped;
  {
    DumpStages dump("tritium-streaming-");
    auto dev = tritium::device("cpu");
    auto x = dev.alloc<float>(4 * 4096), y = dev.alloc<float>(4 * 4096);
    auto h = dev.alloc<half>(4 * 4096), g = dev.alloc<half>(4 * 4096);
    auto count = dev.alloc<int32_t>(1);
    softmax = tritium::jit(softmax_kernel, "softmax_streaming")
                  .compiled(y, x, 4096, 4096)
                  .artifact("ll.opt");
    scale16 = tritium::jit(shifted_scale_kernel<half>, "scale_f16_streaming")
                  .compiled(g, h, 4096, 0, 1024)
                  .artifact("ll.opt");
    // 32 floats: two lines per program.
    small = tritium::jit(shifted_scale_kernel<float>, "scale_small_block")
                .compiled(y, x, 4096, 0, 32)
                .artifact("ll.opt");
    atomics = tritium::jit(count_kernel, "count_atomics")
                  .compiled(y, count, 4096, 1024)
                  .artifact("ll.opt");
    looped = tritium::jit(looped_scale_kernel, "looped_streaming")
                 .compiled(y, x, 4096, 1024)
                 .artifact("ll.opt");
  }
  REQUIRE(!softmax.empty());
  CHECK(nontemporal_stores(softmax) > 0);
  CHECK(nontemporal_stores(scale16) > 0);
  CHECK(nontemporal_stores(looped) > 0);
  CHECK(nontemporal_stores(small) == 0);
  CHECK(nontemporal_stores(atomics) == 0);
  // Only vector stores LLVM proved aligned to their whole width (a non-temporal store that is
  // not would be split). The width is the host's: 16 floats on a Zen 4, 8 on a Sapphire Rapids,
  // whose tuning prefers 256-bit vectors.
  std::regex store(R"(store <([0-9]+) x float> [^\n]*align ([0-9]+), [^\n]*!nontemporal)");
  int vector_stores = 0;
  for (std::sregex_iterator it(softmax.begin(), softmax.end(), store), end; it != end; ++it) {
    ++vector_stores;
    CAPTURE(it->str());
    CHECK(std::stoi((*it)[2]) >= 4 * std::stoi((*it)[1]));
  }
  CHECK(vector_stores > 0);
}

// The hint in the IR is not enough: LLVM 19's x86 instruction selector drops it from half
// vector stores where AVX512-FP16 makes them legal (nontemporal_stores.cpp), which cost the f16
// row kernels a read of every output line on a Sapphire Rapids.
TEST_CASE("cpu: on x86-64 f16 and bf16 outputs stream in the machine code") {
#if !defined(__x86_64__)
  MESSAGE("skipped: the check reads x86-64 assembly");
#else
  std::string f16_asm, f32_asm, bf16_asm;
  {
    DumpStages dump("tritium-streaming-asm-");
    auto dev = tritium::device("cpu");
    auto x = dev.alloc<float>(4096), y = dev.alloc<float>(4096);
    auto h = dev.alloc<half>(4096), g = dev.alloc<half>(4096);
    f16_asm = tritium::jit(widened_scale_kernel, "widened_f16_streaming")
                  .compiled(g, h, 4096, 1024)
                  .artifact("asm");
    auto hb = dev.alloc<tritium::bfloat16>(4096), gb = dev.alloc<tritium::bfloat16>(4096);
    bf16_asm = tritium::jit(shifted_scale_kernel<tritium::bfloat16>, "scale_bf16_streaming_asm")
                   .compiled(gb, hb, 4096, 0, 1024)
                   .artifact("asm");
    f32_asm = tritium::jit(shifted_scale_kernel<float>, "scale_f32_streaming_asm")
                  .compiled(y, x, 4096, 0, 1024)
                  .artifact("asm");
  }
  REQUIRE(!f16_asm.empty());
  auto streams = [](const std::string& s) {
    return std::regex_search(s, std::regex(R"(\tvmovnt(ps|dq)\t)"));
  };
  CHECK(streams(f32_asm));
  CHECK(streams(f16_asm));
  CHECK(streams(bf16_asm));
#endif
}

TEST_CASE("cpu: kernels with streaming stores compute what the interpreter computes") {
  for (const char* from : {"0", "off"}) {
    CAPTURE(from);
    StreamingFrom streaming(from);
    check_shifted_scale<float>("f32");
    check_shifted_scale<half>("f16");
    check_shifted_scale<tritium::bfloat16>("bf16");
    check_shifted_scale<double>("f64");
    check_shifted_scale<int32_t>("i32");

    const int rows = 13;
    for (int n : {4096, 3000, 1000}) {
      CAPTURE(n);
      auto hx = random_values<float>(static_cast<size_t>(rows) * n, 17 + n);
      std::vector<std::vector<float>> soft, in_place, looped, rms;
      for (Device d : {tritium::device("interpreter"), tritium::device("cpu")}) {
        auto x = d.from_host(hx);
        auto y = d.from_host(std::vector<float>(hx.size(), 0.f));
        auto z = d.from_host(hx);
        auto w = d.from_host(std::vector<float>(hx.size(), 0.f));
        tritium::jit(softmax_kernel, "softmax_kernel")[{rows}](y, x, n, 4096);
        tritium::jit(softmax_kernel, "softmax_kernel")[{rows}](z, z, n, 4096);
        tritium::jit(looped_scale_kernel, "looped_scale")[{rows}](w, x, n, 1024);
        // Its last pass prefetches the next row while it streams (lower_prefetch.cpp).
        auto r = d.from_host(std::vector<float>(hx.size(), 0.f));
        auto rms_k = tritium::jit(rms_kernel, "rms_kernel");
        rms_k.options({.enable_fp_fusion = false}); // compared bitwise
        rms_k[{rows}](r, x, n, 4096);
        rms.push_back(r.to_host());
        soft.push_back(y.to_host());
        in_place.push_back(z.to_host());
        looped.push_back(w.to_host());
      }
      CHECK(softmax_close(soft[0], soft[1]));
      CHECK(softmax_close(in_place[0], in_place[1]));
      CHECK(softmax_close(soft[1], in_place[1]));
      CHECK(same_bits(looped[0], looped[1]));
      CHECK(same_bits(rms[0], rms[1]));
    }
  }
}
