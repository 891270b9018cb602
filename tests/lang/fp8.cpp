// fp8 (float8e4nv, float8e5, float8e4b8, float8e5b16): every code of each format decoded, and
// every code, every midpoint between neighbours and the overflow, NaN and underflow cases
// encoded, first on the host against values written from each format's definition, then in
// kernels on every device (the gpu-emulator included) bit for bit against the host.
#include "common.hpp"

#include <tritium/dlpack.hpp>
#include <tritium/float_format.hpp>

#include <bit>
#include <cstdint>
#include <limits>

using namespace lang_test;
using tritium::float8e4b8;
using tritium::float8e4nv;
using tritium::float8e5;
using tritium::float8e5b16;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Each format from its specification, independently of float_format.hpp: widths, bias, the
// largest finite value, and which codes are NaN or infinite.
struct Spec {
  int e, m, bias;
  double max;
  bool ieee;        // all-ones exponent: inf (mantissa 0) and NaN
  bool fnuz;        // 0x80 is the only NaN, no -0, no inf
  const char* name; // Triton's
};
template <class T>
Spec spec();
template <>
Spec spec<float8e4nv>() {
  return {4, 3, 7, 448, false, false, "float8e4nv"};
}
template <>
Spec spec<float8e5>() {
  return {5, 2, 15, 57344, true, false, "float8e5"};
}
template <>
Spec spec<float8e4b8>() {
  return {4, 3, 8, 240, false, true, "float8e4b8"};
}
template <>
Spec spec<float8e5b16>() {
  return {5, 2, 16, 57344, false, true, "float8e5b16"};
}

// The value of `code` written out from the specification.
double reference_value(const Spec& s, int code) {
  const bool neg = code & 0x80;
  const int mag = code & 0x7f, e = mag >> s.m, man = mag & ((1 << s.m) - 1);
  if (s.fnuz && code == 0x80)
    return kNaN;
  if (!s.ieee && !s.fnuz && mag == 0x7f)
    return kNaN;
  if (s.ieee && e == (1 << s.e) - 1)
    return man ? kNaN : (neg ? -kInf : kInf);
  double v =
      e == 0 ? std::ldexp(man, 1 - s.bias - s.m) : std::ldexp((1 << s.m) + man, e - s.bias - s.m);
  return neg ? -v : v;
}

bool same_value(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) ||
         (a == b && std::signbit(a) == std::signbit(b)); // -0 is not +0
}

// Probes for f32 -> fp8: every finite code's value, the midpoint of every pair of neighbours
// and one f32 ulp either side, overflow, infinities, NaN, underflow and f32 denormals.
template <class T>
std::vector<float> encode_probes() {
  const Spec s = spec<T>();
  std::vector<float> p;
  std::vector<double> positive;
  for (int c = 0; c < 0x80; ++c)
    if (double v = reference_value(s, c); std::isfinite(v))
      positive.push_back(v);
  for (size_t i = 0; i < positive.size(); ++i) {
    for (double sign : {1.0, -1.0}) {
      p.push_back(static_cast<float>(sign * positive[i]));
      if (i + 1 < positive.size()) {
        float mid = static_cast<float>(sign * (positive[i] + positive[i + 1]) / 2);
        p.push_back(mid);
        p.push_back(std::nextafter(mid, 0.f));
        p.push_back(std::nextafter(mid, 2 * mid));
      }
    }
  }
  for (double v : {s.max * 1.0625, s.max * 1.125, s.max * 1.5, s.max * 4, 1e30, kInf, -kInf,
                   -s.max * 1.0625, -s.max * 4, kNaN, -kNaN, 1e-30, -1e-30, 0.0, -0.0})
    p.push_back(static_cast<float>(v));
  p.push_back(std::numeric_limits<float>::denorm_min());
  p.push_back(-std::numeric_limits<float>::denorm_min());
  return p;
}

