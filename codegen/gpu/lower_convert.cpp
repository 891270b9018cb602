// Moving a tensor's registers from one distributed layout to another: a renaming of registers
// where every thread already holds what it needs, else a round trip through shared memory laid
// out by plan_conversion (vectorized on one side, swizzled so that neither side's warps meet in
// a bank).
#include "gpu/lowering.hpp"
#include "gpu_ir/conversion_plan.hpp"

#include <algorithm>
#include <optional>

namespace tritium::gpu {

namespace {

// The XOR of the offsets that the set bits of `r` select.
int64_t xor_of(const std::vector<int64_t>& bases, int64_t r) {
  int64_t v = 0;
  for (size_t i = 0; i < bases.size(); ++i)
    if (r >> i & 1)
      v ^= bases[i];
  return v;
}

// The bits of a side's offsets that its lane and warp bases can set.
int64_t thread_bits(const ConversionPlan::Side& s) {
  int64_t bits = 0;
  for (const auto* bases : {&s.lane, &s.warp})
    for (int64_t v : *bases)
      bits |= v;
  return bits;
}

// The thread's offset combined with a register's: bits the thread's part never sets add, so
// that the backend folds them into the address.
LV* with_reg_offset(llvm::IRBuilder<>& b, LV* thread, int64_t bits, int64_t c) {
  return (c & bits) ? b.CreateXor(thread, b.getInt32(static_cast<uint32_t>(c)))
                    : b.CreateAdd(thread, b.getInt32(static_cast<uint32_t>(c)));
}

} // namespace

Regs ShapeLowering::convert_regs(const Regs& x, const LinearLayout& from, const LinearLayout& to,
                                 ir::DType e) {
  if (from == to)
    return x;
  // The same elements in every thread, in another register order (a wgmma accumulator as the
  // next wgmma's a operand, a join followed by a store's vectors).
  if (from.lane == to.lane && from.warp == to.warp) {
    Regs out;
    for (int i = 0; i < to.num_regs(); ++i) {
      const int j = from.reg_index(to.reg_offset(i));
      if (j < 0)
        break;
      out.push_back(x[static_cast<size_t>(j)]);
    }
    if (static_cast<int>(out.size()) == to.num_regs())
      return out;
  }
  if (auto out = swap_lanes(x, from, to))
    return *out;
  const int64_t eb = mem_bytes(e);
  const ConversionRounds rounds =
      split_conversion(from, to, eb, conversion_round_bytes(ti_.max_shared_bytes()));
  const ConversionPlan plan =
      plan_conversion(rounds.from, rounds.to, static_cast<int>(eb),
                      {.write = ti_.matrix().has_stmatrix(), .read = ti_.matrix().has_ldmatrix()});
  need_shared(plan.elements * eb);
  // Where a round is only some warps' (a peeled warp bit), the others skip their side of it.
  auto warps_in = [&](bool to_side, int t) -> LV* {
    auto [mask, value] = rounds.warps_of_round(to_side, t);
    if (!mask)
      return nullptr;
    return b_.CreateICmpEQ(b_.CreateAnd(s_.warp, b_.getInt32(mask)), b_.getInt32(value));
  };
  Regs out(static_cast<size_t>(to.num_regs()));
  for (int t = 0; t < rounds.rounds(); ++t) {
    ti_.barrier(b_); // earlier readers of the scratch are done
    Regs part;
    for (int r = 0; r < rounds.from.num_regs(); ++r)
      part.push_back(x[static_cast<size_t>(rounds.full_reg(false, t, r))]);
    guarded(
        warps_in(false, t),
        [&]() -> LV* {
          smem_side(plan.write, e, &part);
          return nullptr;
        },
        nullptr);
    ti_.barrier(b_);
    LV* reading = warps_in(true, t);
    llvm::BasicBlock* skip = b_.GetInsertBlock();
    llvm::BasicBlock *read_bb = nullptr, *cont = nullptr;
    if (reading) {
      read_bb = llvm::BasicBlock::Create(ctx_, "cvt.read", s_.fn);
      cont = llvm::BasicBlock::Create(ctx_, "cvt.cont", s_.fn);
      b_.CreateCondBr(reading, read_bb, cont);
      b_.SetInsertPoint(read_bb);
    }
    part = smem_side(plan.read, e, nullptr);
    if (reading) {
      read_bb = b_.GetInsertBlock();
      b_.CreateBr(cont);
      b_.SetInsertPoint(cont);
    }
    for (int r = 0; r < rounds.to.num_regs(); ++r) {
      LV*& slot = out[static_cast<size_t>(rounds.full_reg(true, t, r))];
      LV* v = part[static_cast<size_t>(r)];
      if (reading) {
        auto* phi = b_.CreatePHI(v->getType(), 2);
        phi->addIncoming(v, read_bb);
        phi->addIncoming(slot ? slot : llvm::PoisonValue::get(v->getType()), skip);
        v = phi;
      }
      slot = v;
    }
  }
  return out;
}

// Where the warps hold the same elements and each lane basis `to` wants is a register basis
// of `from` (a bitonic sort's compare distance moved between a lane and a register), the
// exchange is one xor shuffle per register pair per swapped lane bit: the thread whose lane
// bit is b keeps its registers whose bit is b and trades the others with its partner. Then
// the registers are renamed. Null where that does not reach `to`.
std::optional<Regs> ShapeLowering::swap_lanes(const Regs& x, const LinearLayout& from,
                                              const LinearLayout& to) {
  auto swaps = lane_swaps(from, to);
  if (!swaps)
    return std::nullopt;
  LinearLayout cur = from;
  for (const auto& [j, k] : *swaps)
    apply_lane_step(cur, j, k);
  Regs v = x;
  for (const auto& [j, k] : *swaps) {
    LV* b = b_.CreateICmpNE(b_.CreateAnd(s_.lane, b_.getInt32(1u << j)), b_.getInt32(0));
    if (k == kGatherLane) {
      // The new register bit is the lane bit: the value of the lane whose bit is 0 first.
      // 16-bit values travel in pairs, one 32-bit shuffle for two registers.
      const size_t n = v.size();
      llvm::Type* t = v[0]->getType();
      const size_t step = n % 2 == 0 && t->getPrimitiveSizeInBits() == 16 ? 2 : 1;
      Regs recv(n);
      for (size_t r = 0; r < n; r += step) {
        if (step == 1) {
          recv[r] = shuffle_xor(v[r], 1 << j);
          continue;
        }
        auto* pair_t = llvm::FixedVectorType::get(t, 2);
        LV* p = b_.CreateInsertElement(llvm::PoisonValue::get(pair_t), v[r], uint64_t{0});
        p = b_.CreateInsertElement(p, v[r + 1], uint64_t{1});
        p = b_.CreateBitCast(shuffle_xor(b_.CreateBitCast(p, b_.getInt32Ty()), 1 << j), pair_t);
        recv[r] = b_.CreateExtractElement(p, uint64_t{0});
        recv[r + 1] = b_.CreateExtractElement(p, uint64_t{1});
      }
      v.resize(2 * n);
      for (size_t r = 0; r < n; ++r) {
        v[r + n] = b_.CreateSelect(b, v[r], recv[r]);
        v[r] = b_.CreateSelect(b, recv[r], v[r]);
      }
      continue;
    }
    for (size_t r0 = 0; r0 < v.size(); ++r0) {
      if (r0 >> k & 1)
        continue;
      const size_t r1 = r0 | size_t{1} << k;
      LV* recv = shuffle_xor(b_.CreateSelect(b, v[r0], v[r1]), 1 << j);
      v[r1] = b_.CreateSelect(b, v[r1], recv);
      v[r0] = b_.CreateSelect(b, recv, v[r0]);
    }
  }
  Regs out;
  for (int i = 0; i < to.num_regs(); ++i)
    out.push_back(v[static_cast<size_t>(cur.reg_index(to.reg_offset(i)))]);
  return out;
}

// This thread's part of a side's offsets: the XOR of its lane's and warp's bases.
LV* ShapeLowering::thread_offset(const std::vector<int64_t>& lane,
                                 const std::vector<int64_t>& warp) {
  LV* off = b_.getInt32(0);
  auto add = [&](LV* id, const std::vector<int64_t>& bases) {
    for (size_t j = 0; j < bases.size(); ++j) {
      if (!bases[j])
        continue;
      LV* set = b_.CreateICmpNE(b_.CreateAnd(id, b_.getInt32(1u << j)), b_.getInt32(0));
      off = b_.CreateXor(
          off, b_.CreateSelect(set, b_.getInt32(static_cast<uint32_t>(bases[j])), b_.getInt32(0)));
    }
  };
  add(s_.lane, lane);
  add(s_.warp, warp);
  return off;
}

// Writes `regs` (write side) or reads the registers of the read side, one vector at a time.
Regs ShapeLowering::smem_side(const ConversionPlan::Side& s, ir::DType e, const Regs* regs) {
  if (s.matrix)
    return smem_matrices(s, e, regs);
  const int64_t eb = mem_bytes(e);
  LV* thread = thread_offset(s.lane, s.warp);
  const int64_t bits = thread_bits(s);
  llvm::Type* elem = mem_type(e);
  llvm::Type* vec_ty = s.vec > 1 ? llvm::FixedVectorType::get(elem, s.vec) : elem;
  const llvm::Align align(static_cast<uint64_t>(s.vec * eb));
  Regs out;
  const int64_t n = int64_t{1} << s.reg.size();
  for (int64_t r = 0; r < n; r += s.vec) {
    LV* p = smem_ptr(with_reg_offset(b_, thread, bits, xor_of(s.reg, r)), 0, eb);
    if (regs) {
      LV* v = llvm::PoisonValue::get(vec_ty);
      if (s.vec == 1)
        v = to_mem((*regs)[static_cast<size_t>(r)], e);
      else
        for (int i = 0; i < s.vec; ++i)
          v = b_.CreateInsertElement(v, to_mem((*regs)[static_cast<size_t>(r + i)], e),
                                     b_.getInt32(static_cast<uint32_t>(i)));
      b_.CreateAlignedStore(v, p, align);
      continue;
    }
    LV* v = b_.CreateAlignedLoad(vec_ty, p, align);
    for (int i = 0; i < s.vec; ++i)
      out.push_back(from_mem(
          s.vec == 1 ? v : b_.CreateExtractElement(v, b_.getInt32(static_cast<uint32_t>(i))), e));
  }
  return out;
}

// A matrix side (ConversionPlan::Side::matrix): four 8x8 matrices an instruction, each lane
// giving one row's address as its place in the side's matrix view. Registers g .. g + 7 of the
// thread (g a multiple of 8) are one instruction's four words: word j is registers g + 2j and
// g + 2j + 1.
Regs ShapeLowering::smem_matrices(const ConversionPlan::Side& s, ir::DType e, const Regs* regs) {
  const int64_t eb = mem_bytes(e);
  LV* thread = thread_offset(s.lane, s.warp);
  const int64_t bits = thread_bits(s);
  auto* pair_t = llvm::FixedVectorType::get(mem_type(e), 2);
  const int64_t n = int64_t{1} << s.reg.size();
  Regs out(static_cast<size_t>(regs ? 0 : n));
  for (int64_t g = 0; g < n; g += 8) {
    LV* p = smem_ptr(with_reg_offset(b_, thread, bits, xor_of(s.reg, g)), 0, eb);
    if (regs) {
      std::vector<LV*> words;
      for (int64_t j = 0; j < 4; ++j) {
        LV* v = llvm::PoisonValue::get(pair_t);
        for (int64_t i = 0; i < 2; ++i)
          v = b_.CreateInsertElement(v, to_mem((*regs)[static_cast<size_t>(g + 2 * j + i)], e),
                                     b_.getInt32(static_cast<uint32_t>(i)));
        words.push_back(b_.CreateBitCast(v, b_.getInt32Ty()));
      }
      ti_.matrix().store_matrix(b_, p, words);
      continue;
    }
    auto words = ti_.matrix().load_matrix(b_, p, 4, false);
    for (int64_t j = 0; j < 4; ++j) {
      LV* v = b_.CreateBitCast(words[static_cast<size_t>(j)], pair_t);
      for (int64_t i = 0; i < 2; ++i)
        out[static_cast<size_t>(g + 2 * j + i)] =
            from_mem(b_.CreateExtractElement(v, b_.getInt32(static_cast<uint32_t>(i))), e);
    }
  }
  return out;
}

} // namespace tritium::gpu
