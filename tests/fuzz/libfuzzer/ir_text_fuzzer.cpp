// libFuzzer entry point: IR text through the parser and the verifier (see fuzz_targets.hpp).
#include "../fuzz_targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tritium::fuzz::ir_text(data, size);
  return 0;
}