template <class T>
void host_format_matches_spec() {
  const Spec s = spec<T>();
  std::string format = s.name;
  CAPTURE(format);
  int finite = 0;
  for (int c = 0; c < 256; ++c) {
    CAPTURE(c);
    const double want = reference_value(s, c);
    const double got = static_cast<float>(T::from_bits(static_cast<uint8_t>(c)));
    CHECK_MESSAGE(same_value(got, want), "decodes to " << got << ", expected " << want);
    if (!std::isfinite(want)) // NaN, and e5m2's infinities (which saturate on the way back)
      continue;
    // Every value round-trips to its own code (f32 holds every fp8 value exactly).
    CHECK(T(static_cast<float>(want)).bits == c);
    finite += std::isfinite(want);
  }
  CHECK(finite == (s.ieee ? 248 : s.fnuz ? 255 : 254));
  // Ties to even, saturation, NaN, underflow.
  const double max = s.max, min_sub = std::ldexp(1.0, 1 - s.bias - s.m);
  CHECK(T(max).bits == T(max * 1.0625).bits);
  CHECK(T(kInf).bits == T(max).bits);
  CHECK(T(-kInf).bits == T(-max).bits);
  CHECK(std::isnan(static_cast<float>(T(kNaN))));
  CHECK(T(min_sub / 2).bits == 0);       // a tie: to the even code, 0
  CHECK(T(min_sub * 0.75).bits == 0x01); // above the tie
  CHECK(T(min_sub * 1.5).bits == 0x02);  // a tie between 1 and 2: even
  CHECK(T(-min_sub / 4).bits == (s.fnuz ? 0x00 : 0x80));
  const double one_plus_half_ulp = 1.0 + std::ldexp(1.0, -s.m - 1);
  CHECK(static_cast<float>(T(one_plus_half_ulp)) == 1.0f);
  CHECK(static_cast<float>(T(1.0 + 3 * std::ldexp(1.0, -s.m - 1))) ==
        static_cast<float>(1.0 + std::ldexp(1.0, 1 - s.m)));
}

TEST_CASE("fp8 formats on the host: every code against the specification") {
  host_format_matches_spec<float8e4nv>();
  host_format_matches_spec<float8e5>();
  host_format_matches_spec<float8e4b8>();
  host_format_matches_spec<float8e5b16>();
  // Codes stated in the formats' documents.
  CHECK(float8e4nv(1.0f).bits == 0x38);
  CHECK(float8e4nv(448.0f).bits == 0x7e);
  CHECK(float8e4nv(-448.0f).bits == 0xfe);
  CHECK(float8e4nv(kNaN).bits == 0x7f);
  CHECK(float8e5(1.0f).bits == 0x3c);
  CHECK(float8e5(57344.0f).bits == 0x7b);
  CHECK(float8e5(kInf).bits == 0x7b); // saturating, as cvt.rn.satfinite
  CHECK(float8e5(kNaN).bits == 0x7f);
  CHECK(float8e4b8(1.0f).bits == 0x40);
  CHECK(float8e4b8(240.0f).bits == 0x7f);
  CHECK(float8e4b8(kNaN).bits == 0x80);
  CHECK(float8e4b8(-0.0f).bits == 0x00);
  CHECK(float8e5b16(1.0f).bits == 0x40);
  CHECK(float8e5b16(kNaN).bits == 0x80);
}

template <class In, class Out>
void convert_kernel(tl::ptr<In> x, tl::ptr<Out> y, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto mask = offs < n;
  tl::store(y + offs, tl::load(x + offs, mask).template to<Out>(), mask);
}

template <class In, class Out>
std::vector<Out> run_convert(Device dev, const std::vector<In>& in) {
  auto k = tritium::jit(&convert_kernel<In, Out>, "convert_kernel");
  auto x = dev.from_host(in);
  auto y = dev.alloc<Out>(in.size());
  constexpr int block = 256;
  const int n = static_cast<int>(in.size());
  launch(k, {(n + block - 1) / block}, x, y, n, block);
  return y.to_host();
}

