// The "cpu" device: host memory, kernels compiled by codegen/targets/cpu, and a launch that
// runs the grid's programs in parallel on every core through oneTBB. A launch is synchronous.
#include "codegen/targets/cpu/cpu_codegen.hpp"
#include "runtime/core/binary_cache.hpp"

#include <tritium/error.hpp>
#include <tritium/ir/printer.hpp>
#include <tritium/runtime/backend.hpp>

#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tritium {
namespace {

// Per-thread scratch arena for the tensors of the programs a thread runs (grown, never shrunk).
// Held by oneTBB's enumerable_thread_specific, a static object, rather than thread_local: TBB's
// workers outlive main, so thread_local arenas were never freed (LeakSanitizer said so).
char* thread_scratch(int64_t bytes) {
  struct Arena {
    char* p = nullptr;
    int64_t size = 0;
    Arena() = default;
    Arena(const Arena&) = delete;
    Arena& operator=(const Arena&) = delete;
    ~Arena() { std::free(p); }
  };
  static tbb::enumerable_thread_specific<Arena> arenas;
  Arena& arena = arenas.local();
  if (arena.size < bytes) {
    std::free(arena.p);
    arena.size = (bytes + 4095) / 4096 * 4096;
    arena.p = static_cast<char*>(std::aligned_alloc(64, static_cast<size_t>(arena.size)));
    if (!arena.p)
      throw Error(fmt::format("cpu: cannot allocate {} bytes of kernel scratch", arena.size));
    // Kernels keep per-thread state across programs in it (lower_prefetch.cpp's stream slots),
    // read before a thread's first program writes it.
    std::memset(arena.p, 0, static_cast<size_t>(arena.size));
  }
  return arena.p;
}

class CpuKernel : public CompiledKernel {
public:
  CpuKernel(std::shared_ptr<const ir::Function> f, cpu::CpuCode code)
      : f_(std::move(f)), code_(std::move(code)) {}

  void launch(const LaunchGrid& grid, std::span<const ArgSlot> args, void*) override {
    if (args.size() != f_->args().size())
      throw Error(fmt::format("kernel '{}': {} arguments for {} parameters", f_->name, args.size(),
                              f_->args().size()));
    const int64_t total = grid.x * grid.y * grid.z;
    if (total <= 0)
      return;
    cpu::LaunchState state;
    const uint64_t* a = args.data();
    const int64_t streaming = cpu::streaming_store_bytes();
    auto run = [&](int64_t lo, int64_t hi) {
      if (state.failed.load(std::memory_order_relaxed))
        return;
      char* scratch = thread_scratch(std::max<int64_t>(code_.scratch_bytes, 64));
      const int64_t range[cpu::kRangeSlots] = {lo, hi, grid.x, grid.y, grid.z, streaming};
      code_.entry(a, range, scratch, &state);
      // Streaming stores are weakly ordered: visible before the launch counts as done.
      std::atomic_thread_fence(std::memory_order_seq_cst);
    };
    if (total == 1)
      run(0, 1);
    else
      tbb::parallel_for(tbb::blocked_range<int64_t>(0, total),
                        [&](const tbb::blocked_range<int64_t>& r) { run(r.begin(), r.end()); });
    if (state.failed.load())
      throw Error(state.message);
  }

