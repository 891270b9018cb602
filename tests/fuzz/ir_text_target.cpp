#include "fuzz_targets.hpp"

#include <tritium/error.hpp>
#include <tritium/ir/printer.hpp>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

namespace tritium::fuzz {

void fuzz_failure(std::string_view what, std::string_view detail) {
  std::fprintf(stderr, "fuzz failure: %.*s\n%.*s\n", static_cast<int>(what.size()), what.data(),
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

void ir_text(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<ir::Function> f;
  try {
    f = ir::parse(text);
    ir::verify(*f);
  } catch (const Error&) {
    return; // malformed or ill-typed: rejected with a message, as it should be
  }
  std::string printed = ir::print(*f);
  std::unique_ptr<ir::Function> again;
  try {
    again = ir::parse(printed);
    ir::verify(*again);
  } catch (const Error& e) {
    fuzz_failure(std::string("a verified function's text does not parse back: ") + e.what(),
                 printed);
  }
  if (std::string reprinted = ir::print(*again); reprinted != printed)
    fuzz_failure("print(parse(print(f))) != print(f)", printed + "\n---\n" + reprinted);
}

} // namespace tritium::fuzz
