// Every misuse is a tritium::Error naming the user's file and line. Each kernel below marks
// the offending line by setting bad_line on it; the test checks the message names this file
// and that line, and says what is wrong.
#include "common.hpp"

#include <fmt/format.h>

using namespace lang_test;

namespace {

int bad_line = 0;

void expect_error(void (*fn)(tl::ptr<float>), std::string_view what) {
  Device dev = tritium::testing::interpreter();
  auto x = dev.alloc<float>(64);
  auto k = tritium::jit(fn, "bad_kernel");
  bad_line = 0;
  std::string m = trace_error(k, x);
  REQUIRE_MESSAGE(!m.empty(), "tracing did not fail; expected: " << what);
  REQUIRE(bad_line != 0);
  CHECK_MESSAGE(m.find(what) != std::string::npos, m);
  std::string where = fmt::format("{}:{}:", __FILE__, bad_line);
  CHECK_MESSAGE(m.find(where) != std::string::npos, "expected " << where << " in: " << m);
  CHECK_MESSAGE(m.find("bad_kernel") != std::string::npos, m);
}

} // namespace

// clang-format off
TEST_CASE("errors: arange") {
  expect_error(+[](tl::ptr<float>) { bad_line = __LINE__; tl::arange(0, 10); }, "power of two");
  expect_error(+[](tl::ptr<float>) { bad_line = __LINE__; tl::arange(4, 4); }, "is empty");
  expect_error(+[](tl::ptr<float>) { bad_line = __LINE__; tl::program_id(3); }, "axis must be 0, 1 or 2");
}

TEST_CASE("errors: shapes that do not broadcast") {
  expect_error(+[](tl::ptr<float>) { auto a = tl::arange(0, 4); auto b = tl::arange(0, 8); bad_line = __LINE__; auto c = a + b; (void)c; }, "cannot be broadcast");
  // Mixed element types take the same path and name the same line.
  expect_error(+[](tl::ptr<float>) { auto a = tl::arange(0, 4).to<float>(); auto b = tl::arange(0, 8); bad_line = __LINE__; auto c = a * b; (void)c; }, "cannot be broadcast");
  expect_error(+[](tl::ptr<float>) { auto a = tl::arange(0, 4); auto b = tl::arange(0, 8).to<int64_t>(); bad_line = __LINE__; auto c = a < b; (void)c; }, "cannot be broadcast");
  expect_error(+[](tl::ptr<float>) { auto a = tl::arange(0, 4); bad_line = __LINE__; a += tl::arange(0, 8).to<float>(); }, "cannot be broadcast");
  expect_error(+[](tl::ptr<float>) { auto a = tl::arange(0, 4); bad_line = __LINE__; auto c = tl::where(a > 1, a, tl::arange(0, 2)); (void)c; }, "cannot be broadcast");
  expect_error(+[](tl::ptr<float>) { auto a = tl::arange(0, 4); bad_line = __LINE__; auto c = tl::broadcast_to(a, {4, 2}); (void)c; }, "cannot broadcast");
  expect_error(+[](tl::ptr<float>) { auto a = tl::arange(0, 4); bad_line = __LINE__; auto c = tl::maximum(a, tl::arange(0, 8)); (void)c; }, "cannot be broadcast");
}