template <class T>
void device_conversions(Device dev) {
  std::string format = spec<T>().name;
  CAPTURE(format);
  // fp8 -> f32, f16, bf16: every code.
  std::vector<T> codes;
  for (int c = 0; c < 256; ++c)
    codes.push_back(T::from_bits(static_cast<uint8_t>(c)));
  auto f = run_convert<T, float>(dev, codes);
  auto h = run_convert<T, tritium::half>(dev, codes);
  auto bf = run_convert<T, tritium::bfloat16>(dev, codes);
  for (int c = 0; c < 256; ++c) {
    CAPTURE(c);
    const double want = static_cast<float>(codes[c]);
    CHECK_MESSAGE(same_value(f[c], want), "f32 " << f[c] << ", expected " << want);
    CHECK_MESSAGE(same_value(static_cast<float>(h[c]), want), "f16 " << float(h[c]));
    CHECK_MESSAGE(same_value(static_cast<float>(bf[c]), want), "bf16 " << float(bf[c]));
  }
  // f32 -> fp8, and f16 / f64 -> fp8 where the probe is exact in them.
  const std::vector<float> probes = encode_probes<T>();
  auto got = run_convert<float, T>(dev, probes);
  std::vector<double> as_double(probes.begin(), probes.end());
  auto got_d = run_convert<double, T>(dev, as_double);
  std::vector<tritium::half> as_half;
  std::vector<size_t> half_exact;
  for (size_t i = 0; i < probes.size(); ++i)
    if (tritium::half h16(probes[i]);
        same_value(static_cast<float>(h16), probes[i]) || std::isnan(probes[i])) {
      as_half.push_back(h16);
      half_exact.push_back(i);
    }
  auto got_h = run_convert<tritium::half, T>(dev, as_half);
  for (size_t i = 0; i < probes.size(); ++i) {
    CAPTURE(i);
    CAPTURE(probes[i]);
    const int want = T(probes[i]).bits;
    CHECK_MESSAGE(got[i].bits == want, "f32 -> code " << int(got[i].bits) << ", expected " << want);
    CHECK_MESSAGE(got_d[i].bits == want, "f64 -> code " << int(got_d[i].bits));
  }
  for (size_t j = 0; j < half_exact.size(); ++j) {
    CAPTURE(probes[half_exact[j]]);
    CHECK(got_h[j].bits == T(probes[half_exact[j]]).bits);
  }
}

TEST_CASE("fp8 conversions in kernels match the host bit for bit, on every device") {
  for (Device dev : devices_and_emulator()) {
    std::string name(dev.name());
    CAPTURE(name);
    device_conversions<float8e4nv>(dev);
    device_conversions<float8e5>(dev);
    device_conversions<float8e4b8>(dev);
    device_conversions<float8e5b16>(dev);
  }
}

// Arithmetic on fp8 operands computes in f32 and rounds once, as the interpreter's exact value
// rounded once; integers convert through the same rounding; a scalar fp8 argument arrives
// rounded.
template <class T>
void arith_kernel(tl::ptr<T> a, tl::ptr<T> b, tl::ptr<T> out, tl::ptr<int32_t> ints,
                  tl::tensor<T> s, tl::constexpr_<int> BLOCK) {
  auto o = tl::arange(0, BLOCK);
  auto x = tl::load(a + o), y = tl::load(b + o);
  tl::store(out + o, x + y);
  tl::store(out + BLOCK + o, x * y);
  tl::store(out + 2 * BLOCK + o, -x);
  tl::store(out + 3 * BLOCK + o, tl::where(x < y, x, y * s));
  tl::store(out + 4 * BLOCK + o, tl::load(ints + o).template to<T>());
}

