#include "perf_map.hpp"

#include "env_flag.hpp"

#include <tritium/error.hpp>

#include <fmt/format.h>
#include <llvm/ExecutionEngine/JITLink/JITLink.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h>

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace tritium::cpu {
namespace {

// Appends a line per defined function once the graph's addresses are final. The file stays
// open for the process (perf reads it after the run); lines are written under a lock, whole.
class PerfMapPlugin : public llvm::orc::ObjectLinkingLayer::Plugin {
public:
  explicit PerfMapPlugin(std::FILE* file) : file_(file) {}

  void modifyPassConfig(llvm::orc::MaterializationResponsibility&, llvm::jitlink::LinkGraph&,
                        llvm::jitlink::PassConfiguration& config) override {
    config.PostFixupPasses.push_back([this](llvm::jitlink::LinkGraph& g) {
      std::string lines;
      for (const llvm::jitlink::Symbol* s : g.defined_symbols())
        if (s->hasName() && s->isCallable() && s->getSize() > 0)
          lines += fmt::format("{:x} {:x} {}\n", s->getAddress().getValue(), s->getSize(),
                               std::string_view(s->getName().data(), s->getName().size()));
      std::lock_guard<std::mutex> lock(mutex_);
      std::fputs(lines.c_str(), file_);
      std::fflush(file_);
      return llvm::Error::success();
    });
  }
  llvm::Error notifyFailed(llvm::orc::MaterializationResponsibility&) override {
    return llvm::Error::success();
  }
  llvm::Error notifyRemovingResources(llvm::orc::JITDylib&, llvm::orc::ResourceKey) override {
    return llvm::Error::success();
  }
  void notifyTransferringResources(llvm::orc::JITDylib&, llvm::orc::ResourceKey,
                                   llvm::orc::ResourceKey) override {}

private:
  std::FILE* file_;
  std::mutex mutex_;
};

} // namespace

void add_perf_map(llvm::orc::LLJIT& jit) {
  if (!env_flag("TRITIUM_PERF_MAP"))
    return;
  auto* layer = llvm::dyn_cast<llvm::orc::ObjectLinkingLayer>(&jit.getObjLinkingLayer());
  if (!layer)
    throw Error("TRITIUM_PERF_MAP: this host's JIT links without JITLink; no perf map");
  const std::string path = fmt::format("/tmp/perf-{}.map", ::getpid());
  std::FILE* file = std::fopen(path.c_str(), "a");
  if (!file)
    throw Error(fmt::format("TRITIUM_PERF_MAP: cannot open {} for writing", path));
  layer->addPlugin(std::make_unique<PerfMapPlugin>(file));
}

} // namespace tritium::cpu