TEST_CASE("errors: shape functions") {
  expect_error(+[](tl::ptr<float>) { auto a = tl::arange(0, 8); bad_line = __LINE__; auto c = tl::reshape(a, {4, 4}); (void)c; }, "cannot reshape");
  expect_error(+[](tl::ptr<float>) { auto a = tl::reshape(tl::arange(0, 8), {2, 4}); bad_line = __LINE__; auto c = tl::trans(a, {0, 0}); (void)c; }, "not a permutation");
  expect_error(+[](tl::ptr<float>) { auto a = tl::reshape(tl::arange(0, 8), {2, 4}); bad_line = __LINE__; auto c = tl::permute(a, {1, 0, 2}); (void)c; }, "not a permutation");
  expect_error(+[](tl::ptr<float>) { auto a = tl::arange(0, 8); bad_line = __LINE__; auto c = tl::expand_dims(a, 3); (void)c; }, "out of range");
  expect_error(+[](tl::ptr<float>) { auto a = tl::arange(0, 8); bad_line = __LINE__; auto c = a[{tl::_, tl::_, tl::None}]; (void)c; }, "must name each dimension");
  expect_error(+[](tl::ptr<float>) { auto a = tl::arange(0, 8); bad_line = __LINE__; auto [p, q] = tl::split(a); (void)p; (void)q; }, "last dimension of 2");
  expect_error(+[](tl::ptr<float>) { auto a = tl::arange(0, 8); bad_line = __LINE__; auto c = tl::cat(a, tl::reshape(a, {2, 4})); (void)c; }, "differ only in dimension 0");
  expect_error(+[](tl::ptr<float>) { auto a = tl::arange(0, 8); bad_line = __LINE__; auto c = tl::join(a, tl::arange(0, 4)); (void)c; }, "cannot be broadcast");
  expect_error(+[](tl::ptr<float>) { auto a = tl::arange(0, 4); bad_line = __LINE__; auto c = tl::flip(a, 1); (void)c; }, "out of range");
  expect_error(+[](tl::ptr<float>) { auto a = tl::program_id(0); bad_line = __LINE__; auto c = tl::interleave(a, a); (void)c; }, "rank 1 or more");
}

TEST_CASE("errors: every dimension of a block is a power of two") {
  expect_error(+[](tl::ptr<float>) { bad_line = __LINE__; auto c = tl::zeros<float>({4, 3}); (void)c; }, "must be a power of two");
  expect_error(+[](tl::ptr<float>) { auto a = tl::arange(0, 8); bad_line = __LINE__; auto c = tl::reshape(tl::cat(a, a), {2, 8, 1}) + tl::zeros<int32_t>({2, 8, 3}); (void)c; }, "must be a power of two");
  expect_error(+[](tl::ptr<float>) { auto a = tl::arange(0, 8); bad_line = __LINE__; auto c = tl::broadcast_to(a, {6, 8}); (void)c; }, "must be a power of two");
  expect_error(+[](tl::ptr<float>) { auto a = tl::arange(0, 4); bad_line = __LINE__; auto c = tl::cat(a, tl::arange(0, 2)); (void)c; }, "must be a power of two");
  expect_error(+[](tl::ptr<float>) { auto a = tl::arange(0, 4); bad_line = __LINE__; auto c = tl::reshape(tl::broadcast_to(a, {2, 4}), {1, 8, 1, 1}) + tl::full<float>({1 << 11, 1 << 10}, 0); (void)c; }, "at most 2^20");
}

TEST_CASE("errors: element types and constants") {
  expect_error(+[](tl::ptr<float>) { auto a = tl::arange(0, 8); bad_line = __LINE__; auto c = tl::bitcast<int64_t>(a); (void)c; }, "changes the width");
  expect_error(+[](tl::ptr<float>) { bad_line = __LINE__; auto c = tl::full<int8_t>({4}, 300); (void)c; }, "does not fit");
  expect_error(+[](tl::ptr<float> x) { bad_line = __LINE__; auto c = x.to<int32_t>(); (void)c; }, "pointers convert only");
}

