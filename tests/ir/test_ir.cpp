// The IR on its own: building, printing, parsing (round trip) and verifying.
#include <doctest/doctest.h>

#include <tritium/error.hpp>
#include <tritium/ir/builder.hpp>
#include <tritium/ir/printer.hpp>

#include <string>
#include <vector>

using namespace tritium;
using namespace tritium::ir;

namespace {

// A small kernel exercising regions, attributes of every kind and multi-result ops.
std::unique_ptr<Function> sample() {
  auto f = std::make_unique<Function>();
  f->name = "sample";
  Builder b(*f, f->entry());
  Value* p = b.add_block_arg(f->entry(), Type(DType::pointer_to(ScalarKind::F32)));
  Value* n = b.add_block_arg(f->entry(), Type(ScalarKind::I32));
  f->arg_info = {ArgInfo{"p", 16, false, 0}, ArgInfo{"n", 1, true, 1}};
  Value* pid = b.create1(OpKind::ProgramId, {}, Type(ScalarKind::I32), {{"axis", int64_t{0}}});
  Value* r = b.create1(OpKind::Arange, {}, Type(ScalarKind::I32, {128}),
                       {{"start", int64_t{0}}, {"end", int64_t{128}}});
  Value* sp = b.create1(OpKind::Splat, {p}, Type(DType::pointer_to(ScalarKind::F32), {128}));
  Value* ptrs = b.create1(OpKind::AddPtr, {sp, r}, sp->type);
  Value* ns = b.create1(OpKind::Splat, {n}, Type(ScalarKind::I32, {128}));
  Value* mask = b.create1(OpKind::Cmp, {r, ns}, Type(ScalarKind::I1, {128}),
                          {{"pred", tritium::ir::CmpPred::Lt}});
  Value* other = b.constant_float(-0.5, Type(ScalarKind::F32, {128}));
  Value* x = b.create1(OpKind::Load, {ptrs, mask, other}, Type(ScalarKind::F32, {128}),
                       {{"cache", CacheModifier::Cg}});
  Value* zero = b.constant_int(0, Type(ScalarKind::I32));
  Value* four = b.constant_int(4, Type(ScalarKind::I32));
  Value* one = b.constant_int(1, Type(ScalarKind::I32));
  Op& loop = b.create(OpKind::For, {zero, four, one, x}, {x->type}, {}, 1);
  Block& body = loop.body();
  b.add_block_arg(body, Type(ScalarKind::I32));
  Value* acc = b.add_block_arg(body, x->type);
  b.set_block(body);
  Value* twice = b.create1(OpKind::Add, {acc, acc}, acc->type);
  b.create(OpKind::Yield, {twice}, {});
  b.set_block(f->entry());
  Op& red =
      b.create(OpKind::Reduce, {loop.result()}, {Type(ScalarKind::F32)}, {{"axis", int64_t{0}}}, 1);
  Value* a0 = b.add_block_arg(red.body(), Type(ScalarKind::F32));
  Value* a1 = b.add_block_arg(red.body(), Type(ScalarKind::F32));
  b.set_block(red.body());
  b.create(OpKind::Yield, {b.create1(OpKind::Max, {a0, a1}, a0->type)}, {});
  b.set_block(f->entry());
  Value* t = b.create1(
      OpKind::Trans, {b.create1(OpKind::Reshape, {loop.result()}, Type(ScalarKind::F32, {8, 16}))},
      Type(ScalarKind::F32, {16, 8}), {{"order", std::vector<int64_t>{1, 0}}});
  (void)t;
  (void)pid;
  b.create(OpKind::Store, {ptrs, loop.result(), mask}, {});
  b.create(OpKind::Print, {red.result()}, {}, {{"prefix", std::string("max \"q\"\n")}});
  b.create(OpKind::Return, {}, {});
  return f;
}

} // namespace

TEST_CASE("a built function verifies, prints, and round-trips through the parser") {
  auto f = sample();
  CHECK_NOTHROW(verify(*f));
  std::string text = print(*f);
  CHECK(text.find("func @sample(%0: ptr<f32> {div = 16, name = \"p\"}") == 0);
  CHECK(text.find("for(") != std::string::npos);
  CHECK(text.find("tensor<8x16xf32>") != std::string::npos);
  CHECK(text.find("{value = -0.5}") != std::string::npos);
  auto g = parse(text);
  CHECK_NOTHROW(verify(*g));
  CHECK(print(*g) == text);
  CHECK(g->arg_info[1].is_constant);
  CHECK(g->arg_info[1].constant == 1);
}

