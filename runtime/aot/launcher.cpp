// The runtime of ahead-of-time launchers (libtritium_aot.a): picks a built specialization,
// loads its binary on the launch's device through the same driver code the JIT's backends use
// (runtime/core/gpu_driver.hpp), and launches it. Nothing here traces or compiles.
#include "codegen/gpu_ir/arch.hpp"
#include "codegen/targets/cpu/cpu_codegen.hpp"
#include "runtime/core/gpu_driver.hpp"
#ifdef TRITIUM_HAVE_CUDA
#include "runtime/cuda/cuda_driver.hpp"
#endif
#ifdef TRITIUM_HAVE_HIP
#include "runtime/hip/hip_driver.hpp"
#endif

#include <tritium/aot.hpp>
#include <tritium/ir/types.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace tritium::aot {
namespace {

enum class Kind { Cpu, Cuda, Hip, Other };

struct Target {
  Kind kind = Kind::Other;
  int index = 0;
  std::string name; // "cuda:0", "cpu", or what the user wrote for devices this runtime lacks
};

Target parse(std::string_view spec) {
  std::string_view name = spec;
  Target t;
  if (auto colon = spec.rfind(':'); colon != std::string_view::npos) {
    name = spec.substr(0, colon);
    std::string_view digits = spec.substr(colon + 1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), t.index);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || t.index < 0)
      throw Error(fmt::format("device '{}': '{}' is not a device index", spec, digits));
  }
  if (name == "cuda")
    t.kind = Kind::Cuda;
  else if (name == "hip")
    t.kind = Kind::Hip;
  else if (name == "cpu")
    t.kind = Kind::Cpu;
  if (t.kind == Kind::Cpu && t.index != 0)
    throw Error(fmt::format("device '{}': there is one cpu device, cpu:0", spec));
  t.name = t.kind == Kind::Cpu     ? std::string("cpu")
           : t.kind == Kind::Other ? std::string(spec)
                                   : fmt::format("{}:{}", name, t.index);
  return t;
}

// The GPU of `t` from its backend's open_gpu, or an error naming the device and why not.
template <class Gpu>
Gpu* open_or_throw(Gpu* (*open_gpu)(int, std::string*), const Target& t) {
  std::string why;
  Gpu* g = nullptr;
  try {
    g = open_gpu(t.index, &why);
  } catch (const Error& e) {
    why = e.what();
  }
  if (!g)
    throw Error(fmt::format("device '{}' is not available: {}", t.name, why));
  return g;
}
#ifdef TRITIUM_HAVE_CUDA
cuda::CudaGpu* cuda_gpu(const Target& t) {
  return open_or_throw(&cuda::open_gpu, t);
}
#endif
#ifdef TRITIUM_HAVE_HIP
hip::HipGpu* hip_gpu(const Target& t) {
  return open_or_throw(&hip::open_gpu, t);
}
#endif

[[noreturn]] void not_built(const Target& t) {
  throw Error(fmt::format("device '{}': this build of the tritium AOT runtime has no {} support "
                          "(its headers were not found when tritium was built)",
                          t.name, t.kind == Kind::Cuda ? "CUDA" : "HIP"));
}

const Target& resolve(std::string_view device) {
  if (device.empty()) {
    static const Target d = parse(default_device());
    return d;
  }
  // Launches name few devices: remember each parse.
  static std::mutex mutex;
  static std::map<std::string, Target, std::less<>> seen;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = seen.find(device);
  if (it == seen.end())
    it = seen.emplace(std::string(device), parse(device)).first;
  return it->second;
}

bool holds(Assume a, Param p, ArgSlot v) {
  switch (a) {
  case Assume::None:
    return true;
  case Assume::Div16:
    return p == Param::Pointer ? v % 16 == 0 : static_cast<int64_t>(v) % 16 == 0;
  case Assume::One:
    return static_cast<int64_t>(v) == 1;
  }
  return false;
}

