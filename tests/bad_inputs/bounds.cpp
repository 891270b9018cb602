// TRITIUM_CHECK / CompileOptions::check_bounds: an access outside the buffer its pointer came
// from is skipped and reported (kernel, line, program, element, offset), on every device; the
// memory around the buffer is left alone, and an in-bounds launch reports nothing.
#include "common.hpp"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <set>
#include <vector>

namespace bad_inputs {
namespace {

tritium::CompileOptions checked() {
  tritium::CompileOptions o;
  o.check_bounds = true;
  return o;
}

void copy_rows(tl::ptr<float> src, tl::ptr<float> dst, tl::i32 rows, tl::i32 cols,
               tl::constexpr_<int> BM, tl::constexpr_<int> BN) {
  auto r = tl::program_id(0) * BM + tl::arange(0, BM);
  auto c = tl::arange(0, BN);
  auto offs = r[{tl::_, tl::None}] * cols + c[{tl::None, tl::_}];
  auto mask = (r[{tl::_, tl::None}] < rows) && (c[{tl::None, tl::_}] < cols);
  auto v = tl::load(src + offs, mask); // the load's line
  tl::store(dst + offs, v, mask);      // the store's line
}

TEST_CASE("bad input: TRITIUM_CHECK reports a read past the buffer and reads nothing there") {
  auto k = tritium::jit(copy_rows, "copy_rows");
  k.options(checked());
  for (Device d : all_devices()) {
    CAPTURE(d.name());
    Guarded<float> src(d, 8 * 16, 64, 7.0f), dst(d, 16 * 16, 64, -1.0f);
    // dst holds 16 rows; src only 8: rows 8..15 of the load are outside src.
    std::string m = error_of([&] { k[{2}](src.middle, dst.middle, 16, 16, 8, 16); });
    CHECK(m.find("bounds.cpp:") != std::string::npos);
    CHECK(m.find("in kernel 'copy_rows', program (1, 0, 0)") != std::string::npos);
    CHECK(m.find("of the load through argument 0") != std::string::npos);
    CHECK(m.find("is outside the buffer's 512 bytes; TRITIUM_CHECK skipped the access") !=
          std::string::npos);
    // The skipped reads left the other lanes' values: rows 0..7 copied, nothing else touched.
    std::vector<float> out = dst.middle.to_host();
    for (int i = 0; i < 8 * 16; ++i)
      CHECK(out[i] == 7.0f);
    CHECK(src.guards_hold());
    CHECK(dst.guards_hold());
    // In bounds, the same kernel reports nothing and copies everything.
    k[{1}](src.middle, dst.middle, 8, 16, 8, 16);
  }
}

TEST_CASE("bad input: TRITIUM_CHECK stops a write past the buffer before it lands") {
  auto k = tritium::jit(copy_rows, "copy_rows");
  k.options(checked());
  for (Device d : all_devices()) {
    CAPTURE(d.name());
    Guarded<float> src(d, 16 * 16, 64, 3.0f), dst(d, 8 * 16 + 3, 64, -1.0f);
    std::string m = error_of([&] { k[{2}](src.middle, dst.middle, 16, 16, 8, 16); });
    CHECK(m.find("program (1, 0, 0), element [") != std::string::npos);
    CHECK(m.find("of the store through argument 1") != std::string::npos);
    CHECK(m.find("outside the buffer's 524 bytes") != std::string::npos);
    CHECK(dst.guards_hold());
    // Program 0's rows land; program 1's store, which has elements past the end, is skipped
    // whole, its in-bounds rows too.
    std::vector<float> out = dst.middle.to_host();
    for (size_t i = 0; i < out.size(); ++i)
      CHECK(out[i] == (i < 8 * 16 ? 3.0f : -1.0f));
  }
}

// A pointer advanced inside a loop keeps its argument; an offset before the buffer (negative)
// is caught as well as one past it.
void strided_sum(tl::ptr<int32_t> x, tl::ptr<int32_t> out, tl::i32 start, tl::i32 trips,
                 tl::constexpr_<int> BLOCK) {
  auto p = x + start + tl::arange(0, BLOCK);
  auto acc = tl::zeros<int32_t>({BLOCK});
  for (auto i : tl::range(0, trips)) {
    (void)i;
    acc = acc + tl::load(p);
    p = p + BLOCK;
  }
  tl::atomic_add(out + tl::arange(0, BLOCK), acc);
}

TEST_CASE("bad input: TRITIUM_CHECK follows pointers carried through a loop") {
  auto k = tritium::jit(strided_sum, "strided_sum");
  k.options(checked());
  for (Device d : all_devices()) {
    CAPTURE(d.name());
    Guarded<int32_t> x(d, 64, 64, 1), out(d, 16, 64, 0);
    k[{1}](x.middle, out.middle, 0, 4, 16); // exactly the buffer
    CHECK(out.middle.to_host()[0] == 4);
    std::string m = error_of([&] { k[{1}](x.middle, out.middle, 0, 5, 16); });
    CHECK(m.find("of the load through argument 0: byte offset ") != std::string::npos);
    CHECK(m.find("outside the buffer's 256 bytes") != std::string::npos);
    m = error_of([&] { k[{1}](x.middle, out.middle, -3, 1, 16); });
    CHECK(m.find("element [") != std::string::npos);
    CHECK(m.find("byte offset -") != std::string::npos);
    CHECK(out.guards_hold());
  }
}

void scalar_store(tl::ptr<int64_t> out, tl::i32 at) {
  tl::store(out + at, tl::scalar<int64_t>(5));
}

TEST_CASE("bad input: TRITIUM_CHECK on a scalar access, and off by default") {
  auto k = tritium::jit(scalar_store, "scalar_store");
  for (Device d : all_devices()) {
    CAPTURE(d.name());
    Guarded<int64_t> out(d, 4, 8, 0);
    k.options({});
    k[{1}](out.middle, 3); // unchecked: in bounds
    k.options(checked());
    CHECK_ERROR((k[{1}](out.middle, 4)), "in kernel 'scalar_store', program (0, 0, 0), element [] "
                                         "of the store through argument 0: byte offset 32 "
                                         "is outside the buffer's 32 bytes");
    CHECK(out.guards_hold());
    CHECK(out.middle.to_host()[3] == 5);
  }
}

} // namespace
} // namespace bad_inputs

