// What the CPU backend's memory-bound loops compile to, read from the optimized LLVM IR that
// TRITIUM_DUMP keeps: the roofline kernels (bench/roofline) depend on it.
#include "dump_stages.hpp"

#include <support/devices.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace tl = tritium::tl;
using tritium::testing::DumpStages;

namespace {

template <class T>
void scale_kernel(tl::ptr<T> x, tl::ptr<T> y, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  auto v = tl::load(x + offs, mask).template to<float>();
  tl::store(y + offs, (v * 2.f).template to<T>(), mask);
}

// The same with the store under its own bound: lanes past the leading ones where both masks
// hold run masked (with one shared mask, a store-only group skips them).
template <class T>
void scale_two_bounds_kernel(tl::ptr<T> x, tl::ptr<T> y, tl::i32 n, tl::i32 m,
                             tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto v = tl::load(x + offs, offs < n).template to<float>();
  tl::store(y + offs, (v * 2.f).template to<T>(), offs < m);
}

// A load and a store under different masks, either of which may be a prefix of the block or
// not: the loop split at the leading lanes where every mask holds must keep each lane's result.
void two_masks_kernel(tl::ptr<float> x, tl::ptr<float> y, tl::i32 n, tl::i32 m, tl::i32 hole,
                      tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto v = tl::load(x + offs, offs < n, -1.f);
  tl::store(y + offs, v * 2.f + 1.f, (offs < m) & (offs != hole));
}

// A row's plain sum, the first statistic of a layer norm: the reduction over the reloaded row
// keeps its partials in registers, a chunk of them at a time.
template <class T>
void row_sum_kernel(tl::ptr<T> x, tl::ptr<float> out, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto row = tl::program_id(0);
  auto cols = tl::arange(0, BLOCK);
  auto v = tl::load(x + row * n + cols, cols < n, 0.0).template to<float>();
  tl::store(out + row, tl::sum(v, 0));
}

void add_one_kernel(tl::ptr<float> x, tl::ptr<float> y, tl::constexpr_<int> BLOCK) {
  auto offs = tl::arange(0, BLOCK);
  tl::store(y + offs, tl::load(x + offs) + 1.f);
}

// The lane counts of the vector loads of `elem` ("float", "half") in the kernel's optimized IR,
// masked or not: AVX-512 has masked loads of 16-bit lanes, AVX2 does not (the vectorizer then
// predicates the tail lane by lane), so the full-width loads of the unmasked lanes are what both
// have in common.
std::set<int> vector_load_widths(const std::string& ll, const std::string& elem) {
  std::set<int> widths;
  const std::string suffix = elem == "half" ? "f16" : "f32";
  std::regex load("llvm\\.masked\\.load\\.v([0-9]+)" + suffix + "|load <([0-9]+) x " + elem + ">");
  for (auto it = std::sregex_iterator(ll.begin(), ll.end(), load); it != std::sregex_iterator();
       ++it)
    widths.insert(std::stoi((*it)[1].matched ? (*it)[1] : (*it)[2]));
  return widths;
}

// The vector load widths of two kernels' optimized IR, logged, for comparison.
std::pair<std::set<int>, std::set<int>> widths(const std::string& f32, const std::string& f16) {
  std::set<int> w32 = vector_load_widths(f32, "float"), w16 = vector_load_widths(f16, "half");
  MESSAGE("vector load widths, f32: ", fmt::format("{}", fmt::join(w32, ",")),
          "; f16: ", fmt::format("{}", fmt::join(w16, ",")));
  return {w32, w16};
}

// SiLU of an f16 tensor: an exp per element, far more arithmetic than conversions.
void silu_kernel(tl::ptr<tl::f16> x, tl::ptr<tl::f16> y, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  auto v = tl::load(x + offs, mask).to<float>();
  tl::store(y + offs, (v / (1.f + tl::exp(-v))).to<tl::f16>(), mask);
}

// The vectorization hints of the loops in a kernel's LLVM IR before optimization, as (width,
// interleave count) per loop that has a width (interleave 1 where none is given).
std::set<std::pair<int, int>> loop_hints(const std::string& ll) {
  std::map<std::string, std::pair<std::string, int>> node; // !N -> (hint name, value)
  std::regex kv("(![0-9]+) = !\\{!\"(llvm\\.loop\\.[a-z.]+)\", i32 ([0-9]+)\\}");
  for (auto it = std::sregex_iterator(ll.begin(), ll.end(), kv); it != std::sregex_iterator(); ++it)
    node[(*it)[1]] = {(*it)[2], std::stoi((*it)[3])};
  std::set<std::pair<int, int>> hints;
  std::regex loop("![0-9]+ = distinct !\\{![0-9]+((?:, ![0-9]+)*)\\}");
  for (auto it = std::sregex_iterator(ll.begin(), ll.end(), loop); it != std::sregex_iterator();
       ++it) {
    int width = 0, interleave = 1;
    std::string ops = (*it)[1];
    std::regex ref("![0-9]+");
    for (auto r = std::sregex_iterator(ops.begin(), ops.end(), ref); r != std::sregex_iterator();
         ++r) {
      auto found = node.find(r->str());
      if (found == node.end())
        continue;
      if (found->second.first == "llvm.loop.vectorize.width")
        width = found->second.second;
      else if (found->second.first == "llvm.loop.interleave.count")
        interleave = found->second.second;
    }
    if (width)
      hints.insert({width, interleave});
  }
  return hints;
}

template <class T>
std::string optimized_ir(const char* name) {
  auto dev = tritium::device("cpu");
  auto x = dev.alloc<T>(4096), y = dev.alloc<T>(4096);
  auto k = tritium::jit(scale_two_bounds_kernel<T>, name);
  return k.compiled(x, y, 4096, 4096, 1024).artifact("ll.opt");
}

} // namespace

