// IR text given to ir::parse (the tritium tool's FILE.tir, tests, tools): mistakes are errors
// naming the line and column; the libFuzzer target (tests/fuzz) searches for the rest.
#include "common.hpp"

#include <tritium/ir/printer.hpp>

namespace bad_inputs {
namespace {

std::string nested(int depth) {
  std::string s = "func @deep(%0: i32) {\n%c = constant() {value = 1} : i1\n";
  for (int i = 0; i < depth; ++i)
    s += "%r" + std::to_string(i) + " = if(%c) : i32 {\n^():\n";
  return s;
}

TEST_CASE("bad input: IR text nested deeper than the parser allows") {
  // Before the limit, a few thousand levels overflowed the stack of the recursive parser.
  CHECK_ERROR(tritium::ir::parse(nested(100000)), "IR parse error at",
              "regions nested more than 64 deep");
  CHECK_ERROR(tritium::ir::parse(nested(10)), "IR parse error at"); // ends early: a plain error
}

TEST_CASE("bad input: IR text with an argument attribute of the wrong kind") {
  // Was std::bad_variant_access, not a tritium::Error.
  CHECK_ERROR(tritium::ir::parse("func @f(%0: i32 {div = \"sixteen\"}) {\n  return()\n}\n"),
              "IR parse error at 1:", "argument %0: attribute 'div' has the wrong kind of value");
  CHECK_ERROR(tritium::ir::parse("func @f(%0: i32 {name = 3}) {\n  return()\n}\n"),
              "attribute 'name' has the wrong kind of value");
}

// Found by fuzz_ir_text (tests/fuzz/crashes/ir_text/for-without-region-out-of-range): the
// verifier looked into a `for` without its body and threw std::out_of_range.
TEST_CASE("bad input: IR text with a control op missing its regions") {
  const char* text = "func @f(%0: i32) {\n"
                     "  %1 = constant() {value = 0} : i32\n"
                     "  %2 = constant() {value = 1} : i32\n"
                     "  %3 = for(%1, %0, %2, %1) : i32\n"
                     "  return()\n"
                     "}\n";
  auto f = tritium::ir::parse(text);
  CHECK_ERROR(tritium::ir::verify(*f), "for", "needs one body region");
}

TEST_CASE("bad input: IR text that is not IR") {
  for (const char* text :
       {"", "func", "func @f(", "\x01\x02\xff", "func @f() { %1 = add(%0, %0) : i32 }"})
    CHECK_ERROR(tritium::ir::parse(text), "IR parse error at");
}

} // namespace
} // namespace bad_inputs