template <class T>
void device_arithmetic(Device dev) {
  std::string format = spec<T>().name;
  CAPTURE(format);
  constexpr int block = 256;
  std::vector<T> a, b;
  std::vector<int32_t> ints;
  for (int i = 0; i < block; ++i) {
    a.push_back(T::from_bits(static_cast<uint8_t>(i)));
    b.push_back(T::from_bits(static_cast<uint8_t>((i * 37 + 11) & 0xff)));
    ints.push_back((i - 128) * 997);
  }
  const T s(1.5f);
  auto k = tritium::jit(&arith_kernel<T>, "arith_kernel");
  auto da = dev.from_host(a), db = dev.from_host(b);
  auto di = dev.from_host(ints);
  auto out = dev.alloc<T>(5 * block);
  launch(k, {1}, da, db, out, di, static_cast<float>(s), block);
  auto got = out.to_host();
  for (int i = 0; i < block; ++i) {
    CAPTURE(i);
    const double x = static_cast<float>(a[i]), y = static_cast<float>(b[i]);
    const double want[5] = {x + y, x * y, -x, x < y ? x : y * static_cast<float>(s),
                            static_cast<double>(ints[i])};
    for (int r = 0; r < 5; ++r) {
      CAPTURE(r);
      // where passes the selected operand's code through (an e5m2 infinity stays one); every
      // arithmetic result is rounded, and saturates.
      const T w = r == 3 && x < y ? a[i] : T(want[r]);
      CHECK_MESSAGE((got[r * block + i].bits == w.bits ||
                     (std::isnan(float(got[r * block + i])) && std::isnan(float(w)))),
                    "code " << int(got[r * block + i].bits) << ", expected " << int(w.bits));
    }
  }
}

TEST_CASE("fp8 arithmetic, comparisons and integer conversions, on every device") {
  for (Device dev : devices_and_emulator()) {
    std::string name(dev.name());
    CAPTURE(name);
    device_arithmetic<float8e4nv>(dev);
    device_arithmetic<float8e5>(dev);
    device_arithmetic<float8e4b8>(dev);
    device_arithmetic<float8e5b16>(dev);
  }
}

TEST_CASE("fp8 promotion follows Triton") {
  static_assert(std::is_same_v<decltype(std::declval<tl::f8e4nv>() + std::declval<tl::f8e4nv>()),
                               tl::f8e4nv>);
  static_assert(
      std::is_same_v<decltype(std::declval<tl::f8e4nv>() + std::declval<tl::f8e5>()), tl::f16>);
  static_assert(
      std::is_same_v<decltype(std::declval<tl::f8e5>() + std::declval<tl::bf16>()), tl::bf16>);
  static_assert(
      std::is_same_v<decltype(std::declval<tl::f8e4b8>() + std::declval<tl::f32>()), tl::f32>);
  static_assert(
      std::is_same_v<decltype(std::declval<tl::f8e4nv>() + std::declval<tl::i32>()), tl::f8e4nv>);
  CHECK(tritium::ir::to_string(tritium::lang::dtype_of<float8e5b16>()) == "f8e5b16");
  tritium::ir::DType d;
  CHECK(tritium::ir::parse_dtype("ptr<f8e4nv>", d));
  CHECK(d == tritium::ir::DType::pointer_to(tritium::ir::ScalarKind::F8E4NV));
}

} // namespace