TEST_CASE("cpu: loops over f16 memory vectorize as wide as loops over f32") {
  // LLVM's cost model alone picked 4 lanes for f16 where it picked 16 for f32 (AVX-512). A loop
  // bound by its conversions may run narrower, interleaved (see the next test): as many
  // elements per iteration.
  std::string f32, f16, f16_hints;
  {
    DumpStages dump("tritium-width-");
    f32 = optimized_ir<float>("scale_f32");
    f16 = optimized_ir<tritium::half>("scale_f16");
    auto dev = tritium::device("cpu");
    auto x = dev.alloc<tritium::half>(4096), y = dev.alloc<tritium::half>(4096);
    f16_hints = tritium::jit(scale_two_bounds_kernel<tritium::half>, "scale_f16")
                    .compiled(x, y, 4096, 4096, 1024)
                    .artifact("ll");
  }
  auto [w32, w16] = widths(f32, f16);
  REQUIRE(!w32.empty());
  CHECK(*w32.rbegin() >= 4);
  auto hints = loop_hints(f16_hints);
  REQUIRE(!hints.empty());
  const int interleave = hints.begin()->second;
  CHECK(*w16.rbegin() * interleave == *w32.rbegin());
  // The leading lanes where the mask holds load without one (see the test below).
  CHECK(f16.find(fmt::format("load <{} x half>", *w16.rbegin())) != std::string::npos);
}

TEST_CASE("cpu: a loop bound by f16 conversions may run narrower, interleaved to a full "
          "register's elements; one bound by arithmetic runs full width, an exp's interleaved") {
  // On a Zen 4, 256-bit conversions beat 512-bit ones (target.cpp, f16_convert_bits); elsewhere
  // both loops keep the f32 width. Either way an iteration covers as many elements.
  std::string f32, f16, silu;
  {
    DumpStages dump("tritium-convert-");
    auto dev = tritium::device("cpu");
    auto x = dev.alloc<float>(4096), y = dev.alloc<float>(4096);
    auto h = dev.alloc<tritium::half>(4096), g = dev.alloc<tritium::half>(4096);
    f32 = tritium::jit(scale_kernel<float>, "hint_scale_f32")
              .compiled(x, y, 4096, 1024)
              .artifact("ll");
    f16 = tritium::jit(scale_kernel<tritium::half>, "hint_scale_f16")
              .compiled(h, g, 4096, 1024)
              .artifact("ll");
    silu = tritium::jit(silu_kernel, "hint_silu_f16").compiled(h, g, 4096, 1024).artifact("ll");
  }
  auto h32 = loop_hints(f32), h16 = loop_hints(f16), hs = loop_hints(silu);
  MESSAGE("loop hints (width x interleave), f32 scale: ", fmt::format("{}", fmt::join(h32, " ")),
          "; f16 scale: ", fmt::format("{}", fmt::join(h16, " ")),
          "; f16 silu: ", fmt::format("{}", fmt::join(hs, " ")));
  REQUIRE(h32.size() == 1);
  const auto [width, one] = *h32.begin();
  CHECK(one == 1);
  REQUIRE(!h16.empty());
  for (auto [w, k] : h16) {
    CHECK(w * k == width);
    CHECK(w >= 4);
  }
  REQUIRE(!hs.empty());
  // exp's last step is a call with vector versions where the host scales by powers of two in
  // one instruction (AVX-512): such loops run four iterations interleaved (lower_kernel.cpp).
  const int exp_interleave = silu.find("vector-function-abi-variant") != std::string::npos ? 4 : 1;
  for (auto [w, k] : hs)
    CHECK(std::pair{w, k} == std::pair{width, exp_interleave});
}