// The image for a device of architecture `arch` (NVIDIA: compute capability `device_sm`): the
// same architecture, else (NVIDIA) PTX for the newest older one, which the driver compiles for
// this GPU; an architecture-specific target (sm_90a) only on its own compute capability. The
// device may be newer than every target the model knows; the images' targets are known.
const Image* pick_image(const Variant& v, Kind kind, const std::string& arch, int device_sm) {
  const Image* best = nullptr;
  int best_sm = -1;
  for (size_t i = 0; i < v.num_images; ++i) {
    const Image& im = v.images[i];
    std::string_view t = im.target;
    if (kind == Kind::Cpu) {
      if (im.format == Format::Host)
        return &im;
      continue;
    }
    if (kind == Kind::Hip && im.format == Format::Hsaco && gpu::strip_target_features(t) == arch)
      return &im;
    const gpu::Arch* a = gpu::find_arch(t);
    if (kind == Kind::Cuda && im.format == Format::Ptx && a && a->is_nvidia()) {
      if (a->sm() == device_sm && (t == arch || a->arch_specific()))
        return &im;
      if (!a->arch_specific() && a->sm() <= device_sm && a->sm() > best_sm) {
        best = &im;
        best_sm = a->sm();
      }
    }
  }
  return best;
}

std::string built_targets(const Variant& v) {
  std::string s;
  for (size_t i = 0; i < v.num_images; ++i)
    s += (s.empty() ? "" : ", ") + std::string(v.images[i].target);
  return s;
}

std::vector<ir::DType> runtime_types(const Kernel& k) {
  std::vector<ir::DType> out;
  for (size_t i = 0; i < k.num_params; ++i)
    if (k.params[i] != Param::Constexpr)
      out.push_back(k.params[i] == Param::Pointer ? ir::DType::pointer_to(ir::ScalarKind::I8)
                                                  : ir::DType(param_scalar_kind(k.params[i])));
  return out;
}

// Loaded GPU kernels, one per image and device, for the process's life (modules are cheap and
// the driver reclaims them at exit).
template <class Driver>
const driver::LoadedKernel<Driver>& loaded(driver::Gpu<Driver>& gpu, const Kernel& k,
                                           const Image& im) {
  static std::mutex mutex;
  static std::map<std::pair<const Image*, const void*>, driver::LoadedKernel<Driver>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto key = std::make_pair(&im, static_cast<const void*>(&gpu));
  if (auto it = cache.find(key); it != cache.end())
    return it->second;
  std::vector<ir::DType> types = runtime_types(k);
  auto lk = driver::load_kernel(gpu, im.data, k.name, types, im.num_threads, im.shared_bytes);
#ifdef TRITIUM_HAVE_CUDA
  if constexpr (std::is_same_v<Driver, cuda::CudaDriver>)
    cuda::configure_loaded(gpu, lk, im.num_threads, im.shared_bytes);
#endif
  return cache.emplace(key, std::move(lk)).first->second;
}

// The CPU: every core runs programs of the grid, each with its own scratch arena.
void launch_host(const Kernel& k, const Image& im, const LaunchGrid& g,
                 std::span<const ArgSlot> args) {
  auto entry = reinterpret_cast<cpu::KernelEntry>(const_cast<void*>(im.data));
  const int64_t total = g.x * g.y * g.z;
  cpu::LaunchState state;
  const int64_t streaming = cpu::streaming_store_bytes();
  std::atomic<int64_t> next{0};
  const int64_t chunk = std::max<int64_t>(1, total / 256);
  auto worker = [&] {
    const size_t bytes =
        static_cast<size_t>(std::max<int64_t>(im.scratch_bytes, 64) + 63) / 64 * 64;
    std::unique_ptr<char, decltype(&std::free)> scratch(
        static_cast<char*>(std::aligned_alloc(64, bytes)), &std::free);
    if (!scratch) {
      state.failed = true;
      return;
    }
    // Kernels keep per-thread state across programs in it (stream slots), read before written.
    std::memset(scratch.get(), 0, bytes);
    for (;;) {
      int64_t lo = next.fetch_add(chunk);
      if (lo >= total || state.failed.load(std::memory_order_relaxed))
        return;
      const int64_t range[cpu::kRangeSlots] = {lo,       std::min(total, lo + chunk), g.x, g.y, g.z,
                                               streaming};
      entry(args.data(), range, scratch.get(), &state);
      // Streaming stores are weakly ordered: visible before the launch counts as done.
      std::atomic_thread_fence(std::memory_order_seq_cst);
    }
  };
  const int64_t threads = std::min<int64_t>(std::max(1u, std::thread::hardware_concurrency()),
                                            (total + chunk - 1) / chunk);
  std::vector<std::thread> pool;
  for (int64_t t = 1; t < threads; ++t)
    pool.emplace_back(worker);
  worker();
  for (auto& t : pool)
    t.join();
  if (state.failed.load())
    throw Error(state.message.empty()
                    ? fmt::format("kernel '{}': cannot allocate its scratch memory", k.name)
                    : state.message);
}

} // namespace

