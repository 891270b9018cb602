// The fuzz targets: each takes one input, and returns normally when tritium handled it (a
// tritium::Error for bad input is handling it). Anything else — another exception, a crash,
// a broken invariant (reported through fuzz_failure, which aborts) — is a bug.
//
// libFuzzer drives them from tests/fuzz/libfuzzer/ (build with TRITIUM_BUILD_FUZZERS, see
// tools/sanitize.sh); test_fuzz replays the kept corpus and every input that once failed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tritium::fuzz {

// IR text through the parser, the verifier, and the printer (a verified function prints to
// text that parses back to the same text).
void ir_text(const uint8_t* data, size_t size);

// The bytes choose a sequence of DSL calls in a kernel that is then traced: tracing either
// throws tritium::Error naming the kernel, or gives IR that verifies and round-trips through
// text; either way the next trace on the thread works.
void tracer(const uint8_t* data, size_t size);

// A broken invariant: prints what and the input's text form, then aborts.
[[noreturn]] void fuzz_failure(std::string_view what, std::string_view detail);

} // namespace tritium::fuzz