TEST_CASE("cpu: a kernel that converts f16 and computes nothing costly runs at the conversion "
          "width throughout; one with an exp, or without f16, keeps the full width") {
  // Its reductions too, which no loop hint reaches: the function's preferred vector width
  // (lower_kernel.cpp, narrow_kernel). Every other kernel prefers the widest register, as do all
  // where conversions are no faster narrower (every CPU but a Zen 4 today); a bf16 kernel never
  // narrows.
  std::string scale16, row_sum, row_sum_bf16, silu, scale32;
  {
    DumpStages dump("tritium-narrow-");
    auto dev = tritium::device("cpu");
    auto x = dev.alloc<float>(4096), y = dev.alloc<float>(4096);
    auto h = dev.alloc<tritium::half>(4096), g = dev.alloc<tritium::half>(4096);
    scale16 = tritium::jit(scale_kernel<tritium::half>, "narrow_scale_f16")
                  .compiled(h, g, 4096, 1024)
                  .artifact("ll");
    row_sum = tritium::jit(row_sum_kernel<tritium::half>, "narrow_row_sum_f16")
                  .compiled(h, x, 1000, 1024)
                  .artifact("ll");
    auto hb = dev.alloc<tritium::bfloat16>(4096);
    row_sum_bf16 = tritium::jit(row_sum_kernel<tritium::bfloat16>, "narrow_row_sum_bf16")
                       .compiled(hb, x, 1000, 1024)
                       .artifact("ll");
    silu = tritium::jit(silu_kernel, "narrow_silu_f16").compiled(h, g, 4096, 1024).artifact("ll");
    scale32 = tritium::jit(scale_kernel<float>, "narrow_scale_f32")
                  .compiled(x, y, 4096, 1024)
                  .artifact("ll");
  }
  auto preferred = [](const std::string& ll) {
    std::smatch m;
    static const std::regex attr("\"prefer-vector-width\"=\"([0-9]+)\"");
    return std::regex_search(ll, m, attr) ? std::stoi(m[1]) : 0;
  };
  auto hints = loop_hints(scale16), hints32 = loop_hints(scale32);
  REQUIRE(hints.size() == 1);
  REQUIRE(hints32.size() == 1);
  const auto [lanes, interleave] = *hints.begin();
  const int full_bits = hints32.begin()->first * 32;
  const int narrow_bits = interleave > 1 ? lanes * 32 : full_bits;
  MESSAGE("preferred vector width: f16 scale ", preferred(scale16), ", f16 row sum ",
          preferred(row_sum), ", f16 silu ", preferred(silu), ", f32 scale ", preferred(scale32));
  CHECK(preferred(scale16) == narrow_bits);
  CHECK(preferred(row_sum) == narrow_bits);
  CHECK(preferred(row_sum_bf16) == full_bits); // bf16 converts by shifts: not measured to gain
  CHECK(preferred(silu) == full_bits);
  CHECK(preferred(scale32) == full_bits);
  CHECK((row_sum.find("\"min-legal-vector-width\"=\"0\"") != std::string::npos) ==
        (narrow_bits < full_bits));
#if defined(__x86_64__)
  // The widest register, though LLVM tunes Intel's AVX-512 server cores to 256 bits (target.cpp).
  __builtin_cpu_init();
  CHECK(full_bits == (__builtin_cpu_supports("avx512f") ? 512
                      : __builtin_cpu_supports("avx")   ? 256
                                                        : 128));
#endif
}

