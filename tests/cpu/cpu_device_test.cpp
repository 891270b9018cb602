// The CPU device through the public API: device choice, the compile cache, dot in every
// precision on tiles the micro-kernel and its edge loops cover, atomics, printing and asserts,
// each compared with the interpreter.
#include "compare.hpp"
#include "dump_stages.hpp"

#include <support/devices.hpp>

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <unistd.h>

namespace tl = tritium::tl;
using tritium::Device;

namespace {

template <class In, class Acc>
void dot_kernel(tl::ptr<In> a, tl::ptr<In> b, tl::ptr<Acc> c, tl::ptr<Acc> out,
                tl::constexpr_<int> M, tl::constexpr_<int> N, tl::constexpr_<int> K,
                tl::constexpr_<int> TF32, tl::constexpr_<int> TRANS_B) {
  auto rm = tl::arange(0, M);
  auto rn = tl::arange(0, N);
  auto rk = tl::arange(0, K);
  auto ta = tl::load(a + tl::expand_dims(rm, 1) * K + tl::expand_dims(rk, 0));
  tl::basic_tensor<In> tb = [&] {
    if (TRANS_B) // B stored as N x K: load it so, then transpose (a strided view)
      return tl::trans(tl::load(b + tl::expand_dims(rn, 1) * K + tl::expand_dims(rk, 0)));
    return tl::load(b + tl::expand_dims(rk, 1) * N + tl::expand_dims(rn, 0));
  }();
  auto offs_c = tl::expand_dims(rm, 1) * N + tl::expand_dims(rn, 0);
  auto acc = tl::load(c + offs_c);
  tl::store(out + offs_c, tl::dot(ta, tb, acc, TF32 ? "tf32" : "ieee"));
}

template <class T>
std::vector<T> random_values(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(n);
  for (auto& x : v) {
    if constexpr (std::is_integral_v<T>)
      x = static_cast<T>(static_cast<int>(rng() % 256) - 128);
    else
      x = T(std::normal_distribution<float>(0.f, 1.f)(rng));
  }
  return v;
}

template <class In, class Acc>
void check_dot(int m, int n, int k, int tf32, int trans_b) {
  auto ha = random_values<In>(m * k, 1), hb = random_values<In>(k * n, 2);
  auto hc = random_values<Acc>(m * n, 3);
  std::vector<std::vector<Acc>> results;
  for (Device d : {tritium::device("interpreter"), tritium::device("cpu")}) {
    auto a = d.from_host(ha), b = d.from_host(hb);
    auto c = d.from_host(hc); // clang: one auto declaration deduces one type
    auto out = d.alloc<Acc>(m * n);
    auto kern = tritium::jit(dot_kernel<In, Acc>, "dot_kernel");
    kern[{1}](a, b, c, out, m, n, k, tf32, trans_b);
    results.push_back(out.to_host());
  }
  CHECK_MESSAGE(std::memcmp(results[0].data(), results[1].data(), m * n * sizeof(Acc)) == 0,
                "dot " << m << "x" << n << "x" << k << " tf32=" << tf32 << " trans_b=" << trans_b);
}

} // namespace

TEST_CASE("cpu: the default device without a GPU, and TRITIUM_DEVICE") {
  unsetenv("TRITIUM_DEVICE");
  bool gpu = false;
  for (auto& [name, status] : tritium::list_devices())
    if ((name == "cuda" || name == "hip") && status.rfind("available", 0) == 0)
      gpu = true;
  if (!gpu)
    CHECK(tritium::default_device().name() == "cpu");
  setenv("TRITIUM_DEVICE", "interpreter", 1);
  CHECK(tritium::default_device().name() == "interpreter");
  setenv("TRITIUM_DEVICE", "cpu", 1);
  CHECK(tritium::default_device().name() == "cpu");
  setenv("TRITIUM_DEVICE", "tpu", 1);
  try {
    (void)tritium::default_device();
    FAIL("an unknown TRITIUM_DEVICE must be an error");
  } catch (const tritium::Error& e) {
    CHECK(std::string(e.what()).find("TRITIUM_DEVICE=tpu") != std::string::npos);
    CHECK(std::string(e.what()).find("cpu") != std::string::npos); // lists the known devices
  }
  unsetenv("TRITIUM_DEVICE");
}

namespace {
void add_kernel(tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  tl::store(out + offs, tl::load(x + offs, mask) + 1.0f, mask);
}
} // namespace

