// Host functions that compiled kernels call: failure reports and device printing. The JIT
// gets them by address (jit_load.cpp); kernels compiled ahead of time (the AOT runtime links
// this file too) by their C names.
#include "runtime_support.hpp"

#include "cpu_codegen.hpp"
#include "runtime_abi.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <string>
#include <thread>

namespace tritium::cpu {
namespace {

thread_local std::string print_line;
thread_local bool print_open = false;

void close_tensor() {
  if (print_open)
    print_line += "]";
  print_open = false;
}

void separator() {
  if (print_line.back() != '[')
    print_line += ", ";
}

} // namespace

extern "C" void tritium_cpu_fail(LaunchState* state, const char* prefix, const char* what,
                                 int64_t lane, const int64_t* pid) {
  std::lock_guard<std::mutex> lock(state->mutex);
  if (state->failed.load())
    return; // the first failure wins, as the interpreter stops at it
  state->message =
      lane >= 0 ? fmt::format("{}, program ({}, {}, {}), {} (lane {})", prefix, pid[0], pid[1],
                              pid[2], what, lane)
                : fmt::format("{}, program ({}, {}, {}), {}", prefix, pid[0], pid[1], pid[2], what);
  state->failed.store(true);
}

extern "C" void tritium_cpu_print_begin(const char* prefix, const int64_t* pid) {
  print_line = fmt::format("pid ({}, {}, {}) {}", pid[0], pid[1], pid[2], prefix);
  print_open = false;
}
extern "C" void tritium_cpu_print_next_tensor() {
  close_tensor();
  print_line += " [";
  print_open = true;
}
extern "C" void tritium_cpu_print_int(int64_t v) {
  separator();
  print_line += fmt::format("{}", v);
}
extern "C" void tritium_cpu_print_float(double v) {
  separator();
  print_line += fmt::format("{}", v);
}
extern "C" void tritium_cpu_print_end() {
  close_tensor();
  print_line += "\n";
  std::fputs(print_line.c_str(), stdout); // one call per line: lines of programs never mix
}

// The largest cache level's size as Linux's sysfs reports it for CPU 0 (a VM's glibc
// sysconf(_SC_LEVEL3_CACHE_SIZE) said 320 MiB where sysfs and lscpu said 32), else sysconf's,
// else 32 MiB.
static int64_t last_level_cache_bytes() {
  int64_t best = 0;
  int best_level = 0;
  for (int i = 0; i < 8; ++i) {
    std::string dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", i);
    std::ifstream level_file(dir + "level"), size_file(dir + "size");
    int level = 0;
    std::string size;
    if (!(level_file >> level) || !(size_file >> size) || size.empty())
      continue;
    int64_t bytes = std::strtoll(size.c_str(), nullptr, 10);
    switch (size.back()) {
    case 'K':
      bytes <<= 10;
      break;
    case 'M':
      bytes <<= 20;
      break;
    case 'G':
      bytes <<= 30;
      break;
    default:
      break;
    }
    if (level > best_level && bytes > 0) {
      best_level = level;
      best = bytes;
    }
  }
#ifdef _SC_LEVEL3_CACHE_SIZE
  if (best <= 0)
    best = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
  return best > 0 ? best : int64_t{32} << 20;
}

// Three quarters of the last-level cache the launch's threads can count on: all of it, but at
// most 4 MiB a thread, about one core's share of a server's L3 (Zen 4 and Emerald Rapids 4-5
// MiB, Sapphire Rapids 1.9). A VM is told its host's whole cache: an Emerald Rapids guest with
// 2 vCPUs read 300 MiB, where an output left in cache (2-67 MB) was read back no faster than
// from DRAM and RMSNorm wrote 0.65-0.72 x the plain loop's bytes, 0.91-0.97 x when streaming
// (bench/RESULTS.md, eighteenth session). On a 2-vCPU Zen 4 (32 MiB) outputs up to 8 MB were
// read back 10-20 % faster from cache (fifteenth session): the cap keeps them there up to 6 MB.
int64_t streaming_store_bytes() {
  static const int64_t by_cache =
      std::min<int64_t>(last_level_cache_bytes(),
                        int64_t{4 << 20} * std::max(1u, std::thread::hardware_concurrency())) /
      4 * 3;
  const char* v = std::getenv("TRITIUM_CPU_STREAMING_STORES");
  if (!v || !*v)
    return by_cache;
  if (std::string_view(v) == "off")
    return std::numeric_limits<int64_t>::max();
  char* end = nullptr;
  long long n = std::strtoll(v, &end, 10);
  return *end || n < 0 ? by_cache : n;
}

std::vector<std::pair<const char*, void*>> runtime_symbols() {
  return {
      {kFailFn, reinterpret_cast<void*>(&tritium_cpu_fail)},
      {kPrintBeginFn, reinterpret_cast<void*>(&tritium_cpu_print_begin)},
      {kPrintTensorFn, reinterpret_cast<void*>(&tritium_cpu_print_next_tensor)},
      {kPrintIntFn, reinterpret_cast<void*>(&tritium_cpu_print_int)},
      {kPrintFloatFn, reinterpret_cast<void*>(&tritium_cpu_print_float)},
      {kPrintEndFn, reinterpret_cast<void*>(&tritium_cpu_print_end)},
  };
}

} // namespace tritium::cpu
