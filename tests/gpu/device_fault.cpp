// A fault in a tritium kernel on a real GPU (an out-of-bounds store): the error names the
// kernel; raw driver calls show what the CUDA context can still do afterwards; the lost device
// refuses work with an error instead of crashing; the next tritium::device("cuda") is a fresh
// device that works, and the lost device's buffers, destroyed later, do not free its memory.
// Also: a kernel needing more threads than its registers allow is refused at load.
#include "gpu_support.hpp"

#include "../../runtime/cuda/cuda_backend.hpp"
#include <support/child.hpp>

#include <tritium/tritium.hpp>

#include <dlfcn.h>

#include <array>
#include <cstdio>
#include <string>

namespace tritium::cuda {
[[gnu::weak]] std::unique_ptr<CompiledKernel> load_kernel(Backend& backend, KernelImage image);
}

namespace {

namespace tl = tritium::tl;
using tritium::Device;
using tritium::Error;

void oob_store(tl::ptr<float> out, tl::i64 offset) {
  auto offs = tl::arange(0, 128).to<int64_t>() + offset;
  tl::store(out + offs, tl::zeros<float>({128}) + 1.0f); // no mask: offset 2^40 faults
}

void add_kernel(tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  tl::store(out + offs, tl::load(x + offs, mask) + 1.0f, mask);
}

bool have_cuda() {
  try {
    (void)tritium::device("cuda");
    return true;
  } catch (const Error& e) {
    MESSAGE("skipped, no NVIDIA GPU: " << std::string(e.what()));
    return false;
  }
}

// A few driver entry points, declared here so that this test needs no cuda.h.
struct RawDriver {
  using Result = int;
  Result (*ctx_synchronize)() = nullptr;
  Result (*mem_alloc)(unsigned long long*, size_t) = nullptr;
  Result (*error_name)(Result, const char**) = nullptr;
  RawDriver() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib)
      return;
    ctx_synchronize = reinterpret_cast<decltype(ctx_synchronize)>(dlsym(lib, "cuCtxSynchronize"));
    mem_alloc = reinterpret_cast<decltype(mem_alloc)>(dlsym(lib, "cuMemAlloc_v2"));
    error_name = reinterpret_cast<decltype(error_name)>(dlsym(lib, "cuGetErrorName"));
  }
  std::string name(Result r) const {
    const char* n = nullptr;
    if (error_name)
      error_name(r, &n);
    return n ? n : std::to_string(r);
  }
};

bool adds_one(Device d) {
  const int n = 3000;
  std::vector<float> h(n);
  for (int i = 0; i < n; ++i)
    h[i] = 0.25f * i;
  auto x = d.from_host(h);
  auto out = d.alloc<float>(n);
  auto k = tritium::jit(add_kernel, "add_kernel");
  k[{tritium::cdiv(n, 256)}](x, out, n, 256);
  auto got = out.to_host();
  for (int i = 0; i < n; ++i)
    if (got[i] != h[i] + 1.0f)
      return false;
  return true;
}

TEST_CASE("child: cuda fault in a tritium kernel") {
  TRITIUM_CHILD_ONLY();
  if (!have_cuda())
    return;
  Device d = tritium::device("cuda");
  auto k = tritium::jit(oob_store, "oob_store");
  tritium::Buffer<float> kept;
  {
    auto out = d.alloc<float>(128);
    try {
      k[{1}](out, int64_t{1} << 40);
      d.synchronize();
      std::printf("FAULT none\n");
    } catch (const Error& e) {
      std::printf("FAULT %s\n", e.what());
    }
    std::printf("LOST %d\n", d.backend().lost() ? 1 : 0);
    RawDriver raw; // what the context itself still does
    if (raw.ctx_synchronize && raw.mem_alloc) {
      unsigned long long p = 0;
      std::printf("RAW cuCtxSynchronize %s\n", raw.name(raw.ctx_synchronize()).c_str());
      std::printf("RAW cuMemAlloc %s\n", raw.name(raw.mem_alloc(&p, 1024)).c_str());
    }
    auto report = [](const char* what, auto&& f) {
      try {
        f();
        std::printf("%s worked\n", what);
      } catch (const Error& e) {
        std::printf("%s %s\n", what, e.what());
      }
    };
    report("OLD-COPY", [&] { (void)out.to_host(); });
    report("OLD-LAUNCH", [&] { k[{1}](out, int64_t{0}); });
    report("OLD-ALLOC", [&] { (void)d.alloc<float>(4); });
    // The fresh device, while the lost device's buffer still exists. A driver that keeps the
    // fault for the whole process (580 on an H200) refuses it: the error must say so.
    Device fresh;
    try {
      fresh = tritium::device("cuda");
    } catch (const Error& e) {
      std::printf("FRESH-REFUSED %s\n", e.what());
      std::fflush(stdout);
      return;
    }
    std::printf("FRESH-DIFFERENT %d\n", fresh == d ? 0 : 1);
    kept = fresh.from_host(std::vector<float>(64, 5.0f));
    std::printf("FRESH-WORKS %d\n", adds_one(fresh) ? 1 : 0);
    auto fresh_out = fresh.alloc<float>(128);
    report("FRESH-JIT", [&] { // the same JitFunction compiles again for the fresh device
      k[{1}](fresh_out, int64_t{0});
      fresh.synchronize();
    });
  } // `out` (of the lost device) is freed here: that must not free the fresh device's memory
  Device fresh = tritium::device("cuda");
  std::printf("KEPT-INTACT %d\n", kept.to_host() == std::vector<float>(64, 5.0f) ? 1 : 0);
  std::printf("AFTER-FREE-WORKS %d\n", adds_one(fresh) ? 1 : 0);
  std::fflush(stdout);
}

