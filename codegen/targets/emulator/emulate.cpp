// The host emulation of the GPU lowering (see emulate.hpp). The TargetInfo below answers
// thread ids, barriers and shuffles with calls into this file; the kernel is JIT-compiled for
// the host; one OS thread runs a launch's GPU threads as fibers (fibers.hpp).
#include "targets/emulator/emulate.hpp"

#include "gpu_ir/arch.hpp"

#include "gpu/target_info.hpp"
#include "targets/emulator/emulate_matrix.hpp"
#include "targets/emulator/fibers.hpp"

#include <tritium/error.hpp>
#include <tritium/float16.hpp>
#include <tritium/float_format.hpp>
#include <tritium/ir/printer.hpp>

#include <fmt/format.h>

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>

#include <bit>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace tritium::gpu {
namespace {

// One launch: its fibers (one per GPU thread, the index is the thread id), the program they
// run, and what they share. Shuffles and matrix instructions meet at their warp's barrier only,
// as a warp's lanes do on the GPU.
struct Launch {
  int64_t num[3];
  int64_t pid[3];
  int threads, warp_size;
  Fibers* fibers;
  FiberBarrier* block;
  std::vector<FiberBarrier>* warps;
  std::vector<uint8_t>* smem;
  std::vector<uint32_t>* xchg;
  std::vector<uint32_t>* frags; // kFragWords per thread, for matrix instructions
  int tid() const { return fibers->current(); }
  void warp_barrier() { (*warps)[static_cast<size_t>(tid() / warp_size)].arrive_and_wait(*fibers); }
};
constexpr int kFragWords = 64;
Launch* g_launch = nullptr;

// ldmatrix and stmatrix: every lane's row address meets in memory (row r of matrix j is
// lane 8 * j + r's), then each lane reads or writes its own words.
template <typename T>
auto share_rows(T* row) {
  const int t_tid = g_launch->tid();
  auto& x = *g_launch->frags;
  const auto addr = reinterpret_cast<uint64_t>(row);
  const size_t me = static_cast<size_t>(t_tid) * kFragWords;
  x[me] = static_cast<uint32_t>(addr);
  x[me + 1] = static_cast<uint32_t>(addr >> 32);
  g_launch->warp_barrier();
  const size_t warp0 = static_cast<size_t>(t_tid & ~(g_launch->warp_size - 1)) * kFragWords;
  return [&x, warp0](int matrix, int r) {
    const size_t at = warp0 + static_cast<size_t>(8 * matrix + r) * kFragWords;
    return reinterpret_cast<T*>(uint64_t{x[at]} | uint64_t{x[at + 1]} << 32);
  };
}

extern "C" {
int32_t tritium_emu_tid() {
  return g_launch->tid();
}
int32_t tritium_emu_pid(int32_t axis) {
  return static_cast<int32_t>(g_launch->pid[axis]);
}
int32_t tritium_emu_nprog(int32_t axis) {
  return static_cast<int32_t>(g_launch->num[axis]);
}
void tritium_emu_barrier() {
  g_launch->block->arrive_and_wait(*g_launch->fibers);
}
void* tritium_emu_smem() {
  return g_launch->smem->data();
}
uint32_t tritium_emu_shfl_xor(uint32_t v, int32_t mask) {
  const int t_tid = g_launch->tid();
  auto& x = *g_launch->xchg;
  int ws = g_launch->warp_size;
  x[t_tid] = v;
  g_launch->warp_barrier();
  uint32_t r = x[(t_tid & ~(ws - 1)) | ((t_tid & (ws - 1)) ^ mask)];
  g_launch->warp_barrier();
  return r;
}
uint32_t tritium_emu_shfl_idx(uint32_t v, int32_t src) {
  const int t_tid = g_launch->tid();
  auto& x = *g_launch->xchg;
  int ws = g_launch->warp_size;
  x[t_tid] = v;
  g_launch->warp_barrier();
  uint32_t r = x[(t_tid & ~(ws - 1)) | (src & (ws - 1))];
  g_launch->warp_barrier();
  return r;
}
// One matrix instruction of the warp: every lane's fragments meet in memory, then each lane
// computes its part of d as the ISA defines it.
void tritium_emu_mma(int32_t kind, const uint32_t* in, uint32_t* out) {
  const int t_tid = g_launch->tid();
  auto& x = *g_launch->frags;
  int ws = g_launch->warp_size;
  MmaWords w = mma_words(kind);
  std::copy(in, in + w.a + w.b + w.c, x.begin() + static_cast<size_t>(t_tid) * kFragWords);
  g_launch->warp_barrier();
  emulate_mma(kind, x.data() + static_cast<size_t>(t_tid & ~(ws - 1)) * kFragWords, kFragWords,
              t_tid & (ws - 1), out);
  g_launch->warp_barrier();
}
// wgmma: each thread's accumulators are its own; a and b come from shared memory through the
// canonical layouts their descriptors give.
void tritium_emu_wgmma(int32_t kind, const int64_t* p, const float* c, float* d) {
  const int t_tid = g_launch->tid();
  const uint8_t* smem = g_launch->smem->data();
  EmuSmemMatrix a{p[0] - reinterpret_cast<int64_t>(smem), p[1], p[2], p[3], p[4]};
  EmuSmemMatrix b{p[5] - reinterpret_cast<int64_t>(smem), p[6], p[7], p[8], p[9]};
  const int ws = g_launch->warp_size;
  emulate_wgmma(kind, static_cast<int>(p[10]), a, b, smem, (t_tid / ws) % 4, t_tid % ws, c, d);
}
// wgmma with a in registers: the warp's a words meet in memory (a warp's d rows are the rows
// its own a words hold); b from shared memory.
void tritium_emu_wgmma_rs(int32_t kind, const uint32_t* a, const int64_t* p, const float* c,
                          float* d) {
  const int t_tid = g_launch->tid();
  auto& x = *g_launch->frags;
  const int ws = g_launch->warp_size;
  std::copy(a, a + 4, x.begin() + static_cast<size_t>(t_tid) * kFragWords);
  g_launch->warp_barrier();
  const uint8_t* smem = g_launch->smem->data();
  EmuSmemMatrix b{p[0] - reinterpret_cast<int64_t>(smem), p[1], p[2], p[3], p[4]};
  emulate_wgmma_rs(kind, static_cast<int>(p[5]),
                   x.data() + static_cast<size_t>(t_tid & ~(ws - 1)) * kFragWords, kFragWords, b,
                   smem, t_tid % ws, c, d);
  g_launch->warp_barrier();
}
void tritium_emu_ldmatrix(const uint8_t* row, int32_t count, int32_t trans, uint32_t* out) {
  const int lane = g_launch->tid() & (g_launch->warp_size - 1);
  auto row_of = share_rows(reinterpret_cast<const uint16_t*>(row));
  for (int j = 0; j < count; ++j) {
    uint16_t lo, hi;
    if (trans) { // rows 2 * (lane % 4) and + 1, column lane / 4
      lo = row_of(j, 2 * (lane % 4))[lane / 4];
      hi = row_of(j, 2 * (lane % 4) + 1)[lane / 4];
    } else { // row lane / 4, columns 2 * (lane % 4) and + 1
      lo = row_of(j, lane / 4)[2 * (lane % 4)];
      hi = row_of(j, lane / 4)[2 * (lane % 4) + 1];
    }
    out[j] = uint32_t{lo} | uint32_t{hi} << 16;
  }
  g_launch->warp_barrier();
}
void tritium_emu_stmatrix(uint8_t* row, const uint32_t* words) {
  const int lane = g_launch->tid() & (g_launch->warp_size - 1);
  auto row_of = share_rows(reinterpret_cast<uint32_t*>(row));
  for (int j = 0; j < 4; ++j)
    row_of(j, lane / 4)[lane % 4] = words[j];
  g_launch->warp_barrier();
}
// TMA: the emulator's tensor map is its own (the hardware's format is not documented): the
// fields the copies need, in the map's 128 bytes.
struct EmuTensorMap {
  const uint8_t* base;
  int64_t inner, outer, stride_bytes;
  int32_t elem_bytes, box_inner, box_outer, swizzle;
};
static_assert(sizeof(EmuTensorMap) <= 128);
void tritium_emu_tma_create(EmuTensorMap* map, const uint8_t* base, int64_t inner, int64_t outer,
                            int64_t stride_bytes, int32_t elem_bytes, int32_t box_inner,
                            int32_t box_outer, int32_t swizzle) {
  *map = {base, inner, outer, stride_bytes, elem_bytes, box_inner, box_outer, swizzle};
}
// mbarriers: 8 bytes of shared memory holding the phase (bit 63), the bytes still expected
// (bits 32-62), the arrivals still expected (bits 16-31) and the arrivals per phase (0-15).
// A launch's fibers share one OS thread, so an update is atomic without a lock.
void mbar_update(uint64_t* bar, int arrivals, int64_t tx) {
  uint64_t v = *bar;
  int64_t bytes = static_cast<int64_t>((v >> 32) & 0x7fffffff) + tx;
  int64_t pending = static_cast<int64_t>((v >> 16) & 0xffff) - arrivals;
  uint64_t phase = v >> 63;
  const uint64_t count = v & 0xffff;
  if (bytes < 0 || pending < 0)
    throw Error("GPU emulation: an mbarrier completed more bytes or arrivals than expected");
  if (pending == 0 && bytes == 0) { // the phase completes; the next one starts
    phase ^= 1;
    pending = static_cast<int64_t>(count);
  }
  *bar = phase << 63 | static_cast<uint64_t>(bytes) << 32 | static_cast<uint64_t>(pending) << 16 |
         count;
}
void tritium_emu_mbar_init(uint64_t* bar, int32_t count) {
  *bar = static_cast<uint64_t>(count) << 16 | static_cast<uint64_t>(count);
}
void tritium_emu_mbar_expect(uint64_t* bar, int64_t bytes) {
  mbar_update(bar, 1, bytes); // expect_tx, then the arrival
}
// Invalidating a barrier with arrivals or bytes still expected loses them: an error here.
void tritium_emu_mbar_inval(uint64_t* bar) {
  const uint64_t v = *bar;
  if (((v >> 32) & 0x7fffffff) != 0 || ((v >> 16) & 0xffff) != (v & 0xffff))
    throw Error("GPU emulation: an mbarrier invalidated in the middle of a phase");
  *bar = 0;
}
void tritium_emu_mbar_wait(uint64_t* bar, int32_t parity) {
  while ((*bar >> 63) == static_cast<uint64_t>(parity & 1)) // that phase has not completed
    g_launch->fibers->yield();
}
// A box copy as the hardware makes it: rows of box_inner elements, box_outer of them, zeros
// out of bounds, each row's 16-byte chunks swizzled with the row's position in its
// `swizzle`-byte pattern (address bits 4-6 xor bits 7-9 for 128 bytes; 4-5 / 7-8 for 64;
// 4 / 7 for 32). The destination must be 1024-byte aligned in shared memory, as on the GPU.
void tritium_emu_tma_copy(uint8_t* dst, const EmuTensorMap* map, int32_t inner, int32_t outer,
                          uint64_t* bar) {
  const uint8_t* smem = g_launch->smem->data();
  if ((dst - smem) % 1024 != 0)
    throw Error("GPU emulation: a TMA copy to shared memory not 1024-byte aligned");
  const int64_t eb = map->elem_bytes;
  const int64_t row_bytes = map->box_inner * eb;
  if (map->swizzle && row_bytes != map->swizzle)
    throw Error("GPU emulation: a TMA box row of " + std::to_string(row_bytes) +
                " bytes with a swizzle of " + std::to_string(map->swizzle));
  const int64_t chunks_mask = map->swizzle / 16 - 1;
  for (int64_t r = 0; r < map->box_outer; ++r)
    for (int64_t c = 0; c < map->box_inner; ++c) {
      const int64_t gi = inner + c, go = outer + r;
      const int64_t off = r * row_bytes + c * eb;
      int64_t swz = off;
      if (map->swizzle)
        swz = (off & ~(chunks_mask << 4)) | ((((off >> 4) ^ (off >> 7)) & chunks_mask) << 4);
      uint8_t* d = dst + swz;
      if (gi >= 0 && gi < map->inner && go >= 0 && go < map->outer)
        std::memcpy(d, map->base + go * map->stride_bytes + gi * eb, static_cast<size_t>(eb));
      else
        std::memset(d, 0, static_cast<size_t>(eb));
    }
  mbar_update(bar, 0, -map->box_inner * map->box_outer * eb);
}
// bf16 conversions: LLVM emits libcalls for them on x86 without AVX512-BF16, and the process
// has no compiler-rt. bf16 travels in an XMM register like _Float16, hence the signatures.
_Float16 tritium_emu_truncsfbf2(float f) {
  return std::bit_cast<_Float16>(float_to_bf16_bits(f));
}
_Float16 tritium_emu_truncdfbf2(double d) {
  return std::bit_cast<_Float16>(double_to_bf16_bits(d));
}
}

// Buffer accesses as AMD's hardware makes them (HostEmuTarget::buffer_load, buffer_store).
llvm::FixedVectorType* as_vector(llvm::Type* t) {
  if (auto* v = llvm::dyn_cast<llvm::FixedVectorType>(t))
    return v;
  return llvm::FixedVectorType::get(t, 1);
}
// The address and whether the access happens: masked-off lanes get an offset past the range,
// as the AMD target gives them (amdgpu.cpp, masked_offset).
std::pair<llvm::Value*, llvm::Value*> buffer_address(llvm::IRBuilder<>& b, llvm::Value* base,
                                                     llvm::Value* off, llvm::Value* mask) {
  if (mask)
    off = b.CreateSelect(mask, off, b.getInt32(0x80000000u));
  llvm::Value* ok = b.CreateICmpULT(off, b.getInt32(0x7ffffffe));
  llvm::Value* safe = b.CreateSelect(ok, off, b.getInt32(0));
  return {b.CreateGEP(b.getInt8Ty(), base, b.CreateZExt(safe, b.getInt64Ty())), ok};
}

// A call of one of the emulation's runtime functions (defined at the JIT's symbols below).
llvm::Value* call(llvm::IRBuilder<>& b, const char* name, llvm::Type* ret,
                  std::vector<llvm::Value*> args) {
  std::vector<llvm::Type*> tys;
  for (auto* a : args)
    tys.push_back(a->getType());
  auto* m = b.GetInsertBlock()->getModule();
  return b.CreateCall(m->getOrInsertFunction(name, llvm::FunctionType::get(ret, tys, false)), args);
}

// The matrix instructions emulated (HostEmuTarget::matrix()): each a call of the runtime's
// per-lane semantics (emulate_matrix.cpp).
class HostEmuMatrix final : public MatrixOps {
public:
  explicit HostEmuMatrix(MatrixUnit matrix) : MatrixOps("host-emulation"), matrix_(matrix) {}

