// Launching: specialization and caching, argument checks, device choice, and the errors a
// user meets (bad grids, shapes, out-of-bounds accesses), each naming the place.
#include <doctest/doctest.h>

#include <support/devices.hpp>
#include <tritium/ir/printer.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <unistd.h>
#include <vector>

namespace tl = tritium::tl;
using tritium::Error;

namespace {

void scale_kernel(tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, tl::f32 factor,
                  tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  tl::store(out + offs, tl::load(x + offs, mask) * factor, mask);
}

TEST_CASE("launches specialize on constexpr values, ints == 1 and % 16, and cache the result") {
  auto dev = tritium::testing::interpreter();
  std::vector<float> h(64, 2.0f);
  auto x = dev.from_host(h);
  auto out = dev.alloc<float>(64);
  auto k = tritium::jit(scale_kernel, "scale_kernel");
  k[{2}](x, out, 64, 1.5f, 32);
  CHECK(k.num_compiled() == 1);
  CHECK(out.to_host()[63] == 3.0f);
  k[{2}](x, out, 48, 0.5, 32); // 48 % 16 == 0 as 64: same specialization
  CHECK(k.num_compiled() == 1);
  CHECK(out.to_host()[47] == 1.0f);
  CHECK(out.to_host()[48] == 3.0f); // masked: untouched
  k[{4}](x, out, 64, 1.0f, 16);     // another BLOCK
  CHECK(k.num_compiled() == 2);
  k[{1}](x, out, 1, 4.0f, 16); // n == 1 becomes a constant
  CHECK(k.num_compiled() == 3);
  CHECK(out.to_host()[0] == 8.0f);
  k[{1}](x, out, 7, 1.0f, 16); // neither 1 nor a multiple of 16
  CHECK(k.num_compiled() == 4);

  auto f = k.trace(x, out, 1, 4.0f, 16);
  std::string text = tritium::ir::print(*f);
  CHECK(text.find("%2: i32 {const = 1}") != std::string::npos);
  auto g = k.trace(x, out, 64, 4.0f, 16);
  CHECK(tritium::ir::print(*g).find("%2: i32 {div = 16}") != std::string::npos);
  CHECK(tritium::ir::print(*g).find("%0: ptr<f32> {div = 16") != std::string::npos);
  // Every specialization of the kernel verifies and round-trips through text.
  CHECK(tritium::ir::print(*tritium::ir::parse(text)) == text);
}

TEST_CASE("compile_stats counts each specialization compiled and its time, not cached launches") {
  auto dev = tritium::testing::interpreter();
  std::vector<float> h(64, 2.0f);
  auto x = dev.from_host(h);
  auto out = dev.alloc<float>(64);
  auto k = tritium::jit(scale_kernel, "scale_kernel_stats");
  const tritium::CompileStats before = tritium::compile_stats();
  k[{2}](x, out, 64, 1.5f, 32);
  const tritium::CompileStats first = tritium::compile_stats();
  CHECK(first.kernels == before.kernels + 1);
  CHECK(first.seconds > before.seconds);
  k[{2}](x, out, 48, 1.5f, 32); // the same specialization: no compile
  CHECK(tritium::compile_stats().kernels == first.kernels);
  CHECK(tritium::compile_stats().seconds == first.seconds);
  k[{4}](x, out, 64, 1.0f, 16); // another BLOCK
  CHECK(tritium::compile_stats().kernels == first.kernels + 1);
}

TEST_CASE("launch arguments are checked at run time where the type system cannot") {
  auto dev = tritium::testing::interpreter();
  auto x = dev.alloc<float>(16);
  auto k = tritium::jit(scale_kernel, "scale_kernel");
  CHECK_THROWS_WITH_AS(k[{1}](x, x, 5'000'000'000LL, 1.0f, 16),
                       doctest::Contains("argument 2 = 5000000000 does not fit"), Error);
  CHECK_THROWS_WITH_AS(k[{-1}](x, x, 16, 1.0f, 16), doctest::Contains("negative dimension"), Error);
  CHECK_THROWS_WITH_AS((k[{1, 70000}](x, x, 16, 1.0f, 16)), doctest::Contains("too large"), Error);
  k[{0}](x, x, 16, 1.0f, 16); // an empty grid launches nothing
}

void oob_kernel(tl::ptr<float> x, tl::ptr<float> out) {
  auto offs = tl::arange(0, 32);
  tl::store(out + offs, tl::load(x + offs)); // no mask: reads past a 20-element buffer
}

TEST_CASE("the interpreter reports an out-of-bounds access with the kernel's source line") {
  auto dev = tritium::testing::interpreter();
  auto x = dev.alloc<float>(20);
  auto out = dev.alloc<float>(32);
  auto k = tritium::jit(oob_kernel, "oob_kernel");
  try {
    k[{1}](x, out);
    FAIL("no error for an out-of-bounds load");
  } catch (const Error& e) {
    std::string m = e.what();
    CHECK(m.find("test_jit.cpp:") != std::string::npos);
    CHECK(m.find("oob_kernel") != std::string::npos);
    CHECK(m.find("lane 20") != std::string::npos);
    CHECK(m.find("out of bounds") != std::string::npos);
  }
}

void shape_mismatch(tl::ptr<float> out) {
  auto a = tl::arange(0, 16);
  auto b = tl::arange(0, 32);
  auto c = a + b; // the line the error must name
  tl::store(out + c, tl::zeros<float>({16}));
}
constexpr int shape_mismatch_line = __LINE__ - 3;

void bad_arange(tl::ptr<float> out) {
  tl::store(out + tl::arange(0, 24), tl::zeros<float>({24}));
}

void bad_mask(tl::ptr<float> x, tl::ptr<float> out) {
  auto offs = tl::arange(0, 16);
  auto wide = tl::arange(0, 32) < 5;
  tl::store(out + offs, tl::load(x + offs, wide));
}

void bad_axis(tl::ptr<float> out) {
  auto v = tl::zeros<float>({16});
  tl::store(out + tl::arange(0, 1), tl::broadcast_to(tl::sum(v, 1), {1}));
}

TEST_CASE("trace-time errors name the user's file and line") {
  auto dev = tritium::testing::interpreter();
  auto out = dev.alloc<float>(64);
  auto k1 = tritium::jit(shape_mismatch, "shape_mismatch");
  CHECK_THROWS_WITH_AS(k1[{1}](out),
                       doctest::Contains(("test_jit.cpp:" + std::to_string(shape_mismatch_line) +
                                          ": in kernel 'shape_mismatch': shapes [16] and [32] "
                                          "cannot be broadcast")
                                             .c_str()),
                       Error);
  auto k2 = tritium::jit(bad_arange, "bad_arange");
  CHECK_THROWS_WITH_AS(k2[{1}](out), doctest::Contains("count must be a power of two"), Error);
  auto k3 = tritium::jit(bad_mask, "bad_mask");
  CHECK_THROWS_WITH_AS(k3[{1}](out, out),
                       doctest::Contains("mask has shape [32] but the pointers have shape [16]"),
                       Error);
  auto k4 = tritium::jit(bad_axis, "bad_axis");
  CHECK_THROWS_WITH_AS(k4[{1}](out), doctest::Contains("axis 1 is out of range"), Error);
}

// Unnamed lambdas have no exported symbol: both were "kernel", sharing dumps and autotune
// choices. Now each is named by the line that made it a kernel.
TEST_CASE("kernels without a name are named by where they were made") {
  // clang-format off
  const int line = __LINE__; auto a = tritium::jit(+[](tl::ptr<float> x) { tl::store(x, 1.0f); });
  auto b = tritium::jit(+[](tl::ptr<float> x) { tl::store(x, 2.0f); });
  // clang-format on
  CHECK(a.name() == "kernel_test_jit_" + std::to_string(line));
  CHECK(b.name() == "kernel_test_jit_" + std::to_string(line + 1));
  CHECK(tritium::jit(
            +[](tl::ptr<float> x) { tl::store(x, 1.0f); }, "given")
            .name() == "given");
}

// Without captures a lambda is the function it converts to: `+` is not needed (one that
// captures is a compile error, tests/compile_fail/lambda_with_capture.cpp).
TEST_CASE("a lambda without captures is a kernel, with or without +") {
  auto dev = tritium::device("interpreter");
  auto x = dev.alloc<float>(16);
  auto fill = [](tl::ptr<float> x, tl::f32 v) {
    auto i = tl::arange(0, 16);
    tl::store(x + i, tl::full<float>({16}, 0.0f) + v + i.to<float>());
  };
  auto a = tritium::jit(fill, "fill_lambda");
  a[{1}](x, 2.0f);
  std::vector<float> got = x.to_host();
  for (int i = 0; i < 16; ++i)
    CHECK(got[i] == 2.0f + float(i));
  auto b = tritium::jit(+fill, "fill_pointer");
  b[{1}](x, -1.0f);
  CHECK(x.to_host()[15] == 14.0f);
  CHECK(a.name() == "fill_lambda");
}

// Three launches, two specializations (BLOCK 16 and 32): two sets of files, the first under the
// kernel's plain name; the traced IR carries the kernel's C++ lines and parses back with them.
TEST_CASE("TRITIUM_DUMP keeps one set of files per specialization, with source lines") {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("tritium-dump-spec-" + std::to_string(getpid()));
  fs::remove_all(dir);
  ::setenv("TRITIUM_DUMP", dir.c_str(), 1);
  auto dev = tritium::device("interpreter");
  auto x = dev.alloc<float>(32), out = dev.alloc<float>(32);
  auto k = tritium::jit(scale_kernel, "scale_dump");
  k[{1}](x, out, 32, 2.0f, 16);
  k[{1}](x, out, 32, 2.0f, 32);
  k[{1}](x, out, 32, 3.0f, 16);
  ::unsetenv("TRITIUM_DUMP");
  std::vector<std::string> irs;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".ir")
      irs.push_back(e.path().filename().string());
  std::sort(irs.begin(), irs.end());
  REQUIRE(irs.size() == 2);
  CHECK(irs[0].size() == std::string("scale_dump.12345678.ir").size());
  CHECK(irs[1] == "scale_dump.ir");
  std::ifstream in(dir / "scale_dump.ir");
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  CHECK(text.find("test_jit.cpp\":") != std::string::npos);
  auto f = tritium::ir::parse(text);
  CHECK_NOTHROW(tritium::ir::verify(*f));
  CHECK(f->entry().ops.front()->loc.file.ends_with("test_jit.cpp"));
  fs::remove_all(dir);
}

// The GPU compiler's last files (the launch metadata, the assembly) follow the same names:
// before, every specialization wrote them under the plain name and the last one won.
TEST_CASE("TRITIUM_DUMP keeps the GPU metadata and assembly of each specialization") {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("tritium-dump-gpu-spec-" + std::to_string(getpid()));
  fs::remove_all(dir);
  ::setenv("TRITIUM_DUMP", dir.c_str(), 1);
  ::setenv("TRITIUM_EMULATOR_TARGETS", "sm_90a", 1); // compiled for it too, as a GPU would
  auto dev = tritium::device("gpu-emulator");
  auto x = dev.alloc<float>(32), out = dev.alloc<float>(32);
  auto k = tritium::jit(scale_kernel, "scale_dump_gpu");
  k[{1}](x, out, 32, 2.0f, 16);
  k[{1}](x, out, 32, 2.0f, 32);
  ::unsetenv("TRITIUM_EMULATOR_TARGETS");
  ::unsetenv("TRITIUM_DUMP");
  std::map<std::string, int> per_extension;
  for (const auto& e : fs::directory_iterator(dir))
    ++per_extension[e.path().extension().string()];
  CHECK(per_extension[".json"] == 2);
  CHECK(per_extension[".ptx"] == 2);
  std::ifstream in(dir / "scale_dump_gpu.json");
  const std::string json{std::istreambuf_iterator<char>(in), {}};
  CHECK(json.find("\"name\": \"scale_dump_gpu\"") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("TRITIUM_DUMP's traced IR names what it was compiled for, and compiles as it is") {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("tritium-dump-module-" + std::to_string(getpid()));
  fs::remove_all(dir);
  ::setenv("TRITIUM_DUMP", dir.c_str(), 1);
  auto run = [](const char* device, const char* name) {
    auto dev = tritium::device(device);
    auto x = dev.alloc<float>(32), out = dev.alloc<float>(32);
    tritium::CompileOptions o;
    o.num_warps = 2;
    auto k = tritium::jit(scale_kernel, name);
    k.options(o)[{1}](x, out, 32, 2.0f, 16);
  };
  run("cpu", "scale_module_cpu");
  run("interpreter", "scale_module_interp");
  ::unsetenv("TRITIUM_DUMP");
  auto parsed = [&](const char* name) {
    std::ifstream in(dir / (std::string(name) + ".ir"));
    const std::string text{std::istreambuf_iterator<char>(in), {}};
    REQUIRE(text.starts_with("module {"));
    return tritium::ir::parse(text);
  };
  auto cpu = parsed("scale_module_cpu");
  CHECK(cpu->module.target == "host");
  CHECK(cpu->module.num_warps == 2);
  // The interpreter is no compile target: the line keeps only the options.
  auto interp = parsed("scale_module_interp");
  CHECK(interp->module.target.empty());
  CHECK(interp->module.num_warps == 2);
  fs::remove_all(dir);
}

TEST_CASE("devices are chosen by name, with a clear error for an unknown or unavailable one") {
  CHECK(tritium::device("interpreter").name() == "interpreter");
  CHECK_THROWS_WITH_AS(tritium::device("tpu"), doctest::Contains("unknown device 'tpu'"), Error);
  ::setenv("TRITIUM_DEVICE", "nonsense", 1);
  CHECK_THROWS_WITH_AS(tritium::default_device(), doctest::Contains("TRITIUM_DEVICE=nonsense"),
                       Error);
  ::setenv("TRITIUM_DEVICE", "interpreter", 1);
  CHECK(tritium::default_device().name() == "interpreter");
  ::unsetenv("TRITIUM_DEVICE");
  CHECK_FALSE(tritium::list_devices().empty());
}

TEST_CASE("buffers copy to and from the host and check sizes") {
  for (auto dev : tritium::testing::test_devices()) {
    CAPTURE(dev.name());
    std::vector<int16_t> h{1, -2, 3};
    auto b = dev.from_host(h);
    CHECK(b.to_host() == h);
    CHECK_THROWS_WITH_AS(b.copy_from_host(std::vector<int16_t>(4)),
                         doctest::Contains("4 elements into a buffer of 3"), Error);
    tritium::Buffer<int16_t> moved = std::move(b);
    CHECK(moved.size() == 3);
    CHECK(b.size() == 0);
  }
}

} // namespace