TEST_CASE("cpu: a reduction reads each chunk of an f16 row as one vector, and sums as the "
          "interpreter does") {
  // The SLP vectorizer alone summed an f16 row 4 lanes at a time on an AVX-512 host (LLVM 19
  // prices a 16-lane f16 -> f32 conversion as scalarized); the chunk is now read as one vector
  // of the reduction's partials (lower_reload.cpp, chunk_element).
  std::string f32, f16;
  {
    DumpStages dump("tritium-chunk-");
    auto cpu = tritium::device("cpu");
    f32 = optimized_ir<float>("scale_f32_for_chunk");
    auto hx = cpu.alloc<tritium::half>(4 * 1000);
    auto hout = cpu.alloc<float>(4);
    auto k16 = tritium::jit(row_sum_kernel<tritium::half>, "row_sum_f16");
    f16 = k16.compiled(hx, hout, 1000, 1024).artifact("ll.opt");
  }
  auto [w32, w16] = widths(f32, f16); // f32: a plain loop; f16: the row sum
  REQUIRE(!w32.empty());
  REQUIRE(!w16.empty());
  CHECK(*w16.rbegin() >= *w32.rbegin());

  // Bit for bit the interpreter's sums, in f16, bf16 and f32, rows with and without masked lanes.
  const int rows = 3;
  for (int n : {1024, 1000, 40}) {
    CAPTURE(n);
    std::vector<float> src(rows * n);
    for (size_t i = 0; i < src.size(); ++i)
      src[i] = static_cast<float>(static_cast<int>(i * 7919 % 2003) - 1001) / 64.f;
    auto sums = [&](auto tag) {
      using T = decltype(tag);
      std::vector<T> h(src.begin(), src.end());
      std::vector<std::vector<float>> out;
      for (const char* d : {"interpreter", "cpu"}) {
        auto dev = tritium::device(d);
        auto x = dev.from_host(h);
        auto o = dev.alloc<float>(rows);
        auto k = tritium::jit(row_sum_kernel<T>, "row_sum");
        k[{rows}](x, o, n, 1024);
        out.push_back(o.to_host());
      }
      return out;
    };
    auto a = sums(tritium::half{});
    CHECK(a[0] == a[1]);
    auto b = sums(tritium::bfloat16{});
    CHECK(b[0] == b[1]);
    auto c = sums(float{});
    CHECK(c[0] == c[1]);
  }
}

TEST_CASE("cpu: the leading lanes of an `offs < n` mask are counted in closed form, others by a "
          "scan") {
  std::string closed, scan;
  {
    DumpStages dump("tritium-lanes-");
    auto dev = tritium::device("cpu");
    auto x = dev.alloc<float>(512), y = dev.alloc<float>(512);
    auto scale = tritium::jit(scale_kernel<float>, "scale_closed_form");
    auto two = tritium::jit(two_masks_kernel, "two_masks_scan");
    closed = scale.compiled(x, y, 512, 256).artifact("ll");
    scan = two.compiled(x, y, 512, 512, 3, 256).artifact("ll");
  }
  // The scan keeps its count in an alloca named lanes.count (before optimization).
  REQUIRE(!closed.empty());
  CHECK(closed.find("lanes.count") == std::string::npos);
  CHECK(scan.find("lanes.count") != std::string::npos);
}

TEST_CASE("cpu: masked lanes keep their results where the loop runs the leading lanes unmasked") {
  const int block = 256, total = 2 * block;
  auto dev = tritium::device("cpu");
  auto k = tritium::jit(two_masks_kernel, "two_masks_kernel");
  struct Case {
    int n, m, hole;
  };
  // full blocks, prefixes ending inside the first or second block, a mask with a hole (not a
  // prefix), a load mask shorter than the store mask, an empty mask.
  for (Case c : {Case{total, total, -1}, Case{300, total, -1}, Case{total, 100, -1},
                 Case{total, total, 17}, Case{40, 290, 260}, Case{0, total, -1}}) {
    CAPTURE(c.n);
    CAPTURE(c.m);
    CAPTURE(c.hole);
    std::vector<float> hx(total), want(total, 7.f);
    for (int i = 0; i < total; ++i) {
      hx[i] = static_cast<float>(i);
      if (i < c.m && i != c.hole)
        want[i] = (i < c.n ? hx[i] : -1.f) * 2.f + 1.f;
    }
    auto x = dev.from_host(hx);
    auto y = dev.from_host(std::vector<float>(total, 7.f));
    k[{total / block}](x, y, c.n, c.m, c.hole, block);
    CHECK(y.to_host() == want);
  }
}

TEST_CASE("cpu: a loop the vectorizer leaves scalar prints nothing") {
  // 8 lanes that may alias: too few for the vectorizer's runtime checks, which it reported on
  // stderr for loops that carry a vector width.
  auto dev = tritium::device("cpu");
  auto x = dev.from_host(std::vector<float>(8, 1.f));
  auto y = dev.alloc<float>(8);
  auto k = tritium::jit(add_one_kernel, "add_one_kernel");
  std::fflush(stderr);
  std::FILE* capture = std::tmpfile();
  REQUIRE(capture);
  int saved = ::dup(2);
  ::dup2(::fileno(capture), 2);
  k[{1}](x, y, 8);
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  CHECK(std::ftell(capture) == 0);
  std::fclose(capture);
  CHECK(y.to_host() == std::vector<float>(8, 2.f));
}