TEST_CASE("errors: reductions and scans") {
  expect_error(+[](tl::ptr<float>) { auto a = tl::arange(0, 8); bad_line = __LINE__; auto c = tl::sum(a, 1); (void)c; }, "out of range");
  expect_error(+[](tl::ptr<float>) { auto a = tl::reshape(tl::arange(0, 8), {2, 4}); bad_line = __LINE__; auto c = tl::max(a, -3); (void)c; }, "out of range");
  expect_error(+[](tl::ptr<float>) { auto a = tl::arange(0, 8); bad_line = __LINE__; auto c = tl::argmax(a, 2); (void)c; }, "out of range");
  expect_error(+[](tl::ptr<float>) { auto a = tl::arange(0, 8); bad_line = __LINE__; auto c = tl::cumsum(a, 1); (void)c; }, "out of range");
  expect_error(+[](tl::ptr<float>) { auto a = tl::program_id(0); bad_line = __LINE__; auto c = tl::cumsum(a); (void)c; }, "scalar");
  expect_error(+[](tl::ptr<float>) { auto a = tl::arange(0, 8).to<float>(); bad_line = __LINE__; auto c = tl::softmax(a, 1); (void)c; }, "out of range");
  // A combine function must return a scalar of the operand's type.
  expect_error(+[](tl::ptr<float>) { auto a = tl::arange(0, 8); bad_line = __LINE__; auto c = tl::reduce(a, 0, [](tl::i32 x, tl::i32 y) { return tl::broadcast_to(x + y, {2}); }); (void)c; }, "combine function returns");
}

TEST_CASE("errors: dot shapes and element types") {
  expect_error(+[](tl::ptr<float>) { auto a = tl::zeros<float>({16, 32}); auto b = tl::zeros<float>({16, 16}); bad_line = __LINE__; auto c = tl::dot(a, b); (void)c; }, "inner dimensions differ");
  expect_error(+[](tl::ptr<float>) { auto a = tl::zeros<float>({16, 16}); bad_line = __LINE__; auto c = tl::dot(a, a, tl::zeros<float>({16, 32})); (void)c; }, "accumulator has shape");
  expect_error(+[](tl::ptr<float>) { auto a = tl::zeros<float>({8, 16}); bad_line = __LINE__; auto c = tl::dot(a, tl::zeros<float>({16, 16})); (void)c; }, "at least 16");
  expect_error(+[](tl::ptr<float>) { auto a = tl::zeros<float>({16}); bad_line = __LINE__; auto c = tl::dot(a, a); (void)c; }, "2-D (or batched 3-D)");
  expect_error(+[](tl::ptr<float>) { auto a = tl::zeros<int32_t>({16, 16}); bad_line = __LINE__; auto c = tl::dot(a, a); (void)c; }, "cannot accumulate");
  expect_error(+[](tl::ptr<float>) { auto a = tl::zeros<tritium::half>({16, 16}); bad_line = __LINE__; auto c = tl::dot(a, a, tl::zeros<int32_t>({16, 16})); (void)c; }, "cannot accumulate");
  expect_error(+[](tl::ptr<float>) { auto a = tl::zeros<float>({16, 16}); bad_line = __LINE__; auto c = tl::dot(a, a, tl::zeros<float>({16, 16}), "tf64"); (void)c; }, "unknown input_precision");
  expect_error(+[](tl::ptr<float>) { auto a = tl::zeros<float>({2, 16, 16}); auto b = tl::zeros<float>({4, 16, 16}); bad_line = __LINE__; auto c = tl::dot(a, b); (void)c; }, "accumulator has shape");
}