// What TRITIUM_DUMP writes: each op's source location, read back by the parser so that a dump
// compiled again (`tritium compile`) reports the kernel's C++ line; without it an op is located
// at the text's own file and line.
TEST_CASE("source locations print after an op's types and parse back") {
  auto f = sample();
  int line = 10;
  walk(f->entry(), [&](Op& op) { op.loc = SourceLoc{"kernel \"a\".cpp", uint32_t(line++)}; });
  std::string text = print_with_locations(*f);
  CHECK(text.find(
            "arange() {end = 128, start = 0} : tensor<128xi32> loc(\"kernel \\\"a\\\".cpp\":11)") !=
        std::string::npos);
  auto g = parse(text);
  CHECK(print_with_locations(*g) == text);
  CHECK(print(*g) == print(*f));
  std::vector<SourceLoc> locs;
  walk(g->entry(), [&](Op& op) { locs.push_back(op.loc); });
  REQUIRE(locs.size() == size_t(line - 10));
  CHECK(locs[3].file == "kernel \"a\".cpp");
  CHECK(locs[3].line == 13);
  // Plain text: the op's own line in the named file.
  auto h = parse(print(*f), {}, "sample.tir");
  CHECK(h->entry().ops[1]->loc.str() == "sample.tir:3");
  CHECK_THROWS_WITH_AS(parse("func @k() {\n  return() loc(\"x.cpp\":)\n}\n"),
                       doctest::Contains("expected a line number in loc(...)"), Error);
}

TEST_CASE("float attributes keep their kind and exact value through a round trip") {
  auto f = std::make_unique<Function>();
  f->name = "consts";
  Builder b(*f, f->entry());
  for (double v : {1.0, 0.1, -3.25e-30, 1e300})
    b.constant_float(v, Type(ScalarKind::F64));
  b.constant_int(-7, Type(ScalarKind::I64));
  b.create(OpKind::Return, {}, {});
  std::string text = print(*f);
  CHECK(text.find("{value = 1.0}") != std::string::npos);
  CHECK(text.find("{value = -7}") != std::string::npos);
  auto g = parse(text);
  CHECK(print(*g) == text);
  const Op& third = *g->entry().ops[2];
  CHECK(third.float_attr("value") == -3.25e-30);
}

TEST_CASE("the parser names the line and column of a mistake") {
  std::string bad = "func @k(%0: i32) {\n  %1 = add(%0, %9) : i32\n  return()\n}\n";
  try {
    parse(bad);
    FAIL("parse accepted an undefined value");
  } catch (const Error& e) {
    std::string msg = e.what();
    CHECK(msg.find("2:") != std::string::npos);
    CHECK(msg.find("%9") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(parse("func @k() {\n  %1 = frobnicate() : i32\n  return()\n}\n"),
                       doctest::Contains("unknown op 'frobnicate'"), Error);
  CHECK_THROWS_WITH_AS(parse("func @k(%0: f33) {\n  return()\n}\n"),
                       doctest::Contains("unknown element type 'f33'"), Error);
}

TEST_CASE("the verifier rejects ill-typed ops and names them") {
  auto check_bad = [](const std::string& text, const std::string& expect) {
    auto f = parse(text);
    CHECK_THROWS_WITH_AS(verify(*f), doctest::Contains(expect.c_str()), Error);
  };
  check_bad("func @k(%0: i32, %1: f32) {\n  %2 = add(%0, %1) : i32\n  return()\n}\n",
            "operand types differ");
  check_bad("func @k() {\n  %0 = arange() {end = 12, start = 0} : tensor<12xi32>\n  return()\n}\n",
            "power of two");
  check_bad("func @k(%0: tensor<4xf32>) {\n  %1 = broadcast(%0) : tensor<8xf32>\n  return()\n}\n",
            "cannot broadcast");
  check_bad("func @k(%0: tensor<16x32xf16>, %1: tensor<16x32xf16>, %2: tensor<16x32xf32>) {\n"
            "  %3 = dot(%0, %1, %2) : tensor<16x32xf32>\n  return()\n}\n",
            "inner dimensions differ");
  check_bad("func @k(%0: ptr<f32>, %1: f16) {\n  store(%0, %1)\n  return()\n}\n", "pointee type");
  check_bad("func @k(%0: i32) {\n  %1 = exp(%0) : i32\n  return()\n}\n", "floating-point");
  check_bad("func @k(%0: i32) {\n  return()\n  %1 = neg(%0) : i32\n}\n", "terminator");
}

TEST_CASE("op names and categories come from one table") {
  OpKind k;
  REQUIRE(op_kind_from_name("atomic_cas", k));
  CHECK(k == OpKind::AtomicCas);
  CHECK(op_name(OpKind::ExpandDims) == "expand_dims");
  CHECK(op_category(OpKind::Exp2) == OpCategory::Math);
  CHECK_FALSE(op_kind_from_name("nope", k));
}

TEST_CASE("element types print and parse") {
  DType d;
  for (const char* s : {"i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16",
                        "f32", "f64", "ptr<bf16>"}) {
    REQUIRE(parse_dtype(s, d));
    CHECK(to_string(d) == s);
  }
  CHECK_FALSE(parse_dtype("ptr<ptr<f32>>", d));
  CHECK(DType(ScalarKind::U32).is_unsigned());
  CHECK(DType(ScalarKind::BF16).bits() == 16);
}
