// ir::clone, the parser's layout hook, and printing with notes.
#include <doctest/doctest.h>

#include <tritium/error.hpp>
#include <tritium/ir/builder.hpp>
#include <tritium/ir/printer.hpp>

#include <string>

using namespace tritium;
using namespace tritium::ir;

namespace {

// A layout kind of the test's own: the IR knows layouts only through their interface.
struct StripeLayout final : Layout {
  int width = 1;
  std::string str() const override { return "#stripe<" + std::to_string(width) + ">"; }
  bool equals(const Layout& o) const override {
    auto* s = dynamic_cast<const StripeLayout*>(&o);
    return s && s->width == width;
  }
};

LayoutPtr stripe(int w) {
  auto l = std::make_shared<StripeLayout>();
  l->width = w;
  return l;
}

LayoutPtr parse_stripe(std::string_view text) {
  if (!text.starts_with("#stripe<") || !text.ends_with(">"))
    throw Error("not a stripe");
  return stripe(std::stoi(std::string(text.substr(8, text.size() - 9))));
}

// A kernel with a loop, a reduction (regions), source locations and layouts on some types.
std::unique_ptr<Function> kernel() {
  auto f = std::make_unique<Function>();
  f->name = "k";
  Builder b(*f, f->entry());
  Value* p = b.add_block_arg(f->entry(), Type(DType::pointer_to(ScalarKind::F32)));
  f->arg_info = {ArgInfo{"p", 16, false, 0, true}};
  b.set_loc({"kernel.cpp", 10});
  Type t(ScalarKind::I32, {64});
  t.layout = stripe(4);
  Value* r = b.create1(OpKind::Arange, {}, t, {{"start", int64_t{0}}, {"end", int64_t{64}}});
  Type pt(DType::pointer_to(ScalarKind::F32), {64});
  pt.layout = stripe(4);
  b.set_loc({"kernel.cpp", 11});
  Value* ptrs = b.create1(OpKind::AddPtr, {b.create1(OpKind::Splat, {p}, pt), r}, pt);
  Type ft(ScalarKind::F32, {64});
  ft.layout = stripe(4);
  Value* x = b.create1(OpKind::Load, {ptrs}, ft);
  Value* lo = b.constant_int(0, Type(ScalarKind::I32));
  Value* hi = b.constant_int(3, Type(ScalarKind::I32));
  Value* step = b.constant_int(1, Type(ScalarKind::I32));
  b.set_loc({"kernel.cpp", 12});
  Op& loop = b.create(OpKind::For, {lo, hi, step, x}, {ft}, {{"num_stages", int64_t{2}}}, 1);
  b.add_block_arg(loop.body(), Type(ScalarKind::I32));
  Value* acc = b.add_block_arg(loop.body(), ft);
  b.set_block(loop.body());
  b.set_loc({"kernel.cpp", 13});
  b.create(OpKind::Yield, {b.create1(OpKind::Exp, {acc}, ft)}, {});
  b.set_block(f->entry());
  b.set_loc({"kernel.cpp", 14});
  Op& red =
      b.create(OpKind::Reduce, {loop.result()}, {Type(ScalarKind::F32)}, {{"axis", int64_t{0}}}, 1);
  Value* a0 = b.add_block_arg(red.body(), Type(ScalarKind::F32));
  Value* a1 = b.add_block_arg(red.body(), Type(ScalarKind::F32));
  b.set_block(red.body());
  b.create(OpKind::Yield, {b.create1(OpKind::Add, {a0, a1}, a0->type)}, {});
  b.set_block(f->entry());
  b.create(OpKind::Store, {p, red.result()}, {});
  b.create(OpKind::Return, {}, {});
  return f;
}

// Every op's source line, in walk order.
std::vector<uint32_t> lines(const Function& f) {
  std::vector<uint32_t> out;
  walk(f.entry(), [&](Op& op) { out.push_back(op.loc.line); });
  return out;
}

} // namespace

