// libFuzzer entry point: random DSL programs through the tracer (see fuzz_targets.hpp).
#include "../fuzz_targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tritium::fuzz::tracer(data, size);
  return 0;
}
