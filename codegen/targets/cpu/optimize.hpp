// Stage "optimize": LLVM's O3 pipeline with the host's cost model (so that the loop and SLP
// vectorizers pick the host's vector width).
#pragma once

#include <llvm/IR/Module.h>

namespace tritium::cpu {
struct CpuTarget;
void optimize_module(llvm::Module& m, const CpuTarget& target);

// The alias-scope domain that marks the stores lower_streaming_store.cpp emits at aligned
// addresses (a scope nothing is declared not to alias: it changes no alias query). After the
// vectorizers, those vector stores whose alignment LLVM can prove become non-temporal
// (nontemporal_stores.cpp).
inline constexpr const char* kStreamingDomain = "tritium.streaming";
void make_streaming_stores_nontemporal(llvm::Module& m);
} // namespace tritium::cpu
