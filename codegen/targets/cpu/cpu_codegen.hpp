// The CPU code generator as the host runtime sees it: IR in, a callable kernel out. No LLVM
// types appear here, so runtime/host stays independent of LLVM's headers.
#pragma once

#include <tritium/ir/ir.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace tritium::cpu {

// Shared by every program of one launch; compiled code reports failures (device_assert, a zero
// loop step) here instead of unwinding through JIT frames.
struct LaunchState {
  std::atomic<bool> failed{false};
  std::mutex mutex;
  std::string message;
};

// void kernel(const uint64_t* args, const int64_t* range /*first, end, gx, gy, gz, streaming*/,
//             char* scratch /*64-byte aligned, scratch_bytes*/, LaunchState*)
// runs the programs with linear indices first .. end - 1 (x fastest, then y, then z) in order;
// it stops early after a program that failed (LaunchState). Launchers split the grid into
// such ranges, one thread each.
using KernelEntry = void (*)(const uint64_t*, const int64_t*, char*, LaunchState*);
inline constexpr int kRangeFirst = 0, kRangeEnd = 1, kRangeGridX = 2, kRangeStreaming = 5;
inline constexpr int kRangeSlots = 6;
// Inside the kernel, one program sees pid_grid: px, py, pz, gx, gy, gz, streaming.
inline constexpr int kPidGridSlots = 7;

// range[5] (pid_grid[6]): from how many bytes a launch writes through one store site the kernel
// writes them with non-temporal (streaming) stores, past the caches (lower_streaming_store.cpp).
// Three quarters of the last-level cache, as glibc's memcpy decides; TRITIUM_CPU_STREAMING_STORES
// overrides it with a byte count ("0": always) or "off". Read at every launch. Launchers must
// also order a thread's streaming stores before its programs count as done (a full fence).
int64_t streaming_store_bytes();

struct CpuCode {
  KernelEntry entry = nullptr;
  int64_t scratch_bytes = 0;
  std::map<std::string, std::string, std::less<>> artifacts; // "ll", "ll.opt" when dumping
  std::shared_ptr<void> keep_alive; // releases the JIT'd code when the last user goes
};

// The whole pipeline: lower -> optimize (O3) -> object -> JIT. Thread-safe. fp_fusion:
// CompileOptions::enable_fp_fusion (a float multiply feeding an add may become one fma).
CpuCode compile_kernel(const ir::Function& f, bool fp_fusion = true);

// The same in two halves, for the runtime's disk cache: the kernel compiled to a relocatable
// object for this host (everything but "jit"), then linked into the process. An object depends
// on the IR, fp_fusion, tritium's own code and code_identity(); nothing else.
struct CpuKernelObject {
  std::string object; // ELF bytes
  std::string symbol; // the KernelEntry's name in it
  int64_t scratch_bytes = 0;
  std::map<std::string, std::string, std::less<>> artifacts; // when dumping
};
CpuKernelObject compile_kernel_object(const ir::Function& f, bool fp_fusion = true);
CpuCode load_kernel_object(CpuKernelObject object);
// LLVM's version, the host's triple, CPU and features: what else shapes an object.
std::string code_identity();

// Ahead of time: kernels compiled into one relocatable object (PIC) for this host's
// architecture, tuned for `cpu` (an LLVM CPU name such as "x86-64-v3"; "" is this machine's),
// each entry point a KernelEntry under its symbol. The object calls the C library and the hooks
// of runtime_abi.hpp only. Used by the AOT generator (runtime/aot).
struct ObjectKernel {
  const ir::Function* function;
  std::string symbol;
  bool fp_fusion = true; // CompileOptions::enable_fp_fusion
};
struct CpuObject {
  std::string object;                 // the ELF object's bytes
  std::vector<int64_t> scratch_bytes; // per kernel, in order
  std::string cpu;                    // the CPU it was compiled for
};
CpuObject compile_kernels_to_object(std::span<const ObjectKernel> kernels,
                                    const std::string& cpu = "");

// The host's target, for Backend::target() ("x86_64", "aarch64", …).
std::string host_arch();

} // namespace tritium::cpu