TEST_CASE("errors: loads, stores and atomics") {
  expect_error(+[](tl::ptr<float> x) { auto offs = tl::arange(0, 8); bad_line = __LINE__; auto v = tl::load(x + offs, tl::arange(0, 4) < 2); (void)v; }, "mask");
  expect_error(+[](tl::ptr<float> x) { auto offs = tl::arange(0, 8); bad_line = __LINE__; tl::store(x + offs, 1.f, tl::arange(0, 4) < 2); }, "mask");
  expect_error(+[](tl::ptr<float> x) { auto offs = tl::arange(0, 8); bad_line = __LINE__; tl::store(x + offs, tl::zeros<float>({16})); }, "store of a value of shape");
  expect_error(+[](tl::ptr<float> x) { bad_line = __LINE__; auto v = tl::load(x, {.cache_modifier = ".xx"}); (void)v; }, "unknown cache_modifier");
  expect_error(+[](tl::ptr<float> x) { bad_line = __LINE__; tl::store(x, 1.f, {.eviction_policy = "evict_sometimes"}); }, "unknown eviction_policy");
  expect_error(+[](tl::ptr<float> x) { bad_line = __LINE__; tl::atomic_add(x, 1.f, "strong"); }, "unknown atomic sem");
  expect_error(+[](tl::ptr<float> x) { bad_line = __LINE__; tl::atomic_add(x, 1.f, "relaxed", "warp"); }, "unknown atomic scope");
  expect_error(+[](tl::ptr<float> x) { auto offs = tl::arange(0, 8); bad_line = __LINE__; tl::atomic_max(x + offs, 1.f, tl::arange(0, 4) < 2); }, "mask");
  expect_error(+[](tl::ptr<float> x) { auto p = tl::cast<tritium::pointer<int8_t>>(x); bad_line = __LINE__; tl::atomic_add(p, 1); }, "not supported");
  expect_error(+[](tl::ptr<float> x) { auto p = tl::cast<tritium::pointer<float>>(x); bad_line = __LINE__; tl::atomic_or(tl::cast<tritium::pointer<double>>(p), 1.0); }, "needs integer elements");
}

TEST_CASE("errors: control flow") {
  // A loop-carried value may not change its type (shape or element type).
  expect_error(+[](tl::ptr<float>) { auto acc = tl::zeros<float>({4}); for (auto i : tl::range(0, 4)) { (void)i; bad_line = __LINE__; acc = tl::zeros<float>({8}); } (void)acc; }, "changes type");
  expect_error(+[](tl::ptr<float>) { auto acc = tl::zeros<float>({4}); bad_line = __LINE__; tl::while_([&] { return tl::sum(acc) < 10.f; }, [&] { acc = tl::zeros<float>({2}); }); }, "changes type");
  expect_error(+[](tl::ptr<float>) { tl::f32 v; bad_line = __LINE__; tl::if_(tl::program_id(0) == 0, [&] { v = tl::zeros<float>({4}); }, [&] { v = tl::zeros<float>({2}); }); }, "in one branch");
  expect_error(+[](tl::ptr<float>) { auto c = tl::arange(0, 4) < 2; bad_line = __LINE__; tl::if_(c, [] {}); }, "i1 scalar");
  expect_error(+[](tl::ptr<float>) { auto n = tl::program_id(0); bad_line = __LINE__; tl::while_([&] { return tl::arange(0, 4) < n; }, [&] { n = n + 1; }); }, "i1 scalar");
  expect_error(+[](tl::ptr<float>) { bad_line = __LINE__; for (auto i : tl::range(0, 4)) { (void)i; break; } }, "left by break or return");
  expect_error(+[](tl::ptr<float>) { tl::f32 v; tl::if_(tl::program_id(0) == 0, [&] { v = tl::zeros<float>({4}); }); bad_line = __LINE__; auto w = v + 1.f; (void)w; }, "has no value");
  // A container of handles replaced by a moved-in one cannot be carried.
  expect_error(+[](tl::ptr<float>) { std::vector<tl::f32> v{tl::zeros<float>({4})}; bad_line = __LINE__; for (auto i : tl::range(0, 4)) { (void)i; v = std::vector<tl::f32>{v[0] + 1.f}; } }, "destroyed or moved from");
  expect_error(+[](tl::ptr<float>) { std::vector<tl::f32> v{tl::zeros<float>({4})}; auto n = tl::program_id(0); bad_line = __LINE__; tl::while_([&] { return n < 3; }, [&] { n = n + 1; v = std::vector<tl::f32>{v[0] + 1.f}; }); }, "destroyed or moved from");
  expect_error(+[](tl::ptr<float>) { auto z = tl::zeros<float>({4, 4}); bad_line = __LINE__; for (auto i : tl::range(z.to<int32_t>(), 4)) { (void)i; } }, "integer scalars");
}

