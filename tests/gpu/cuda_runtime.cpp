// The CUDA runtime on its own, with hand-written PTX: parameter passing of every scalar type,
// more than 48 KiB of dynamic shared memory, the on-disk cubin cache, and device faults that
// become tritium::Error naming the kernel. These need no code generator.
#include "gpu_support.hpp"

#include "../../runtime/cuda/cuda_backend.hpp"
#include <support/vec_add_ptx.hpp>

#include <tritium/tritium.hpp>

#include <array>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

// The CUDA backend is built only where cuda.h was found; a weak reference lets this program
// link without it (the address is then null and these tests skip).
namespace tritium::cuda {
[[gnu::weak]] std::unique_ptr<CompiledKernel> load_kernel(Backend& backend, KernelImage image);
}

namespace {

using tritium::ArgSlot;
using tritium::Device;
using tritium::Error;
using tritium::ir::DType;
using tritium::ir::ScalarKind;

constexpr const char* kVecAddPtx = tritium::testing::vec_add_ptx;

// Writes each scalar parameter, converted to f64, to out[0..7].
constexpr const char* kParamsPtx = R"(
.version 7.0
.target sm_80
.address_size 64
.visible .entry params(.param .u64 out, .param .s8 a8, .param .s16 a16, .param .s32 a32,
                       .param .s64 a64, .param .b16 h, .param .b16 bh, .param .f32 f,
                       .param .f64 d)
{
  .reg .b16 %rs<5>;
  .reg .b32 %r<4>;
  .reg .f32 %f<4>;
  .reg .f64 %fd<9>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [out];
  ld.param.s8 %rs1, [a8];
  cvt.rn.f64.s16 %fd1, %rs1;
  st.global.f64 [%rd1], %fd1;
  ld.param.s16 %rs2, [a16];
  cvt.rn.f64.s16 %fd2, %rs2;
  st.global.f64 [%rd1+8], %fd2;
  ld.param.s32 %r1, [a32];
  cvt.rn.f64.s32 %fd3, %r1;
  st.global.f64 [%rd1+16], %fd3;
  ld.param.s64 %rd2, [a64];
  cvt.rn.f64.s64 %fd4, %rd2;
  st.global.f64 [%rd1+24], %fd4;
  ld.param.b16 %rs3, [h];
  cvt.f32.f16 %f1, %rs3;
  cvt.f64.f32 %fd5, %f1;
  st.global.f64 [%rd1+32], %fd5;
  ld.param.b16 %rs4, [bh];
  cvt.u32.u16 %r2, %rs4;
  shl.b32 %r3, %r2, 16;
  mov.b32 %f2, %r3;
  cvt.f64.f32 %fd6, %f2;
  st.global.f64 [%rd1+40], %fd6;
  ld.param.f32 %f3, [f];
  cvt.f64.f32 %fd7, %f3;
  st.global.f64 [%rd1+48], %fd7;
  ld.param.f64 %fd8, [d];
  st.global.f64 [%rd1+56], %fd8;
  ret;
}
)";

// Each of 256 threads stores its id near the top of `nwords` words of dynamic shared memory,
// then reads its neighbour's: out[t] = (t + 1) % 256 only if the whole window is usable.
constexpr const char* kBigSharedPtx = R"(
.version 7.0
.target sm_80
.address_size 64
.extern .shared .align 16 .b8 smem[];
.visible .entry big_shared(.param .u64 out, .param .u32 nwords)
{
  .reg .b32 %r<12>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [nwords];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, smem;
  sub.s32 %r4, %r1, 1;
  sub.s32 %r5, %r4, %r2;
  shl.b32 %r6, %r5, 2;
  add.s32 %r7, %r3, %r6;
  st.shared.u32 [%r7], %r2;
  bar.sync 0;
  add.s32 %r8, %r2, 1;
  and.b32 %r8, %r8, 255;
  sub.s32 %r9, %r4, %r8;
  shl.b32 %r10, %r9, 2;
  add.s32 %r11, %r3, %r10;
  ld.shared.u32 %r11, [%r11];
  mul.wide.u32 %rd2, %r2, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r11;
  ret;
}
)";

