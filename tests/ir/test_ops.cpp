// The op specification (ops.def) as the rest of the compiler sees it: names, categories,
// per-category enums, operand classes, traits, and the verifier's and tracer's checks that
// come from it; the closed attribute sets as enums.
#include <doctest/doctest.h>

#include <tritium/error.hpp>
#include <tritium/ir/builder.hpp>
#include <tritium/ir/printer.hpp>

#include <set>
#include <string>

using namespace tritium;
using namespace tritium::ir;

namespace {

std::vector<OpKind> all_kinds() {
  std::vector<OpKind> out;
  for (size_t i = 0; i < kNumOpKinds; ++i)
    out.push_back(static_cast<OpKind>(i));
  return out;
}

void check_bad(const std::string& text, const std::string& expect) {
  auto f = parse(text);
  CHECK_THROWS_WITH_AS(verify(*f), doctest::Contains(expect.c_str()), Error);
}

} // namespace

TEST_CASE("every op kind has one unique name that reads back, and a consistent spec") {
  std::set<std::string_view> names;
  for (OpKind k : all_kinds()) {
    const OpSpec& s = op_spec(k);
    CAPTURE(s.name);
    CHECK(names.insert(s.name).second);
    OpKind back;
    REQUIRE(op_kind_from_name(s.name, back));
    CHECK(back == k);
    CHECK(s.min_operands <= s.max_operands);
    CHECK(s.num_classes <= std::size(s.classes));
    // An op with operands says what they are; a fixed arity never has more classes.
    if (s.max_operands > 0)
      CHECK(s.num_classes >= 1);
    if (s.max_operands != kManyOperands)
      CHECK(s.num_classes <= s.max_operands);
    // Traits that contradict each other.
    if (has_trait(k, OpTrait::Pure)) {
      CHECK_FALSE(has_trait(k, OpTrait::WritesMemory));
      CHECK_FALSE(has_trait(k, OpTrait::Effects));
    }
    CHECK(has_trait(k, OpTrait::Terminator) == (op_category(k) == OpCategory::Terminator));
    CHECK(has_trait(k, OpTrait::GpuOnly) == (op_category(k) == OpCategory::Shared));
  }
  CHECK(names.size() == kNumOpKinds);
}

TEST_CASE("per-category enums name the same ops as OpKind") {
  CHECK(as<MathOp>(OpKind::Exp) == MathOp::Exp);
  CHECK(kind_of(BinaryOp::Umulhi) == OpKind::Umulhi);
  CHECK(as<ShapeOp>(OpKind::ConvertLayout) == ShapeOp::ConvertLayout);
  CHECK(as<TerminatorOp>(OpKind::Return) == TerminatorOp::Return);
  CHECK_THROWS_WITH_AS(as<BinaryOp>(OpKind::Exp), doctest::Contains("is a math op, not a binary"),
                       Error);
  int math = 0;
  for (OpKind k : all_kinds())
    math += op_category(k) == OpCategory::Math;
  CHECK(math >= 9); // exp exp2 log log2 sin cos tanh erf pow, and any added since
}

TEST_CASE("elementwise is derived from the traits: lanewise and pure") {
  std::set<OpKind> elementwise;
  for (OpKind k : all_kinds())
    if (is_elementwise(k))
      elementwise.insert(k);
  // Every op of the arithmetic categories, hints and pointer arithmetic; no memory access, no
  // shape op, no control flow.
  for (OpKind k : all_kinds()) {
    CAPTURE(op_name(k));
    switch (op_category(k)) {
    case OpCategory::Binary:
    case OpCategory::Compare:
    case OpCategory::Unary:
    case OpCategory::Math:
    case OpCategory::Extern:
    case OpCategory::Ternary:
    case OpCategory::Select:
    case OpCategory::Convert:
      CHECK(elementwise.count(k));
      break;
    case OpCategory::Hint: // desc_hint describes a load; it computes nothing
      CHECK(elementwise.count(k) == (k == OpKind::Hint));
      break;
    default:
      CHECK(elementwise.count(k) == (k == OpKind::AddPtr));
    }
  }
  CHECK(has_trait(OpKind::Load, OpTrait::Lanewise));
  CHECK_FALSE(is_elementwise(OpKind::Load));
  CHECK(has_trait(OpKind::Store, OpTrait::WritesMemory));
}

