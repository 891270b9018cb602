#include "targets/emulator/emulate_matrix.hpp"

#include <tritium/error.hpp>
#include <tritium/float16.hpp>
#include <tritium/float_format.hpp>

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

namespace tritium::gpu {
namespace {

using ir::ScalarKind;

enum class In : int32_t { F16, BF16, TF32, S8, U8, E4M3, E5M2, E4M3Fnuz, E5M2Fnuz };
enum class Acc : int32_t { F32, F16, I32 };

struct Kind {
  MatrixUnit unit;
  In in;
  Acc acc;
  bool wide;   // MFMA 32x32 (else 16x16)
  int version; // the unit's generation (WMMA v2's fragments are not v1's)
  In b_in;     // b's type where it differs (wgmma's e4m3 x e5m2)
};

Kind decode(int32_t code) {
  return {static_cast<MatrixUnit>(code >> 8 & 0xf),
          static_cast<In>(code >> 4 & 0xf),
          static_cast<Acc>(code & 0xf),
          (code >> 12 & 1) != 0,
          code >> 16 & 0xff,
          static_cast<In>(code >> 24 & 0xf)};
}

int in_bits(In in) {
  return in == In::TF32 ? 32 : in == In::F16 || in == In::BF16 ? 16 : 8;
}

In in_of(const MmaInstr& instr, ir::DType t) {
  switch (t.kind) {
  case ScalarKind::F16:
    return In::F16;
  case ScalarKind::BF16:
    return In::BF16;
  case ScalarKind::I8:
    return In::S8;
  case ScalarKind::U8:
    return In::U8;
  case ScalarKind::F8E4NV:
    return In::E4M3;
  case ScalarKind::F8E5:
    return In::E5M2;
  case ScalarKind::F8E4B8:
    return In::E4M3Fnuz;
  case ScalarKind::F8E5B16:
    return In::E5M2Fnuz;
  default:
    if (instr.tf32)
      return In::TF32;
    throw Error(
        fmt::format("GPU emulation: no matrix instruction multiplies {}", ir::to_string(t)));
  }
}

// One instruction's geometry and its fragments: element e of lane l of a is a[row][k] at
// a_at(l, e), and so on; elements pack into 32-bit words in order, the first in the low bits.
struct Geometry {
  int m, n, k, lanes, a_elems, b_elems, c_elems;
  std::pair<int, int> (*a_at)(int lane, int e, const Geometry&);
  std::pair<int, int> (*b_at)(int lane, int e, const Geometry&); // (k, col)
  std::pair<int, int> (*c_at)(int lane, int e, const Geometry&); // (row, col)
  int kw;                                                        // K per 32-bit word (NVIDIA)
};

// NVIDIA mma.m16n8k{8,16,32}: groupID g = lane / 4, threadID_in_group t = lane % 4; a word
// holds kw consecutive K.
std::pair<int, int> nv_a(int l, int e, const Geometry& g) {
  int w = e / g.kw, i = e % g.kw;
  return {l / 4 + 8 * (w & 1), g.kw * (l % 4) + i + 4 * g.kw * (w >> 1)};
}
std::pair<int, int> nv_b(int l, int e, const Geometry& g) {
  int w = e / g.kw, i = e % g.kw;
  return {g.kw * (l % 4) + i + 4 * g.kw * w, l / 4};
}
std::pair<int, int> nv_c(int l, int e, const Geometry&) {
  return {l / 4 + 8 * (e >> 1), 2 * (l % 4) + (e & 1)};
}
// AMD MFMA: a lane holds 4 consecutive K of one row (a) / column (b), 8 for fp8; lanes above
// the tile's width take the next K. 32x32: acc[i] at row 8 * (i / 4) + 4 * (lane / 32) + i % 4;
// 16x16: row 4 * (lane / 16) + i.
std::pair<int, int> mfma_a(int l, int e, const Geometry& g) {
  return {l % g.m, g.a_elems * (l / g.m) + e};
}
std::pair<int, int> mfma_b(int l, int e, const Geometry& g) {
  return {g.b_elems * (l / g.n) + e, l % g.n};
}
std::pair<int, int> mfma_c(int l, int e, const Geometry& g) {
  if (g.m == 32)
    return {8 * (e / 4) + 4 * (l / 32) + e % 4, l % 32};
  return {4 * (l / 16) + e, l % 16};
}
// AMD WMMA (gfx11, wave32): lanes 0-15 hold a row of a (a column of b) with all 16 K, lanes
// 16-31 the same again; acc[i] at row 2 * i + lane / 16.
std::pair<int, int> wmma_a(int l, int e, const Geometry&) {
  return {l % 16, e};
}
std::pair<int, int> wmma_b(int l, int e, const Geometry&) {
  return {e, l % 16};
}
std::pair<int, int> wmma_c(int l, int e, const Geometry&) {
  return {2 * e + l / 16, l % 16};
}
// AMD WMMA v2 (gfx12, wave32): lane l holds row (column) l % 16 with 8 K, lanes 0-15 K 0-7 and
// lanes 16-31 K 8-15; acc[i] at row i + 8 * (lane / 16). (LLVM's gfx12 builtins take 8
// elements a lane; Triton's AMD backend describes the same placement as WMMA version 2.)
std::pair<int, int> wmma2_a(int l, int e, const Geometry&) {
  return {l % 16, 8 * (l / 16) + e};
}
std::pair<int, int> wmma2_b(int l, int e, const Geometry&) {
  return {8 * (l / 16) + e, l % 16};
}
std::pair<int, int> wmma2_c(int l, int e, const Geometry&) {
  return {e + 8 * (l / 16), l % 16};
}

Geometry geometry(const Kind& k) {
  const int bits = in_bits(k.in);
  switch (k.unit) {
  case MatrixUnit::MmaSync: {
    int kw = 32 / bits;
    return {16, 8, 8 * kw, 32, 4 * kw, 2 * kw, 4, nv_a, nv_b, nv_c, kw};
  }
  case MatrixUnit::Mfma: {
    const int kpl = bits == 8 ? 8 : 4; // K per lane: CDNA3's fp8 instructions take twice the K
    if (k.wide)
      return {32, 32, 2 * kpl, 64, kpl, kpl, 16, mfma_a, mfma_b, mfma_c, 0};
    return {16, 16, 4 * kpl, 64, kpl, kpl, 4, mfma_a, mfma_b, mfma_c, 0};
  }
  case MatrixUnit::Wmma:
    if (k.version >= 2)
      return {16, 16, 16, 32, 8, 8, 8, wmma2_a, wmma2_b, wmma2_c, 0};
    return {16, 16, 16, 32, 16, 16, 8, wmma_a, wmma_b, wmma_c, 0};
  default:
    throw Error(
        fmt::format("GPU emulation: no semantics for {} instructions", matrix_unit_name(k.unit)));
  }
}

// Element `e` of `bits` width from a lane's words, as a double (exact for every input type).
double element(const uint32_t* words, int e, int bits, In in) {
  uint32_t w = words[e * bits / 32];
  uint32_t v = bits == 32 ? w : (w >> (e * bits % 32)) & ((1u << bits) - 1);
  switch (in) {
  case In::F16:
    return f16_bits_to_float(static_cast<uint16_t>(v));
  case In::BF16:
    return bf16_bits_to_float(static_cast<uint16_t>(v));
  case In::TF32:
    return std::bit_cast<float>(v);
  case In::S8:
    return static_cast<int8_t>(v);
  case In::U8:
    return static_cast<uint8_t>(v);
  case In::E4M3:
    return decode_float(v, *float_format(ScalarKind::F8E4NV));
  case In::E5M2:
    return decode_float(v, *float_format(ScalarKind::F8E5));
  case In::E4M3Fnuz:
    return decode_float(v, *float_format(ScalarKind::F8E4B8));
  case In::E5M2Fnuz:
    return decode_float(v, *float_format(ScalarKind::F8E5B16));
  }
  return 0;
}

int c_words(const Geometry& g, Acc acc) {
  return acc == Acc::F16 ? g.c_elems / 2 : g.c_elems;
}

} // namespace

int32_t mma_kind(const MmaInstr& instr) {
  const In in = instr.tf32 ? In::TF32 : in_of(instr, instr.a);
  const In b_in = instr.tf32 ? In::TF32 : in_of(instr, instr.b);
  Acc acc = instr.acc.kind == ScalarKind::F32   ? Acc::F32
            : instr.acc.kind == ScalarKind::F16 ? Acc::F16
                                                : Acc::I32;
  return static_cast<int32_t>(b_in) << 24 | instr.version << 16 | (instr.m == 32 ? 1 << 12 : 0) |
         static_cast<int32_t>(instr.unit) << 8 | static_cast<int32_t>(in) << 4 |
         static_cast<int32_t>(acc);
}

MmaWords mma_words(int32_t code) {
  Kind k = decode(code);
  Geometry g = geometry(k);
  int bits = in_bits(k.in);
  int cw = c_words(g, k.acc);
  return {g.a_elems * bits / 32, g.b_elems * bits / 32, cw, cw};
}

void emulate_mma(int32_t code, const uint32_t* in, int stride, int lane, uint32_t* out) {
  const Kind k = decode(code);
  const Geometry g = geometry(k);
  const int bits = in_bits(k.in);
  const MmaWords w = mma_words(code);
  // The whole instruction's a, b and c, gathered from the lanes that hold them.
  std::vector<double> a(g.m * g.k), b(g.k * g.n), c(g.m * g.n);
  for (int l = 0; l < g.lanes; ++l) {
    const uint32_t* lw = in + static_cast<size_t>(l) * stride;
    for (int e = 0; e < g.a_elems; ++e) {
      auto [r, kk] = g.a_at(l, e, g);
      a[r * g.k + kk] = element(lw, e, bits, k.in);
    }
    for (int e = 0; e < g.b_elems; ++e) {
      auto [kk, col] = g.b_at(l, e, g);
      b[kk * g.n + col] = element(lw + w.a, e, bits, k.b_in);
    }
    const uint32_t* cw = lw + w.a + w.b;
    for (int e = 0; e < g.c_elems; ++e) {
      auto [r, col] = g.c_at(l, e, g);
      double v = k.acc == Acc::F32 ? std::bit_cast<float>(cw[e])
                 : k.acc == Acc::I32
                     ? static_cast<int32_t>(cw[e])
                     : f16_bits_to_float(static_cast<uint16_t>(cw[e / 2] >> (16 * (e % 2))));
      c[r * g.n + col] = v;
    }
  }
  // This lane's d, summing over K in order with the interpreter's rounding: f32 accumulators
  // one fmaf per step, f16 ones an exact fma rounded to f16 per step, i32 wrapping.
  std::memset(out, 0, sizeof(uint32_t) * w.d);
  for (int e = 0; e < g.c_elems; ++e) {
    auto [r, col] = g.c_at(lane, e, g);
    double s = c[r * g.n + col];
    if (k.acc == Acc::I32) {
      uint32_t acc = static_cast<uint32_t>(static_cast<int32_t>(s));
      for (int kk = 0; kk < g.k; ++kk)
        acc += static_cast<uint32_t>(static_cast<int32_t>(a[r * g.k + kk]) *
                                     static_cast<int32_t>(b[kk * g.n + col]));
      out[e] = acc;
    } else if (k.acc == Acc::F32) {
      float acc = static_cast<float>(s);
      for (int kk = 0; kk < g.k; ++kk)
        acc = std::fmaf(static_cast<float>(a[r * g.k + kk]), static_cast<float>(b[kk * g.n + col]),
                        acc);
      out[e] = std::bit_cast<uint32_t>(acc);
    } else {
      double acc = s;
      for (int kk = 0; kk < g.k; ++kk)
        acc = f16_bits_to_float(
            double_to_f16_bits(std::fma(a[r * g.k + kk], b[kk * g.n + col], acc)));
      out[e / 2] |= uint32_t{double_to_f16_bits(acc)} << (16 * (e % 2));
    }
  }
}

namespace {

// The byte a canonical-layout operand keeps element (mn, k) at (PTX ISA, "Shared Memory Matrix
// Layout"; CUTLASS's GmmaDescriptor): K-major, groups of eight rows of `swizzle` bytes `sbo`
// apart; MN-major, blocks of `swizzle` bytes along MN `lbo` apart, groups of eight K rows `sbo`
// apart. The swizzle XORs the 16-byte chunk bits of the address with the bits above 128 bytes.
size_t canonical_byte(const EmuSmemMatrix& m, int mn, int k, int eb) {
  const int64_t per_row = m.swizzle / eb;
  int64_t off;
  if (m.k_major)
    off = m.offset + (mn / 8) * m.sbo + (mn % 8) * m.swizzle + int64_t{k} * eb;
  else
    off = m.offset + (mn / per_row) * m.lbo + (k / 8) * m.sbo + (k % 8) * m.swizzle +
          (mn % per_row) * eb;
  const int64_t bits = m.swizzle == 128 ? 3 : m.swizzle == 64 ? 2 : m.swizzle == 32 ? 1 : 0;
  off ^= ((off >> 7) & ((int64_t{1} << bits) - 1)) << 4;
  return static_cast<size_t>(off);
}

double smem_element(const uint8_t* smem, size_t byte, In in) {
  uint32_t v = 0;
  std::memcpy(&v, smem + byte, static_cast<size_t>(in_bits(in) / 8));
  return element(&v, 0, in_bits(in), in);
}

} // namespace

void emulate_wgmma(int32_t code, int n, const EmuSmemMatrix& a, const EmuSmemMatrix& b,
                   const uint8_t* smem, int warp, int lane, const float* c, float* d) {
  const Kind k = decode(code);
  if (k.in == In::TF32 || k.in == In::S8 || k.in == In::U8)
    throw Error("GPU emulation: wgmma of other than f16/bf16/fp8 operands");
  // 32 bytes of K per instruction: k16 for 16-bit operands, k32 for fp8.
  const int ea = in_bits(k.in) / 8, eb = in_bits(k.b_in) / 8, kn = 32 / ea;
  // d[i]: row 16 * warp + lane / 4 (+ 8 for i % 4 >= 2), column 8 * (i / 4) + 2 * (lane % 4)
  // + i % 2.
  for (int i = 0; i < n / 2; ++i) {
    const int row = 16 * warp + lane / 4 + 8 * ((i / 2) % 2);
    const int col = 8 * (i / 4) + 2 * (lane % 4) + i % 2;
    float acc = c[i];
    for (int kk = 0; kk < kn; ++kk)
      acc = std::fmaf(
          static_cast<float>(smem_element(smem, canonical_byte(a, row, kk, ea), k.in)),
          static_cast<float>(smem_element(smem, canonical_byte(b, col, kk, eb), k.b_in)), acc);
    d[i] = acc;
  }
}

void emulate_wgmma_rs(int32_t code, int n, const uint32_t* a, int stride, const EmuSmemMatrix& b,
                      const uint8_t* smem, int lane, const float* c, float* d) {
  const Kind k = decode(code);
  if (k.in != In::F16 && k.in != In::BF16)
    throw Error("GPU emulation: wgmma of other than f16/bf16 operands");
  // Element (r, kk) of the warp's 16 x 16 a: lane 4 * (r % 8) + (kk % 8) / 2, word
  // (r >= 8) + 2 * (kk >= 8), high half for odd kk.
  auto a_elem = [&](int r, int kk) {
    const uint32_t w = a[(4 * (r % 8) + (kk % 8) / 2) * stride + (r >= 8) + 2 * (kk >= 8)];
    const auto bits = static_cast<uint16_t>(kk % 2 ? w >> 16 : w & 0xffff);
    return k.in == In::BF16 ? bf16_bits_to_float(bits) : f16_bits_to_float(bits);
  };
  for (int i = 0; i < n / 2; ++i) {
    const int row = lane / 4 + 8 * ((i / 2) % 2);
    const int col = 8 * (i / 4) + 2 * (lane % 4) + i % 2;
    float acc = c[i];
    for (int kk = 0; kk < 16; ++kk)
      acc = std::fmaf(static_cast<float>(a_elem(row, kk)),
                      static_cast<float>(smem_element(smem, canonical_byte(b, col, kk, 2), k.in)),
                      acc);
    d[i] = acc;
  }
}

} // namespace tritium::gpu
