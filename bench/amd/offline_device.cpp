#include "offline_device.hpp"

#include "codegen/gpu/compile.hpp"

#include <tritium/error.hpp>
#include <tritium/ir/printer.hpp>
#include <tritium/runtime/autotune.hpp>
#include <tritium/runtime/backend.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

namespace tritium::xcompile {
namespace {

namespace fs = std::filesystem;

// Launches do nothing, so kernels take "1 ms": the benchmark's estimate then asks for a few
// hundred launches, not the 10^8 a zero time would.
class FixedEvent final : public DeviceEvent {
public:
  void record(void*) override {}
  void synchronize() override {}
  bool done() override { return true; }
  double ms_since(const DeviceEvent&) override { return 1.0; }
};

class NoLaunch final : public CompiledKernel {
public:
  void launch(const LaunchGrid&, std::span<const ArgSlot>, void*) override {}
};

class OfflineBackend final : public Backend {
public:
  OfflineBackend(std::string arch, std::string dir) : arch_(std::move(arch)), dir_(std::move(dir)) {
    gpu::GpuTarget t;
    t.arch = arch_;
    is_amd_ = t.is_amdgpu();
  }
  std::string_view name() const override { return is_amd_ ? "hip" : "cuda"; }
  std::string target() const override { return arch_; }
  bool host_memory() const override { return true; }
  // A large GPU's count: persistent kernels size their grids by it.
  int num_compute_units() const override { return is_amd_ ? 304 : 132; }
  void* alloc(size_t bytes) override {
    void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (!p)
      throw Error(fmt::format("offline {}: cannot allocate {} bytes", arch_, bytes));
    return p;
  }
  void free(void* p) override { std::free(p); }
  void copy_to_device(void* d, const void* s, size_t n) override { std::memcpy(d, s, n); }
  void copy_to_host(void* d, const void* s, size_t n) override { std::memcpy(d, s, n); }
  void copy_device_to_device(void* d, const void* s, size_t n) override { std::memmove(d, s, n); }
  std::unique_ptr<DeviceEvent> new_event() override { return std::make_unique<FixedEvent>(); }

  std::unique_ptr<CompiledKernel> compile(std::shared_ptr<const ir::Function> f,
                                          const CompileOptions& o) override {
    Compiled c{f->name, detail::current_config()};
    c.num_warps = o.num_warps;
    c.num_stages = o.num_stages;
    std::string base = Label::current().empty() ? c.kernel : Label::current() + "." + c.kernel;
    if (!c.config.empty())
      base += "." + c.config;
    if (int n = seen_[base]++)
      base += fmt::format(".{}", n); // another specialization (argument values) of the same
    c.file = base;
    gpu::GpuTarget t;
    t.arch = arch_;
    t.keep_stages = true;
    // The kernel as traced first: `tritium compile` reproduces a failure from it.
    write(base + ".ir", ir::print(*f));
    const auto start = std::chrono::steady_clock::now();
    auto elapsed = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    try {
      gpu::GpuKernelBinary bin = gpu::compile_for_gpu(*f, t, o);
      c.seconds = elapsed();
      c.shared_bytes = bin.shared_bytes;
      c.remarks = bin.remarks;
      for (const char* stage : {"ir.opt", "ll.opt", "amdgcn", "ptx", "hsaco.meta"})
        if (const std::string* text = bin.stage(stage))
          write(base + "." + stage, *text);
      write(base + ".json",
            fmt::format("{{\"name\": \"{}\", \"config\": \"{}\", \"num_warps\": {}, "
                        "\"num_stages\": {}, \"num_threads\": {}, \"shared_bytes\": {}, "
                        "\"global_scratch_bytes\": {}}}\n",
                        bin.name, c.config, o.num_warps, o.num_stages, bin.num_threads,
                        bin.shared_bytes, bin.global_scratch_bytes));
    } catch (const Error& e) {
      c.error = e.what();
      c.seconds = elapsed();
      compiled_.push_back(c);
      throw;
    }
    compiled_.push_back(std::move(c));
    return std::make_unique<NoLaunch>();
  }

  const std::vector<Compiled>& compiled() const { return compiled_; }

private:
  void write(const std::string& file, const std::string& text) {
    if (dir_.empty())
      return;
    fs::create_directories(dir_);
    if (!(std::ofstream(fs::path(dir_) / file) << text))
      throw Error(fmt::format("cannot write {}", (fs::path(dir_) / file).string()));
  }

  std::string arch_, dir_;
  bool is_amd_ = false;
  std::map<std::string, int> seen_;
  std::vector<Compiled> compiled_;
};

} // namespace

namespace {
std::string current_label;
} // namespace

Label::Label(std::string part) : saved_(current_label) {
  current_label = current_label.empty() ? std::move(part) : current_label + "." + part;
}
Label::~Label() {
  current_label = saved_;
}
const std::string& Label::current() {
  return current_label;
}

struct OfflineGpu::Impl {
  OfflineBackend backend;
};

OfflineGpu::OfflineGpu(std::string arch, std::string dump_dir)
    : impl_(std::make_unique<Impl>(Impl{OfflineBackend(std::move(arch), std::move(dump_dir))})) {}
OfflineGpu::~OfflineGpu() = default;
Device OfflineGpu::device() {
  return Device(&impl_->backend);
}
const std::vector<Compiled>& OfflineGpu::compiled() const {
  return impl_->backend.compiled();
}

} // namespace tritium::xcompile
