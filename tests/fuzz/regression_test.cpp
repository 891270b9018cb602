// Replays every kept fuzz input through its target in the ordinary build: the corpus that
// libFuzzer grew (tests/fuzz/corpus/<target>) and every input that once found a bug
// (tests/fuzz/crashes/<target>, named after what it found). A regression aborts the program
// or fails the case naming the file.
#include "fuzz_targets.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

namespace {

namespace fs = std::filesystem;

const fs::path kRoot = TRITIUM_FUZZ_DIR;

// Runs every file under corpus/<target> and crashes/<target>; returns how many.
int replay(const char* target, void (*run)(const uint8_t*, size_t)) {
  int count = 0;
  for (const char* kind : {"corpus", "crashes"}) {
    fs::path dir = kRoot / kind / target;
    if (!fs::exists(dir))
      continue;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (!e.is_regular_file())
        continue;
      std::ifstream f(e.path(), std::ios::binary);
      std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)),
                                 std::istreambuf_iterator<char>());
      INFO("input: " << e.path().string());
      CHECK_NOTHROW(run(bytes.data(), bytes.size()));
      ++count;
    }
  }
  return count;
}

} // namespace

TEST_CASE("fuzz corpus: IR text through the parser and verifier") {
  int n = replay("ir_text", tritium::fuzz::ir_text);
  MESSAGE(n << " inputs replayed");
  CHECK(n > 0);
}

TEST_CASE("fuzz corpus: DSL programs through the tracer") {
  int n = replay("tracer", tritium::fuzz::tracer);
  MESSAGE(n << " inputs replayed");
  CHECK(n > 0);
}