  std::string artifact(std::string_view stage) const override {
    if (stage == "ir")
      return ir::print(*f_);
    auto it = code_.artifacts.find(stage);
    return it == code_.artifacts.end() ? std::string() : it->second;
  }

private:
  std::shared_ptr<const ir::Function> f_;
  cpu::CpuCode code_;
};

// This build of tritium: the file that holds this code (libtritium, or a program it is linked
// into statically), by path, size and modification time. Any rebuild of the compiler changes
// it, so a cached object never outlives the code generator that made it.
const std::string& build_identity() {
  static const std::string id = [] {
    Dl_info info{};
    struct stat st {};
    if (!dladdr(reinterpret_cast<const void*>(&build_identity), &info) || !info.dli_fname ||
        stat(info.dli_fname, &st) != 0)
      return std::string(); // unknown: the cache is not used
    return fmt::format("{}:{}:{}.{}", info.dli_fname, st.st_size, st.st_mtim.tv_sec,
                       st.st_mtim.tv_nsec);
  }();
  return id;
}

// A cache entry: "<symbol>\n<scratch bytes>\n" and the object's bytes.
std::string encode(const cpu::CpuKernelObject& o) {
  return fmt::format("{}\n{}\n", o.symbol, o.scratch_bytes) + o.object;
}
std::optional<cpu::CpuKernelObject> decode(const std::vector<char>& entry) {
  const std::string_view s(entry.data(), entry.size());
  const size_t a = s.find('\n');
  const size_t b = a == std::string_view::npos ? a : s.find('\n', a + 1);
  if (b == std::string_view::npos || a == 0)
    return std::nullopt;
  cpu::CpuKernelObject o;
  o.symbol = std::string(s.substr(0, a));
  o.scratch_bytes = std::strtoll(std::string(s.substr(a + 1, b - a - 1)).c_str(), nullptr, 10);
  o.object = std::string(s.substr(b + 1));
  return o;
}

// Compiled kernels persist on disk (runtime/core/binary_cache.hpp, folder "cpu"), so that the
// next process loads a kernel's object instead of compiling it again (55-250 ms a kernel). The
// key is everything an object depends on: the IR as traced (its specialization included),
// fp_fusion, this build of tritium, LLVM and the host CPU. While TRITIUM_DUMP is set the cache
// is passed by: a dump wants every stage.
cpu::CpuCode compile_cached(const ir::Function& f, bool fp_fusion) {
  // artifact("cache"), as on CUDA: "hit" (loaded from disk), "miss" (compiled, stored) or "off".
  auto with_state = [](cpu::CpuCode code, const char* state) {
    code.artifacts["cache"] = state;
    return code;
  };
  const char* dump = std::getenv("TRITIUM_DUMP");
  gpu::BinaryCache cache("cpu");
  if ((dump && *dump) || build_identity().empty() || !cache.enabled())
    return with_state(cpu::compile_kernel(f, fp_fusion), "off");
  gpu::CacheKey key;
  key.add("cpu-object/1").add(build_identity()).add(cpu::code_identity());
  key.add(fp_fusion ? 1 : 0).add(ir::print(f));
  if (auto entry = cache.load(key))
    if (auto object = decode(*entry)) {
      try {
        return with_state(cpu::load_kernel_object(std::move(*object)), "hit");
      } catch (const Error&) {
        // An entry this process cannot link: compiled again below, and replaced.
      }
    }
  cpu::CpuKernelObject object = cpu::compile_kernel_object(f, fp_fusion);
  cache.store(key, encode(object));
  return with_state(cpu::load_kernel_object(std::move(object)), "miss");
}

class CpuBackend : public Backend {
public:
  std::string_view name() const override { return "cpu"; }
  std::string target() const override { return cpu::host_arch(); }
  bool host_memory() const override { return true; }
  int num_compute_units() const override { return tbb::this_task_arena::max_concurrency(); }
  void* alloc(size_t bytes) override {
    void* p = std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64);
    if (!p)
      throw Error(fmt::format("cpu: cannot allocate {} bytes", bytes));
    return p;
  }
  void free(void* p) override { std::free(p); }
  void copy_to_device(void* dst, const void* src, size_t n) override { std::memcpy(dst, src, n); }
  void copy_to_host(void* dst, const void* src, size_t n) override { std::memcpy(dst, src, n); }
  void copy_device_to_device(void* dst, const void* src, size_t n) override {
    std::memmove(dst, src, n);
  }
  // On every core, as kernels run: one core alone cannot evict the others' caches quickly.
  void fill(void* dst, unsigned char byte, size_t bytes) override {
    constexpr size_t chunk = size_t{1} << 20;
    tbb::parallel_for(size_t{0}, (bytes + chunk - 1) / chunk, [&](size_t i) {
      size_t lo = i * chunk;
      std::memset(static_cast<char*>(dst) + lo, byte, std::min(chunk, bytes - lo));
    });
  }
  // Twice the last-level cache (64 MiB where the C library cannot tell).
  size_t cache_flush_bytes() const override {
    long llc = 0;
    for (int name : {_SC_LEVEL4_CACHE_SIZE, _SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE})
      if (llc <= 0)
        llc = sysconf(name);
    return llc > 0 ? 2 * static_cast<size_t>(llc) : size_t{64} << 20;
  }
  std::unique_ptr<CompiledKernel> compile(std::shared_ptr<const ir::Function> f,
                                          const CompileOptions& options) override {
    cpu::CpuCode code = compile_cached(*f, options.enable_fp_fusion);
    return std::make_unique<CpuKernel>(std::move(f), std::move(code));
  }
};

} // namespace

BackendFactory cpu_backend() {
  return {"cpu", 50, [](int index, std::string* why) -> std::unique_ptr<Backend> {
            if (index != 0) {
              *why = "there is one cpu device, cpu:0 (its launches use every core)";
              return nullptr;
            }
            try {
              (void)cpu::host_arch(); // the host must be a target this LLVM can compile for
              return std::make_unique<CpuBackend>();
            } catch (const std::exception& e) {
              *why = e.what();
              return nullptr;
            }
          }};
}

} // namespace tritium
