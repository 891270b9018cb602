#include "jit_load.hpp"

#include "perf_map.hpp"
#include "runtime_support.hpp"
#include "target.hpp"

#include <tritium/error.hpp>

#include <fmt/format.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

#include <mutex>

namespace tritium::cpu {
namespace {

std::string message(llvm::Error e) {
  return llvm::toString(std::move(e));
}

llvm::orc::LLJIT& jit() {
  // Never destroyed: kernels held in static caches release their code during static
  // destruction, which must find the JIT still alive.
  static llvm::orc::LLJIT* instance = [] {
    const CpuTarget& t = host_target();
    llvm::orc::JITTargetMachineBuilder jtmb{llvm::Triple(t.triple)};
    jtmb.setCPU(t.cpu);
    jtmb.addFeatures(std::vector<std::string>{});
    jtmb.getFeatures().AddFeature(t.features);
    jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
    auto j = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(jtmb)).create();
    if (!j)
      throw Error("cpu backend: cannot create the LLVM JIT: " + message(j.takeError()));
    auto& jd = (*j)->getMainJITDylib();
    // The C library (libm for exp, log, pow…) from the process.
    auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
        (*j)->getDataLayout().getGlobalPrefix());
    if (!gen)
      throw Error("cpu backend: " + message(gen.takeError()));
    jd.addGenerator(std::move(*gen));
    llvm::orc::SymbolMap host;
    for (auto [name, addr] : runtime_symbols())
      host[(*j)->mangleAndIntern(name)] = {llvm::orc::ExecutorAddr::fromPtr(addr),
                                           llvm::JITSymbolFlags::Exported |
                                               llvm::JITSymbolFlags::Callable};
    if (auto e = jd.define(llvm::orc::absoluteSymbols(std::move(host))))
      throw Error("cpu backend: " + message(std::move(e)));
    add_perf_map(**j);
    return j->release();
  }();
  return *instance;
}

std::mutex jit_mutex;

} // namespace

JitResult jit_load(std::string_view object, const std::string& symbol) {
  std::lock_guard<std::mutex> lock(jit_mutex);
  auto& j = jit();
  // Each object links into a library of its own, which sees the runtime's symbols and the C
  // library through the main one: an object from the disk cache keeps the symbol the process
  // that compiled it chose, which another kernel may hold here.
  static int objects = 0;
  auto lib = j.createJITDylib(fmt::format("tritium_object_{}", objects++));
  if (!lib)
    throw Error(fmt::format("cpu backend: kernel {}: {}", symbol, message(lib.takeError())));
  lib->addToLinkOrder(j.getMainJITDylib());
  auto rt = lib->createResourceTracker();
  if (auto e = j.addObjectFile(rt, llvm::MemoryBuffer::getMemBufferCopy(object, symbol)))
    throw Error(fmt::format("cpu backend: kernel {}: {}", symbol, message(std::move(e))));
  auto addr = j.lookup(*lib, symbol);
  if (!addr)
    throw Error(fmt::format("cpu backend: kernel {}: {}", symbol, message(addr.takeError())));
  JitResult r;
  r.address = addr->toPtr<void*>();
  llvm::orc::JITDylib* owner = &*lib;
  r.keep_alive = std::shared_ptr<void>(nullptr, [rt, owner](void*) {
    std::lock_guard<std::mutex> lock(jit_mutex);
    llvm::consumeError(rt->remove());
    llvm::consumeError(jit().getExecutionSession().removeJITDylib(*owner));
  });
  return r;
}

} // namespace tritium::cpu
