// The contract between compiled CPU kernels and the host: the names of the host functions the
// kernels call (runtime_support.cpp defines them) and the kernel's own signature. Kept free of
// LLVM so that the AOT runtime, which links CPU kernels compiled at build time, shares it.
#pragma once

namespace tritium::cpu {

inline constexpr const char* kFailFn = "tritium_cpu_fail";
inline constexpr const char* kPrintBeginFn = "tritium_cpu_print_begin";
inline constexpr const char* kPrintIntFn = "tritium_cpu_print_int";
inline constexpr const char* kPrintFloatFn = "tritium_cpu_print_float";
inline constexpr const char* kPrintTensorFn = "tritium_cpu_print_next_tensor";
inline constexpr const char* kPrintEndFn = "tritium_cpu_print_end";

} // namespace tritium::cpu