// Stores through the pointer it is given: a bad address faults on the device.
constexpr const char* kFaultPtx = R"(
.version 7.0
.target sm_80
.address_size 64
.visible .entry faulty_store(.param .u64 p)
{
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [p];
  mov.u32 %r1, 42;
  st.global.u32 [%rd1], %r1;
  ret;
}
)";

// A kernel with global scratch (codegen/gpu/compile.hpp's kernel ABI: the last parameter, 256
// bytes per program here). Thread t of program p stores a value unique to (tag, p, iteration)
// into word t of p's slot, waits for its block, and reads word t + 1 back, `iters` times;
// then out[p * 32 + t] = p, or -1 when the slot is not 128-byte aligned, -2 when a value it did
// not store turned up (another launch, or another program, using the same memory). The accesses
// are .relaxed.gpu so that a write from another SM is seen, not a stale L1 line. A missing
// pointer faults; a buffer too small for the grid may only corrupt other memory (run the test
// under compute-sanitizer to catch that).
constexpr const char* kScratchPtx = R"(
.version 7.0
.target sm_80
.address_size 64
.visible .entry scratch_slots(.param .u64 out, .param .u32 tag, .param .u32 iters,
                              .param .u64 scratch)
{
  .reg .pred %p<4>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<16>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [tag];
  ld.param.u32 %r2, [iters];
  ld.param.u64 %rd2, [scratch];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ctaid.y;
  mov.u32 %r5, %ctaid.z;
  mov.u32 %r6, %nctaid.x;
  mov.u32 %r7, %nctaid.y;
  mad.lo.u32 %r8, %r7, %r5, %r4;
  mad.lo.u32 %r8, %r8, %r6, %r3;
  mov.u32 %r9, %tid.x;
  mul.wide.u32 %rd3, %r8, 256;
  add.s64 %rd4, %rd2, %rd3;
  mul.wide.u32 %rd5, %r9, 8;
  add.s64 %rd6, %rd4, %rd5;
  add.u32 %r10, %r9, 1;
  and.b32 %r10, %r10, 31;
  mul.wide.u32 %rd7, %r10, 8;
  add.s64 %rd8, %rd4, %rd7;
  cvt.u32.u64 %r11, %rd4;
  and.b32 %r11, %r11, 127;
  setp.ne.u32 %p1, %r11, 0;
  selp.b32 %r12, -1, %r8, %p1;
  cvt.u64.u32 %rd9, %r1;
  shl.b64 %rd9, %rd9, 48;
  cvt.u64.u32 %rd10, %r8;
  shl.b64 %rd10, %rd10, 24;
  or.b64 %rd9, %rd9, %rd10;
  mov.u32 %r13, 0;
LOOP:
  setp.ge.u32 %p2, %r13, %r2;
  @%p2 bra DONE;
  cvt.u64.u32 %rd11, %r13;
  or.b64 %rd11, %rd9, %rd11;
  st.relaxed.gpu.global.u64 [%rd6], %rd11;
  bar.sync 0;
  ld.relaxed.gpu.global.u64 %rd12, [%rd8];
  setp.ne.u64 %p3, %rd12, %rd11;
  @%p3 mov.b32 %r12, -2;
  bar.sync 0;
  add.u32 %r13, %r13, 1;
  bra LOOP;
DONE:
  shl.b32 %r14, %r8, 5;
  add.u32 %r14, %r14, %r9;
  mul.wide.u32 %rd13, %r14, 4;
  add.s64 %rd14, %rd1, %rd13;
  st.global.u32 [%rd14], %r12;
  ret;
}
)";

tritium::cuda::KernelImage image(const char* ptx, const char* name, int threads,
                                 std::vector<DType> params, int shared = 0) {
  return {name, ptx, threads, shared, std::move(params), {}};
}

DType ptr(ScalarKind k) {
  return DType::pointer_to(k);
}