TEST_CASE("operand classes come from the table") {
  CHECK(operand_class(OpKind::Shl, 0) == OperandClass::Int);
  CHECK(operand_class(OpKind::Shl, 1) == OperandClass::Int); // the last class repeats
  CHECK(operand_class(OpKind::Exp, 0) == OperandClass::Float);
  CHECK(operand_class(OpKind::Select, 0) == OperandClass::Bool);
  CHECK(operand_class(OpKind::Select, 2) == OperandClass::Any);
  CHECK(operand_class(OpKind::For, 2) == OperandClass::Int);
  CHECK(operand_class(OpKind::For, 7) == OperandClass::Any);
  CHECK(admits(OperandClass::Numeric, DType(ScalarKind::F16)));
  CHECK_FALSE(admits(OperandClass::Numeric, DType::pointer_to(ScalarKind::F16)));
  CHECK(admits(OperandClass::Int, DType(ScalarKind::I1)));
  CHECK_FALSE(admits(OperandClass::Bool, DType(ScalarKind::I8)));
}

TEST_CASE("the verifier checks arity, operand classes and types from the table") {
  check_bad("func @k(%0: f32, %1: f32) {\n  %2 = shl(%0, %1) : f32\n  return()\n}\n",
            "operand 0 must be integer, got f32");
  check_bad("func @k(%0: i32) {\n  %1 = neg(%0, %0) : i32\n  return()\n}\n",
            "expects 1 operands, got 2");
  check_bad("func @k(%0: ptr<f32>) {\n  %1 = load() : f32\n  return()\n}\n",
            "expects 1 to 3 operands, got 0");
  check_bad("func @k(%0: ptr<f32>, %1: ptr<f32>) {\n  %2 = add(%0, %1) : ptr<f32>\n  return()\n}\n",
            "must be numeric");
  check_bad("func @k(%0: f32, %1: f32) {\n  %2, %3 = pow(%0, %1) : f32, f32\n  return()\n}\n",
            "expects 1 results, got 2");
  check_bad("func @k(%0: i32, %1: f32) {\n  %2 = load(%0) : f32\n  return()\n}\n",
            "operand 0 must be pointer");
  check_bad("func @k(%0: i32, %1: i32) {\n  %2 = select(%0, %1, %1) : i32\n  return()\n}\n",
            "operand 0 must be i1");
  check_bad("func @k(%0: i32, %1: i32) {\n  %2 = cmp(%0, %1) : i1\n  return()\n}\n",
            "no attribute 'pred'");
}

TEST_CASE("closed attribute sets are enums: printed bare, parsed back by key") {
  CHECK(enum_name(CmpPred::Le) == "le");
  CHECK(enum_name(MemSem::AcqRel) == "acq_rel");
  CHECK(enum_name(EvictionPolicy::First) == "evict_first");
  CmpPred p;
  CHECK(parse_enum("ge", p));
  CHECK(p == CmpPred::Ge);
  CHECK_FALSE(parse_enum("gte", p));
  CHECK(enum_names<MemScope>() == "gpu, cta, sys");

  std::string text = "func @k(%0: ptr<f32> {div = 16}, %1: tensor<16xf32>, %2: tensor<16xi1>) {\n"
                     "  %3 = splat(%0) : tensor<16xptr<f32>>\n"
                     "  %4 = load(%3, %2, %1) {cache = cg, evict = evict_last} : tensor<16xf32>\n"
                     "  %5 = cmp(%4, %1) {pred = le} : tensor<16xi1>\n"
                     "  %6 = atomic_rmw(%3, %4, %5) {op = xchg, scope = cta, sem = release} : "
                     "tensor<16xf32>\n"
                     "  return()\n"
                     "}\n";
  auto f = parse(text);
  verify(*f);
  const Op& load = *f->entry().ops[1];
  CHECK(load.enum_attr<CacheModifier>() == CacheModifier::Cg);
  CHECK(load.enum_attr<EvictionPolicy>() == EvictionPolicy::Last);
  CHECK(f->entry().ops[2]->enum_attr<CmpPred>() == CmpPred::Le);
  const Op& rmw = *f->entry().ops[3];
  CHECK(rmw.enum_attr<AtomicOp>() == AtomicOp::Xchg);
  CHECK(rmw.enum_attr<MemScope>() == MemScope::Cta);
  CHECK(rmw.enum_attr<MemSem>() == MemSem::Release);
  std::string printed = print(*f);
  CHECK(printed.find("{pred = le}") != std::string::npos);
  CHECK(printed.find("{op = xchg, scope = cta, sem = release}") != std::string::npos);
  CHECK(print(*parse(printed)) == printed);

  CHECK_THROWS_WITH_AS(
      parse("func @k(%0: i32) {\n  %1 = cmp(%0, %0) {pred = lte} : i1\n  return()\n}\n"),
      doctest::Contains("'lte' is no value of attribute 'pred' (one of: eq, ne, lt, le, gt, ge)"),
      Error);
  CHECK_THROWS_WITH_AS(
      parse("func @k(%0: i32) {\n  %1 = cmp(%0, %0) {colour = red} : i1\n  return()\n}\n"),
      doctest::Contains("attribute 'colour' takes no word like 'red'"), Error);
  // A string where an enum belongs is an error the verifier names.
  check_bad("func @k(%0: i32) {\n  %1 = cmp(%0, %0) {pred = \"lt\"} : i1\n  return()\n}\n",
            "the attribute 'pred' must be one of its names");
}

