// Bad launches: arguments that do not fit their parameters, grids out of range, options no
// device can run, ceiling division by zero, and the backend API's own argument check.
#include "common.hpp"

#include "../../runtime/core/kernel_params.hpp"

#include <cstdint>
#include <limits>

namespace bad_inputs {
namespace {

void unsigned_param(tl::ptr<float> out, tl::u32 n, tl::i8 small) {
  tl::store(out + tl::arange(0, 16), tl::zeros<float>({16}) + n.to<float>() + small.to<float>());
}

TEST_CASE("bad input: an integer argument that does not fit its parameter") {
  auto k = tritium::jit(add_one, "add_one");
  auto u = tritium::jit(unsigned_param, "unsigned_param");
  for (Device d : host_devices()) {
    CAPTURE(d.name());
    auto x = d.alloc<float>(16);
    CHECK_ERROR((k[{1}](x, x, int64_t{1} << 40, 16)), "kernel 'add_one'",
                "argument 2 = 1099511627776 does not fit the parameter's type i32");
    CHECK_ERROR((u[{1}](x, -1, 0)), "kernel 'unsigned_param'",
                "argument 1 = -1 does not fit the parameter's type u32");
    CHECK_ERROR((u[{1}](x, 1, 300)), "argument 2 = 300 does not fit the parameter's type i8");
    CHECK_ERROR((u[{1}](x, std::numeric_limits<uint64_t>::max(), 0)),
                "argument 1 =", "does not fit the parameter's type u32");
  }
}

void scaled_by(tl::ptr<float> out, tl::constexpr_<float> SCALE, tl::constexpr_<uint8_t> SMALL) {
  tl::store(out + tl::arange(0, 16), tl::zeros<float>({16}) + SCALE + float(SMALL));
}

// A constexpr_ value is compiled into the kernel: a value its type cannot hold was truncated
// silently (64.9 and 2^32 + 64 both became 64).
TEST_CASE("bad input: a constexpr_ argument its type cannot hold exactly") {
  auto k = tritium::jit(add_one, "add_one");
  auto f = tritium::jit(scaled_by, "scaled_by");
  auto x = tritium::device("interpreter").alloc<float>(64);
  CHECK_ERROR((k[{1}](x, x, 16, 64.9)), "kernel 'add_one'",
              "argument 3 is a constexpr_ parameter whose type cannot hold 64.9 exactly",
              "it would become 64");
  CHECK_ERROR((k[{1}](x, x, 16, (int64_t{1} << 32) + 64)),
              "cannot hold 4294967360 exactly (it would become 64)");
  CHECK_ERROR((k[{1}](x, x, 16, 4294967360.0)), "cannot hold 4294967360 exactly");
  CHECK_ERROR((f[{1}](x, 1e300, 1)), "argument 1", "cannot hold 1e+300 exactly");
  CHECK_ERROR((f[{1}](x, 0.5, 256)), "argument 2", "cannot hold 256 exactly (it would become 0)");
  CHECK_ERROR((f[{1}](x, 0.5, -1)), "argument 2", "cannot hold -1 exactly");
  // What the type holds passes: an integral double, and a float rounding a double.
  k[{1}](x, x, 16, 64.0);
  f[{1}](x, 0.1, 255);
  CHECK(x.to_host()[0] == doctest::Approx(255.1f));
}

void endless(tl::ptr<int64_t> out, tl::i64 trips) {
  auto acc = tl::scalar<int64_t>(0);
  for (auto i : tl::range(int64_t{0}, trips)) // the line the timeout names
    acc = acc + i;
  tl::store(out, acc);
}

// A loop of 10^9 trips ran about half an hour on the interpreter, and only a signal stopped it.
TEST_CASE("bad input: an interpreted launch past TRITIUM_INTERPRETER_TIMEOUT") {
  auto k = tritium::jit(endless, "endless");
  auto out = tritium::device("interpreter").alloc<int64_t>(1);
  setenv("TRITIUM_INTERPRETER_TIMEOUT", "0.2", 1);
  CHECK_ERROR((k[{1}](out, int64_t{1'000'000'000})), "launch.cpp:", "in kernel 'endless'",
              "program (0, 0, 0), op 'for'",
              "TRITIUM_INTERPRETER_TIMEOUT=0.2 s passed; the interpreter stopped this launch at "
              "iteration");
  k[{1}](out, int64_t{100}); // short enough: runs
  CHECK(out.to_host()[0] == 4950);
  setenv("TRITIUM_INTERPRETER_TIMEOUT", "soon", 1);
  CHECK_ERROR((k[{1}](out, int64_t{1})),
              "TRITIUM_INTERPRETER_TIMEOUT=soon: it must be a positive number of seconds");
  unsetenv("TRITIUM_INTERPRETER_TIMEOUT");
}

TEST_CASE("bad input: a grid with a negative dimension") {
  auto k = tritium::jit(add_one, "add_one");
  auto x = tritium::device("interpreter").alloc<float>(16);
  CHECK_ERROR((k[{-1}](x, x, 16, 16)), "kernel 'add_one'", "launch grid (-1, 1, 1)",
              "negative dimension");
  CHECK_ERROR((k[{1, 1, -5}](x, x, 16, 16)), "launch grid (1, 1, -5)");
}

TEST_CASE("bad input: a grid beyond the devices' limits") {
  auto k = tritium::jit(add_one, "add_one");
  for (Device d : all_devices()) {
    CAPTURE(d.name());
    auto x = d.alloc<float>(16);
    CHECK_ERROR((k[{int64_t{1} << 31}](x, x, 16, 16)), "kernel 'add_one'",
                "launch grid (2147483648, 1, 1) is too large", "2^31-1 x 65535 x 65535");
    CHECK_ERROR((k[{1, 65536}](x, x, 16, 16)), "launch grid (1, 65536, 1) is too large");
    CHECK_ERROR((k[{1, 1, 70000}](x, x, 16, 16)), "launch grid (1, 1, 70000) is too large");
  }
}

// Not an error, as in Triton: a grid with a zero dimension launches nothing (cdiv(0, BLOCK) is
// an ordinary grid for an empty input). CUDA itself would reject it; tritium skips the launch.
TEST_CASE("bad input: a grid of zero programs launches nothing") {
  auto k = tritium::jit(add_one, "add_one");
  for (Device d : all_devices()) {
    CAPTURE(d.name());
    auto x = d.from_host(std::vector<float>(16, 1.0f));
    auto out = d.from_host(std::vector<float>(16, -7.0f));
    k[{0}](x, out, 16, 16);
    k[{4, 0}](x, out, 16, 16);
    d.synchronize();
    CHECK(out.to_host() == std::vector<float>(16, -7.0f));
  }
}

TEST_CASE("bad input: cdiv by zero when computing a grid") {
  CHECK_ERROR(tritium::cdiv(1000, 0), "tritium::cdiv(1000, 0): division by zero");
  static_assert(tritium::cdiv(1000, 256) == 4); // still a constant expression
}

TEST_CASE("bad input: num_warps or num_stages no device can run") {
  auto k = tritium::jit(add_one, "add_one");
  CHECK_ERROR(k.options({.num_warps = 3}), "kernel 'add_one': num_warps = 3",
              "power of two from 1 to 32");
  CHECK_ERROR(k.options({.num_warps = 0}), "num_warps = 0");
  CHECK_ERROR(k.options({.num_warps = 64}), "num_warps = 64");
  CHECK_ERROR(k.options({.num_warps = 4, .num_stages = -1}), "num_stages = -1");
  CHECK(k.options().num_warps == 4); // rejected options are not kept
  k.options({.num_warps = 32, .num_stages = 0});
}

TEST_CASE("bad input: more warps than a wave64 GPU runs in one program") {
  auto e = tritium::device("gpu-emulator");
  auto x = e.alloc<float>(16);
  auto k = tritium::jit(add_one, "add_one");
  k.options({.num_warps = 32});
  ::setenv("TRITIUM_EMULATOR_WARP", "64", 1);
  CHECK_ERROR((k[{1}](x, x, 16, 16)), "kernel 'add_one': num_warps = 32",
              "num_warps x warp size <= 1024");
  ::unsetenv("TRITIUM_EMULATOR_WARP");
}

TEST_CASE("bad input: a compiled kernel launched with the wrong number of arguments") {
  auto k = tritium::jit(add_one, "add_one");
  for (Device d : all_devices()) {
    CAPTURE(d.name());
    auto x = d.alloc<float>(16);
    tritium::CompiledKernel& c = k.compiled(x, x, 16, 16);
    std::vector<tritium::ArgSlot> two = {reinterpret_cast<uintptr_t>(x.data()), 16};
    CHECK_ERROR(c.launch({1}, two), "'add_one'", "2");
  }
}

// The GPU launch path packs parameters on the stack, at most 128 (tested here on its own; a
// kernel with so many parameters reaches it when loaded on a GPU).
TEST_CASE("bad input: a kernel with more parameters than a GPU launch takes") {
  std::vector<tritium::ir::DType> types(129, tritium::ir::DType(tritium::ir::ScalarKind::I32));
  CHECK_ERROR(tritium::gpu::param_kinds(types, "wide"),
              "kernel 'wide' has 129 parameters; at most 128 are supported");
  types.pop_back();
  CHECK(tritium::gpu::param_kinds(types, "wide").size() == 128);
}

} // namespace
} // namespace bad_inputs