namespace bad_inputs {
namespace {

void product_offset(tl::ptr<float> x, tl::i32 a, tl::i32 b) {
  auto offs = a * b + tl::arange(0, 16);
  tl::store(x + offs, tl::full<float>({16}, 1.0f));
}

// 65536 * 65536 wraps to 0 in i32: the wrapped address is inside the buffer, so only the
// recomputed offset shows the element is not where the kernel meant.
TEST_CASE("bad input: TRITIUM_CHECK reports an i32 offset that wrapped, even into the buffer") {
  auto k = tritium::jit(product_offset, "product_offset");
  k.options(checked());
  for (Device d : all_devices()) {
    CAPTURE(d.name());
    Guarded<float> x(d, 16, 16, 0.0f);
    // Which element reports first is up to the device's threads.
    CHECK_ERROR((k[{1}](x.middle, 65536, 65536)),
                "in kernel 'product_offset', program (0, 0, 0), element [",
                "] of the store through argument 0: its i32 element offset overflowed: 4294967",
                " wrapped to ");
    CHECK(x.guards_hold());
    for (float v : x.middle.to_host())
      CHECK(v == 0.0f);
    k[{1}](x.middle, 0, 65536); // in bounds
    CHECK(x.middle.to_host()[15] == 1.0f);
  }
}

} // namespace
} // namespace bad_inputs