TEST_CASE("attributes are those attrs.def lists, of the kind it lists") {
  CHECK(*attr_kind(attr::axis) == AttrKind::Int);
  CHECK(*attr_kind(attr::order) == AttrKind::Ints);
  CHECK(*attr_kind("volatile") == AttrKind::Int);
  CHECK(attr_kind("colour") == nullptr);
  // A key the table does not list, a float where an integer belongs, an integer where a list
  // or a string belongs, an enum under another enum's key.
  check_bad("func @k(%0: i32) {\n  %1 = neg(%0) {colour = 1} : i32\n  return()\n}\n",
            "op 'neg': has the attribute 'colour', which tritium's IR does not know");
  check_bad("func @k() {\n  %0 = program_id() {axis = 0.5} : i32\n  return()\n}\n",
            "the attribute 'axis' must be an integer");
  check_bad("func @k(%0: tensor<4x8xf32>) {\n  %1 = trans(%0) {order = 1} : tensor<8x4xf32>\n"
            "  return()\n}\n",
            "the attribute 'order' must be a list of integers");
  check_bad("func @k(%0: f32) {\n  %1 = extern_unary(%0) {symbol = 3} : f32\n  return()\n}\n",
            "the attribute 'symbol' must be a string");
  // (The parser reads an enum's names by key; code can still put another set's value there.)
  auto f = parse("func @k(%0: i32) {\n  %1 = cmp(%0, %0) {pred = lt} : i1\n  return()\n}\n");
  f->entry().ops[0]->attrs[attr::pred] = MemSem::Acquire;
  CHECK_THROWS_WITH_AS(verify(*f),
                       doctest::Contains("the attribute 'pred' must be one of its names"), Error);
  // Loop options crossing from the tracer to the pipeliner are checked too.
  check_bad("func @k(%0: i32) {\n  %1 = constant() {value = 1} : i32\n"
            "  for(%0, %0, %1) {num_stages = \"two\"} {\n  ^(%2: i32):\n    yield()\n  }\n"
            "  return()\n}\n",
            "the attribute 'num_stages' must be an integer");
  // Each attribute only on the ops attrs.def lists: an axis on an add, a pipeliner's count on a
  // loop, a function argument's fact on an op.
  check_bad("func @k(%0: i32) {\n  %1 = add(%0, %0) {axis = 0} : i32\n  return()\n}\n",
            "op 'add': cannot carry the attribute 'axis'");
  check_bad("func @k(%0: i32) {\n  %1 = constant() {value = 1} : i32\n"
            "  for(%0, %0, %1) {wgmma_pending = 1} {\n  ^(%2: i32):\n    yield()\n  }\n"
            "  return()\n}\n",
            "op 'for': cannot carry the attribute 'wgmma_pending'");
  check_bad("func @k(%0: i32) {\n  %1 = neg(%0) {div = 16} : i32\n  return()\n}\n",
            "op 'neg': cannot carry the attribute 'div'");
  // The same attributes where they belong pass.
  CHECK_NOTHROW(
      verify(*parse("func @k() {\n  %0 = program_id() {axis = 1} : i32\n  return()\n}\n")));
}