std::string default_device() {
  if (const char* env = std::getenv("TRITIUM_DEVICE"); env && *env)
    return parse(env).name;
  std::string why;
#ifdef TRITIUM_HAVE_CUDA
  try {
    if (cuda::open_gpu(0, &why))
      return "cuda:0";
  } catch (const Error&) {
  }
#endif
#ifdef TRITIUM_HAVE_HIP
  try {
    if (hip::open_gpu(0, &why))
      return "hip:0";
  } catch (const Error&) {
  }
#endif
  return "cpu";
}

std::string_view launch(const Kernel& k, const Launch& l, std::span<const ArgSlot> params) {
  if (params.size() != k.num_params)
    throw Error(fmt::format("kernel '{}': {} arguments for {} parameters", k.name, params.size(),
                            k.num_params));
  const LaunchGrid& g = l.grid;
  if (g.x < 0 || g.y < 0 || g.z < 0 || g.x > 0x7fffffff || g.y > 65535 || g.z > 65535)
    throw Error(fmt::format("kernel '{}': launch grid ({}, {}, {}) is negative or too large (at "
                            "most 2^31-1 x 65535 x 65535 programs)",
                            k.name, g.x, g.y, g.z));
  const Target& t = resolve(l.device);
  if (t.kind == Kind::Cpu && l.stream)
    throw Error(fmt::format("kernel '{}': the cpu device has no streams; pass none", k.name));

  const Variant* chosen = nullptr;
  for (size_t v = 0; v < k.num_variants && !chosen; ++v) {
    const Variant& var = k.variants[v];
    bool ok = true;
    for (size_t i = 0; i < k.num_params && ok; ++i)
      ok = k.params[i] == Param::Constexpr ? var.values[i] == params[i]
                                           : holds(var.assume[i], k.params[i], params[i]);
    if (ok)
      chosen = &var;
  }

  std::string arch;
  int device_sm = 0;
  const Image* image = nullptr;
  if (chosen && t.kind != Kind::Other) {
    if (t.kind == Kind::Cuda) {
#ifdef TRITIUM_HAVE_CUDA
      arch = cuda_gpu(t)->arch;
      device_sm = cuda_gpu(t)->drv.sm;
#else
      not_built(t);
#endif
    } else if (t.kind == Kind::Hip) {
#ifdef TRITIUM_HAVE_HIP
      arch = hip_gpu(t)->arch;
#else
      not_built(t);
#endif
    }
    image = pick_image(*chosen, t.kind, arch, device_sm);
  }
  if (!image) {
    if (k.fallback) {
      k.fallback(l, t.name, params);
      return "jit";
    }
    std::string built;
    for (size_t v = 0; v < k.num_variants; ++v)
      built += fmt::format("\n  {} (for {})", k.variants[v].label, built_targets(k.variants[v]));
    throw Error(fmt::format(
        "kernel '{}': {} on device '{}'{} and the launcher was built without JIT_FALLBACK; "
        "built:{}",
        k.name,
        chosen ? fmt::format("specialization '{}' was not built", chosen->label)
               : std::string("no built specialization matches these arguments"),
        t.name, arch.empty() ? "" : fmt::format(" ({})", arch), built));
  }

  if (g.x == 0 || g.y == 0 || g.z == 0)
    return chosen->label;
  // The binaries take the runtime parameters only.
  ArgSlot runtime[128];
  size_t n = 0;
  for (size_t i = 0; i < k.num_params; ++i)
    if (k.params[i] != Param::Constexpr) {
      if (n == std::size(runtime))
        throw Error(fmt::format("kernel '{}' has more than 128 parameters", k.name));
      runtime[n++] = params[i];
    }
  std::span<const ArgSlot> args(runtime, n);
  switch (t.kind) {
  case Kind::Cpu:
    launch_host(k, *image, g, args);
    break;
  case Kind::Cuda:
#ifdef TRITIUM_HAVE_CUDA
  {
    cuda::CudaGpu& gpu = *cuda_gpu(t);
    loaded(gpu, k, *image).launch(gpu, g, args, l.stream);
  }
#endif
  break;
  case Kind::Hip:
#ifdef TRITIUM_HAVE_HIP
  {
    hip::HipGpu& gpu = *hip_gpu(t);
    loaded(gpu, k, *image).launch(gpu, g, args, l.stream);
  }
#endif
  break;
  case Kind::Other:
    break;
  }
  return chosen->label;
}

