// While a DumpStages lives, kernels compiled for the CPU keep their stages ("ll", "ll.opt"):
// TRITIUM_DUMP names a scratch folder, removed with it. Kernels compiled before (the compile
// cache is per process) kept none, so tests that read stages give their kernels fresh names.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>

namespace tritium::testing {

struct DumpStages {
  std::filesystem::path dir;
  explicit DumpStages(const std::string& tag)
      : dir(std::filesystem::temp_directory_path() / (tag + std::to_string(getpid()))) {
    ::setenv("TRITIUM_DUMP", dir.c_str(), 1);
  }
  DumpStages(const DumpStages&) = delete;
  DumpStages& operator=(const DumpStages&) = delete;
  ~DumpStages() {
    ::unsetenv("TRITIUM_DUMP");
    std::filesystem::remove_all(dir);
  }
};

} // namespace tritium::testing
