// Kernels that fail while being traced: launched again they fail again the same way (nothing
// half-built is cached), and the thread traces other kernels normally afterwards.
#include "common.hpp"

#include <stdexcept>

namespace bad_inputs {
namespace {

void throws_error(tl::ptr<float> out, tl::constexpr_<int> BLOCK) {
  for (auto k : tl::range(0, 4)) { // fails inside an open loop and branch
    tl::if_(k < 2, [&] {
      auto offs = tl::arange(0, BLOCK); // BLOCK = 24: not a power of two
      tl::store(out + offs, tl::zeros<float>({BLOCK}));
    });
  }
}

int user_exception_traces = 0;
void throws_user_exception(tl::ptr<float> out) {
  ++user_exception_traces;
  auto v = tl::zeros<float>({16});
  for (auto k : tl::range(0, 4)) {
    v = v + k.to<float>();
    throw std::runtime_error("the user's own exception");
  }
  tl::store(out + tl::arange(0, 16), v);
}

TEST_CASE("bad input: a kernel that throws while tracing, launched again") {
  auto bad = tritium::jit(throws_error, "throws_error");
  auto good = tritium::jit(add_one, "add_one");
  for (Device d : all_devices()) {
    CAPTURE(d.name());
    auto x = d.from_host(std::vector<float>(32, 1.0f));
    size_t compiled = bad.num_compiled();
    for (int attempt = 0; attempt < 2; ++attempt) {
      CHECK_ERROR((bad[{1}](x, 24)), "tracing.cpp:", "in kernel 'throws_error'", "power of two");
      CHECK(bad.num_compiled() == compiled);
      good[{1}](x, x, 32, 32); // another kernel traces and runs on this thread
      d.synchronize();
    }
    CHECK(x.to_host()[0] == 3.0f);
    bad[{1}](x, 32); // a good specialization of the same kernel works
  }
}

TEST_CASE("bad input: a kernel that throws its own exception while tracing") {
  auto bad = tritium::jit(throws_user_exception, "throws_user_exception");
  auto good = tritium::jit(add_one, "add_one");
  auto d = tritium::device("interpreter");
  auto x = d.alloc<float>(32);
  user_exception_traces = 0;
  for (int attempt = 0; attempt < 2; ++attempt) {
    // Not a tritium::Error: the user's exception passes through unchanged.
    CHECK_THROWS_WITH_AS(bad[{1}](x), "the user's own exception", std::runtime_error);
    good[{1}](x, x, 32, 32);
  }
  CHECK(user_exception_traces == 2);
  CHECK(bad.num_compiled() == 0);
}

TEST_CASE("bad input: a language function called outside a kernel") {
  CHECK_ERROR(tl::program_id(0), "tracing.cpp:",
              "a tritium language function was called outside a kernel being traced");
  CHECK_ERROR(tl::zeros<float>({16}), "outside a kernel");
}

void launches_inside(tl::ptr<float> out) {
  auto inner = tritium::jit(add_one, "add_one");
  auto d = tritium::device("interpreter");
  auto x = d.alloc<float>(16);
  inner[{1}](x, x, 16, 16);
  tl::store(out + tl::arange(0, 16), tl::zeros<float>({16}));
}

TEST_CASE("bad input: a kernel that launches another kernel while being traced") {
  auto k = tritium::jit(launches_inside, "launches_inside");
  auto x = tritium::device("interpreter").alloc<float>(16);
  CHECK_ERROR((k[{1}](x)), "kernel 'add_one' is traced while kernel 'launches_inside'",
              "cannot launch or trace another");
}

void zero_step_static(tl::ptr<float> out) {
  for (int64_t i : tl::static_range(0, 4, 0))
    (void)i;
  tl::store(out, 0.0f);
}

void zero_step_range(tl::ptr<float> out) {
  auto v = tl::scalar<float>(0);
  for (auto i : tl::range(0, 4, 0))
    v = v + i.to<float>();
  tl::store(out, v);
}

TEST_CASE("bad input: a loop with step 0") {
  auto d = tritium::device("interpreter");
  auto x = d.alloc<float>(1);
  auto a = tritium::jit(zero_step_static, "zero_step_static");
  CHECK_ERROR((a[{1}](x)), "tracing.cpp:", "in kernel 'zero_step_static'",
              "tl::static_range with step 0 never ends");
  auto b = tritium::jit(zero_step_range, "zero_step_range");
  CHECK_ERROR((b[{1}](x)), "tracing.cpp:", "in kernel 'zero_step_range'",
              "tl::range with step 0 never ends");
}

// Found while writing the catalogue: static_range computed its trip count as
// (end - begin + step - 1) / step, wrong for negative steps and negative for empty ranges.
TEST_CASE("static_range follows Python's range for every sign of step") {
  auto collect = [](int64_t b, int64_t e, int64_t s) {
    std::vector<int64_t> out;
    for (int64_t i : tl::static_range(b, e, s))
      out.push_back(i);
    return out;
  };
  CHECK(collect(0, 5, 2) == std::vector<int64_t>{0, 2, 4});
  CHECK(collect(5, 0, -1) == std::vector<int64_t>{5, 4, 3, 2, 1});
  CHECK(collect(5, 0, -2) == std::vector<int64_t>{5, 3, 1});
  CHECK(collect(5, 0, 1).empty());
  CHECK(collect(0, 5, -1).empty());
  CHECK(collect(3, 3, 1).empty());
}

} // namespace
} // namespace bad_inputs