// The CUDA device, or null (with a message) when there is none or the backend is not built.
tritium::Backend* cuda_or_skip() {
  if (!&tritium::cuda::load_kernel) {
    MESSAGE("skipped: this build has no CUDA backend");
    return nullptr;
  }
  try {
    return &tritium::device("cuda").backend();
  } catch (const Error& e) {
    MESSAGE("skipped, no GPU: " << std::string(e.what()));
    return nullptr;
  }
}

std::filesystem::path fresh_cache_dir() {
  auto dir =
      std::filesystem::temp_directory_path() / ("tritium-cache-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

} // namespace

TEST_CASE("cuda: hand-written PTX launches; the cubin cache misses, then hits") {
  tritium::Backend* b = cuda_or_skip();
  if (!b)
    return;
  Device dev(b);
  auto dir = fresh_cache_dir();
  ::setenv("TRITIUM_CACHE_DIR", dir.c_str(), 1);
  auto params = std::vector<DType>{ptr(ScalarKind::F32), ptr(ScalarKind::F32), ptr(ScalarKind::F32),
                                   DType(ScalarKind::I32)};
  auto first = tritium::cuda::load_kernel(*b, image(kVecAddPtx, "vec_add", 256, params));
  CHECK(first->artifact("cache") == "miss");
  auto second = tritium::cuda::load_kernel(*b, image(kVecAddPtx, "vec_add", 256, params));
  CHECK(second->artifact("cache") == "hit");

  // A damaged entry reads as a miss and is rewritten.
  for (const auto& e : std::filesystem::directory_iterator(dir / "cuda")) {
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.write("garbage", 7);
  }
  auto third = tritium::cuda::load_kernel(*b, image(kVecAddPtx, "vec_add", 256, params));
  CHECK(third->artifact("cache") == "miss");

  const int n = 1000;
  std::vector<float> hx(n), hy(n);
  for (int i = 0; i < n; ++i) {
    hx[i] = 0.5f * i;
    hy[i] = 1.0f / (i + 1);
  }
  auto x = dev.from_host(hx), y = dev.from_host(hy);
  auto out = dev.from_host(std::vector<float>(n, -1.f));
  std::array<ArgSlot, 4> args{reinterpret_cast<uintptr_t>(x.data()),
                              reinterpret_cast<uintptr_t>(y.data()),
                              reinterpret_cast<uintptr_t>(out.data()), ArgSlot{n}};
  second->launch({4}, args);
  auto got = out.to_host();
  int bad = 0;
  for (int i = 0; i < n; ++i)
    bad += got[i] != hx[i] + hy[i];
  CHECK(bad == 0);

  CHECK_THROWS_WITH_AS(second->launch({4}, std::span(args).first(3)),
                       doctest::Contains("kernel 'vec_add'"), Error);
  ::unsetenv("TRITIUM_CACHE_DIR");
  std::filesystem::remove_all(dir);
}

TEST_CASE("cuda: every scalar parameter type arrives intact") {
  tritium::Backend* b = cuda_or_skip();
  if (!b)
    return;
  Device dev(b);
  auto k =
      tritium::cuda::load_kernel(*b, image(kParamsPtx, "params", 32,
                                           {ptr(ScalarKind::F64), ScalarKind::I8, ScalarKind::I16,
                                            ScalarKind::I32, ScalarKind::I64, ScalarKind::F16,
                                            ScalarKind::BF16, ScalarKind::F32, ScalarKind::F64}));
  auto out = dev.from_host(std::vector<double>(8, -999.0));
  auto slot_int = [](int64_t v) { return static_cast<ArgSlot>(v); };
  auto slot_float = [](double v) { return std::bit_cast<ArgSlot>(v); };
  std::array<ArgSlot, 9> args{reinterpret_cast<uintptr_t>(out.data()),
                              slot_int(-5),
                              slot_int(-300),
                              slot_int(-70000),
                              slot_int(-5'000'000'000'000),
                              slot_float(1.5),
                              slot_float(-2.5),
                              slot_float(0.1),
                              slot_float(3.141592653589793)};
  k->launch({1}, args);
  auto got = out.to_host();
  CHECK(got[0] == -5);
  CHECK(got[1] == -300);
  CHECK(got[2] == -70000);
  CHECK(got[3] == -5e12);
  CHECK(got[4] == 1.5);
  CHECK(got[5] == -2.5);
  CHECK(got[6] == static_cast<double>(0.1f));
  CHECK(got[7] == 3.141592653589793);
}

TEST_CASE("cuda: more than 48 KiB of dynamic shared memory") {
  tritium::Backend* b = cuda_or_skip();
  if (!b)
    return;
  Device dev(b);
  const int bytes = 100 * 1024, words = bytes / 4;
  auto params = std::vector<DType>{ptr(ScalarKind::I32), DType(ScalarKind::I32)};
  auto k = tritium::cuda::load_kernel(*b, image(kBigSharedPtx, "big_shared", 256, params, bytes));
  auto out = dev.from_host(std::vector<int32_t>(256, -1));
  std::array<ArgSlot, 2> args{reinterpret_cast<uintptr_t>(out.data()), ArgSlot{words}};
  k->launch({1}, args);
  auto got = out.to_host();
  int bad = 0;
  for (int t = 0; t < 256; ++t)
    bad += got[t] != (t + 1) % 256;
  CHECK(bad == 0);

  // More than any NVIDIA GPU has is refused at load, naming the kernel.
  CHECK_THROWS_WITH_AS(
      tritium::cuda::load_kernel(*b, image(kBigSharedPtx, "big_shared", 256, params, 1 << 20)),
      doctest::Contains("kernel 'big_shared': needs"), Error);
}

TEST_CASE("cuda: global scratch: an aligned slot per program, private to its stream, growing") {
  tritium::Backend* b = cuda_or_skip();
  if (!b)
    return;
  Device dev(b);
  auto img = image(kScratchPtx, "scratch_slots", 32,
                   {ptr(ScalarKind::I32), DType(ScalarKind::U32), DType(ScalarKind::U32)});
  img.global_scratch_bytes = 256;
  auto k = tritium::cuda::load_kernel(*b, img);

  // Long enough (milliseconds) that launches on two streams overlap.
  const uint32_t iters = 2000;
  auto programs = [](const tritium::LaunchGrid& g) { return static_cast<size_t>(g.x * g.y * g.z); };
  // Every output is allocated before the first launch: a copy waits for the device's own
  // stream, which would keep the launches from overlapping.
  auto out_for = [&](const tritium::LaunchGrid& g) {
    return dev.from_host(std::vector<int32_t>(programs(g) * 32, -999));
  };
  auto launch = [&](const tritium::LaunchGrid& g, tritium::Buffer<int32_t>& out, uint32_t tag,
                    const tritium::Stream& s) {
    std::array<ArgSlot, 3> args{reinterpret_cast<uintptr_t>(out.data()), ArgSlot{tag},
                                ArgSlot{iters}};
    k->launch(g, args, s.launch_handle());
  };
  auto check = [&](const tritium::LaunchGrid& g, const tritium::Buffer<int32_t>& out,
                   std::string what) {
    CAPTURE(what);
    auto got = out.to_host();
    size_t bad = 0;
    std::string first;
    for (size_t i = 0; i < got.size(); ++i)
      if (got[i] != static_cast<int32_t>(i / 32) && bad++ == 0)
        first = "out[" + std::to_string(i) + "] = " + std::to_string(got[i]);
    CAPTURE(first);
    CHECK(got.size() == programs(g) * 32);
    CHECK(bad == 0);
  };

  const tritium::LaunchGrid small{40, 3, 1}, medium{50, 4, 2}, large{64, 5, 3};
  tritium::Stream own = dev.stream();
  auto out1 = out_for(small), out2 = out_for(medium), out3 = out_for(large), out4 = out_for(small),
       out5 = out_for(medium);
  {
    tritium::Stream other = dev.create_stream();
    launch(small, out1, 1, own);
    launch(medium, out2, 2, other); // overlaps the first: its scratch must be another buffer
    launch(large, out3, 3, own);    // grows the own stream's buffer after the first is done
    launch(small, out4, 4, other);  // reuses the other stream's, after the second
    other.synchronize();
    own.synchronize();
  } // destroying `other` frees its buffer; a new stream may get its handle
  tritium::Stream third = dev.create_stream();
  launch(medium, out5, 5, third);
  third.synchronize();
  check(small, out1, "small grid, own stream");
  check(medium, out2, "medium grid, second stream");
  check(large, out3, "large grid, own stream, grown");
  check(small, out4, "small grid, second stream again");
  check(medium, out5, "medium grid, a stream made after the second was destroyed");

  // The scratch pointer is the runtime's to pass, not one more argument.
  std::array<ArgSlot, 4> four{reinterpret_cast<uintptr_t>(out1.data()), 1, iters, 0};
  CHECK_THROWS_WITH_AS(k->launch(small, four),
                       doctest::Contains("kernel 'scratch_slots': launched with 4 arguments for "
                                         "3 parameters"),
                       Error);
}

// Runs only in a child process (a fault leaves the CUDA context unusable for the rest of the
// process); the next test case starts it and reads what it printed.
TEST_CASE("cuda: device fault child") {
  if (!std::getenv("TRITIUM_TEST_FAULT_CHILD"))
    return;
  tritium::Backend* b = cuda_or_skip();
  if (!b)
    return;
  auto k =
      tritium::cuda::load_kernel(*b, image(kFaultPtx, "faulty_store", 1, {ptr(ScalarKind::I32)}));
  std::array<ArgSlot, 1> args{ArgSlot{16}}; // address 16: never mapped
  try {
    k->launch({1}, args);
    b->synchronize();
    std::printf("FAULT-CHILD: no error\n");
  } catch (const Error& e) {
    std::printf("FAULT-CHILD: %s\n", e.what());
  }
  std::fflush(stdout);
}

TEST_CASE("cuda: a device fault becomes an Error naming the kernel") {
  if (!cuda_or_skip())
    return;
  for (const char* blocking : {"0", "1"}) {
    CAPTURE(blocking);
    std::string cmd = std::string("TRITIUM_TEST_FAULT_CHILD=1 TRITIUM_LAUNCH_BLOCKING=") +
                      blocking + " /proc/" + std::to_string(::getpid()) +
                      "/exe --test-case='cuda: device fault child' 2>&1";
    FILE* p = ::popen(cmd.c_str(), "r");
    REQUIRE(p);
    std::string output;
    char buf[512];
    while (std::fgets(buf, sizeof buf, p))
      output += buf;
    ::pclose(p);
    CAPTURE(output);
    if (auto at = output.find("FAULT-CHILD: "); at != std::string::npos)
      MESSAGE("TRITIUM_LAUNCH_BLOCKING=" << std::string(blocking) << ": "
                                         << output.substr(at, output.find('\n', at) - at));
    CHECK(output.find("FAULT-CHILD: cuda: device error") != std::string::npos);
    CHECK(output.find("'faulty_store'") != std::string::npos);
    CHECK(output.find("CUDA_ERROR_ILLEGAL_ADDRESS") != std::string::npos);
  }
}

TEST_CASE("gpu: devices that are present are chosen, absent ones say why") {
  auto listed = tritium::list_devices();
  for (const auto& [name, state] : listed) {
    CAPTURE(name);
    CAPTURE(state);
    CHECK(!state.empty());
    // An unusable GPU backend says what is missing, naming the vendor's driver or GPU.
    if (name == "cuda" && state.rfind("available", 0) != 0)
      CHECK((state.find("CUDA") != std::string::npos || state.find("NVIDIA") != std::string::npos));
    if (name == "hip" && state.rfind("available", 0) != 0)
      CHECK((state.find("HIP") != std::string::npos || state.find("AMD") != std::string::npos));
  }
  auto gpus = tritium::testing::gpu_devices();
  if (gpus.empty()) {
    MESSAGE("no GPU: " << tritium::testing::no_gpu_reason());
    return;
  }
  if (!std::getenv("TRITIUM_DEVICE"))
    CHECK(tritium::default_device() == gpus.front());
}