TEST_CASE("cpu: a compiled specialization is reused, never recompiled") {
  auto dev = tritium::device("cpu");
  auto x = dev.from_host(std::vector<float>(1000, 1.0f));
  auto out = dev.alloc<float>(1000);
  auto k = tritium::jit(add_kernel, "add_kernel");
  for (int i = 0; i < 5; ++i)
    k[{8}](x, out, 1000, 128);
  CHECK(k.num_compiled() == 1);
  k[{4}](x, out, 1000, 256); // a new constexpr value is a new specialization
  CHECK(k.num_compiled() == 2);
  k[{8}](x, out, 1000, 128);
  CHECK(k.num_compiled() == 2);
  CHECK(out.to_host() == std::vector<float>(1000, 2.0f));
}

// The disk cache of compiled objects: a kernel traced again (as by a second process) loads
// its object instead of compiling; another specialization, or fp_fusion, is another entry; a
// damaged entry is compiled again. TRITIUM_CACHE_DIR points at a fresh folder for the test.
TEST_CASE("cpu: compiled kernels persist in the disk cache, keyed by their specialization") {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("tritium-cpu-cache-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  ::setenv("TRITIUM_CACHE_DIR", dir.c_str(), 1);
  auto entries = [&] {
    size_t n = 0;
    if (fs::exists(dir / "cpu"))
      for (const auto& e : fs::recursive_directory_iterator(dir / "cpu"))
        n += e.is_regular_file();
    return n;
  };
  auto dev = tritium::device("cpu");
  auto x = dev.from_host(std::vector<float>(1000, 1.0f));
  auto out = dev.alloc<float>(1000);
  auto launch = [&](int block, bool fusion = true) {
    auto k = tritium::jit(add_kernel, "add_kernel_cached"); // a fresh JIT: nothing in memory
    k.options({.enable_fp_fusion = fusion});
    const std::string state = k.compiled(x, out, 1000, block).artifact("cache");
    k[{(1000 + block - 1) / block}](x, out, 1000, block);
    CHECK(out.to_host() == std::vector<float>(1000, 2.0f));
    return state;
  };
  CHECK(launch(128) == "miss");
  CHECK(entries() == 1);
  CHECK(launch(128) == "hit");
  CHECK(launch(256) == "miss"); // another constexpr value
  CHECK(launch(128, false) == "miss");
  CHECK(entries() == 3);
  // Every entry damaged: each reads as a miss, and is compiled and stored again.
  for (const auto& e : fs::recursive_directory_iterator(dir / "cpu"))
    if (e.is_regular_file())
      fs::resize_file(e.path(), fs::file_size(e.path()) / 2);
  CHECK(launch(128) == "miss");
  CHECK(launch(128) == "hit");
  ::setenv("TRITIUM_CACHE_DIR", "off", 1);
  CHECK(launch(128) == "off");
  ::unsetenv("TRITIUM_CACHE_DIR");
  fs::remove_all(dir);
}

TEST_CASE("cpu: dot matches the interpreter bit for bit in every precision") {
  // tl::dot needs dimensions >= 16; smaller tiles (the micro-kernel's edge loops) come from
  // the random kernels, which build dot IR directly.
  const int shapes[][3] = {{16, 16, 16}, {64, 32, 16}, {16, 128, 16}, {32, 16, 64}, {128, 64, 32}};
  for (auto& s : shapes)
    for (int trans = 0; trans < 2; ++trans) {
      check_dot<float, float>(s[0], s[1], s[2], 0, trans);
      check_dot<float, float>(s[0], s[1], s[2], 1, trans);
      check_dot<tritium::half, float>(s[0], s[1], s[2], 0, trans);
      check_dot<tritium::bfloat16, float>(s[0], s[1], s[2], 0, trans);
      check_dot<int8_t, int32_t>(s[0], s[1], s[2], 0, trans);
      check_dot<double, double>(s[0], s[1], s[2], 0, trans);
    }
}

namespace {
void histogram_kernel(tl::ptr<int32_t> x, tl::ptr<int32_t> bins, tl::ptr<float> total,
                      tl::ptr<int32_t> old_sum, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  auto v = tl::load(x + offs, mask);
  auto old = tl::atomic_add(bins + (v & 7), tl::full<int32_t>({BLOCK}, 1), mask);
  tl::atomic_max(bins + 8 + (v & 1), v, mask);
  // Adding 1.0 in f32 is exact at these sizes, so the total does not depend on the order.
  tl::atomic_add(total + (v & 0), tl::full<float>({BLOCK}, 1.0f), mask);
  tl::store(old_sum + offs, old * 0, mask);
}
} // namespace

TEST_CASE("cpu: atomics from parallel programs") {
  const int n = 100000;
  std::vector<int32_t> hx(n);
  std::mt19937 rng(5);
  for (auto& v : hx)
    v = static_cast<int32_t>(rng() % 100000);
  std::vector<std::vector<int32_t>> bins;
  std::vector<float> totals;
  for (Device d : {tritium::device("interpreter"), tritium::device("cpu")}) {
    auto x = d.from_host(hx);
    auto b = d.from_host(std::vector<int32_t>(10, 0));
    auto t = d.from_host(std::vector<float>(1, 0.0f));
    auto o = d.alloc<int32_t>(n);
    auto k = tritium::jit(histogram_kernel, "histogram_kernel");
    k[{tritium::cdiv(n, 256)}](x, b, t, o, n, 256);
    bins.push_back(b.to_host());
    totals.push_back(t.to_host()[0]);
  }
  CHECK(bins[0] == bins[1]);
  CHECK(totals[1] == static_cast<float>(n));
  CHECK(totals[0] == totals[1]);
}

namespace {
void print_kernel(tl::ptr<float> x, tl::i32 k) {
  auto v = tl::load(x + tl::arange(0, 4));
  tl::device_print("values", v, k);
}

void assert_kernel(tl::ptr<int32_t> x, tl::constexpr_<int> BLOCK) {
  auto v = tl::load(x + tl::program_id(0) * BLOCK + tl::arange(0, BLOCK));
  tl::device_assert(v < 100, "values must stay below 100");
}

// What `f` writes to stdout.
template <class F>
std::string capture_stdout(F f) {
  std::fflush(stdout);
  char path[] = "/tmp/tritium_cpu_print_XXXXXX";
  int fd = mkstemp(path);
  int saved = dup(1);
  dup2(fd, 1);
  f();
  std::fflush(stdout);
  dup2(saved, 1);
  close(saved);
  close(fd);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::remove(path);
  return ss.str();
}
} // namespace

namespace {
void grid_ids_kernel(tl::ptr<int32_t> ids, tl::ptr<int32_t> runs) {
  auto x = tl::program_id(0), y = tl::program_id(1), z = tl::program_id(2);
  auto linear = (z * tl::num_programs(1) + y) * tl::num_programs(0) + x;
  tl::store(ids + linear, x + 100 * y + 10000 * z);
  tl::atomic_add(runs + linear, 1);
}
} // namespace

// The compiled entry runs a range of linear program indices (grid_loop.cpp), its ids advanced
// by increments from the range's first: every program of a 3-D grid, once, with its own ids,
// however the host splits the grid among threads.
TEST_CASE("cpu: every program of a 3-D grid runs once with its ids") {
  auto dev = tritium::device("cpu");
  auto k = tritium::jit(grid_ids_kernel, "grid_ids");
  for (auto [gx, gy, gz] : {std::array<int, 3>{7, 5, 3}, std::array<int, 3>{1, 1, 4000},
                            std::array<int, 3>{3000, 1, 1}, std::array<int, 3>{1, 61, 2}}) {
    CAPTURE(gx);
    CAPTURE(gy);
    CAPTURE(gz);
    const int n = gx * gy * gz;
    auto ids = dev.alloc<int32_t>(n), runs = dev.from_host(std::vector<int32_t>(n, 0));
    k[{gx, gy, gz}](ids, runs);
    std::vector<int32_t> got = ids.to_host(), count = runs.to_host();
    int wrong = 0, not_once = 0;
    for (int z = 0; z < gz; ++z)
      for (int y = 0; y < gy; ++y)
        for (int x = 0; x < gx; ++x) {
          int i = (z * gy + y) * gx + x;
          wrong += got[i] != x + 100 * y + 10000 * z;
          not_once += count[i] != 1;
        }
    CHECK(wrong == 0);
    CHECK(not_once == 0);
  }
}

namespace {
void multiply_add_kernel(tl::ptr<float> x, tl::ptr<float> a, tl::ptr<float> b, tl::ptr<float> y,
                         tl::constexpr_<int> BLOCK) {
  auto offs = tl::arange(0, BLOCK);
  tl::store(y + offs, tl::load(x + offs) * tl::load(a + offs) + tl::load(b + offs));
}
} // namespace

// As Triton and the GPU backends: with enable_fp_fusion (the default) a multiply feeding an add
// may round once, as an fma; without it every op rounds as the interpreter's.
TEST_CASE("cpu: enable_fp_fusion decides whether x * a + b rounds once or twice") {
  constexpr int kBlock = 256;
  auto hx = random_values<float>(kBlock, 31), ha = random_values<float>(kBlock, 32),
       hb = random_values<float>(kBlock, 33);
  auto run = [&](Device d, bool fusion, std::string* ll) {
    auto x = d.from_host(hx), a = d.from_host(ha), b = d.from_host(hb);
    auto y = d.alloc<float>(kBlock);
    tritium::testing::DumpStages dump("tritium-fp-fusion-");
    auto k = tritium::jit(multiply_add_kernel, fusion ? "multiply_add_fused" : "multiply_add");
    k.options({.enable_fp_fusion = fusion});
    k[{1}](x, a, b, y, kBlock);
    if (ll)
      *ll = k.compiled(x, a, b, y, kBlock).artifact("ll");
    return y.to_host();
  };
  std::string ll_fused, ll_plain;
  auto want = run(tritium::device("interpreter"), false, nullptr);
  auto plain = run(tritium::device("cpu"), false, &ll_plain);
  auto fused = run(tritium::device("cpu"), true, &ll_fused);
  CHECK(plain == want);
  CHECK(ll_plain.find("contract") == std::string::npos);
  REQUIRE(ll_fused.find("fmul contract") != std::string::npos);
  int rounded_once = 0, differs = 0;
  for (int i = 0; i < kBlock; ++i) {
    rounded_once += fused[i] == std::fma(hx[i], ha[i], hb[i]);
    differs += fused[i] != want[i];
  }
  // Where the host has an fma instruction, LLVM uses it for every element.
  if (ll_fused.find("+fma") != std::string::npos) {
    CHECK(rounded_once == kBlock);
    CHECK(differs > 0); // random inputs: some elements round differently once
  } else {
    CHECK(fused == want);
  }
}

TEST_CASE("cpu: device_print prints what the interpreter prints") {
  std::vector<std::string> printed;
  for (Device d : {tritium::device("interpreter"), tritium::device("cpu")}) {
    auto x = d.from_host(std::vector<float>{0.5f, -1.0f, 0.1f, 3.0f});
    auto k = tritium::jit(print_kernel, "print_kernel");
    printed.push_back(capture_stdout([&] { k[{1}](x, 42); }));
  }
  CHECK(printed[0] == "pid (0, 0, 0) values [0.5, -1, 0.10000000149011612, 3] [42]\n");
  CHECK(printed[1] == printed[0]);
}

TEST_CASE("cpu: a failed device_assert is an error naming the kernel and source line") {
  auto dev = tritium::device("cpu");
  std::vector<int32_t> hx(256, 1);
  hx[200] = 500;
  auto x = dev.from_host(hx);
  auto k = tritium::jit(assert_kernel, "assert_kernel");
  try {
    k[{4}](x, 64);
    FAIL("the assert should fire");
  } catch (const tritium::Error& e) {
    std::string m = e.what();
    CHECK(m.find("cpu_device_test.cpp") != std::string::npos);
    CHECK(m.find("assert_kernel") != std::string::npos);
    CHECK(m.find("values must stay below 100") != std::string::npos);
    CHECK(m.find("program (3, 0, 0)") != std::string::npos);
    CHECK(m.find("lane 8") != std::string::npos);
  }
}

namespace {
void to_bf16_kernel(tl::ptr<float> x, tl::ptr<tritium::bfloat16> out, tl::constexpr_<int> BLOCK) {
  auto offs = tl::arange(0, BLOCK);
  tl::store(out + offs, tl::load(x + offs).to<tritium::bfloat16>());
}
} // namespace

// x86's f32 -> bf16 instructions (AVX512-BF16, AVX-NE-CONVERT) flush subnormals to zero; the
// gpu-emulator's JIT leaves them out, so its bf16 casts round as the interpreter, the CPU
// backend and a GPU's cvt.rn.bf16.f32 do (random kernel seed 9515). On a host without them
// this passes either way.
TEST_CASE("cpu: f32 -> bf16 casts keep subnormals, as the interpreter") {
  std::vector<float> hx(64);
  for (size_t i = 0; i < hx.size(); ++i)
    hx[i] = (i % 2 ? -1.f : 1.f) *
            std::ldexp(1.f + static_cast<float>(i) / 64.f, -127 - static_cast<int>(i % 20));
  std::vector<std::vector<uint16_t>> bits;
  for (const char* name : {"interpreter", "cpu", "gpu-emulator"}) {
    Device d = tritium::device(name);
    auto x = d.from_host(hx);
    auto out = d.alloc<tritium::bfloat16>(hx.size());
    auto k = tritium::jit(to_bf16_kernel, "to_bf16_kernel");
    k[{1}](x, out, static_cast<int>(hx.size()));
    std::vector<uint16_t> b;
    for (auto v : out.to_host())
      b.push_back(v.bits);
    bits.push_back(b);
  }
  CHECK(bits[1] == bits[0]);
  CHECK(bits[2] == bits[0]);
  CHECK(bits[0][1] != 0x8000); // the inputs are subnormal but not rounded to zero
}