TEST_CASE("bad input: an out-of-bounds access on the GPU") {
  if (!have_cuda())
    return;
  for (const char* blocking : {"0", "1"}) {
    CAPTURE(std::string(blocking));
    auto r = tritium::testing::run_child("child: cuda fault in a tritium kernel",
                                         {std::string("TRITIUM_LAUNCH_BLOCKING=") + blocking});
    INFO(r.output);
    MESSAGE("TRITIUM_LAUNCH_BLOCKING=" << blocking << ":\n" << r.output);
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("FAULT cuda: device error while") != std::string::npos);
    CHECK(r.output.find("'oob_store'") != std::string::npos);
    CHECK(r.output.find("CUDA_ERROR_ILLEGAL_ADDRESS") != std::string::npos);
    CHECK(r.output.find("the CUDA context is lost") != std::string::npos);
    CHECK(r.output.find("LOST 1") != std::string::npos);
    CHECK(r.output.find("OLD-COPY cuda: cannot copy to the host: this device was lost") !=
          std::string::npos);
    CHECK(r.output.find("OLD-LAUNCH cuda: cannot launch kernel 'oob_store'") != std::string::npos);
    CHECK(r.output.find("OLD-ALLOC cuda: cannot allocate") != std::string::npos);
    if (r.output.find("FRESH-REFUSED") != std::string::npos) {
      CHECK(r.output.find("the fault is sticky for the whole process: restart the process") !=
            std::string::npos);
      continue;
    }
    CHECK(r.output.find("FRESH-DIFFERENT 1") != std::string::npos);
    CHECK(r.output.find("FRESH-WORKS 1") != std::string::npos);
    CHECK(r.output.find("FRESH-JIT worked") != std::string::npos);
    CHECK(r.output.find("KEPT-INTACT 1") != std::string::npos);
    CHECK(r.output.find("AFTER-FREE-WORKS 1") != std::string::npos);
  }
}

// .maxntid 128 caps the threads per block the driver allows for this kernel, as heavy register
// use does: asking for 256 must be refused at load, naming the kernel and the limit.
constexpr const char* kCappedPtx = R"(
.version 7.0
.target sm_80
.address_size 64
.visible .entry capped(.param .u64 p)
.maxntid 128, 1, 1
{
  ret;
}
)";

TEST_CASE("bad input: more threads per program than the kernel's registers allow") {
  if (!&tritium::cuda::load_kernel || !have_cuda())
    return;
  tritium::Backend& b = tritium::device("cuda").backend();
  tritium::cuda::KernelImage image{
      "capped", kCappedPtx, 256, 0, {tritium::ir::DType::pointer_to(tritium::ir::ScalarKind::F32)},
      {}};
  try {
    tritium::cuda::load_kernel(b, image);
    FAIL("no error for 256 threads where 128 are allowed");
  } catch (const Error& e) {
    std::string m = e.what();
    CHECK(m.find("kernel 'capped': needs 256 threads per program but") != std::string::npos);
    CHECK(m.find("allows at most 128") != std::string::npos);
  }
  image.num_threads = 128;
  CHECK(tritium::cuda::load_kernel(b, image) != nullptr);
}

} // namespace