  // As NVIDIA sm_80 (sm_90a) where mma.sync (wgmma) is emulated.
  bool has_ldmatrix() const override {
    return matrix_ == MatrixUnit::MmaSync || matrix_ == MatrixUnit::Wgmma;
  }
  std::vector<llvm::Value*> mma_shared(llvm::IRBuilder<>& b, const MmaInstr& instr,
                                       const SmemMatrix& a, const SmemMatrix& bm,
                                       const std::vector<llvm::Value*>& c) override {
    return wgmma(b, instr, {}, {&a, &bm}, c);
  }
  std::vector<llvm::Value*> mma_shared_regs(llvm::IRBuilder<>& b, const MmaInstr& instr,
                                            const std::vector<llvm::Value*>& a_words,
                                            const SmemMatrix& bm,
                                            const std::vector<llvm::Value*>& c) override {
    return wgmma(b, instr, a_words, {&bm}, c);
  }
  // One wgmma through tritium_emu_wgmma (or _rs with a in registers): the shared-memory
  // operands' descriptor fields (five each) and N in an i64 array, a's words in an i32 array,
  // c in and d out through f32 arrays.
  std::vector<llvm::Value*> wgmma(llvm::IRBuilder<>& b, const MmaInstr& instr,
                                  const std::vector<llvm::Value*>& a_words,
                                  const std::vector<const SmemMatrix*>& mats,
                                  const std::vector<llvm::Value*>& c) {
    llvm::Function* fn = b.GetInsertBlock()->getParent();
    llvm::IRBuilder<> entry(&fn->getEntryBlock(), fn->getEntryBlock().begin());
    const unsigned np = static_cast<unsigned>(5 * mats.size() + 1);
    auto* params = entry.CreateAlloca(b.getInt64Ty(), b.getInt32(np));
    auto* in = entry.CreateAlloca(b.getFloatTy(), b.getInt32(128));
    auto* out = entry.CreateAlloca(b.getFloatTy(), b.getInt32(128));
    unsigned i = 0;
    auto put = [&](llvm::Value* v) {
      b.CreateStore(v, b.CreateConstGEP1_32(b.getInt64Ty(), params, i++));
    };
    for (const SmemMatrix* m : mats) {
      put(b.CreatePtrToInt(m->addr, b.getInt64Ty()));
      put(b.getInt64(m->swizzle));
      put(b.getInt64(m->k_major ? 1 : 0));
      put(b.getInt64(m->lbo));
      put(b.getInt64(m->sbo));
    }
    put(b.getInt64(instr.n));
    for (size_t k = 0; k < c.size(); ++k)
      b.CreateStore(c[k], b.CreateConstGEP1_32(b.getFloatTy(), in, static_cast<unsigned>(k)));
    std::vector<llvm::Value*> args{b.getInt32(mma_kind(instr))};
    if (!a_words.empty()) {
      auto* aw = entry.CreateAlloca(b.getInt32Ty(), b.getInt32(4));
      for (unsigned k = 0; k < a_words.size(); ++k)
        b.CreateStore(a_words[k], b.CreateConstGEP1_32(b.getInt32Ty(), aw, k));
      args.push_back(aw);
    }
    args.insert(args.end(), {params, in, out});
    call(b, a_words.empty() ? "tritium_emu_wgmma" : "tritium_emu_wgmma_rs", b.getVoidTy(), args);
    std::vector<llvm::Value*> d;
    for (size_t k = 0; k < c.size(); ++k)
      d.push_back(b.CreateLoad(
          b.getFloatTy(), b.CreateConstGEP1_32(b.getFloatTy(), out, static_cast<unsigned>(k))));
    return d;
  }
  bool has_stmatrix() const override { return matrix_ == MatrixUnit::Wgmma; }
  void store_matrix(llvm::IRBuilder<>& b, llvm::Value* row_ptr,
                    const std::vector<llvm::Value*>& words) override {
    llvm::Function* fn = b.GetInsertBlock()->getParent();
    llvm::IRBuilder<> entry(&fn->getEntryBlock(), fn->getEntryBlock().begin());
    auto* in = entry.CreateAlloca(b.getInt32Ty(), b.getInt32(4));
    for (unsigned i = 0; i < words.size(); ++i)
      b.CreateStore(words[i], b.CreateConstGEP1_32(b.getInt32Ty(), in, i));
    call(b, "tritium_emu_stmatrix", b.getVoidTy(), {row_ptr, in});
  }
  std::vector<llvm::Value*> load_matrix(llvm::IRBuilder<>& b, llvm::Value* row_ptr, int count,
                                        bool trans) override {
    llvm::Function* fn = b.GetInsertBlock()->getParent();
    llvm::IRBuilder<> entry(&fn->getEntryBlock(), fn->getEntryBlock().begin());
    auto* out = entry.CreateAlloca(b.getInt32Ty(), b.getInt32(4));
    call(b, "tritium_emu_ldmatrix", b.getVoidTy(),
         {row_ptr, b.getInt32(count), b.getInt32(trans ? 1 : 0), out});
    std::vector<llvm::Value*> words;
    for (int i = 0; i < count; ++i)
      words.push_back(b.CreateLoad(b.getInt32Ty(), b.CreateConstGEP1_32(b.getInt32Ty(), out, i)));
    return words;
  }
  // The instruction's operands packed as the hardware's registers, through the hook above.
  std::vector<llvm::Value*> mma(llvm::IRBuilder<>& b, const MmaInstr& instr,
                                const std::vector<llvm::Value*>& a,
                                const std::vector<llvm::Value*>& bv,
                                const std::vector<llvm::Value*>& c) override {
    const int32_t kind = mma_kind(instr);
    const MmaWords w = mma_words(kind);
    std::vector<llvm::Value*> words = pack_words(b, a);
    for (llvm::Value* x : pack_words(b, bv))
      words.push_back(x);
    for (llvm::Value* x : pack_words(b, c))
      words.push_back(x);
    if (static_cast<int>(words.size()) != w.a + w.b + w.c)
      throw Error("GPU emulation: matrix fragments of the wrong size (internal)");
    llvm::Function* fn = b.GetInsertBlock()->getParent();
    llvm::IRBuilder<> entry(&fn->getEntryBlock(), fn->getEntryBlock().begin());
    auto* in = entry.CreateAlloca(b.getInt32Ty(), b.getInt32(kFragWords));
    auto* out = entry.CreateAlloca(b.getInt32Ty(), b.getInt32(kFragWords));
    for (size_t i = 0; i < words.size(); ++i)
      b.CreateStore(words[i], b.CreateConstGEP1_32(b.getInt32Ty(), in, static_cast<unsigned>(i)));
    call(b, "tritium_emu_mma", b.getVoidTy(), {b.getInt32(kind), in, out});
    std::vector<llvm::Value*> d;
    for (int i = 0; i < w.d; ++i)
      d.push_back(b.CreateLoad(b.getInt32Ty(), b.CreateConstGEP1_32(b.getInt32Ty(), out, i)));
    return unpack_words(b, d, c[0]->getType());
  }

private:
  MatrixUnit matrix_;
};

// TMA and mbarriers emulated where wgmma is (sm_90a; HostEmuTarget::async()).
class HostEmuAsync final : public AsyncOps {
public:
  explicit HostEmuAsync(MatrixUnit matrix) : matrix_(matrix) {}

