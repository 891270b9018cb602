// TRITIUM_CHECK over a corpus of 1,000 random kernels (issue 38's target): each drawn from six
// families (1-D and 2-D tiles, loads, stores, atomics, pointers carried through a loop, i32
// products that wrap, misaligned byte offsets, scalar accesses) with random dtypes, tile sizes,
// shapes and one injected fault: past the end, before the start, far away, wrapped past 2^31,
// or misaligned. Each is launched twice on every device: in bounds (no report may come) and
// with its fault (the report must come, and must say what happened). The buffers lie between
// guard elements that must keep their values: no access outside a buffer may land.
#include "common.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace bad_inputs {
namespace {

using tl::_;
using tl::None;

template <class T>
void one_d(tl::ptr<T> x, tl::ptr<T> y, tl::i32 n, tl::i32 shift, tl::constexpr_<int> BLOCK,
           tl::constexpr_<int> OP) {
  auto base = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = base < n;
  auto offs = base + shift;
  if (OP == 0)
    tl::store(y + base, tl::load(x + offs, mask), mask);
  else if (OP == 1)
    tl::store(x + offs, tl::load(y + base, mask), mask);
  else if (OP == 2)
    tl::atomic_add(x + offs, tl::load(y + base, mask), mask);
  else
    tl::store(y + base, tl::load(x + offs, mask, T(1)), mask);
}

template <class T>
void two_d(tl::ptr<T> x, tl::ptr<T> y, tl::i32 rows, tl::i32 cols, tl::i32 sr, tl::i32 sc,
           tl::constexpr_<int> BM, tl::constexpr_<int> BN, tl::constexpr_<int> OP) {
  auto r = tl::program_id(0) * BM + tl::arange(0, BM);
  auto c = tl::program_id(1) * BN + tl::arange(0, BN);
  auto mask = (r[{_, None}] < rows) && (c[{None, _}] < cols);
  auto in_x = (r[{_, None}] + sr) * cols + (c[{None, _}] + sc);
  auto in_y = r[{_, None}] * cols + c[{None, _}];
  if (OP == 0)
    tl::store(y + in_y, tl::load(x + in_x, mask), mask);
  else
    tl::store(x + in_x, tl::load(y + in_y, mask), mask);
}

template <class T>
void carried(tl::ptr<T> x, tl::ptr<T> out, tl::i32 start, tl::i32 trips,
             tl::constexpr_<int> BLOCK) {
  auto p = x + start + tl::arange(0, BLOCK);
  auto acc = tl::zeros<T>({BLOCK});
  for (auto i : tl::range(0, trips)) {
    (void)i;
    acc = acc + tl::load(p);
    p = p + BLOCK;
  }
  tl::store(out + tl::arange(0, BLOCK), acc);
}

void product(tl::ptr<float> x, tl::i32 a, tl::i32 b, tl::i32 c, tl::constexpr_<int> BLOCK) {
  tl::store(x + (a * b + c + tl::arange(0, BLOCK)), tl::full<float>({BLOCK}, 2.0f));
}

void bytes_as_floats(tl::ptr<uint8_t> x, tl::i32 byte_offset, tl::constexpr_<int> BLOCK) {
  auto p = (x + byte_offset).to<tl::ptr<float>>() + tl::arange(0, BLOCK);
  tl::store(p, tl::full<float>({BLOCK}, 2.0f));
}

template <class T>
void scalar_at(tl::ptr<T> x, tl::i32 at) {
  tl::store(x + at, tl::load(x) + T(1));
}

constexpr size_t kGuard = 96;

// The corpus's kernels, each made once per element type, checked.
template <class... P>
tritium::JitFunction<P...>& checked(tritium::JitFunction<P...>& k) {
  tritium::CompileOptions o;
  o.check_bounds = true;
  k.options(o);
  return k;
}

// A buffer of n elements between guards of 99s, itself zero, on device d.
template <class T>
Guarded<T> guarded(Device d, size_t n) {
  return Guarded<T>(d, n, kGuard, T(99), T(0));
}

struct Tally {
  int cases = 0, reported = 0, false_reports = 0, wrong_words = 0, corrupted = 0;
};

// Launches `clean` (must not report) and `faulty` (must report with every part of `expect`).
void run_case(Tally& t, const std::function<void()>& clean, const std::function<void()>& faulty,
              const std::vector<std::string>& expect, const std::function<bool()>& guards_hold,
              const std::string& what) {
  ++t.cases;
  try {
    clean();
  } catch (const Error& e) {
    ++t.false_reports;
    MESSAGE(what << ": a false report: " << e.what());
  }
  try {
    faulty();
    MESSAGE(what << ": no report");
  } catch (const Error& e) {
    ++t.reported;
    std::string m = e.what();
    for (const std::string& part : expect)
      if (m.find(part) == std::string::npos) {
        ++t.wrong_words;
        MESSAGE(what << ": the report lacks '" << part << "': " << m);
        break;
      }
  }
  if (!guards_hold()) {
    ++t.corrupted;
    MESSAGE(what << ": memory beside the buffer changed");
  }
}

// The fault injected into an index: past the end, before the start, or far from both.
int32_t fault(std::mt19937& rng) {
  switch (rng() % 4) {
  case 0:
    return 1 + static_cast<int32_t>(rng() % 40);
  case 1:
    return -1 - static_cast<int32_t>(rng() % 40);
  case 2:
    return (1 << 20) + static_cast<int32_t>(rng() % 1000);
  default:
    return -(1 << 24) - static_cast<int32_t>(rng() % 1000);
  }
}

template <class T>
void run_one_d(Tally& t, Device d, std::mt19937& rng, int id) {
  static auto k0 = tritium::jit(one_d<T>, "corpus_one_d");
  auto& k = checked(k0);
  const int block = 16 << (rng() % 4);
  int op = static_cast<int>(rng() % 4);
  if (op == 2 && sizeof(T) < 4)
    op = 1; // atomics take 32- and 64-bit elements
  const int n = 1 + static_cast<int>(rng() % 300);
  const int32_t shift = fault(rng);
  auto x = guarded<T>(d, n);
  auto y = guarded<T>(d, n);
  const tritium::LaunchGrid grid{tritium::cdiv(n, block)};
  const char* ops[] = {"load", "store", "atomic_rmw", "load"};
  run_case(
      t, [&] { k[grid](x.middle, y.middle, n, 0, block, op); },
      [&] { k[grid](x.middle, y.middle, n, shift, block, op); },
      {"in kernel 'corpus_one_d'", fmt::format("of the {} through argument 0", ops[op]),
       fmt::format("outside the buffer's {} bytes", n * sizeof(T))},
      [&] { return x.guards_hold() && y.guards_hold(); },
      fmt::format("case {} one_d<{}> n={} block={} op={} shift={}", id, sizeof(T), n, block, op,
                  shift));
}

template <class T>
void run_two_d(Tally& t, Device d, std::mt19937& rng, int id) {
  static auto k0 = tritium::jit(two_d<T>, "corpus_two_d");
  auto& k = checked(k0);
  const int bm = 8 << (rng() % 3), bn = 16 << (rng() % 2);
  const int op = static_cast<int>(rng() % 2);
  const int rows = 1 + static_cast<int>(rng() % 40), cols = 1 + static_cast<int>(rng() % 70);
  int32_t sr = 0, sc = 0;
  (rng() % 2 ? sr : sc) = fault(rng);
  auto x = guarded<T>(d, static_cast<size_t>(rows) * cols);
  auto y = guarded<T>(d, static_cast<size_t>(rows) * cols);
  const tritium::LaunchGrid grid{tritium::cdiv(rows, bm), tritium::cdiv(cols, bn)};
  run_case(
      t, [&] { k[grid](x.middle, y.middle, rows, cols, 0, 0, bm, bn, op); },
      [&] { k[grid](x.middle, y.middle, rows, cols, sr, sc, bm, bn, op); },
      {"in kernel 'corpus_two_d'",
       fmt::format("of the {} through argument 0", op == 0 ? "load" : "store"),
       fmt::format("outside the buffer's {} bytes", rows * cols * sizeof(T))},
      [&] { return x.guards_hold() && y.guards_hold(); },
      fmt::format("case {} two_d<{}> {}x{} tile {}x{} op={} shift=({}, {})", id, sizeof(T), rows,
                  cols, bm, bn, op, sr, sc));
}

template <class T>
void run_carried(Tally& t, Device d, std::mt19937& rng, int id) {
  static auto k0 = tritium::jit(carried<T>, "corpus_carried");
  auto& k = checked(k0);
  const int block = 16 << (rng() % 3);
  const int trips = 1 + static_cast<int>(rng() % 6);
  auto x = guarded<T>(d, static_cast<size_t>(block) * trips);
  auto out = guarded<T>(d, block);
  int32_t start = 0, faulty_trips = trips;
  if (rng() % 2)
    faulty_trips = trips + 1 + static_cast<int32_t>(rng() % 3);
  else
    start = fault(rng);
  run_case(
      t, [&] { k[{1}](x.middle, out.middle, 0, trips, block); },
      [&] { k[{1}](x.middle, out.middle, start, faulty_trips, block); },
      {"in kernel 'corpus_carried'", "of the load through argument 0",
       fmt::format("outside the buffer's {} bytes", block * trips * sizeof(T))},
      [&] { return x.guards_hold() && out.guards_hold(); },
      fmt::format("case {} carried<{}> block={} trips={} -> start={} trips={}", id, sizeof(T),
                  block, trips, start, faulty_trips));
}

void run_product(Tally& t, Device d, std::mt19937& rng, int id) {
  static auto k0 = tritium::jit(product, "corpus_product");
  auto& k = checked(k0);
  const int block = 16 << (rng() % 3);
  const int n = block + static_cast<int>(rng() % 200);
  // a * b past 2^31; c brings the wrapped sum to `r`, inside the buffer or past it.
  const int32_t a = (1 << 16) + static_cast<int32_t>(rng() % 50000);
  const int32_t b = (1 << 15) + static_cast<int32_t>(rng() % 30000);
  const auto wrapped = static_cast<int32_t>(static_cast<uint32_t>(a) * static_cast<uint32_t>(b));
  const int32_t r = static_cast<int32_t>(rng() % (n + 40));
  const int32_t c = static_cast<int32_t>(static_cast<uint32_t>(r) - static_cast<uint32_t>(wrapped));
  const int32_t clean_c = static_cast<int32_t>(rng() % (n - block + 1));
  auto x = guarded<float>(d, n);
  run_case(
      t, [&] { k[{1}](x.middle, 1, 1, clean_c - 1, block); },
      [&] { k[{1}](x.middle, a, b, c, block); },
      {"in kernel 'corpus_product'", "of the store through argument 0",
       "its i32 element offset overflowed"},
      [&] { return x.guards_hold(); },
      fmt::format("case {} product block={} n={} a={} b={} c={}", id, block, n, a, b, c));
}

void run_misaligned(Tally& t, Device d, std::mt19937& rng, int id) {
  static auto k0 = tritium::jit(bytes_as_floats, "corpus_misaligned");
  auto& k = checked(k0);
  const int block = 16 << (rng() % 3);
  const size_t n = 4 * static_cast<size_t>(block) + 8;
  auto x = guarded<uint8_t>(d, n);
  const int32_t aligned = 4 * static_cast<int32_t>(rng() % 3);
  const int32_t off = aligned + 1 + static_cast<int32_t>(rng() % 3) - (rng() % 2 ? 4 : 0);
  run_case(
      t, [&] { k[{1}](x.middle, aligned, block); }, [&] { k[{1}](x.middle, off, block); },
      {"in kernel 'corpus_misaligned'", "of the store through argument 0", "byte offset "},
      [&] { return x.guards_hold(); },
      fmt::format("case {} misaligned block={} byte offset {}", id, block, off));
}

template <class T>
void run_scalar(Tally& t, Device d, std::mt19937& rng, int id) {
  static auto k0 = tritium::jit(scalar_at<T>, "corpus_scalar");
  auto& k = checked(k0);
  const int n = 1 + static_cast<int>(rng() % 50);
  const int32_t at = rng() % 2 ? n + static_cast<int32_t>(rng() % 10) : fault(rng) % n - n;
  auto x = guarded<T>(d, n);
  run_case(
      t, [&] { k[{1}](x.middle, n - 1); }, [&] { k[{1}](x.middle, at); },
      {"in kernel 'corpus_scalar'", "element [] of the store through argument 0",
       fmt::format("outside the buffer's {} bytes", n * sizeof(T))},
      [&] { return x.guards_hold(); },
      fmt::format("case {} scalar<{}> n={} at={}", id, sizeof(T), n, at));
}

template <class T>
void run_typed(Tally& t, Device d, std::mt19937& rng, int id, unsigned family) {
  switch (family) {
  case 0:
    return run_one_d<T>(t, d, rng, id);
  case 1:
    return run_two_d<T>(t, d, rng, id);
  case 2:
    return run_carried<T>(t, d, rng, id);
  default:
    return run_scalar<T>(t, d, rng, id);
  }
}

TEST_CASE("TRITIUM_CHECK: 1,000 random kernels with one injected fault each, on every device") {
  const int cases =
      std::getenv("TRITIUM_CORPUS_CASES") ? std::atoi(std::getenv("TRITIUM_CORPUS_CASES")) : 1000;
  for (Device d : all_devices()) {
    CAPTURE(d.name());
    std::mt19937 rng(20261129);
    Tally t;
    for (int id = 0; id < cases; ++id) {
      const unsigned family = rng() % 6;
      if (family == 4) {
        run_product(t, d, rng, id);
      } else if (family == 5) {
        run_misaligned(t, d, rng, id);
      } else {
        switch (rng() % 4) {
        case 0:
          run_typed<float>(t, d, rng, id, family);
          break;
        case 1:
          run_typed<int32_t>(t, d, rng, id, family);
          break;
        case 2:
          run_typed<int64_t>(t, d, rng, id, family);
          break;
        default:
          run_typed<uint8_t>(t, d, rng, id, family);
          break;
        }
      }
    }
    MESSAGE("bounds corpus on " << d.name() << ": " << t.cases << " kernels, " << t.reported
                                << " reported, " << t.wrong_words << " reports missing a part, "
                                << t.false_reports << " false reports, " << t.corrupted
                                << " with memory beside a buffer changed");
    CHECK(t.reported == t.cases);
    CHECK(t.wrong_words == 0);
    CHECK(t.false_reports == 0);
    CHECK(t.corrupted == 0);
  }
}

} // namespace
} // namespace bad_inputs