namespace bad_inputs {
namespace {

void first_of(tl::ptr<float> x, tl::ptr<float> out) {
  tl::store(out + tl::arange(0, 16), tl::full<float>({16}, 1.0f) + tl::load(x));
}

// Raw addresses (what ahead-of-time launchers pass) carry no size; a null one is still caught,
// and the CPU's code for the load is not deleted as undefined behaviour.
void row_load(tl::ptr<float> x, tl::ptr<float> y, tl::i32 row, tl::i32 stride) {
  auto cols = tl::arange(0, 16);
  tl::store(y + cols, tl::load(x + row * stride + cols));
}

// A scalar offset plus a tile of i32 offsets is checked in i32 against bounds that the scalar
// shifts (-s <= t <= n - s - 1): rows before, across and after the end of the buffer.
TEST_CASE("bad input: TRITIUM_CHECK bounds a row's offsets shifted by a scalar") {
  auto k = tritium::jit(row_load, "row_load");
  k.options(checked());
  for (Device d : all_devices()) {
    CAPTURE(d.name());
    Guarded<float> x(d, 64, 16, 2.0f), y(d, 16, 16, 0.0f);
    k[{1}](x.middle, y.middle, 4, 12); // elements 48 .. 63: the last in bounds
    CHECK(y.middle.to_host()[15] == 2.0f);
    CHECK_ERROR((k[{1}](x.middle, y.middle, 5, 12)),
                "element [4] of the load through argument 0: byte offset 256 is outside the "
                "buffer's 256 bytes");
    CHECK_ERROR((k[{1}](x.middle, y.middle, -1, 16)),
                "element [0] of the load through argument 0: byte offset -64 is outside the "
                "buffer's 256 bytes");
    CHECK_ERROR((k[{1}](x.middle, y.middle, -1, 8)),
                "element [0] of the load through argument 0: byte offset -32 is outside");
    CHECK(x.guards_hold());
    CHECK(y.guards_hold());
  }
}

// Where scalar bounds on the offsets (row * stride + [0, 16)) show every element in bounds,
// the per-element checks and their block-wide reduction do not run: the only ops left on the
// common path besides the access are scalars, and the branch that reports is marked unlikely.
TEST_CASE("bad input: TRITIUM_CHECK decides an ordinary access on scalars") {
  auto k = tritium::jit(row_load, "row_load");
  auto dev = tritium::testing::interpreter();
  auto x = dev.alloc<float>(64), y = dev.alloc<float>(16);
  auto checked_ir = tritium::ir::insert_bounds_checks(*k.trace(x, y, 4, 12));
  const tritium::ir::Block& entry = checked_ir.fn->entry();
  int doubts = 0;
  for (const auto& op : entry.ops) {
    using tritium::ir::OpKind;
    // Tiles at the top level: the offsets and the access's own operands, never a reduction.
    CHECK(op->kind != OpKind::Reduce);
    if (op->kind == OpKind::If) {
      CHECK(op->int_attr(tritium::ir::attr::likely) == 1);
      CHECK(op->operand(0)->type.is_scalar());
      doubts += op->results.size() == 1 && op->result()->type.is_scalar();
    }
  }
  CHECK(doubts == 2); // the load and the store
  // And what it decides: in bounds nothing is reported, one row further the load is.
  k.options(checked());
  Guarded<float> gx(dev, 64, 16, 1.0f), gy(dev, 16, 16, 0.0f);
  k[{1}](gx.middle, gy.middle, 3, 16);
  CHECK(gy.middle.to_host()[0] == 1.0f);
  CHECK_ERROR((k[{1}](gx.middle, gy.middle, 4, 16)),
              "element [0] of the load through argument 0: byte offset 256 is outside");
}

// A row scaled by its sum of squares and by weights (RMSNorm's shape): three accesses whose
// offsets read no loaded data.
void scale_row(tl::ptr<float> x, tl::ptr<float> w, tl::ptr<float> y, tl::i32 n) {
  auto cols = tl::arange(0, 16);
  auto mask = cols < n;
  auto v = tl::load(x + tl::program_id(0) * n + cols, mask, 0.0);
  auto s = tl::sum(v * v, 0);
  tl::store(y + tl::program_id(0) * n + cols, v * s * tl::load(w + cols, mask), mask);
}

// The per-element checks (a masked tail leaves the scalar bounds in doubt) run before the
// first load, while no loaded tile is live, and the report writes scalars: the element that
// failed is recomputed alone from the offsets' arithmetic, not kept as a tile of every lane.
TEST_CASE("bad input: TRITIUM_CHECK checks ahead of the loads and reports in scalars") {
  using tritium::ir::OpKind;
  auto k = tritium::jit(scale_row, "scale_row");
  auto dev = tritium::testing::interpreter();
  auto x = dev.alloc<float>(16), w = dev.alloc<float>(16), y = dev.alloc<float>(16);
  auto checked_ir = tritium::ir::insert_bounds_checks(*k.trace(x, w, y, 16));
  int doubts = 0, reports = 0, loads_before = 0, tile_words = 0, scalar_words = 0;
  std::function<void(const tritium::ir::Block&)> words = [&](const tritium::ir::Block& b) {
    for (const auto& op : b.ops) {
      if (op->kind == OpKind::Store && op->operand(0)->type.elem.element_of_pointer().bits() == 64)
        (op->operand(1)->type.is_scalar() ? scalar_words : tile_words) += 1;
      for (const auto& r : op->regions)
        words(*r->block);
    }
  };
  for (const auto& op : checked_ir.fn->entry().ops) {
    if (op->kind != OpKind::If)
      continue;
    const bool doubt = op->results.size() == 1 && op->result()->type.is_scalar();
    if (doubt) {
      ++doubts;
      loads_before += reports > 0;
    } else {
      ++reports;
      words(op->body(0));
    }
  }
  CHECK(doubts == 3);
  CHECK(reports == 3);
  CHECK(loads_before == 0); // every doubt ahead of every access's branch
  CHECK(tile_words == 0);
  CHECK(scalar_words == 3 * 7); // program ids, element, site, offset, extent
  k.options(checked());
  for (Device d : all_devices()) {
    CAPTURE(d.name());
    Guarded<float> gx(d, 32, 16, 2.0f), gw(d, 8, 16, 3.0f), gy(d, 32, 16, 0.0f);
    k[{2}](gx.middle, gw.middle, gy.middle, 8);
    CHECK(gy.middle.to_host()[9] == 2.0f * 32.0f * 3.0f);
    // Elements 8..15 of w are past its 8 floats: the first, element [8], is reported.
    CHECK_ERROR((k[{2}](gx.middle, gw.middle, gy.middle, 16)),
                "element [8] of the load through argument 1: byte offset 32 is outside the "
                "buffer's 32 bytes");
    CHECK(gw.guards_hold());
    CHECK(gy.guards_hold());
  }
}

// A K loop as GEMMs write it: pointers advanced each trip, loads masked on a ragged last trip.
void row_dot(tl::ptr<float> a, tl::ptr<float> b, tl::ptr<float> out, tl::i32 K,
             tl::constexpr_<int> BK) {
  auto pid = tl::program_id(0);
  auto offs_k = tl::arange(0, BK);
  auto a_ptrs = a + pid * K + offs_k;
  auto b_ptrs = b + offs_k;
  auto acc = tl::zeros<float>({BK});
  for (auto k : tl::range(0, tl::cdiv(K, BK))) {
    auto mask = offs_k < K - k * BK;
    acc += tl::load(a_ptrs, mask, 0.0) * tl::load(b_ptrs, mask, 0.0);
    a_ptrs += BK;
    b_ptrs += BK;
  }
  tl::store(out + pid, tl::sum(acc, 0));
}

// The If that versions a loop at the top of `entry` (the loop as written first), or null.
const tritium::ir::Op* versioned_loop(const tritium::ir::Block& entry) {
  using tritium::ir::OpKind;
  const tritium::ir::Op* versions = nullptr;
  for (const auto& op : entry.ops)
    if (op->kind == OpKind::If && !op->body(0).ops.empty() &&
        op->body(0).ops.front()->kind == OpKind::For)
      versions = op.get();
  return versions;
}

// The loop is checked once, ahead of it, on bounds that hold for every trip: where they show
// nothing can fail it runs as written (its loads at the top of its body, where the pipeliner
// finds them); otherwise a checked copy runs, and it reports only what the masks let through.
TEST_CASE("bad input: TRITIUM_CHECK bounds a loop's advancing pointers once, ahead of it") {
  using tritium::ir::OpKind;
  auto k = tritium::jit(row_dot, "row_dot");
  auto dev = tritium::testing::interpreter();
  auto a = dev.alloc<float>(64), b = dev.alloc<float>(32), out = dev.alloc<float>(2);
  auto checked_ir = tritium::ir::insert_bounds_checks(*k.trace(a, b, out, 32, 16));
  const tritium::ir::Op* versions = versioned_loop(checked_ir.fn->entry());
  REQUIRE(versions != nullptr);
  CHECK(versions->int_attr(tritium::ir::attr::likely) == 0);
  auto count = [](const tritium::ir::Block& body, OpKind kind) {
    int n = 0;
    for (const auto& op : body.ops)
      n += op->kind == kind;
    return n;
  };
  const auto& fast = versions->body(0).ops.front()->body();
  CHECK(count(fast, OpKind::Load) == 2);
  CHECK(count(fast, OpKind::If) == 0);
  const auto& copy = versions->body(1).ops.front()->body();
  CHECK(count(copy, OpKind::Load) == 0); // each inside its check's branch
  CHECK(count(copy, OpKind::If) >= 2);

  k.options(checked());
  for (Device d : all_devices()) {
    CAPTURE(d.name());
    Guarded<float> ga(d, 64, 16, 1.0f), gb(d, 32, 16, 2.0f), go(d, 2, 16, 0.0f);
    k[{2}](ga.middle, gb.middle, go.middle, 32, 16); // every trip in bounds
    CHECK(go.middle.to_host()[1] == 64.0f);
    // K = 24: the last trip's pointers reach past both rows, its masks keep it inside.
    Guarded<float> ra(d, 48, 16, 1.0f), rb(d, 24, 16, 2.0f), ro(d, 2, 16, 0.0f);
    k[{2}](ra.middle, rb.middle, ro.middle, 24, 16);
    CHECK(ro.middle.to_host()[1] == 48.0f);
    // K = 32 with b 24 floats long: the second trip's elements 8.. are past b.
    CHECK_ERROR((k[{2}](ga.middle, rb.middle, go.middle, 32, 16)),
                "element [8] of the load through argument 1: byte offset 96 is outside the "
                "buffer's 96 bytes");
    CHECK(rb.guards_hold());
  }
}

// A routed GEMM's operand rows: offsets loaded from memory, padding rows holding a sentinel that
// the mask drops, and the step traced inside the loop.
void gathered_rows(tl::ptr<float> x, tl::ptr<int32_t> rows, tl::ptr<float> out, tl::i32 n_valid,
                   tl::i32 K, tl::i32 stride_k, tl::constexpr_<int> BM, tl::constexpr_<int> BK) {
  auto r = tl::arange(0, BM);
  auto row = tl::load(rows + r);
  auto keep = row < n_valid;
  auto offs_k = tl::arange(0, BK);
  auto ptrs = x + (row[{tl::_, tl::None}] * K + offs_k[{tl::None, tl::_}] * stride_k);
  auto acc = tl::zeros<float>({BM, BK});
  for (auto k : tl::range(0, tl::cdiv(K, BK))) {
    acc += tl::load(ptrs, keep[{tl::_, tl::None}] && (offs_k[{tl::None, tl::_}] < K - k * BK), 0.0);
    ptrs += BK * stride_k;
  }
  tl::store(out + r, tl::sum(acc, 1));
}

// Offsets that interval arithmetic cannot bound (loaded rows) are bounded by their own least and
// greatest element, reduced ahead of the loop over the rows the mask keeps: the padding row's
// sentinel sends no program to the checked copy, a row past the buffer still does.
TEST_CASE("bad input: TRITIUM_CHECK bounds loaded offsets ahead of a loop, under its mask") {
  using tritium::ir::OpKind;
  auto k = tritium::jit(gathered_rows, "gathered_rows");
  auto dev = tritium::testing::interpreter();
  auto x = dev.alloc<float>(128);
  auto rows = dev.alloc<int32_t>(4);
  auto out = dev.alloc<float>(4);
  auto checked_ir = tritium::ir::insert_bounds_checks(*k.trace(x, rows, out, 4, 32, 1, 4, 16));
  const tritium::ir::Op* versions = versioned_loop(checked_ir.fn->entry());
  REQUIRE(versions != nullptr);
  int reductions = 0;
  for (const auto& op : checked_ir.fn->entry().ops)
    reductions += op->kind == OpKind::Reduce;
  CHECK(reductions >= 2); // the rows' least and greatest, ahead of the loop

  k.options(checked());
  for (Device d : all_devices()) {
    CAPTURE(d.name());
    Guarded<float> gx(d, 128, 16, 1.0f);
    Guarded<float> go(d, 4, 16, -1.0f);
    auto padded = d.from_host(std::vector<int32_t>{2, 0, 4, 3}); // row 4: the sentinel
    k[{1}](gx.middle, padded, go.middle, 4, 32, 1, 4, 16);
    CHECK(go.middle.to_host() == std::vector<float>{32, 32, 0, 32});
    auto past = d.from_host(std::vector<int32_t>{2, 0, 5, 3}); // row 5 of 4, kept by the mask
    CHECK_ERROR((k[{1}](gx.middle, past, go.middle, 6, 32, 1, 4, 16)),
                "element [2, 0] of the load through argument 0: byte offset 640 is outside the "
                "buffer's 512 bytes");
    CHECK(gx.guards_hold());
  }
}

// Host state a kernel reads besides its arguments: tracing turns it into a constant.
float g_scale = 2.0f;
void scale_by_global(tl::ptr<float> x, tl::ptr<float> y) {
  auto c = tl::arange(0, 16);
  tl::store(y + c, tl::load(x + c) * g_scale);
}

TEST_CASE("bad input: TRITIUM_CHECK catches a kernel that reads a changing host global") {
  for (Device d : all_devices()) {
    CAPTURE(d.name());
    auto k = tritium::jit(scale_by_global, "scale_by_global");
    k.options(checked());
    Guarded<float> x(d, 16, 16, 1.5f), y(d, 16, 16, 0.0f);
    g_scale = 2.0f;
    k[{1}](x.middle, y.middle); // traced and compiled
    k[{1}](x.middle, y.middle); // traced again: the same
    g_scale = 3.0f;
    k[{1}](x.middle, y.middle); // not traced again: the compiled kernel's 2 is stale
    CHECK(y.middle.to_host()[0] == 3.0f);
    CHECK_ERROR((k[{1}](x.middle, y.middle)),
                "kernel 'scale_by_global': traced again by TRITIUM_CHECK, it gives different IR "
                "than the kernel compiled for these arguments: it reads host state besides its "
                "arguments");
    g_scale = 2.0f; // back as compiled: nothing to report
    for (int i = 0; i < 8; ++i)
      k[{1}](x.middle, y.middle);
  }
}

TEST_CASE("bad input: TRITIUM_CHECK reports an access through a null raw pointer") {
  auto k = tritium::jit(first_of, "first_of");
  k.options(checked());
  for (Device d : all_devices()) {
    CAPTURE(d.name());
    Guarded<float> out(d, 16, 16, 0.0f), x(d, 1, 16, 5.0f);
    const std::vector<tritium::ArgSlot> null_x{0, reinterpret_cast<uintptr_t>(out.middle.data())};
    CHECK_ERROR(k.launch_slots(d.stream(), {1}, null_x),
                "in kernel 'first_of', program (0, 0, 0), element [] of the load through "
                "argument 0: byte offset 0 is outside the buffer's 0 bytes (a null or empty "
                "buffer)");
    CHECK(out.guards_hold());
    const std::vector<tritium::ArgSlot> good{reinterpret_cast<uintptr_t>(x.middle.data()),
                                             reinterpret_cast<uintptr_t>(out.middle.data())};
    k.launch_slots(d.stream(), {1}, good);
    CHECK(out.middle.to_host()[15] == 6.0f);
  }
}

TEST_CASE("bad input: a CPU kernel that loads through a null pointer keeps its code") {
  auto k = tritium::jit(first_of, "first_of");
  Device cpu = tritium::device("cpu");
  auto x = cpu.alloc<float>(1), out = cpu.alloc<float>(16);
  const std::string dir = "bounds_null_dump";
  setenv("TRITIUM_DUMP", dir.c_str(), 1); // every stage kept, the disk cache passed by
  std::string ll = k.compiled(x, out).artifact("ll.opt");
  unsetenv("TRITIUM_DUMP");
  std::filesystem::remove_all(dir);
  CHECK(ll.find("define void @") != std::string::npos);
  CHECK(ll.find("null_pointer_is_valid") != std::string::npos);
}

// A backend of the program's own that lends the interpreter's memory and kernels, and can be
// destroyed before the kernels it compiled (as a static kernel outlives the device registry
// at exit). Its memory goes with it, as a device's does.
class Lending final : public tritium::Backend {
public:
  ~Lending() override {
    for (void* p : lent_)
      inner_.free(p);
  }
  std::string_view name() const override { return "lending"; }
  std::string target() const override { return inner_.target(); }
  bool host_memory() const override { return inner_.host_memory(); }
  void* alloc(size_t bytes) override { return *lent_.insert(inner_.alloc(bytes)).first; }
  void free(void* p) override {
    lent_.erase(p);
    inner_.free(p);
  }
  void copy_to_device(void* d, const void* s, size_t n) override { inner_.copy_to_device(d, s, n); }
  void copy_to_host(void* d, const void* s, size_t n) override { inner_.copy_to_host(d, s, n); }
  void copy_device_to_device(void* d, const void* s, size_t n) override {
    inner_.copy_device_to_device(d, s, n);
  }
  std::unique_ptr<tritium::CompiledKernel> compile(std::shared_ptr<const tritium::ir::Function> f,
                                                   const tritium::CompileOptions& o) override {
    return inner_.compile(std::move(f), o);
  }

private:
  tritium::Backend& inner_ = tritium::device("interpreter").backend();
  std::set<void*> lent_;
};

TEST_CASE("bad input: a checked kernel that outlives its device leaves its record alone") {
  // Before the fix the kernel's destructor freed its check record through the destroyed
  // backend: a pure virtual call at exit.
  auto k = tritium::jit(copy_rows, "copy_rows");
  k.options(checked());
  auto lending = std::make_unique<Lending>();
  {
    Device d(lending.get());
    auto src = d.alloc<float>(8 * 16), dst = d.alloc<float>(8 * 16);
    std::string m = error_of([&] { k[{2}](src, dst, 16, 16, 8, 16); });
    CHECK(m.find("is outside the buffer's 512 bytes") != std::string::npos);
  }
  std::weak_ptr<const void> alive = lending->lifetime();
  CHECK(!alive.expired());
  lending.reset();
  CHECK(alive.expired());
} // k goes here, after its backend

} // namespace
} // namespace bad_inputs