  bool has_tma() const override { return matrix_ == MatrixUnit::Wgmma; }
  void tma_create(llvm::IRBuilder<>& b, llvm::Value* map, llvm::Value* base, llvm::Value* inner,
                  llvm::Value* outer, llvm::Value* outer_stride_bytes, const TmaBox& box) override {
    call(b, "tritium_emu_tma_create", b.getVoidTy(),
         {map, base, inner, outer, outer_stride_bytes, b.getInt32(box.elem_bytes),
          b.getInt32(box.box_inner), b.getInt32(box.box_outer), b.getInt32(box.swizzle)});
  }
  void tma_copy(llvm::IRBuilder<>& b, llvm::Value* dst, llvm::Value* map, llvm::Value* inner,
                llvm::Value* outer, llvm::Value* bar) override {
    call(b, "tritium_emu_tma_copy", b.getVoidTy(), {dst, map, inner, outer, bar});
  }
  void mbar_init(llvm::IRBuilder<>& b, llvm::Value* bar, int count) override {
    call(b, "tritium_emu_mbar_init", b.getVoidTy(), {bar, b.getInt32(count)});
  }
  void mbar_arrive_expect(llvm::IRBuilder<>& b, llvm::Value* bar, int64_t bytes) override {
    call(b, "tritium_emu_mbar_expect", b.getVoidTy(), {bar, b.getInt64(bytes)});
  }
  void mbar_wait(llvm::IRBuilder<>& b, llvm::Value* bar, llvm::Value* phase) override {
    call(b, "tritium_emu_mbar_wait", b.getVoidTy(), {bar, phase});
  }
  void mbar_inval(llvm::IRBuilder<>& b, llvm::Value* bar) override {
    call(b, "tritium_emu_mbar_inval", b.getVoidTy(), {bar});
  }

private:
  MatrixUnit matrix_;
};

class HostEmuTarget final : public TargetInfo {
public:
  HostEmuTarget(int warp_size, MatrixUnit matrix, std::string dl)
      : ws_(warp_size), matrix_(matrix), dl_(std::move(dl)), matrix_ops_(matrix),
        async_ops_(matrix) {}
  MatrixUnit matrix_unit() const override { return matrix_; }
  MatrixOps& matrix() override { return matrix_ops_; }
  AsyncOps& async() override { return async_ops_; }
  // An empty asm statement that hands the bits back. x86 has no bf16 registers: LLVM holds a
  // bfloat as an f32 and stores it by rounding, which turns NaN patterns into the canonical NaN.
  // Where every user of an i16 load is a store or a bitcast to bfloat, InstCombine makes it a
  // bfloat load, and the stored i16 values that look like NaNs came back as 0xffc0 (random
  // kernel seed 2078: every negative i16 joined and split became -64).
  llvm::Value* opaque_bits(llvm::IRBuilder<>& b, llvm::Value* bits) override {
    if (!bits->getType()->isIntegerTy(16))
      return bits;
    auto* fn = llvm::InlineAsm::get(
        llvm::FunctionType::get(b.getInt16Ty(), {b.getInt16Ty()}, false), "", "=r,0", false);
    return b.CreateCall(fn, {bits});
  }
  // AMD's buffer accesses where an AMD matrix unit is emulated, with their semantics: a base
  // and an unsigned 32-bit byte offset, which reads zeros and drops writes at or past the
  // resource's 0x7ffffffe bytes (where the lowering sends masked-off lanes), so that the
  // offsets a kernel computes for them (their signs, their sums) are checked here.
  llvm::Value* buffer_load(llvm::IRBuilder<>& b, llvm::Type* type, llvm::Value* base,
                           llvm::Value* byte_offset, llvm::Value* mask) override {
    if (matrix_ != MatrixUnit::Mfma && matrix_ != MatrixUnit::Wmma)
      return nullptr;
    auto [ptr, ok] = buffer_address(b, base, byte_offset, mask);
    auto* vt = as_vector(type);
    llvm::Value* v =
        b.CreateMaskedLoad(vt, ptr, llvm::Align(1), b.CreateVectorSplat(vt->getNumElements(), ok),
                           llvm::Constant::getNullValue(vt));
    return type == vt ? v : b.CreateExtractElement(v, uint64_t{0});
  }
  bool buffer_store(llvm::IRBuilder<>& b, llvm::Value* value, llvm::Value* base,
                    llvm::Value* byte_offset, llvm::Value* mask) override {
    if (matrix_ != MatrixUnit::Mfma && matrix_ != MatrixUnit::Wmma)
      return false;
    auto [ptr, ok] = buffer_address(b, base, byte_offset, mask);
    auto* vt = as_vector(value->getType());
    if (vt != value->getType())
      value = b.CreateInsertElement(llvm::PoisonValue::get(vt), value, uint64_t{0});
    b.CreateMaskedStore(value, ptr, llvm::Align(1), b.CreateVectorSplat(vt->getNumElements(), ok));
    return true;
  }
  std::string arch() const override { return "host-emulation"; }
  std::string triple() const override { return llvm::sys::getProcessTriple(); }
  std::string data_layout() const override { return dl_; }
  int warp_size() const override { return ws_; }
  int max_shared_bytes() const override { return 1 << 30; }
  unsigned global_address_space() const override { return 0; }
  unsigned shared_address_space() const override { return 0; }