namespace {

// c = a @ b over fp8 operands (possibly of two formats), f32 accumulation: on every device,
// against float64 sums of the decoded values (every product is exact in f32, and the sums of
// these small integers times powers of two are too).
// B_K_MAJOR: b holds B column-major (K contiguous), the order sm_90a's fp8 wgmma reads (at
// 64 x 64 tiles on 4 warps the dot runs on it there; smaller tiles run on mma.sync's fp8 form,
// as on sm_89 and sm_90 (TRITIUM_CUDA_ARCH=sm_89); for a row-major B on sm_90a, and before
// sm_89, the operands are read as f16).
// PROMOTE: max_num_imprecise_acc (partial sums of that many K added in f32 where wgmma runs).
template <class A, class B>
void fp8_dot_kernel(tl::ptr<A> a, tl::ptr<B> b, tl::ptr<float> c, tl::constexpr_<int> M,
                    tl::constexpr_<int> N, tl::constexpr_<int> K, tl::constexpr_<int> B_K_MAJOR,
                    tl::constexpr_<int> PROMOTE) {
  auto m = tl::arange(0, M), n = tl::arange(0, N), k = tl::arange(0, K);
  auto x = tl::load(a + m[{tl::_, tl::None}] * K + k[{tl::None, tl::_}]);
  auto b_offs = k[{tl::_, tl::None}] * N + n[{tl::None, tl::_}];
  if (B_K_MAJOR)
    b_offs = k[{tl::_, tl::None}] + n[{tl::None, tl::_}] * K;
  auto acc = tl::zeros<float>({M, N});
  tl::store(c + m[{tl::_, tl::None}] * N + n[{tl::None, tl::_}],
            tl::dot(x, tl::load(b + b_offs), acc, {.max_num_imprecise_acc = PROMOTE}));
}

// Operands of small integers and halves (exact in every format), and the check of c = a @ b
// against float64 sums, b read at b_at(t, j).
template <class T>
std::vector<T> fp8_operand(int n, int mul, int mod, float scale) {
  std::vector<T> v;
  for (int i = 0; i < n; ++i)
    v.push_back(T(static_cast<float>((i * mul % mod) - mod / 2) * scale));
  return v;
}

template <class A, class B, class At>
void check_fp8_product(const std::vector<float>& got, const std::vector<A>& a,
                       const std::vector<B>& b, int M, int N, int K, At b_at) {
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double want = 0;
      for (int t = 0; t < K; ++t)
        want += static_cast<double>(static_cast<float>(a[i * K + t])) *
                static_cast<float>(b[b_at(t, j)]);
      CAPTURE(i);
      CAPTURE(j);
      CHECK(got[i * N + j] == want);
    }
}

template <class A, class B, int M = 32, int N = 32, int K = 64, int B_K_MAJOR = 0, int PROMOTE = 0>
void check_fp8_dot(Device dev) {
  auto a = fp8_operand<A>(M * K, 7, 13, 0.5f);
  auto b = fp8_operand<B>(K * N, 5, 11, 1.f);
  auto k = tritium::jit(&fp8_dot_kernel<A, B>, "fp8_dot");
  auto da = dev.from_host(a);
  auto db = dev.from_host(b);
  auto dc = dev.alloc<float>(M * N);
  launch(k, {1}, da, db, dc, M, N, K, B_K_MAJOR, PROMOTE);
  check_fp8_product(dc.to_host(), a, b, M, N, K,
                    [](int t, int j) { return B_K_MAJOR ? j * K + t : t * N + j; });
}

// The same through tensor descriptors (TMA on sm_90a): A [M, K] and B stored as a linear layer
// keeps its weights, [N, K], each K step's tiles loaded by descriptor and B transposed as a view,
// so both reach the fp8 wgmma K-major from shared memory.
template <class A, class B>
void fp8_descriptor_dot_kernel(tl::ptr<A> a, tl::ptr<B> b_nk, tl::ptr<float> c, tl::i32 K,
                               tl::constexpr_<int> M, tl::constexpr_<int> N,
                               tl::constexpr_<int> BLOCK_K) {
  auto a_desc = tl::make_tensor_descriptor(a, {M, K}, {K, 1}, {M, BLOCK_K});
  auto b_desc = tl::make_tensor_descriptor(b_nk, {N, K}, {K, 1}, {N, BLOCK_K});
  auto acc = tl::zeros<float>({M, N});
  for (auto k : tl::range(0, tl::cdiv(K, BLOCK_K)))
    acc = tl::dot(a_desc.load({0, k * BLOCK_K}), tl::trans(b_desc.load({0, k * BLOCK_K})), acc);
  auto m = tl::arange(0, M), n = tl::arange(0, N);
  tl::store(c + m[{tl::_, tl::None}] * N + n[{tl::None, tl::_}], acc);
}

