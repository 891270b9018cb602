// Host functions that compiled kernels call: failure reports and device printing. The JIT
// gets them by address (jit_load.cpp); kernels compiled ahead of time (the AOT runtime links
// this file too) by their C names.
#include "runtime_support.hpp"

#include "cpu_codegen.hpp"
#include "runtime_abi.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <string>

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
