// The cuda device: NVIDIA GPUs through the driver API (libcuda.so.1, opened at run time).
// Everything a GPU backend shares with hip is runtime/core/gpu_driver.hpp; what is NVIDIA's own
// is here: PTX from the GPU compiler becomes a cubin through the driver's JIT linker, cached on
// disk, and the kernel is checked against the device's limits when it is loaded.
//
// cuda:N is device N (TRITIUM_CUDA_DEVICE picks the bare name's, default 0), on its primary
// context with a stream of its own, created with default flags so that it orders with the
// legacy default stream. Launches may go on any stream of the device instead (Device::
// create_stream, or a CUstream from the CUDA runtime, cuBLAS, NCCL or PyTorch through
// Device::wrap_stream).
//
// Kernel launches are asynchronous: a fault inside a kernel surfaces at the next wait (copy,
// synchronize). The error then names the last kernel launched; TRITIUM_LAUNCH_BLOCKING=1
// waits after every launch, so the error names exactly the kernel that faulted.
//
// A fault (an illegal address, a trap, a failed device assert) is sticky: every later call in
// the context returns the same error, and the driver's documentation says the process must
// restart. The device is then marked lost (driver::Gpu::mark_lost): its buffers and kernels
// refuse work with an error, its frees do nothing, and the next tritium::device("cuda") resets
// the primary context (cuDevicePrimaryCtxReset, in open_gpu) and starts a fresh device, which
// works (checked on an H200; see docs/errors.md).
#include "cuda_backend.hpp"

#include "codegen/gpu/subprocess.hpp"
#include "runtime/core/binary_cache.hpp"
#include "runtime/cuda/cuda_driver.hpp"
#include "runtime/cuda/jit_choice.hpp"

#include <tritium/error.hpp>

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <sstream>
#include <system_error>
#include <thread>
#include <vector>