template <class A, class B>
void check_fp8_descriptor_dot(Device dev) {
  constexpr int M = 64, N = 64, K = 256, BLOCK_K = 64;
  auto a = fp8_operand<A>(M * K, 7, 13, 0.5f);
  auto b = fp8_operand<B>(N * K, 5, 11, 1.f); // [N, K]
  auto k = tritium::jit(&fp8_descriptor_dot_kernel<A, B>, "fp8_descriptor_dot");
  auto da = dev.from_host(a);
  auto db = dev.from_host(b);
  auto dc = dev.alloc<float>(M * N);
  launch(k, {1}, da, db, dc, K, M, N, BLOCK_K);
  check_fp8_product(dc.to_host(), a, b, M, N, K, [](int t, int j) { return j * K + t; });
}

TEST_CASE("fp8 dot fed by tensor descriptors, B as [N, K] transposed, on every device") {
  for (Device dev : devices_and_emulator()) {
    std::string name(dev.name());
    CAPTURE(name);
    check_fp8_descriptor_dot<float8e4nv, float8e4nv>(dev);
    check_fp8_descriptor_dot<float8e5, float8e4nv>(dev);
  }
}

TEST_CASE("fp8 dot accumulates in f32, one format or two, on every device") {
  for (Device dev : devices_and_emulator()) {
    std::string name(dev.name());
    CAPTURE(name);
    check_fp8_dot<float8e4nv, float8e4nv>(dev);
    check_fp8_dot<float8e5, float8e5>(dev);
    check_fp8_dot<float8e4nv, float8e5>(dev);
    check_fp8_dot<float8e4b8, float8e5b16>(dev);
    check_fp8_dot<float8e4nv, float8e4nv, 64, 64, 128, 1>(dev);
    check_fp8_dot<float8e5, float8e4nv, 64, 128, 64, 1>(dev);
    // Partial sums of 32 and 64 K promoted to f32 (wgmma on sm_90a; elsewhere the same sums).
    check_fp8_dot<float8e4nv, float8e4nv, 64, 64, 128, 1, 32>(dev);
    check_fp8_dot<float8e4nv, float8e5, 128, 64, 256, 1, 64>(dev);
  }
}

} // namespace

namespace {

// Reductions and scans over fp8 compute through the combine region's ops: each step decodes,
// computes in f32 and rounds to the format, as the interpreter.
template <class T>
void fp8_reduce_kernel(tl::ptr<T> x, tl::ptr<T> out, tl::ptr<float> out32) {
  auto o = tl::arange(0, 64);
  auto v = tl::load(x + o);
  tl::store(out + tl::arange(0, 1), tl::reshape(tl::max(v, 0), {1}));
  tl::store(out + 1 + o, tl::cumsum(v));
  tl::store(out32 + tl::arange(0, 1), tl::reshape(tl::sum(v.template to<float>(), 0), {1}));
}

template <class T>
void check_fp8_reduce(Device dev) {
  std::vector<T> x;
  for (int i = 0; i < 64; ++i)
    x.push_back(T(static_cast<float>((i * 5 % 9) - 4) * 0.25f));
  auto k = tritium::jit(&fp8_reduce_kernel<T>, "fp8_reduce");
  auto dx = dev.from_host(x);
  auto out = dev.alloc<T>(65);
  auto out32 = dev.alloc<float>(1);
  launch(k, {1}, dx, out, out32);
  auto got = out.to_host();
  auto got32 = out32.to_host();
  float mx = -1e30f, sum = 0;
  T run(0.0f);
  for (int i = 0; i < 64; ++i) {
    mx = std::max(mx, static_cast<float>(x[i]));
    sum += static_cast<float>(x[i]);
    run = T(static_cast<double>(static_cast<float>(run)) + static_cast<float>(x[i]));
    CAPTURE(i);
    CHECK(got[1 + i].bits == run.bits);
  }
  CHECK(static_cast<float>(got[0]) == mx);
  CHECK(got32[0] == sum);
}

TEST_CASE("fp8 reductions and scans, on every device") {
  for (Device dev : devices_and_emulator()) {
    std::string name(dev.name());
    CAPTURE(name);
    check_fp8_reduce<float8e4nv>(dev);
    check_fp8_reduce<float8e5b16>(dev);
  }
}

} // namespace