  llvm::Value* thread_id(llvm::IRBuilder<>& b) override {
    return call(b, "tritium_emu_tid", b.getInt32Ty(), {});
  }
  llvm::Value* program_id(llvm::IRBuilder<>& b, int axis) override {
    return call(b, "tritium_emu_pid", b.getInt32Ty(), {b.getInt32(axis)});
  }
  llvm::Value* num_programs(llvm::IRBuilder<>& b, int axis) override {
    return call(b, "tritium_emu_nprog", b.getInt32Ty(), {b.getInt32(axis)});
  }
  void barrier(llvm::IRBuilder<>& b) override { call(b, "tritium_emu_barrier", b.getVoidTy(), {}); }
  llvm::Value* shuffle_xor(llvm::IRBuilder<>& b, llvm::Value* v, int lane_mask) override {
    return call(b, "tritium_emu_shfl_xor", b.getInt32Ty(), {v, b.getInt32(lane_mask)});
  }
  llvm::Value* shuffle_idx(llvm::IRBuilder<>& b, llvm::Value* v, llvm::Value* src) override {
    return call(b, "tritium_emu_shfl_idx", b.getInt32Ty(), {v, src});
  }
  llvm::Value* shared_memory_base(llvm::IRBuilder<>& b) override {
    return call(b, "tritium_emu_smem", b.getPtrTy(), {});
  }
  llvm::Value* math(llvm::IRBuilder<>& b, ir::OpKind kind, std::vector<llvm::Value*> args,
                    const ir::Op& op) override {
    if (ir::op_category(kind) == ir::OpCategory::Extern) {
      // The host's C math library in double, rounded: what the CPU backend computes.
      llvm::Type* t = args[0]->getType();
      std::vector<llvm::Value*> d;
      for (auto* a : args)
        d.push_back(t->isDoubleTy() ? a : b.CreateFPExt(a, b.getDoubleTy()));
      llvm::Value* r = call(b, op.str_attr(attr::symbol).c_str(), b.getDoubleTy(), d);
      return t->isDoubleTy() ? r : b.CreateFPTrunc(r, t);
    }
    return expand_math(b, kind, args, *this, op); // what AMDGPU uses
  }
  bool printf(llvm::IRBuilder<>& b, const std::string& format,
              const std::vector<llvm::Value*>& args) override {
    auto* m = b.GetInsertBlock()->getModule();
    std::vector<llvm::Value*> all{b.CreateGlobalString(format, "printf_format", 0, m)};
    all.insert(all.end(), args.begin(), args.end());
    auto* fty = llvm::FunctionType::get(b.getInt32Ty(), {b.getPtrTy()}, true);
    b.CreateCall(m->getOrInsertFunction("printf", fty), all);
    return true;
  }
  llvm::SyncScope::ID sync_scope(llvm::LLVMContext&, ir::MemScope) override {
    return llvm::SyncScope::System;
  }
  // TMA where the emulated matrix unit is sm_90a's.
  void make_kernel(llvm::Function&, int, int) override {}
  void prepare_module(llvm::Module&) override {}
  void optimize(llvm::Module&) override {}
  void emit(llvm::Module&, GpuKernelBinary&, bool) override {}

private:
  int ws_;
  MatrixUnit matrix_;
  std::string dl_;
  HostEmuMatrix matrix_ops_;
  HostEmuAsync async_ops_;
};

// void tritium_emu_entry(ptr slots): loads each parameter from its 64-bit slot and calls the
// kernel.
void add_entry(llvm::Module& m, llvm::Function& kernel) {
  llvm::LLVMContext& ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  auto* fty = llvm::FunctionType::get(b.getVoidTy(), {b.getPtrTy()}, false);
  auto* entry =
      llvm::Function::Create(fty, llvm::Function::ExternalLinkage, "tritium_emu_entry", m);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", entry));
  std::vector<llvm::Value*> args;
  for (unsigned i = 0; i < kernel.arg_size(); ++i) {
    llvm::Type* t = kernel.getArg(i)->getType();
    llvm::Value* slot =
        b.CreateLoad(b.getInt64Ty(), b.CreateConstGEP1_64(b.getInt64Ty(), entry->getArg(0), i));
    if (t->isPointerTy())
      args.push_back(b.CreateIntToPtr(slot, t));
    else if (t->isFloatingPointTy()) {
      llvm::Value* d = b.CreateBitCast(slot, b.getDoubleTy());
      args.push_back(t->isDoubleTy() ? d : b.CreateFPTrunc(d, t));
    } else
      args.push_back(b.CreateTrunc(slot, t));
  }
  b.CreateCall(&kernel, args);
  b.CreateRetVoid();
}

// One kernel compiled for emulation: the JIT that holds its code, and how to run it.
class EmulatedProgram {
public:
  EmulatedProgram(const ir::Function& f, const CompileOptions& options, int warp_size,
                  MatrixUnit matrix, int matrix_version)
      : warps_(options.num_warps), stages_(options.num_stages), ws_(warp_size), matrix_(matrix),
        matrix_version_(matrix_version) {
    if (matrix_version_ == 0)
      matrix_version_ =
          matrix == MatrixUnit::None ? 1 : emulated_matrix_arch(matrix)->matrix.version;
    if (warps_ < 1 || (warps_ & (warps_ - 1)) || warps_ * ws_ > 1024)
      throw Error(fmt::format("kernel '{}': num_warps = {} with warp size {}: it must be a power "
                              "of two with num_warps x warp size <= 1024",
                              f.name, warps_, ws_));
    static std::once_flag once;
    std::call_once(once, [] {
      llvm::InitializeNativeTarget();
      llvm::InitializeNativeTargetAsmPrinter();
    });
    // The host, without its f32 -> bf16 instructions: they flush subnormals to zero, where a
    // GPU's cvt.rn.bf16.f32 (and the interpreter) round them (random kernels, seed 9515).
    auto host = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!host)
      throw Error("GPU emulation: cannot describe the host: " + llvm::toString(host.takeError()));
    host->getFeatures().AddFeature("avx512bf16", false);
    host->getFeatures().AddFeature("avxneconvert", false);
    auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*host)).create();
    if (!jit)
      throw Error("GPU emulation: cannot create a JIT: " + llvm::toString(jit.takeError()));
    jit_ = std::move(*jit);
    jit_->getExecutionSession().setErrorReporter(
        [this](llvm::Error e) { jit_errors_ += llvm::toString(std::move(e)) + "\n"; });
    // Emulating wgmma is emulating sm_90a: its shared memory, its TMA.
    const bool sm90a = matrix_ == MatrixUnit::Wgmma;
    GpuFeatures features{warps_, ws_, matrix_, stages_, (sm90a ? 227 : 48) * 1024, sm90a};
    // The pipeline as compiled for the target emulated: sm_90a's rings of S slots (the lowering
    // then copies through registers, which they allow), else AMD's of S - 1.
    features.async_copy = sm90a;
    features.matrix_version = matrix_version_;
    // sm_90a's mma.sync (what wgmma cannot take) is sm_89's, with fp8.
    features.mma_sync_version = sm90a ? 2 : 1;
    // AMD's IR (offsets carried instead of pointers) and its buffer loads and stores (base plus
    // unsigned offset, HostEmuTarget::buffer_load) are what runs here for an AMD matrix unit.
    features.buffer_ops = matrix_ == MatrixUnit::Mfma || matrix_ == MatrixUnit::Wmma;
    features.gathers_join_class = features.buffer_ops;
    // The same passes and lowering as a GPU target's compile (compile.cpp), through the host
    // TargetInfo; the module is JIT-compiled for the host instead of emitted.
    HostEmuTarget ti(ws_, matrix_, jit_->getDataLayout().getStringRepresentation());
    auto ctx = std::make_unique<llvm::LLVMContext>();
    LoweredKernel k = lower_kernel(f, ti, features, ir::ModuleAttrs{{}, warps_, stages_}, *ctx,
                                   options.enable_fp_fusion, nullptr);
    ir_ = ir::print(*k.ir);
    shared_bytes_ = k.shared_bytes;
    scratch_bytes_ = k.global_scratch_bytes;
    std::unique_ptr<llvm::Module> m = std::move(k.module);
    add_entry(*m, *m->getFunction(f.name));
    // fp8 parameters arrive as the code of the slot's double, as the CUDA launch packs them
    // (runtime/core/kernel_params.hpp); add_entry passes the slot's low bits.
    for (size_t i = 0; i < f.args().size(); ++i)
      if (f.args()[i]->type.elem.is_storage_float())
        storage_params_.push_back({i, f.args()[i]->type.elem.kind});
    {
      llvm::raw_string_ostream os(ll_);
      m->print(os, nullptr);
    }
    auto& jd = jit_->getMainJITDylib();
    llvm::orc::MangleAndInterner mangle(jit_->getExecutionSession(), jit_->getDataLayout());
    llvm::orc::SymbolMap syms;
    auto def = [&](const char* name, auto* fn) {
      syms[mangle(name)] = {llvm::orc::ExecutorAddr::fromPtr(fn), llvm::JITSymbolFlags::Exported};
    };
    def("tritium_emu_tid", &tritium_emu_tid);
    def("tritium_emu_pid", &tritium_emu_pid);
    def("tritium_emu_nprog", &tritium_emu_nprog);
    def("tritium_emu_barrier", &tritium_emu_barrier);
    def("tritium_emu_smem", &tritium_emu_smem);
    def("tritium_emu_shfl_xor", &tritium_emu_shfl_xor);
    def("tritium_emu_shfl_idx", &tritium_emu_shfl_idx);
    def("tritium_emu_mma", &tritium_emu_mma);
    def("tritium_emu_ldmatrix", &tritium_emu_ldmatrix);
    def("tritium_emu_stmatrix", &tritium_emu_stmatrix);
    def("tritium_emu_wgmma", &tritium_emu_wgmma);
    def("tritium_emu_wgmma_rs", &tritium_emu_wgmma_rs);
    def("tritium_emu_tma_create", &tritium_emu_tma_create);
    def("tritium_emu_tma_copy", &tritium_emu_tma_copy);
    def("tritium_emu_mbar_init", &tritium_emu_mbar_init);
    def("tritium_emu_mbar_expect", &tritium_emu_mbar_expect);
    def("tritium_emu_mbar_wait", &tritium_emu_mbar_wait);
    def("tritium_emu_mbar_inval", &tritium_emu_mbar_inval);
    def("__truncsfbf2", &tritium_emu_truncsfbf2);
    def("__truncdfbf2", &tritium_emu_truncdfbf2);
    if (auto err = jd.define(llvm::orc::absoluteSymbols(std::move(syms))))
      throw Error("GPU emulation: " + llvm::toString(std::move(err)));
    auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
        jit_->getDataLayout().getGlobalPrefix());
    if (!gen)
      throw Error("GPU emulation: " + llvm::toString(gen.takeError()));
    jd.addGenerator(std::move(*gen));
    if (auto err = jit_->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx))))
      throw Error("GPU emulation: " + llvm::toString(std::move(err)));
    auto sym = jit_->lookup("tritium_emu_entry");
    if (!sym)
      throw Error("GPU emulation: " + llvm::toString(sym.takeError()) + "\n" + jit_errors_);
    entry_ = sym->toPtr<void (*)(const uint64_t*)>();
  }

  void run(const LaunchGrid& grid, std::span<const ArgSlot> slots) {
    static std::mutex one_at_a_time; // the runtime hooks above are process-global
    std::lock_guard<std::mutex> lock(one_at_a_time);
    const int threads = warps_ * ws_;
    std::vector<uint8_t> smem(static_cast<size_t>(shared_bytes_) + 16);
    std::vector<uint32_t> xchg(threads);
    std::vector<uint32_t> frags(static_cast<size_t>(threads) * kFragWords);
    // The global scratch (compile.hpp): one part per program, after the kernel's arguments.
    std::vector<ArgSlot> with_scratch;
    std::vector<uint8_t> scratch;
    if (!storage_params_.empty()) {
      with_scratch.assign(slots.begin(), slots.end());
      for (auto [i, kind] : storage_params_)
        with_scratch[i] = encode_float(std::bit_cast<double>(slots[i]), *float_format(kind));
      slots = with_scratch;
    }
    if (scratch_bytes_ > 0) {
      scratch.resize(static_cast<size_t>(grid.x * grid.y * grid.z * scratch_bytes_) + 128);
      if (with_scratch.empty())
        with_scratch.assign(slots.begin(), slots.end());
      with_scratch.push_back(
          static_cast<ArgSlot>((reinterpret_cast<uintptr_t>(scratch.data()) + 127) / 128 * 128));
      slots = with_scratch;
    }
    // Each program's threads run to its end, meet, and go on to the next program together.
    Fibers fibers;
    FiberBarrier block(threads);
    std::vector<FiberBarrier> warps(static_cast<size_t>(warps_), FiberBarrier(ws_));
    Launch launch{{grid.x, grid.y, grid.z},
                  {0, 0, 0},
                  threads,
                  ws_,
                  &fibers,
                  &block,
                  &warps,
                  &smem,
                  &xchg,
                  &frags};
    g_launch = &launch;
    try {
      fibers.run(threads, [&](int) {
        for (int64_t z = 0; z < grid.z; ++z)
          for (int64_t y = 0; y < grid.y; ++y)
            for (int64_t x = 0; x < grid.x; ++x) {
              launch.pid[0] = x;
              launch.pid[1] = y;
              launch.pid[2] = z;
              entry_(slots.data());
              block.arrive_and_wait(fibers);
            }
      });
    } catch (...) {
      g_launch = nullptr;
      throw;
    }
    g_launch = nullptr;
  }

  const std::string& ir() const { return ir_; }
  const std::string& ll() const { return ll_; }