namespace tritium::cuda {

// Defined in gpu_compile.cpp: IR -> PTX through the GPU code generator.
KernelImage compile_ptx(const ir::Function& f, const CompileOptions& options, int sm);

namespace {

class CudaBackend final : public driver::GpuBackend<CudaDriver> {
public:
  using GpuBackend::GpuBackend;
  // What do_bench clears: 256 MB, five times the L2 of an H100 or H200.
  size_t cache_flush_bytes() const override { return size_t{256} << 20; }
  std::unique_ptr<CompiledKernel> compile(std::shared_ptr<const ir::Function> f,
                                          const CompileOptions& options) override {
    gpu_.refuse_if_lost(fmt::format("load kernel '{}'", f->name));
    return load_kernel(*this, compile_ptx(*f, options, gpu_.drv.sm));
  }
};

// PTX -> cubin through the driver's JIT linker, which (unlike cuModuleLoadData on PTX) hands
// back the cubin, so it can be cached. (Measured on an H200, driver 580, 2026-11-29: the linker
// compiles PTX as relocatable code, and its register counts differ from cuModuleLoadData's
// whole-program JIT of the same PTX: SwiGLU forward 122 against 40, the int8-weight GEMM 145
// against 128, the int4 one at M 16 146 against 125. Over the zoo neither was faster: geometric
// mean 0.943 linked, 0.947 loaded, SwiGLU 1.25 -> 0.90 x Triton but the M-16 int8-weight GEMM
// 0.85 -> 1.29 and the norms' backward 0.86 -> 0.98; bench/RESULTS.md.)
std::string jit_ptx(CudaGpu& gpu, const KernelImage& image) {
  const CudaApi& api = *gpu.drv.api;
  std::string error_log(16 * 1024, '\0');
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {error_log.data(), reinterpret_cast<void*>(error_log.size())};
  CUlinkState link = nullptr;
  gpu.check(api.cuLinkCreate(2, opts, values, &link), "cuLinkCreate");
  auto fail = [&](CUresult r, std::string_view step) {
    api.cuLinkDestroy(link);
    error_log.resize(error_log.find('\0'));
    throw Error(fmt::format("kernel '{}': the CUDA driver could not {} its PTX for {}: {}{}{}",
                            image.name, step, gpu.arch, api.describe(r),
                            error_log.empty() ? "" : "\n", error_log));
  };
  // The PTX must be NUL-terminated: pass the terminator too.
  if (CUresult r = api.cuLinkAddData(link, CU_JIT_INPUT_PTX, const_cast<char*>(image.ptx.c_str()),
                                     image.ptx.size() + 1, image.name.c_str(), 0, nullptr, nullptr);
      r != CUDA_SUCCESS)
    fail(r, "compile");
  void* cubin = nullptr;
  size_t size = 0;
  if (CUresult r = api.cuLinkComplete(link, &cubin, &size); r != CUDA_SUCCESS)
    fail(r, "link");
  std::string out(static_cast<const char*>(cubin), size); // owned by the link state
  api.cuLinkDestroy(link);
  return out;
}

// The assembler TRITIUM_PTXAS names (a CUDA toolkit's ptxas), or "" for the driver's JIT.
// Triton assembles with a ptxas of its own; the driver's JIT may allocate registers
// differently from it for the same PTX.
std::string ptxas_path() {
  const char* p = std::getenv("TRITIUM_PTXAS");
  return p ? p : "";
}

// PTX -> cubin with `ptxas`, run as a child process on files in a private temporary folder.
std::string assemble_ptx(const std::string& ptxas, const KernelImage& image) {
  std::string arch;
  if (size_t at = image.ptx.find(".target "); at != std::string::npos)
    arch = image.ptx.substr(at + 8, image.ptx.find_first_of(" ,\n", at + 8) - at - 8);
  namespace fs = std::filesystem;
  std::string tmpl = (fs::temp_directory_path() / "tritium-ptxas-XXXXXX").string();
  if (!mkdtemp(tmpl.data()))
    throw Error(fmt::format("kernel '{}': no temporary folder for ptxas", image.name));
  const fs::path dir(tmpl), in = dir / "kernel.ptx", out = dir / "kernel.cubin",
                            log = dir / "log.txt";
  auto cleanup = [&] {
    std::error_code ec;
    fs::remove_all(dir, ec);
  };
  std::ofstream(in, std::ios::binary) << image.ptx;
  if (std::string why =
          gpu::run_tool({ptxas, "-arch=" + arch, "-o", out.string(), in.string()}, log);
      !why.empty()) {
    cleanup();
    throw Error(fmt::format("kernel '{}': TRITIUM_PTXAS={} could not assemble its PTX for {}: {}",
                            image.name, ptxas, arch, why));
  }
  std::stringstream cubin;
  cubin << std::ifstream(out, std::ios::binary).rdbuf();
  cleanup();
  return cubin.str();
}

std::string to_cubin(CudaGpu& gpu, const KernelImage& image) {
  const std::string ptxas = ptxas_path();
  return ptxas.empty() ? jit_ptx(gpu, image) : assemble_ptx(ptxas, image);
}

std::unique_ptr<Backend> make_cuda_backend(int index, std::string* why) {
  CudaGpu* gpu = open_gpu(index, why);
  return gpu ? std::make_unique<CudaBackend>(*gpu) : nullptr;
}

} // namespace

namespace {

int attribute(CudaGpu& gpu, const driver::LoadedKernel<CudaDriver>& k, CUfunction_attribute a) {
  int v = 0;
  gpu.check(gpu.drv.api->cuFuncGetAttribute(&v, a, k.function), "cuFuncGetAttribute");
  return v;
}

// How many blocks of `threads` threads and `shared` bytes of dynamic shared memory fit on one
// multiprocessor at once, by the driver's count (registers, shared memory, threads).
int occupancy(CudaGpu& gpu, const driver::LoadedKernel<CudaDriver>& k, int threads, int shared) {
  int blocks = 0;
  gpu.check(gpu.drv.api->cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k.function, threads,
                                                                     static_cast<size_t>(shared)),
            "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  return blocks;
}

// The image's cubin, from the disk cache or assembled, loaded. `cache_state`: "hit", "miss"
// or "off".
driver::LoadedKernel<CudaDriver> load_cubin(CudaGpu& gpu, const KernelImage& image,
                                            std::string& cache_state) {
  // Everything that shapes the cubin: the PTX, the chip, the driver's compiler, its options.
  gpu::CacheKey key;
  key.add("cubin/1").add(image.ptx).add(gpu.arch).add(gpu.drv.driver_version).add("O4");
  key.add(ptxas_path());
  // Opened per load (loads are rare), so TRITIUM_CACHE_DIR set after start-up still counts.
  gpu::BinaryCache cache("cuda");
  cache_state = cache.enabled() ? "hit" : "off";
  std::string cubin;
  if (auto cached = cache.load(key)) {
    cubin.assign(cached->begin(), cached->end());
  } else {
    cubin = to_cubin(gpu, image);
    cache.store(key, cubin);
    if (cache.enabled())
      cache_state = "miss";
  }
  try {
    return driver::load_kernel(gpu, cubin.data(), image.name, image.params, image.num_threads,
                               image.shared_bytes);
  } catch (const Error&) {
    if (cache_state != "hit")
      throw;
    // A cached cubin the driver refuses (an entry from another driver build): compile afresh.
    cubin = to_cubin(gpu, image);
    cache.store(key, cubin);
    cache_state = "miss";
    return driver::load_kernel(gpu, cubin.data(), image.name, image.params, image.num_threads,
                               image.shared_bytes);
  }
}

// How TRITIUM_CUDA_JIT asks the driver to assemble PTX (jit_choice.hpp): "link" (its JIT
// linker, relocatable code; unset), "whole" (cuModuleLoadData, a whole program), or "auto"
// (both, one kept).
enum class JitMode { automatic, link, whole };

JitMode jit_mode() {
  const char* v = std::getenv("TRITIUM_CUDA_JIT");
  const std::string_view s = v ? v : "";
  if (s == "auto")
    return JitMode::automatic;
  if (s.empty() || s == "link")
    return JitMode::link;
  if (s == "whole")
    return JitMode::whole;
  throw Error(fmt::format("TRITIUM_CUDA_JIT={}: expected auto, link or whole", s));
}

// One assembly of an image, loaded.
struct Loaded {
  driver::LoadedKernel<CudaDriver> k;
  bool whole = false;      // cuModuleLoadData's whole-program assembly, else the cubin's
  std::string cache_state; // the cubin's: "hit", "miss" or "off"
};

Loaded load_as(CudaGpu& gpu, const KernelImage& image, bool whole) {
  Loaded l;
  l.whole = whole;
  if (whole) {
    // The driver reads PTX text (NUL-terminated) and caches what it assembles itself.
    l.k = driver::load_kernel(gpu, image.ptx.c_str(), image.name, image.params, image.num_threads,
                              image.shared_bytes);
    l.cache_state = "off";
  } else {
    l.k = load_cubin(gpu, image, l.cache_state);
  }
  // Before any occupancy is asked: a block's dynamic shared memory past 48 KiB needs the
  // attribute set, or no block fits.
  configure_loaded(gpu, l.k, image.num_threads, image.shared_bytes);
  return l;
}

Assembly assembly(CudaGpu& gpu, const Loaded& l, const KernelImage& image) {
  return {occupancy(gpu, l.k, image.num_threads, image.shared_bytes),
          attribute(gpu, l.k, CU_FUNC_ATTRIBUTE_NUM_REGS),
          attribute(gpu, l.k, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)};
}

// `image` assembled as TRITIUM_CUDA_JIT says, or both ways and one kept by
// prefer_whole_program. A standalone ptxas (TRITIUM_PTXAS) assembles whole programs already.
// `note` (artifact("jit")) says which was kept, and why.
// How a kernel will be assembled: TRITIUM_CUDA_JIT's way, or linked where TRITIUM_PTXAS names an
// assembler (its cubins load as the linker's do).
JitMode assembly_mode() {
  return ptxas_path().empty() ? jit_mode() : JitMode::link;
}

Loaded assemble(CudaGpu& gpu, const KernelImage& image, std::string& note) {
  const JitMode mode = assembly_mode();
  if (mode == JitMode::whole) {
    try {
      note = "whole";
      return load_as(gpu, image, true);
    } catch (const Error&) {
      // The linker's error log says why; where it assembles the PTX after all, it is kept.
    }
  }
  Loaded linked = load_as(gpu, image, false);
  note = "link";
  if (mode != JitMode::automatic)
    return linked;
  std::optional<Loaded> whole;
  try {
    whole = load_as(gpu, image, true);
  } catch (const Error& e) {
    const std::string why = e.what();
    note += "; the whole-program assembly failed: " + why.substr(0, why.find('\n'));
    return linked;
  }
  whole->cache_state = linked.cache_state;
  const Assembly a = assembly(gpu, linked, image), b = assembly(gpu, *whole, image);
  const bool keep_whole = prefer_whole_program(a, b);
  note = fmt::format("{}; linked: {} blocks, {} registers, {} B local; whole program: {} blocks, "
                     "{} registers, {} B local",
                     keep_whole ? "whole" : "link", a.blocks, a.registers, a.local_bytes, b.blocks,
                     b.registers, b.local_bytes);
  (void)gpu.drv.module_unload(keep_whole ? linked.k.module : whole->k.module);
  return keep_whole ? std::move(*whole) : std::move(linked);
}

} // namespace

std::unique_ptr<CompiledKernel> load_kernel(Backend& backend, KernelImage image) {
  auto* cuda = dynamic_cast<CudaBackend*>(&backend);
  if (!cuda)
    throw Error(fmt::format("kernel '{}': PTX loads only on a cuda device, not on '{}'", image.name,
                            backend.name()));
  CudaGpu& gpu = cuda->gpu();
  if (image.global_scratch_bytes < 0)
    throw Error(fmt::format("kernel '{}': global_scratch_bytes is {}; it must be 0 or more",
                            image.name, image.global_scratch_bytes));
  driver::Current<CudaDriver> current(gpu);

  Loaded k;
  std::string jit_note; // artifact("jit"): "whole" or "link", and why
  // lower.cpp's min_blocks_per_sm asks a kernel without dots for room for 16 warps per SM
  // (.minnctapersm N). The assembler reads the directive as leave to spend registers up to
  // that bound: kernels that fit anyway came out with more registers and fewer blocks in
  // flight (layer norm over rows of 4096 halves: 40 registers without it, 55 with; 6 blocks
  // of 8 warps per SM against 4). So the kernel is assembled without it, and with it (the same
  // way, linked or whole); the version with it is kept only where the plain one's registers
  // leave room for fewer than N blocks and it fits more without spilling (local memory
  // traffic would cost the warps' gain).
  std::string occupancy_note; // artifact("min_blocks"): what was decided, and why
  if (const size_t at = image.ptx.find(".minnctapersm"); at != std::string::npos) {
    const size_t end = image.ptx.find('\n', at) + 1;
    int wanted = std::atoi(image.ptx.c_str() + at + std::strlen(".minnctapersm"));
    // No more blocks than their shared memory lets share an SM: the bound would only cost
    // registers (a GEMM's ring takes half an SM's shared memory: two blocks at most).
    if (image.shared_bytes > 0 && gpu.shared_per_cu > 0)
      wanted = std::min(wanted,
                        gpu.shared_per_cu / (image.shared_bytes + gpu.shared_reserved_per_block));
    KernelImage asked = image;
    asked.ptx.replace(at, end - at, fmt::format(".minnctapersm {}\n", std::max(wanted, 1)));
    image.ptx.erase(at, end - at);
    // The version with the directive is assembled on another thread beside the plain one,
    // wherever the way it will be assembled is known before (not under `auto`): a cold compile
    // that needs both then takes about one assembly's time, not two. (H200, 2026-12-03, the
    // driver's cache off: SwiGLU forward, which needs both, took 100-161 ms cold one after the
    // other, 1.0-1.1 x Triton's; with the two side by side no zoo kernel but one compiled slower
    // than Triton's, bench/RESULTS.md.) One that needs only the plain one spends a second core,
    // not time.
    const JitMode mode = assembly_mode();
    const bool whole = mode == JitMode::whole;
    std::future<Loaded> beside;
    if (mode != JitMode::automatic && std::thread::hardware_concurrency() > 1) {
      try {
        beside = std::async(std::launch::async, [&gpu, &asked, whole] {
          driver::Current<CudaDriver> current(gpu);
          return load_as(gpu, asked, whole);
        });
      } catch (const std::system_error&) {
        // No thread to be had: the version with the directive waits its turn below.
      }
    }
    Loaded plain;
    try {
      plain = assemble(gpu, image, jit_note);
    } catch (const Error&) {
      if (beside.valid()) {
        try {
          (void)gpu.drv.module_unload(beside.get().k.module);
        } catch (const Error&) {
        }
      }
      throw;
    }
    const int blocks = occupancy(gpu, plain.k, image.num_threads, image.shared_bytes);
    occupancy_note =
        fmt::format("{} wanted; without the directive: {} blocks, {} registers", wanted, blocks,
                    attribute(gpu, plain.k, CU_FUNC_ATTRIBUTE_NUM_REGS));
    // The bound may leave an instruction too few registers (a wide wgmma's accumulator): the
    // assembler then refuses it, and the kernel stays as assembled without it.
    std::optional<Loaded> tried;
    std::string refused;
    try {
      if (beside.valid())
        tried = beside.get();
    } catch (const Error& e) {
      refused = e.what();
    }
    // Assembled (or refused) the other way than the plain one (whole program failed, the
    // linker took it), or not needed: given back, and tried again below where needed.
    if (whole != plain.whole || blocks >= wanted) {
      if (tried)
        (void)gpu.drv.module_unload(tried->k.module);
      tried.reset();
      refused.clear();
    }
    if (blocks < wanted && !tried && refused.empty()) {
      try {
        tried = load_as(gpu, asked, plain.whole);
      } catch (const Error& e) {
        refused = e.what();
      }
    }
    if (blocks < wanted && !refused.empty())
      occupancy_note += "; with it the assembler refused: " + refused.substr(0, refused.find('\n'));
    if (tried) {
      const int local = attribute(gpu, tried->k, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
      const int more = occupancy(gpu, tried->k, image.num_threads, image.shared_bytes);
      occupancy_note +=
          fmt::format("; with it: {} blocks, {} registers, {} bytes of local memory", more,
                      attribute(gpu, tried->k, CU_FUNC_ATTRIBUTE_NUM_REGS), local);
      if (local == 0 && more > blocks) {
        (void)gpu.drv.module_unload(plain.k.module);
        plain = std::move(*tried);
        image.ptx = std::move(asked.ptx);
        occupancy_note += "; kept with it";
      } else {
        (void)gpu.drv.module_unload(tried->k.module);
      }
    }
    k = std::move(plain);
  } else {
    k = assemble(gpu, image, jit_note);
  }
  k.k.global_scratch_bytes = static_cast<unsigned>(image.global_scratch_bytes);
  std::vector<std::pair<std::string, std::string>> artifacts = std::move(image.stages);
  // The PTX loaded, which may differ from the compiler's "ptx" stage by the directive above.
  std::erase_if(artifacts, [](const auto& a) { return a.first == "ptx"; });
  artifacts.emplace_back("ptx", std::move(image.ptx));
  artifacts.emplace_back("cache", k.cache_state); // whether the cubin came from the disk cache
  artifacts.emplace_back("jit", jit_note);
  // What the driver's assembler made of it, for artifact("registers") / ("local_bytes"):
  // registers per thread bound how many blocks share an SM; local memory means spills.
  artifacts.emplace_back("registers",
                         std::to_string(attribute(gpu, k.k, CU_FUNC_ATTRIBUTE_NUM_REGS)));
  artifacts.emplace_back("local_bytes",
                         std::to_string(attribute(gpu, k.k, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)));
  artifacts.emplace_back("min_blocks", occupancy_note);
  return std::make_unique<driver::Kernel<CudaDriver>>(gpu, std::move(k.k), std::move(artifacts));
}

void* native_stream(Backend& backend) {
  if (!dynamic_cast<CudaBackend*>(&backend))
    throw Error(fmt::format("native_stream: '{}' is not a cuda device", backend.name()));
  return backend.default_stream();
}

} // namespace tritium::cuda

namespace tritium {

BackendFactory cuda_backend() {
  return {"cuda", 100, &cuda::make_cuda_backend};
}

} // namespace tritium
