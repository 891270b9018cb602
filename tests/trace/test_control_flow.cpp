// Tracing control flow: tl::range loops find their carried values, tl::if_ and tl::while_
// yield the variables they assign, and misuse is reported at the user's line.
#include <doctest/doctest.h>

#include <support/devices.hpp>
#include <tritium/ir/printer.hpp>

#include <numeric>
#include <string>
#include <vector>

namespace tl = tritium::tl;
using tritium::Error;

namespace {

// out[i] = sum over k < n of (x[i] * k), and count = number of iterations, via a loop that
// carries two values (acc, count) and leaves one variable (scale) untouched.
void loop_kernel(tl::ptr<float> x, tl::ptr<float> out, tl::ptr<int32_t> count_out, tl::i32 n) {
  auto offs = tl::arange(0, 16);
  auto v = tl::load(x + offs);
  auto acc = tl::zeros<float>({16});
  auto count = tl::scalar<int32_t>(0);
  auto scale = tl::scalar<float>(1.0);
  for (auto k : tl::range(0, n)) {
    acc = acc + v * k.to<float>() * scale;
    count += 1;
  }
  tl::store(out + offs, acc);
  tl::store(count_out + tl::arange(0, 1), tl::broadcast_to(count, {1}));
}

TEST_CASE("tl::range carries exactly the variables its body reassigns") {
  for (auto dev : tritium::testing::test_devices()) {
    CAPTURE(dev.name());
    std::vector<float> hx(16);
    std::iota(hx.begin(), hx.end(), 1.0f);
    auto x = dev.from_host(hx);
    auto out = dev.alloc<float>(16);
    auto cnt = dev.alloc<int32_t>(1);
    auto k = tritium::jit(loop_kernel, "loop_kernel");
    k[{1}](x, out, cnt, 5);
    auto r = out.to_host();
    for (int i = 0; i < 16; ++i)
      CHECK(r[i] == doctest::Approx(hx[i] * 10.0f)); // 0+1+2+3+4
    CHECK(cnt.to_host()[0] == 5);
    k[{1}](x, out, cnt, 0); // zero trips: carried values keep their initial value
    CHECK(out.to_host()[3] == 0.0f);
    CHECK(cnt.to_host()[0] == 0);
    auto f = k.trace(x, out, cnt, 5);
    const tritium::ir::Op* loop = nullptr;
    for (auto& op : f->entry().ops)
      if (op->kind == tritium::ir::OpKind::For)
        loop = op.get();
    REQUIRE(loop);
    CHECK(loop->results.size() == 2);     // acc and count, not scale or v
    CHECK(loop->body().args.size() == 3); // induction variable + 2 carried
  }
}

void nested_kernel(tl::ptr<int32_t> out, tl::i32 n, tl::i32 m) {
  auto total = tl::scalar<int32_t>(0);
  for (auto i : tl::range(0, n)) {
    auto row = tl::scalar<int32_t>(0);
    for (auto j : tl::range(0, m, 2))
      row += i * 100 + j;
    total += row;
  }
  tl::store(out + tl::arange(0, 1), tl::broadcast_to(total, {1}));
}

TEST_CASE("nested tl::range loops with a non-unit step") {
  for (auto dev : tritium::testing::test_devices()) {
    CAPTURE(dev.name());
    auto out = dev.alloc<int32_t>(1);
    auto k = tritium::jit(nested_kernel, "nested_kernel");
    k[{1}](out, 3, 5);
    int expect = 0;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; j += 2)
        expect += i * 100 + j;
    CHECK(out.to_host()[0] == expect);
  }
}

void branch_kernel(tl::ptr<float> out, tl::i32 flag) {
  auto offs = tl::arange(0, 8);
  auto v = tl::full<float>({8}, 1.0);
  tl::f32 s; // assigned in both branches: defined after the if
  tl::if_(
      flag > 0,
      [&] {
        v = v * 2.0f;
        s = tl::scalar<float>(10.0);
      },
      [&] { s = tl::scalar<float>(-1.0); });
  tl::store(out + offs, v + s);
}

TEST_CASE("tl::if_ yields what its branches assign") {
  for (auto dev : tritium::testing::test_devices()) {
    CAPTURE(dev.name());
    auto out = dev.alloc<float>(8);
    auto k = tritium::jit(branch_kernel, "branch_kernel");
    k[{1}](out, 3);
    CHECK(out.to_host()[7] == 12.0f);
    k[{1}](out, -3);
    CHECK(out.to_host()[0] == 0.0f);
  }
}

// Collatz steps of n, by a while loop whose condition reads the carried value.
void while_kernel(tl::ptr<int32_t> out, tl::i32 n) {
  auto x = n + 0;
  auto steps = tl::scalar<int32_t>(0);
  tl::while_([&] { return x != 1; },
             [&] {
               tl::i32 next;
               tl::if_((x % 2) == 0, [&] { next = x / 2; }, [&] { next = 3 * x + 1; });
               x = next;
               steps += 1;
             });
  tl::store(out + tl::arange(0, 1), tl::broadcast_to(steps, {1}));
}

TEST_CASE("tl::while_ loops on a traced condition") {
  for (auto dev : tritium::testing::test_devices()) {
    CAPTURE(dev.name());
    auto out = dev.alloc<int32_t>(1);
    auto k = tritium::jit(while_kernel, "while_kernel");
    k[{1}](out, 27);
    CHECK(out.to_host()[0] == 111);
  }
}

void changes_type(tl::ptr<float> out) {
  auto acc = tl::zeros<float>({16});
  for (auto k : tl::range(0, 4)) {
    (void)k;
    acc = tl::zeros<float>({32}); // the carried value changes shape
  }
  tl::store(out + tl::arange(0, 16), acc);
}

void leaves_loop(tl::ptr<float> out) {
  auto acc = tl::zeros<float>({16});
  for (auto k : tl::range(0, 4)) {
    (void)k;
    acc = acc + 1.0f;
    break;
  }
  tl::store(out + tl::arange(0, 16), acc);
}

void one_sided(tl::ptr<float> out, tl::i32 flag) {
  tl::f32 s;
  tl::if_(flag > 0, [&] { s = tl::scalar<float>(1.0); });
  tl::store(out + tl::arange(0, 16), s); // s has no value on the else path
}

TEST_CASE("control-flow misuse is reported with the kernel and the line") {
  auto dev = tritium::testing::interpreter();
  auto out = dev.alloc<float>(32);
  auto k1 = tritium::jit(changes_type, "changes_type");
  CHECK_THROWS_WITH_AS(k1[{1}](out),
                       doctest::Contains("changes type from tensor<16xf32> to "
                                         "tensor<32xf32>"),
                       Error);
  try {
    k1[{1}](out);
  } catch (const Error& e) {
    std::string m = e.what();
    CHECK(m.find("test_control_flow.cpp:") != std::string::npos);
    CHECK(m.find("changes_type") != std::string::npos);
  }
  auto k2 = tritium::jit(leaves_loop, "leaves_loop");
  CHECK_THROWS_WITH_AS(k2[{1}](out), doctest::Contains("left by break or return"), Error);
  auto k3 = tritium::jit(one_sided, "one_sided");
  CHECK_THROWS_WITH_AS(k3[{1}](out, 1), doctest::Contains("has no value"), Error);
}

} // namespace