namespace {

void fp8_dot_f16_acc(tl::ptr<float8e4nv> a, tl::ptr<tritium::half> c) {
  auto o = tl::arange(0, 16);
  auto idx = o[{tl::_, tl::None}] * 16 + o[{tl::None, tl::_}];
  auto x = tl::load(a + idx);
  tl::store(c + idx, tl::dot(x, x, tl::zeros<tritium::half>({16, 16})));
}

void f16_dot_imprecise(tl::ptr<tritium::half> a, tl::ptr<float> c, tl::constexpr_<int> PROMOTE) {
  auto o = tl::arange(0, 16);
  auto idx = o[{tl::_, tl::None}] * 16 + o[{tl::None, tl::_}];
  auto x = tl::load(a + idx);
  tl::store(c + idx, tl::dot(x, x, tl::zeros<float>({16, 16}), {.max_num_imprecise_acc = PROMOTE}));
}

TEST_CASE("fp8 misuse is an error naming the line") {
  {
    // max_num_imprecise_acc is for fp8 operands, and positive.
    auto k = tritium::jit(&f16_dot_imprecise, "f16_dot_imprecise");
    auto dev = tritium::device("interpreter");
    auto a = dev.alloc<tritium::half>(256);
    auto c = dev.alloc<float>(256);
    std::string e = trace_error(k, a, c, 32);
    CHECK(e.find("fp8.cpp:") != std::string::npos);
    CHECK(e.find("max_num_imprecise_acc applies to fp8 operands (as Triton), not f16") !=
          std::string::npos);
    auto k8 = tritium::jit(&fp8_dot_kernel<float8e4nv, float8e4nv>, "fp8_dot");
    auto a8 = dev.alloc<float8e4nv>(32 * 64);
    auto b8 = dev.alloc<float8e4nv>(64 * 32);
    auto c8 = dev.alloc<float>(32 * 32);
    e = trace_error(k8, a8, b8, c8, 32, 32, 64, 0, -32);
    CHECK(e.find("max_num_imprecise_acc must be positive, got -32") != std::string::npos);
  }

  auto k = tritium::jit(&fp8_dot_f16_acc, "fp8_dot_f16_acc");
  auto dev = tritium::device("interpreter");
  auto a = dev.alloc<float8e4nv>(256);
  auto c = dev.alloc<tritium::half>(256);
  const std::string e = trace_error(k, a, c);
  CHECK(e.find("fp8.cpp:") != std::string::npos);
  CHECK(e.find("dot of f8e4nv operands cannot accumulate in f16") != std::string::npos);
  CHECK(e.find("fp8 -> f32") != std::string::npos);
  // A format the buffer does not hold: a launch of f8e5 data through an f8e4nv pointer does not
  // compile (the launch checks element types), so the check left is DLPack's, at run time.
  DLDataType want = tritium::dlpack_dtype<float8e5b16>();
  CHECK(want.code == 13);
  CHECK(want.bits == 8);
  CHECK(tritium::dlpack_dtype<float8e4nv>().code == 10);
  CHECK(tritium::detail::dlpack_dtype_name(DLDataType{11, 8, 1}) == "float8_e4m3fnuz");
}

} // namespace
