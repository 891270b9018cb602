// `acc = dot(a, b, acc)` in a K loop accumulates in the loop's carried buffer
// (codegen/targets/cpu/lower_dot.cpp) only where nothing else reads the carried value: kernels
// that read the old accumulator after the dot, or the new one beside the yield, compared with the
// interpreter bit for bit; and f16 operands read in place.
#include "compare.hpp"

#include <support/devices.hpp>

#include <doctest/doctest.h>

#include <random>
#include <vector>

namespace tl = tritium::tl;
using tritium::Device;
using tritium::half;
using tritium::testing::same_bits;

namespace {

// form 0: the plain accumulation; 1: the old accumulator read after the dot (not in place);
// 2: the new one read beside the yield. Operands in T (f32 or f16), accumulator in f32.
template <class T>
void acc_kernel(tl::ptr<T> a, tl::ptr<T> b, tl::ptr<float> c, tl::i32 K, tl::constexpr_<int> FORM) {
  auto rm = tl::arange(0, 16);
  auto rn = tl::arange(0, 32);
  auto rk = tl::arange(0, 16);
  auto acc = tl::zeros<float>({16, 32});
  auto seen = tl::zeros<float>({16, 32});
  for (auto k : tl::range(0, K / 16)) {
    auto ta = tl::load(a + rm[{tl::_, tl::None}] * K + k * 16 + rk[{tl::None, tl::_}]);
    auto tb = tl::load(b + (k * 16 + rk[{tl::_, tl::None}]) * 32 + rn[{tl::None, tl::_}]);
    auto next = tl::dot(ta, tb, acc, "ieee");
    if (FORM == 1)
      seen = seen + acc * 0.5f;
    else if (FORM == 2)
      seen = seen + next * 0.25f;
    acc = next;
  }
  tl::store(c + rm[{tl::_, tl::None}] * 32 + rn[{tl::None, tl::_}], acc + seen);
}

template <class T>
void check_forms() {
  const int K = 64;
  std::mt19937 rng(4);
  std::uniform_int_distribution<int> small(-4, 4); // exact products and sums in f32
  std::vector<T> ha(16 * K), hb(K * 32);
  for (auto& x : ha)
    x = T(static_cast<float>(small(rng)));
  for (auto& x : hb)
    x = T(static_cast<float>(small(rng)));
  for (Device dev : tritium::testing::test_devices()) {
    if (dev.name() == "interpreter")
      continue;
    for (int form = 0; form < 3; ++form) {
      CAPTURE(form);
      std::vector<float> want, got;
      for (Device d : {tritium::testing::interpreter(), dev}) {
        auto a = d.from_host(ha), b = d.from_host(hb);
        auto c = d.alloc<float>(16 * 32);
        tritium::jit(acc_kernel<T>, "dot_in_place")[{1}](a, b, c, K, form);
        (want.empty() ? want : got) = c.to_host();
      }
      CHECK(same_bits(want, got));
    }
  }
}

} // namespace

TEST_CASE("cpu: a dot accumulating in its loop's carried buffer, and the forms that may not") {
  check_forms<float>();
  check_forms<half>();
}