TEST_CASE("errors: gather, histogram, range options") {
  expect_error(+[](tl::ptr<float>) { auto a = tl::arange(0, 8); bad_line = __LINE__; auto c = tl::gather(a, tl::reshape(a, {2, 4}), 0); (void)c; }, "one rank");
  expect_error(+[](tl::ptr<float>) { auto a = tl::reshape(tl::arange(0, 8), {2, 4}); bad_line = __LINE__; auto c = tl::gather(a, tl::reshape(a, {4, 2}), 1); (void)c; }, "differ in dimension 0");
  expect_error(+[](tl::ptr<float>) { auto a = tl::arange(0, 8); bad_line = __LINE__; auto c = tl::histogram(a, 6); (void)c; }, "power of two");
  expect_error(+[](tl::ptr<float>) { auto a = tl::reshape(tl::arange(0, 8), {2, 4}); bad_line = __LINE__; auto c = tl::histogram(a, 4); (void)c; }, "1-D integer");
  expect_error(+[](tl::ptr<float>) { auto a = tl::reshape(tl::arange(0, 8), {2, 4}); bad_line = __LINE__; auto c = tl::sort(a, 0); (void)c; }, "last dimension only");
  expect_error(+[](tl::ptr<float>) { auto a = tl::arange(0, 8); bad_line = __LINE__; auto c = tl::topk(a, 16); (void)c; }, "topk needs 0 < k");
  expect_error(+[](tl::ptr<float>) { bad_line = __LINE__; for (auto i : tl::range(0, 4, 1, {.num_stages = 0})) { (void)i; } }, "must be positive");
}

TEST_CASE("errors: block pointers and tensor descriptors") {
  expect_error(+[](tl::ptr<float> x) { bad_line = __LINE__; auto bp = tl::make_block_ptr(x, {4, 4}, {4, 1}, {0}, {4, 4}); (void)bp; }, "must all have the block's rank");
  expect_error(+[](tl::ptr<float> x) { bad_line = __LINE__; auto bp = tl::make_block_ptr(x, {4, 4}, {4, 1}, {0, 0}, {4, 3}); (void)bp; }, "power-of-two");
  expect_error(+[](tl::ptr<float> x) { auto bp = tl::make_block_ptr(x, {4, 4}, {4, 1}, {0, 0}, {4, 4}); bad_line = __LINE__; auto v = tl::load(bp, {.boundary_check = {2}}); (void)v; }, "boundary_check names dimension 2");
  expect_error(+[](tl::ptr<float> x) { auto bp = tl::make_block_ptr(x, {4, 4}, {4, 1}, {0, 0}, {4, 4}); bad_line = __LINE__; bp = tl::advance(bp, {1}); }, "advance: 1 offsets");
  expect_error(+[](tl::ptr<float> x) { auto d = tl::make_tensor_descriptor(x, {4, 4}, {4, 1}, {4, 4}); bad_line = __LINE__; auto v = d.load({0}); (void)v; }, "takes 2 offsets");
  expect_error(+[](tl::ptr<float> x) { auto bp = tl::make_block_ptr(x, {4, 4}, {4, 1}, {0, 0}, {4, 4}); bad_line = __LINE__; auto v = tl::load(bp, {.boundary_check = {0}, .padding_option = "ones"}); (void)v; }, "unknown padding_option");
}

TEST_CASE("errors: static_assert_ and hints") {
  expect_error(+[](tl::ptr<float>) { bad_line = __LINE__; tl::static_assert_(2 + 2 == 5, "arithmetic"); }, "static assertion failed: arithmetic");
  expect_error(+[](tl::ptr<float>) { bad_line = __LINE__; auto v = tl::multiple_of(tl::arange(0, 4), 0); (void)v; }, "must be positive");
}
// clang-format on
