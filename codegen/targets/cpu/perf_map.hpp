// Names for JIT'd kernels in Linux perf. perf resolves samples in anonymous executable memory
// through /tmp/perf-<pid>.map ("start size name" per line, hexadecimal), which a JIT writes:
// with TRITIUM_PERF_MAP=1 every function the CPU backend links is listed there, so that
// `perf record` / `perf report` name tritium_<kernel>_<n> instead of bare addresses.
#pragma once

namespace llvm::orc {
class LLJIT;
}

namespace tritium::cpu {

// Registers the writer with the JIT's object linking layer when TRITIUM_PERF_MAP is set to
// anything but "" or "0" (read once, when the JIT is created).
void add_perf_map(llvm::orc::LLJIT& jit);

} // namespace tritium::cpu