// ---- Memory, for programs without an allocator of their own. ----

namespace {
template <class F>
void on_device(std::string_view device, const char* what, F&& f) {
  const Target& t = resolve(device);
  switch (t.kind) {
  case Kind::Cuda:
#ifdef TRITIUM_HAVE_CUDA
  {
    auto& gpu = *cuda_gpu(t);
    driver::Current<cuda::CudaDriver> current(gpu);
    f(gpu);
    return;
  }
#else
    not_built(t);
#endif
  case Kind::Hip:
#ifdef TRITIUM_HAVE_HIP
  {
    auto& gpu = *hip_gpu(t);
    driver::Current<hip::HipDriver> current(gpu);
    f(gpu);
    return;
  }
#else
    not_built(t);
#endif
  case Kind::Cpu:
  case Kind::Other:
    break;
  }
  throw Error(fmt::format("tritium::aot::{}: device '{}' is not a GPU", what, t.name));
}
} // namespace

void* alloc(std::string_view device, size_t bytes) {
  if (resolve(device).kind == Kind::Cpu) {
    void* p = std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64);
    if (!p)
      throw Error(fmt::format("tritium::aot::alloc: cannot allocate {} bytes", bytes));
    return p;
  }
  void* p = nullptr;
  on_device(device, "alloc", [&](auto& gpu) {
    if (auto r = gpu.drv.malloc(&p, bytes); r != decltype(gpu.drv)::success)
      throw Error(fmt::format("tritium::aot::alloc: cannot allocate {} bytes on {}: {}", bytes,
                              gpu.device_name, gpu.drv.describe(r)));
  });
  return p;
}

void free(std::string_view device, void* p) {
  if (resolve(device).kind == Kind::Cpu)
    return std::free(p);
  on_device(device, "free", [&](auto& gpu) { (void)gpu.drv.free(p); });
}

void copy_to_device(std::string_view device, void* dst, const void* src, size_t bytes) {
  if (resolve(device).kind == Kind::Cpu) {
    std::memcpy(dst, src, bytes);
    return;
  }
  on_device(device, "copy_to_device", [&](auto& gpu) {
    gpu.check(gpu.drv.copy_h2d(dst, src, bytes, gpu.stream), "copy to the device");
    gpu.wait(gpu.stream, "copying to the device");
  });
}

void copy_to_host(std::string_view device, void* dst, const void* src, size_t bytes) {
  if (resolve(device).kind == Kind::Cpu) {
    std::memcpy(dst, src, bytes);
    return;
  }
  on_device(device, "copy_to_host", [&](auto& gpu) {
    gpu.check(gpu.drv.copy_d2h(dst, src, bytes, gpu.stream), "copy to the host");
    gpu.wait(gpu.stream, "copying to the host");
  });
}

void synchronize(std::string_view device, void* stream) {
  if (resolve(device).kind == Kind::Cpu)
    return;
  on_device(device, "synchronize",
            [&](auto& gpu) { gpu.wait(gpu.resolve(stream), "synchronizing"); });
}

} // namespace tritium::aot
