// Host detection through LLVM's generic API: no ISA is named here, so an AArch64 host needs
// nothing but LLVM's AArch64 backend linked in (its triple comes from the process).
#include "target.hpp"

#include "ldexp.hpp"

#include <tritium/error.hpp>

#include <llvm/ADT/SmallString.h>
#include <llvm/Analysis/TargetTransformInfo.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/DynamicLibrary.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <fmt/format.h>

#include <algorithm>
#include <mutex>

namespace tritium::cpu {

CpuTarget make_cpu_target(const std::string& cpu) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::InitializeNativeTargetAsmParser(); // kernels may hold inline asm (nontemporal_stores.cpp)
  CpuTarget t;
  t.triple = llvm::sys::getProcessTriple();
  if (cpu.empty()) {
    t.cpu = llvm::sys::getHostCPUName().str();
    std::string features;
    for (const auto& [name, on] : llvm::sys::getHostCPUFeatures())
      features += (features.empty() ? "" : ",") + std::string(on ? "+" : "-") + name.str();
    t.features = features;
  } else {
    t.cpu = cpu; // its features follow from the name
  }
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(t.triple, err);
  if (!target)
    throw Error("cpu backend: no LLVM target for host triple " + t.triple + ": " + err);
  llvm::TargetOptions opts;
  t.machine.reset(target->createTargetMachine(t.triple, t.cpu, t.features, opts, llvm::Reloc::PIC_,
                                              std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!t.machine)
    throw Error("cpu backend: cannot create a target machine for " + t.triple);
  if (!cpu.empty() && !t.machine->getMCSubtargetInfo()->isCPUStringValid(cpu))
    throw Error("cpu backend: '" + cpu + "' is not a CPU LLVM knows for " + t.triple +
                " (x86-64, x86-64-v2, x86-64-v3, x86-64-v4, znver4, sapphirerapids, …)");
  // Ask the cost model (not a table of ISAs) how wide a vector register is.
  llvm::LLVMContext ctx;
  llvm::Module m("probe", ctx);
  m.setDataLayout(t.machine->createDataLayout());
  auto* fn = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), false),
                                    llvm::Function::ExternalLinkage, "probe", m);
  fn->addFnAttr("target-cpu", t.cpu);
  fn->addFnAttr("target-features", t.features);
  // The widest register, not the tuning's preferred width: LLVM tunes Intel's AVX-512 server
  // cores (Skylake-SP to Sapphire Rapids) to 256-bit vectors for code at large, where 512-bit
  // instructions lower the clock for whatever runs beside them. A kernel is nothing but hot
  // loops, and on an Emerald Rapids (two 512-bit FMA pipes) they ran 1.1-2.2 x faster at 512
  // bits: SiLU.mul 10.4 -> 14.1 GB/s, softmax 15.3 -> 19.0, an f16 layer norm 13.8 -> 17.7
  // (bench/RESULTS.md, eighteenth session). Kernels carry the width as their own preference
  // (lower_kernel.cpp); any value above every register's width asks for the widest.
  fn->addFnAttr("prefer-vector-width", "65536");
  auto tti = t.machine->getTargetTransformInfo(*fn);
  auto bits = tti.getRegisterBitWidth(llvm::TargetTransformInfo::RGK_FixedWidthVector);
  t.vector_bits = std::max<int>(128, static_cast<int>(bits.getFixedValue()));
  // A Zen 4 issues each 512-bit operation as two 256-bit halves, and its 512-bit vcvtph2ps and
  // vcvtps2ph convert no more elements per cycle than the 256-bit forms while holding the
  // conversion pipes longer: a layer norm's output loop (3 conversions in, 1 out, 3 arithmetic
  // operations per element, row in L1) took 1.95 ns per 16 elements at 512 bits and 1.50 at 256
  // bits, while loops dominated by arithmetic (SiLU's exp) ran 20 % slower at 256 bits
  // (bench/RESULTS.md, fourteenth session); an f16 variance pass (convert, subtract, fma) ran
  // 30 % faster at 256 bits (fifteenth session). LLVM's cost model does not tell them apart.
  t.f16_convert_bits = t.cpu == "znver4" ? std::min(t.vector_bits, 256) : t.vector_bits;
  t.ldexp_lanes = ldexp_lanes(*t.machine);
  // glibc's libmvec names are x86-64 only in LLVM 19's tables; elsewhere math stays scalar.
  llvm::Triple triple(t.triple);
  if (triple.getArch() == llvm::Triple::x86_64 && triple.isOSLinux() &&
      !llvm::sys::DynamicLibrary::LoadLibraryPermanently("libmvec.so.1")) {
    t.vector_library = llvm::TargetLibraryInfoImpl::LIBMVEC_X86;
    // The x86 vector function ABI's ISA letters: b takes 128-bit registers (4 floats, SSE), d
    // AVX2's 256-bit ones (8), e AVX-512's 512-bit ones (16).
    const llvm::MCSubtargetInfo& st = *t.machine->getMCSubtargetInfo();
    struct Isa {
      char letter;
      int lanes;
      bool usable;
    };
    const Isa isas[] = {{'b', 4, true},
                        {'d', 8, t.vector_bits >= 256 && st.checkFeatures("+avx2")},
                        {'e', 16, t.vector_bits >= 512 && st.checkFeatures("+avx512f")}};
    // (exp and exp2 are computed inline: lower_scalar.cpp's exp_f32.)
    struct Function {
      const char* scalar; // what lower_scalar.cpp calls
      const char* name;   // libmvec's, in the mangled vector names
      bool only_wide;     // LLVM's table already has the narrower ones
    };
    const Function functions[] = {{"llvm.log.f32", "logf", true}, {"tanhf", "tanhf", false},
                                  {"erff", "erff", false},        {"log2f", "log2f", false},
                                  {"log1pf", "log1pf", false},    {"sinf", "sinf", false},
                                  {"cosf", "cosf", false}};
    for (const Function& f : functions)
      for (const Isa& isa : isas) {
        if (!isa.usable || (f.only_wide && isa.letter != 'e'))
          continue;
        std::string name = fmt::format("_ZGV{}N{}v_{}", isa.letter, isa.lanes, f.name);
        if (llvm::sys::DynamicLibrary::SearchForAddressOfSymbol(name.c_str()))
          t.vector_variants.push_back({f.scalar, isa.lanes, name});
      }
  }
  return t;
}

bool CpuTarget::has_vector_variant(const std::string& fn) const {
  return std::any_of(vector_variants.begin(), vector_variants.end(),
                     [&](const VectorVariant& v) { return v.scalar == fn; });
}

const CpuTarget& host_target() {
  static CpuTarget t = make_cpu_target("");
  return t;
}

std::optional<std::string> emit_file(llvm::Module& m, llvm::TargetMachine& machine,
                                     llvm::CodeGenFileType type) {
  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (machine.addPassesToEmitFile(pm, os, nullptr, type))
    return std::nullopt;
  pm.run(m);
  return std::string(buffer.str());
}

} // namespace tritium::cpu