private:
  int warps_, stages_, ws_;
  MatrixUnit matrix_;
  int matrix_version_;
  int shared_bytes_ = 0;
  int scratch_bytes_ = 0; // global scratch per program (TMA maps): one more, last parameter
  std::vector<std::pair<size_t, ir::ScalarKind>> storage_params_;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::string jit_errors_, ir_, ll_;
  void (*entry_)(const uint64_t*) = nullptr;
};

} // namespace

struct EmulatedKernel::Program : EmulatedProgram {
  using EmulatedProgram::EmulatedProgram;
};

EmulatedKernel::EmulatedKernel(const ir::Function& f, const CompileOptions& options, int warp_size,
                               MatrixUnit matrix, int matrix_version)
    : program_(std::make_unique<Program>(f, options, warp_size, matrix, matrix_version)) {}
EmulatedKernel::~EmulatedKernel() = default;
void EmulatedKernel::run(const LaunchGrid& grid, std::span<const ArgSlot> args) {
  program_->run(grid, args);
}
const std::string& EmulatedKernel::ir() const {
  return program_->ir();
}
const std::string& EmulatedKernel::ll() const {
  return program_->ll();
}

void emulate_gpu_kernel(const ir::Function& f, const CompileOptions& options, int warp_size,
                        const LaunchGrid& grid, std::span<const ArgSlot> slots, MatrixUnit matrix,
                        int matrix_version) {
  EmulatedProgram(f, options, warp_size, matrix, matrix_version).run(grid, slots);
}

const Arch* emulated_matrix_arch(MatrixUnit matrix) {
  switch (matrix) {
  case MatrixUnit::None:
    return nullptr;
  case MatrixUnit::MmaSync:
    return &arch_of("sm_80");
  case MatrixUnit::Wgmma:
    return &arch_of("sm_90a");
  case MatrixUnit::Mfma:
    return &arch_of("gfx942");
  case MatrixUnit::Wmma:
    return &arch_of("gfx1100");
  }
  return nullptr;
}

} // namespace tritium::gpu
