// Stage "jit": links a kernel's object code into the process through ORC's LLJIT (one per
// process, shared by every kernel) and returns the kernel's address.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace tritium::cpu {

struct JitResult {
  void* address = nullptr;
  std::shared_ptr<void> keep_alive; // removing it frees the kernel's code
};

// `object`: an ELF relocatable object for this host, compiled now or read from the disk cache.
JitResult jit_load(std::string_view object, const std::string& symbol);

} // namespace tritium::cpu