TEST_CASE("clone copies ops, regions, attributes, locations, argument infos and layouts") {
  auto f = kernel();
  verify(*f);
  auto g = clone(*f);
  verify(*g);
  CHECK(print(*g) == print(*f));
  CHECK(lines(*g) == lines(*f));
  CHECK(g->entry().ops.front()->loc.file == "kernel.cpp");
  CHECK(g->arg_info[0].name == "p");
  CHECK(g->arg_info[0].divisibility == 16);
  CHECK(g->arg_info[0].range32);
  // A deep copy: no value, op or block is shared, and changing one leaves the other alone.
  const Op& loop_f = *f->entry().ops[7];
  const Op& loop_g = *g->entry().ops[7];
  REQUIRE(loop_g.kind == OpKind::For);
  CHECK(&loop_g != &loop_f);
  CHECK(loop_g.operands[3] != loop_f.operands[3]);
  CHECK(loop_g.body().args[1] != loop_f.body().args[1]);
  CHECK(loop_g.body().ops[0]->operands[0] == loop_g.body().args[1]); // uses map into the copy
  CHECK(loop_g.body().parent->parent == &loop_g);
  CHECK(loop_g.parent == &g->entry());
  g->entry().ops[7]->attrs["num_stages"] = int64_t{5};
  CHECK(loop_f.int_attr("num_stages") == 2);
  CHECK(same_layout(g->args()[0]->type.layout, f->args()[0]->type.layout));
  CHECK(same_layout(loop_g.result()->type.layout, stripe(4)));
}

TEST_CASE("layouts are compared structurally, not by pointer or text") {
  CHECK(same_layout(stripe(4), stripe(4)));
  CHECK_FALSE(same_layout(stripe(4), stripe(8)));
  CHECK_FALSE(same_layout(stripe(4), nullptr));
  CHECK(same_layout(nullptr, nullptr));
  Type a(ScalarKind::F32, {8}), b(ScalarKind::F32, {8});
  a.layout = stripe(2);
  b.layout = stripe(2);
  CHECK(a == b);
  b.layout = stripe(1);
  CHECK_FALSE(a == b);
}

TEST_CASE("the parser reads layouts through its hook, and names what it cannot read") {
  auto f = kernel();
  std::string text = print(*f);
  REQUIRE(text.find("tensor<64xf32, #stripe<4>>") != std::string::npos);
  auto g = parse(text, parse_stripe);
  verify(*g);
  CHECK(print(*g) == text);
  CHECK(same_layout(g->entry().ops[0]->result()->type.layout, stripe(4)));
  CHECK_THROWS_WITH_AS(parse(text), doctest::Contains("no layout parser"), Error);
  std::string bad = text;
  bad.replace(bad.find("#stripe<4>"), 10, "#ring<4>");
  CHECK_THROWS_WITH_AS(parse(bad, parse_stripe), doctest::Contains("bad layout '#ring<4>'"), Error);
}

TEST_CASE("notes print as comments after each op and do not change what parses") {
  auto f = kernel();
  std::string plain = print(*f);
  std::string noted = print(*f, [](const Op& op) {
    return op.results.empty() ? std::string() : "note of " + std::string(op_name(op.kind));
  });
  CHECK(noted.find(" = arange() {end = 64, start = 0} : tensor<64xi32, #stripe<4>> // note of "
                   "arange\n") != std::string::npos);
  // A region's op: the note after the brace that opens its first region.
  CHECK(noted.find(": tensor<64xf32, #stripe<4>> { // note of for\n") != std::string::npos);
  CHECK(print(*parse(noted, parse_stripe)) == plain);
}

TEST_CASE("the module line records what a function is compiled for, and round-trips") {
  const std::string text = "module {matrix_unit = \"mfma\", num_stages = 2, num_warps = 8, "
                           "target = \"gfx942\", warp_size = 64}\n"
                           "func @k() {\n  return()\n}\n";
  auto f = parse(text);
  CHECK(f->module.target == "gfx942");
  CHECK(f->module.num_warps == 8);
  CHECK(f->module.num_stages == 2);
  CHECK(f->module.warp_size == 64);
  CHECK(f->module.matrix_unit == "mfma");
  CHECK(print(*f) == text);
  CHECK(clone(*f)->module == f->module);
  // Unset fields print nothing; no module, no line.
  f->module = ModuleAttrs{"sm_90a", 4};
  CHECK(print(*f).starts_with("module {num_warps = 4, target = \"sm_90a\"}\nfunc @k"));
  f->module = {};
  CHECK(print(*f).starts_with("func @k"));
  CHECK_THROWS_WITH_AS(parse("module {target = 3}\nfunc @k() {\n  return()\n}\n"),
                       doctest::Contains("module: attribute 'target' has the wrong kind"), Error);
  CHECK_THROWS_WITH_AS(parse("module {num_warps = 0}\nfunc @k() {\n  return()\n}\n"),
                       doctest::Contains("num_warps = 0 is not a count"), Error);
}
