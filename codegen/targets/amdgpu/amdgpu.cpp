// AMDGPU: CDNA (wave64) and RDNA (wave32) targets of the architecture model (gpu_ir/arch.hpp),
// which says what differs between them. LLVM emits a relocatable ELF object,
// Debian's ld.lld-19 links it (`-shared`) into the HSACO that hipModuleLoadData takes (see
// docs/gpu-codegen.md for why lld runs as a subprocess rather than in process). Code object
// v5 by default, v4 on request. Math: LLVM's AMDGPU intrinsics for exp/exp2/log/log2/sin/cos
// on f32 and the shared expansions for tanh/erf/pow, and our own f64 expansions. The C math
// functions of tl::extern_elementwise come from ROCm's ocml bitcode (Debian 12's
// rocm-device-libs), linked only when a kernel calls one.
#include "distribute_uniform_products.hpp"
#include "gpu/subprocess.hpp"
#include "gpu/target_info.hpp"
#include "gpu_ir/arch.hpp"

#include <tritium/error.hpp>
#include <tritium/float_format.hpp>

#include <fmt/format.h>

#include <llvm/BinaryFormat/ELF.h>
#include <llvm/BinaryFormat/MsgPackDocument.h>
#include <llvm/IR/IntrinsicsAMDGPU.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <unistd.h>

namespace tritium::gpu {
namespace {

namespace fs = std::filesystem;

std::string find_lld() {
  if (const char* p = std::getenv("TRITIUM_LLD"); p && *p) {
    if (::access(p, X_OK) != 0)
      throw Error(fmt::format("AMDGPU: TRITIUM_LLD={} is not an executable file ({}); unset it "
                              "to use Debian's ld.lld-19 (package lld-19)",
                              p, std::strerror(errno)));
    return p;
  }
  for (const char* c : {"/usr/bin/ld.lld-19", "/usr/lib/llvm-19/bin/ld.lld", "/usr/bin/ld.lld"})
    if (fs::exists(c))
      return c;
  throw Error("AMDGPU: ld.lld (Debian package lld-19) is needed to link the HSACO and was not "
              "found; install lld-19 or set TRITIUM_LLD");
}

// CDNA3's fp8 MFMA for a and b's formats: "fp8" is e4m3fnuz, "bf8" e5m2fnuz.
llvm::Intrinsic::ID mfma_fp8(const MmaInstr& in) {
  using namespace llvm::Intrinsic;
  const bool a8 = in.a.kind == ir::ScalarKind::F8E4B8, b8 = in.b.kind == ir::ScalarKind::F8E4B8;
  if (in.m == 32)
    return a8 ? (b8 ? amdgcn_mfma_f32_32x32x16_fp8_fp8 : amdgcn_mfma_f32_32x32x16_fp8_bf8)
              : (b8 ? amdgcn_mfma_f32_32x32x16_bf8_fp8 : amdgcn_mfma_f32_32x32x16_bf8_bf8);
  return a8 ? (b8 ? amdgcn_mfma_f32_16x16x32_fp8_fp8 : amdgcn_mfma_f32_16x16x32_fp8_bf8)
            : (b8 ? amdgcn_mfma_f32_16x16x32_bf8_fp8 : amdgcn_mfma_f32_16x16x32_bf8_bf8);
}

// RDNA4's fp8 WMMA for a and b's formats: "fp8" is e4m3 (OCP), "bf8" e5m2.
llvm::Intrinsic::ID wmma_fp8(const MmaInstr& in) {
  using namespace llvm::Intrinsic;
  const bool a8 = in.a.kind == ir::ScalarKind::F8E4NV, b8 = in.b.kind == ir::ScalarKind::F8E4NV;
  return a8 ? (b8 ? amdgcn_wmma_f32_16x16x16_fp8_fp8 : amdgcn_wmma_f32_16x16x16_fp8_bf8)
            : (b8 ? amdgcn_wmma_f32_16x16x16_bf8_fp8 : amdgcn_wmma_f32_16x16x16_bf8_bf8);
}

// Runs ld.lld -shared on `object`; returns the HSACO.
std::vector<uint8_t> link_hsaco(const std::string& object, const std::string& kernel) {
  static std::atomic<int> counter{0};
  fs::path dir = fs::temp_directory_path() /
                 fmt::format("tritium-lld-{}-{}", ::getpid(), counter.fetch_add(1));
  fs::create_directories(dir);
  fs::path in = dir / "kernel.o", out = dir / "kernel.hsaco", err = dir / "lld.err";
  std::ofstream(in, std::ios::binary)
      .write(object.data(), static_cast<std::streamsize>(object.size()));
  std::string lld = find_lld();
  std::vector<std::string> args = {lld,  "-flavor",    "gnu",      "-shared", "--no-undefined",
                                   "-o", out.string(), in.string()};
  if (lld.find("ld.lld") != std::string::npos)
    args.erase(args.begin() + 1, args.begin() + 3);
  if (std::string why = run_tool(args, err); !why.empty()) {
    fs::remove_all(dir);
    throw Error(fmt::format("kernel '{}': linking the HSACO with {} failed: {}", kernel, lld, why));
  }
  std::ifstream f(out, std::ios::binary);
  std::vector<uint8_t> hsaco((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  fs::remove_all(dir);
  return hsaco;
}

// The AMDGPU metadata note of an HSACO, as YAML text.
std::string hsaco_metadata(const std::vector<uint8_t>& hsaco) {
  llvm::StringRef data(reinterpret_cast<const char*>(hsaco.data()), hsaco.size());
  auto obj = llvm::object::ObjectFile::createELFObjectFile(llvm::MemoryBufferRef(data, "hsaco"));
  if (!obj) {
    llvm::consumeError(obj.takeError());
    return {};
  }
  auto* elf = llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(obj->get());
  if (!elf)
    return {};
  const auto& file = elf->getELFFile();
  auto headers = file.program_headers();
  if (!headers) {
    llvm::consumeError(headers.takeError());
    return {};
  }
  for (const auto& ph : *headers) {
    if (ph.p_type != llvm::ELF::PT_NOTE)
      continue;
    llvm::Error e = llvm::Error::success();
    for (const auto& note : file.notes(ph, e)) {
      if (note.getName() != "AMDGPU" || note.getType() != llvm::ELF::NT_AMDGPU_METADATA)
        continue;
      auto desc = note.getDesc(ph.p_align);
      llvm::msgpack::Document doc;
      if (!doc.readFromBlob(
              llvm::StringRef(reinterpret_cast<const char*>(desc.data()), desc.size()), false))
        continue;
      std::string text;
      llvm::raw_string_ostream os(text);
      doc.toYAML(os);
      llvm::consumeError(std::move(e));
      return os.str();
    }
    llvm::consumeError(std::move(e));
  }
  return {};
}

// ROCm's ocml.bc: $TRITIUM_OCML, then where Debian's rocm-device-libs and ROCm install it.
std::string find_ocml() {
  std::vector<std::string> candidates;
  if (const char* p = std::getenv("TRITIUM_OCML"))
    candidates.push_back(p);
  if (const char* p = std::getenv("ROCM_PATH"))
    candidates.push_back(std::string(p) + "/amdgcn/bitcode/ocml.bc");
  candidates.push_back("/usr/lib/x86_64-linux-gnu/amdgcn/bitcode/ocml.bc");
  candidates.push_back("/opt/rocm/amdgcn/bitcode/ocml.bc");
  for (const auto& c : candidates)
    if (std::filesystem::exists(c))
      return c;
  return {};
}

// MFMA (CDNA) and WMMA (RDNA) through LLVM's AMDGPU intrinsics (AmdgpuTarget::matrix()).
class AmdMatrix final : public MatrixOps {
public:
  explicit AmdMatrix(const Arch& model) : MatrixOps(std::string(model.name)), model_(model) {}

  std::vector<llvm::Value*> mma(llvm::IRBuilder<>& b, const MmaInstr& in,
                                const std::vector<llvm::Value*>& a,
                                const std::vector<llvm::Value*>& bv,
                                const std::vector<llvm::Value*>& c) override {
    const bool bf16 = in.a.kind == ir::ScalarKind::BF16, fp8 = in.a.bits() == 8;
    // What select_mma_instr would not choose for this target (IR text written by hand):
    // an error here rather than LLVM failing to select the instruction.
    if (in.unit != model_.matrix.unit || in.version != model_.matrix.version ||
        !model_.matrix.operands.contains(in.a.kind) || !model_.matrix.operands.contains(in.b.kind))
      throw Error(fmt::format("AMDGPU: {} has no {} v{} instruction for {} operands", arch_,
                              matrix_unit_name(in.unit), in.version, ir::to_string(in.a)));
    // Operands as vectors of the instruction's type: bf16 travels as i16, fp8 codes as eight
    // bytes (MFMA: one i64; WMMA: two i32).
    auto vec = [&](const std::vector<llvm::Value*>& elems) {
      llvm::Type* et = fp8 ? b.getInt8Ty() : bf16 ? b.getInt16Ty() : b.getHalfTy();
      llvm::Value* v = llvm::PoisonValue::get(llvm::FixedVectorType::get(et, elems.size()));
      for (size_t i = 0; i < elems.size(); ++i)
        v = b.CreateInsertElement(v, b.CreateBitCast(elems[i], et), i);
      if (!fp8)
        return v;
      return b.CreateBitCast(v, in.unit == MatrixUnit::Mfma
                                    ? static_cast<llvm::Type*>(b.getInt64Ty())
                                    : llvm::FixedVectorType::get(b.getInt32Ty(), 2));
    };
    llvm::Value* acc = llvm::PoisonValue::get(llvm::FixedVectorType::get(b.getFloatTy(), c.size()));
    for (size_t i = 0; i < c.size(); ++i)
      acc = b.CreateInsertElement(acc, c[i], i);
    llvm::Value* va = vec(a);
    llvm::Value* vb = vec(bv);
    llvm::Value* d;
    if (in.unit == MatrixUnit::Mfma) {
      llvm::Intrinsic::ID id = fp8 ? mfma_fp8(in)
                               : in.m == 32
                                   ? (bf16 ? llvm::Intrinsic::amdgcn_mfma_f32_32x32x8bf16_1k
                                           : llvm::Intrinsic::amdgcn_mfma_f32_32x32x8f16)
                                   : (bf16 ? llvm::Intrinsic::amdgcn_mfma_f32_16x16x16bf16_1k
                                           : llvm::Intrinsic::amdgcn_mfma_f32_16x16x16f16);
      d = b.CreateIntrinsic(id, {}, {va, vb, acc, b.getInt32(0), b.getInt32(0), b.getInt32(0)});
    } else {
      llvm::Intrinsic::ID id = fp8    ? wmma_fp8(in)
                               : bf16 ? llvm::Intrinsic::amdgcn_wmma_f32_16x16x16_bf16
                                      : llvm::Intrinsic::amdgcn_wmma_f32_16x16x16_f16;
      d = b.CreateIntrinsic(id, {acc->getType(), va->getType()}, {va, vb, acc});
    }
    std::vector<llvm::Value*> out;
    for (size_t i = 0; i < c.size(); ++i)
      out.push_back(b.CreateExtractElement(d, i));
    return out;
  }

private:
  const Arch& model_;
};

class AmdgpuTarget final : public TargetInfo {
public:
  explicit AmdgpuTarget(const GpuTarget& t)
      : model_(arch_of(t.arch)), arch_(model_.name), code_object_(t.code_object),
        warp_(model_.warp_size) {
    if (!model_.is_amd())
      throw Error(fmt::format("AMDGPU: '{}' is not an AMD architecture", t.arch));
    if (code_object_ != 4 && code_object_ != 5)
      throw Error(fmt::format("AMDGPU: code object version {} (4 or 5)", code_object_));
    tm_ =
        make_target_machine(triple(), arch_, warp_ == 64 ? "+wavefrontsize64" : "+wavefrontsize32");
  }

  std::string arch() const override { return arch_; }
  std::string triple() const override { return "amdgcn-amd-amdhsa"; }
  std::string data_layout() const override {
    return tm_->createDataLayout().getStringRepresentation();
  }
  int warp_size() const override { return warp_; }
  int max_shared_bytes() const override { return model_.shared_bytes; }

  void schedule_barrier(llvm::IRBuilder<>& b) override {
    b.CreateIntrinsic(llvm::Intrinsic::amdgcn_sched_barrier, {}, {b.getInt32(0)});
  }

  // CDNA: v_mfma_f32_{32x32x8,16x16x16}{f16,bf16_1k}; RDNA: v_wmma_f32_16x16x16_{f16,bf16},
  // whose operands are 16 elements a lane on gfx11 and 8 on gfx12 (the fragment layouts say
  // which; the intrinsics are overloaded on the vector types).
  MatrixUnit matrix_unit() const override { return model_.matrix.unit; }
  MatrixOps& matrix() override { return matrix_; }
  // No copies beside the threads: a pipeline's copy is a load and a store (lower_shared.cpp).
  AsyncOps& async() override { return async_; }

  llvm::Value* thread_id(llvm::IRBuilder<>& b) override {
    auto* v = b.CreateIntrinsic(llvm::Intrinsic::amdgcn_workitem_id_x, {}, {});
    return v;
  }
  llvm::Value* program_id(llvm::IRBuilder<>& b, int axis) override {
    static const llvm::Intrinsic::ID ids[] = {llvm::Intrinsic::amdgcn_workgroup_id_x,
                                              llvm::Intrinsic::amdgcn_workgroup_id_y,
                                              llvm::Intrinsic::amdgcn_workgroup_id_z};
    return b.CreateIntrinsic(ids[axis], {}, {});
  }
  llvm::Value* num_programs(llvm::IRBuilder<>& b, int axis) override {
    if (code_object_ >= 5) {
      // Code object v5: hidden_block_count_{x,y,z} open the implicit kernel arguments.
      llvm::Value* p = b.CreateIntrinsic(llvm::Intrinsic::amdgcn_implicitarg_ptr, {}, {});
      llvm::Value* q = b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), p, 4 * axis);
      return b.CreateAlignedLoad(b.getInt32Ty(), q, llvm::Align(4));
    }
    // v4: the HSA dispatch packet's grid size (in work-items) over the work-group size.
    llvm::Value* p = b.CreateIntrinsic(llvm::Intrinsic::amdgcn_dispatch_ptr, {}, {});
    llvm::Value* grid = b.CreateAlignedLoad(
        b.getInt32Ty(), b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), p, 12 + 4 * axis),
        llvm::Align(4));
    llvm::Value* wg = b.CreateAlignedLoad(
        b.getInt16Ty(), b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), p, 4 + 2 * axis),
        llvm::Align(2));
    return b.CreateUDiv(grid, b.CreateZExt(wg, b.getInt32Ty()));
  }
  void barrier(llvm::IRBuilder<>& b) override {
    auto ws = b.getContext().getOrInsertSyncScopeID("workgroup");
    b.CreateFence(llvm::AtomicOrdering::Release, ws);
    b.CreateIntrinsic(llvm::Intrinsic::amdgcn_s_barrier, {}, {});
    b.CreateFence(llvm::AtomicOrdering::Acquire, ws);
  }
  // Exchanges within a row of 16 lanes are DPP: a modifier on a v_mov, no trip through the LDS
  // unit. Within a quad (masks 1-3) quad permutations; on RDNA any mask by row_xmask; on CDNA a
  // mask of 8 is a rotation of the row by 8 and one of 4 two shifts by 4, each writing the
  // banks (quads) whose lanes read forward or back (as Triton's AMD reductions do). Within 32
  // lanes ds_swizzle's bit mode (no address register); only a mask of 32 (across the halves of
  // a wave64) takes ds_bpermute.
  llvm::Value* shuffle_xor(llvm::IRBuilder<>& b, llvm::Value* v, int lane_mask) override {
    auto dpp = [&](llvm::Value* old, int ctrl, int bank_mask, bool bound_ctrl = true) {
      // Where every lane reads a valid one, the old value is never kept: poison, and
      // bound_ctrl, let LLVM fold the move into the instruction using it (v_max_f32_dpp).
      return b.CreateIntrinsic(llvm::Intrinsic::amdgcn_update_dpp, {b.getInt32Ty()},
                               {old, v, b.getInt32(ctrl), b.getInt32(0xf), b.getInt32(bank_mask),
                                b.getInt1(bound_ctrl)});
    };
    llvm::Value* poison = llvm::PoisonValue::get(b.getInt32Ty());
    if (lane_mask > 0 && lane_mask < 4) {
      // quad_perm: lane i of each quad reads quad lane sel[i] = i ^ mask, 2 bits each.
      int sel = 0;
      for (int i = 0; i < 4; ++i)
        sel |= (i ^ lane_mask) << (2 * i);
      return dpp(poison, sel, 0xf);
    }
    if (lane_mask > 0 && lane_mask < 16 && model_.has(Feature::DppRowXmask))
      return dpp(poison, 0x160 | lane_mask, 0xf); // row_xmask: lane ^ mask within its row
    if (lane_mask == 8)
      return dpp(poison, 0x128, 0xf); // row_ror:8: lane i reads lane (i + 8) % 16 = i ^ 8
    if (lane_mask == 4) {
      // row_shl:4 (lane i reads i + 4) into quads 0 and 2, row_shr:4 (i - 4) into 1 and 3.
      return dpp(dpp(poison, 0x104, 0x5), 0x114, 0xa, false);
    }
    if (lane_mask == 16 && model_.has(Feature::PermlaneX16)) {
      // Lane i of each row of 16 reads lane i of the other row: a VALU op, no LDS unit wait.
      return b.CreateIntrinsic(llvm::Intrinsic::amdgcn_permlanex16, {v->getType()},
                               {llvm::PoisonValue::get(v->getType()), v, b.getInt32(0x76543210),
                                b.getInt32(static_cast<int32_t>(0xfedcba98u)), b.getFalse(),
                                b.getFalse()});
    }
    if (lane_mask > 0 && lane_mask < 32) // bit mode: ((lane & 0x1f) | 0) ^ mask, per 32 lanes
      return b.CreateIntrinsic(llvm::Intrinsic::amdgcn_ds_swizzle, {},
                               {v, b.getInt32(0x1f | (lane_mask << 10))});
    // ds_bpermute reads lane (address / 4) of the wave.
    llvm::Value* lane = b.CreateAnd(thread_id(b), b.getInt32(warp_ - 1));
    llvm::Value* addr = b.CreateShl(b.CreateXor(lane, b.getInt32(lane_mask)), 2);
    return b.CreateIntrinsic(llvm::Intrinsic::amdgcn_ds_bpermute, {}, {addr, v});
  }
  llvm::Value* shuffle_idx(llvm::IRBuilder<>& b, llvm::Value* v, llvm::Value* src_lane) override {
    // One lane for all: a scalar read of it (v_readlane), no trip through the LDS unit.
    if (llvm::isa<llvm::ConstantInt>(src_lane))
      return b.CreateIntrinsic(llvm::Intrinsic::amdgcn_readlane, {v->getType()}, {v, src_lane});
    return b.CreateIntrinsic(llvm::Intrinsic::amdgcn_ds_bpermute, {},
                             {b.CreateShl(src_lane, 2), v});
  }
  llvm::Value* shared_memory_base(llvm::IRBuilder<>& b) override {
    llvm::Module* m = b.GetInsertBlock()->getModule();
    if (auto* g = m->getNamedGlobal("tritium_smem"))
      return g;
    // Dynamic LDS, sized by the launch (hipModuleLaunchKernel's sharedMemBytes).
    auto* ty = llvm::ArrayType::get(b.getInt8Ty(), 0);
    auto* g = new llvm::GlobalVariable(*m, ty, false, llvm::GlobalValue::ExternalLinkage, nullptr,
                                       "tritium_smem", nullptr, llvm::GlobalValue::NotThreadLocal,
                                       shared_address_space());
    g->setAlignment(llvm::Align(16));
    return g;
  }
  // Buffer descriptor (V#) of a raw buffer at `base` covering 2^31 - 2 bytes: any offset at or
  // above 2^31 is out of range, which loads answer with 0 and stores ignore.
  llvm::Value* resource(llvm::IRBuilder<>& b, llvm::Value* base) {
    // Word 3: a non-zero data format (ignored by untyped accesses but required); RDNA also
    // needs bit 24 and out-of-bounds checking against the offset (bits 28-29 = 3).
    uint32_t flags = (7u << 12) | (4u << 15);
    if (model_.matrix.unit == MatrixUnit::Wmma) // RDNA
      flags |= (1u << 24) | (3u << 28);
    return b.CreateIntrinsic(llvm::Intrinsic::amdgcn_make_buffer_rsrc, {base->getType()},
                             {base, b.getInt16(0), b.getInt32(0x7ffffffe), b.getInt32(flags)});
  }
  // Buffer accesses move whole dwords (or one byte / short): other types travel as integers.
  static llvm::Type* buffer_type(llvm::IRBuilder<>& b, llvm::Type* t, const llvm::DataLayout& dl) {
    uint64_t bits = dl.getTypeSizeInBits(t);
    if (bits == 8 || bits == 16)
      return b.getIntNTy(static_cast<unsigned>(bits));
    if (bits == 32)
      return b.getInt32Ty();
    if (bits % 32 == 0 && bits <= 128)
      return llvm::FixedVectorType::get(b.getInt32Ty(), static_cast<unsigned>(bits / 32));
    return nullptr;
  }
  llvm::Value* masked_offset(llvm::IRBuilder<>& b, llvm::Value* off, llvm::Value* mask) {
    return mask ? b.CreateSelect(mask, off, b.getInt32(0x80000000u)) : off;
  }
  llvm::Value* buffer_load(llvm::IRBuilder<>& b, llvm::Type* type, llvm::Value* base,
                           llvm::Value* byte_offset, llvm::Value* mask) override {
    if (!model_.has(Feature::BufferOps))
      return nullptr;
    const auto& dl = b.GetInsertBlock()->getModule()->getDataLayout();
    llvm::Type* bt = buffer_type(b, type, dl);
    if (!bt)
      return nullptr;
    llvm::Value* v = b.CreateIntrinsic(
        llvm::Intrinsic::amdgcn_raw_ptr_buffer_load, {bt},
        {resource(b, base), masked_offset(b, byte_offset, mask), b.getInt32(0), b.getInt32(0)});
    return type->isPointerTy() ? b.CreateIntToPtr(v, type) : b.CreateBitCast(v, type);
  }
  bool buffer_store(llvm::IRBuilder<>& b, llvm::Value* value, llvm::Value* base,
                    llvm::Value* byte_offset, llvm::Value* mask) override {
    if (!model_.has(Feature::BufferOps))
      return false;
    const auto& dl = b.GetInsertBlock()->getModule()->getDataLayout();
    llvm::Type* bt = buffer_type(b, value->getType(), dl);
    if (!bt)
      return false;
    llvm::Value* v =
        value->getType()->isPointerTy() ? b.CreatePtrToInt(value, bt) : b.CreateBitCast(value, bt);
    b.CreateIntrinsic(
        llvm::Intrinsic::amdgcn_raw_ptr_buffer_store, {bt},
        {v, resource(b, base), masked_offset(b, byte_offset, mask), b.getInt32(0), b.getInt32(0)});
    return true;
  }

  // CDNA3's fp8 conversions (gfx940-942: the fnuz formats, fp8 = e4m3fnuz, bf8 = e5m2fnuz),
  // two lanes in the low word. The hardware rounds to nearest even; out of range it gives NaN
  // rather than Triton's saturation (dtypes.def), so finite overflow and infinities are
  // clamped to the largest finite first (NaN compares false and passes through).
  llvm::Value* pair(llvm::IRBuilder<>& b, ir::OpKind kind,
                    const std::vector<std::array<llvm::Value*, 2>>& lanes, ir::DType from,
                    ir::DType to) override {
    using ir::ScalarKind;
    if (kind != ir::OpKind::Cast || model_.family != Family::Cdna3)
      return nullptr;
    auto fnuz = [](ir::DType t) {
      return t.kind == ScalarKind::F8E4B8 || t.kind == ScalarKind::F8E5B16;
    };
    if (fnuz(to) && from.kind == ScalarKind::F32) {
      const FloatFormat& f = *float_format(to.kind);
      auto* max = llvm::ConstantFP::get(b.getFloatTy(), decode_float(f.max_finite_code(), f));
      std::array<llvm::Value*, 2> x;
      for (int i = 0; i < 2; ++i) {
        llvm::Value* v = lanes[0][i];
        llvm::Value* big = b.CreateFCmpOGT(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, v), max);
        x[i] = b.CreateSelect(big, b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, max, v), v);
      }
      auto id = to.kind == ScalarKind::F8E4B8 ? llvm::Intrinsic::amdgcn_cvt_pk_fp8_f32
                                              : llvm::Intrinsic::amdgcn_cvt_pk_bf8_f32;
      llvm::Value* w = b.CreateIntrinsic(id, {}, {x[0], x[1], b.getInt32(0), b.getFalse()});
      return b.CreateBitCast(b.CreateTrunc(w, b.getInt16Ty()),
                             llvm::FixedVectorType::get(b.getInt8Ty(), 2));
    }
    if (fnuz(from) && (to.kind == ScalarKind::F32 || to.kind == ScalarKind::F16)) {
      auto* i8x2 = llvm::FixedVectorType::get(b.getInt8Ty(), 2);
      llvm::Value* v =
          b.CreateInsertElement(llvm::PoisonValue::get(i8x2), lanes[0][0], uint64_t{0});
      v = b.CreateInsertElement(v, lanes[0][1], uint64_t{1});
      llvm::Value* w = b.CreateZExt(b.CreateBitCast(v, b.getInt16Ty()), b.getInt32Ty());
      auto id = from.kind == ScalarKind::F8E4B8 ? llvm::Intrinsic::amdgcn_cvt_pk_f32_fp8
                                                : llvm::Intrinsic::amdgcn_cvt_pk_f32_bf8;
      llvm::Value* f = b.CreateIntrinsic(id, {}, {w, b.getFalse()});
      return to.kind == ScalarKind::F32 // f16 holds every fnuz value: the truncation is exact
                 ? f
                 : b.CreateFPTrunc(f, llvm::FixedVectorType::get(b.getHalfTy(), 2));
    }
    return nullptr;
  }

  llvm::SyncScope::ID sync_scope(llvm::LLVMContext& ctx, ir::MemScope scope) override {
    switch (scope) {
    case ir::MemScope::Cta:
      return ctx.getOrInsertSyncScopeID("workgroup");
    case ir::MemScope::Sys:
      return llvm::SyncScope::System;
    case ir::MemScope::Gpu:
      break;
    }
    return ctx.getOrInsertSyncScopeID("agent");
  }

  // LLVM's intrinsics for f32 exp, log, sin, … and our own expansions for the rest and for f64,
  // so that ordinary kernels need no device library; only extern functions link ocml.
  llvm::Value* math(llvm::IRBuilder<>& b, ir::OpKind kind, std::vector<llvm::Value*> args,
                    const ir::Op& op) override {
    if (ir::op_category(kind) == ir::OpCategory::Extern) {
      // tl::extern_elementwise: ocml's function of that name (Debian's rocm-device-libs),
      // linked in prepare_module.
      bool f64 = args[0]->getType()->isDoubleTy();
      std::string name =
          fmt::format("__ocml_{}_{}", op.str_attr(attr::symbol), f64 ? "f64" : "f32");
      std::vector<llvm::Type*> tys(args.size(), args[0]->getType());
      auto* fty = llvm::FunctionType::get(args[0]->getType(), tys, false);
      ocml_users_.insert(op.loc.str() + " ('" + op.str_attr(attr::symbol) + "')");
      return b.CreateCall(b.GetInsertBlock()->getModule()->getOrInsertFunction(name, fty), args);
    }
    // Triton's f32 tl.exp on AMD: exp2 of x * log2(e), LLVM's llvm.exp2.f32 (v_exp_f32, scaled
    // around it where the result is subnormal: five instructions where llvm.exp.f32's
    // range reduction takes twelve). Relative error: v_exp_f32's 1 ulp plus the rounding of
    // x * log2(e) (up to 3e-6 near |x| = 88), as on NVIDIA.
    if (kind == ir::OpKind::Exp && args[0]->getType()->isFloatTy())
      return b.CreateUnaryIntrinsic(
          llvm::Intrinsic::exp2,
          b.CreateFMul(args[0], llvm::ConstantFP::get(args[0]->getType(), 1.4426950408889634)));
    // Triton's f32 tl.math.exp2 on AMD: v_exp_f32 itself, which flushes subnormal results to
    // zero (ex2.approx.ftz on NVIDIA); llvm.exp2.f32 scales around it for them, four
    // instructions more an element (attention's softmax: 128 a loop iteration at 128 x 64).
    if (kind == ir::OpKind::Exp2 && args[0]->getType()->isFloatTy())
      return b.CreateIntrinsic(llvm::Intrinsic::amdgcn_exp2, {args[0]->getType()}, {args[0]});
    return expand_math(b, kind, args, *this, op);
  }

  void make_kernel(llvm::Function& f, int num_threads, int /*min_blocks*/) override {
    f.setCallingConv(llvm::CallingConv::AMDGPU_KERNEL);
    f.addFnAttr("amdgpu-flat-work-group-size", fmt::format("1,{}", num_threads));
    f.addFnAttr("uniform-work-group-size", "true");
  }

  void prepare_module(llvm::Module& m) override {
    m.addModuleFlag(llvm::Module::Error, "amdhsa_code_object_version",
                    static_cast<uint32_t>(code_object_ * 100));
    bool needed = false;
    for (auto& f : m)
      needed |= f.isDeclaration() && f.getName().starts_with("__ocml_");
    if (needed)
      link_ocml(m);
  }

  // Links the ocml functions the kernel calls (only those), internalized and inlined, and
  // defines the __oclc_* control constants ocml reads, as ROCm's oclc_*.bc would: IEEE
  // denormals, no finite-only or unsafe math, correctly rounded sqrt, this ISA's version.
  void link_ocml(llvm::Module& m) {
    std::string path = find_ocml();
    if (path.empty()) {
      std::string users;
      for (const auto& u : ocml_users_)
        users += (users.empty() ? "" : ", ") + u;
      throw Error(fmt::format("AMDGPU: {} needs ROCm's device library ocml.bc, which was not "
                              "found (Debian: apt-get install rocm-device-libs; or set "
                              "TRITIUM_OCML to the file)",
                              users));
    }
    link_bitcode_library(m, path, "AMDGPU: ocml");
    auto define = [&](const char* name, llvm::Type* t, uint64_t v) {
      auto* g = m.getGlobalVariable(name);
      if (!g)
        return;
      g->setInitializer(llvm::ConstantInt::get(t, v));
      g->setConstant(true);
      g->setLinkage(llvm::GlobalValue::InternalLinkage);
    };
    auto* i8 = llvm::Type::getInt8Ty(m.getContext());
    define("__oclc_finite_only_opt", i8, 0);
    define("__oclc_unsafe_math_opt", i8, 0);
    define("__oclc_daz_opt", i8, 0);
    define("__oclc_correctly_rounded_sqrt32", i8, 1);
    define("__oclc_wavefrontsize64", i8, warp_ == 64 ? 1 : 0);
    define("__oclc_ISA_version", llvm::Type::getInt32Ty(m.getContext()),
           uint64_t(model_.isa.major * 1000 + model_.isa.minor * 100 + model_.isa.stepping));
    define("__oclc_ABI_version", llvm::Type::getInt32Ty(m.getContext()),
           uint64_t(code_object_ * 100));
    for (auto& f : m)
      if (!f.isDeclaration() && f.getName().starts_with("__ocml_")) {
        f.setLinkage(llvm::GlobalValue::InternalLinkage);
        f.addFnAttr(llvm::Attribute::AlwaysInline);
      }
  }

  // With the SLP vectorizer (as Triton runs it): pairs of f32 multiplies and adds become CDNA's
  // packed v_pk_mul_f32 / v_pk_add_f32 / v_pk_fma_f32 (attention's rescaled accumulator).
  void optimize(llvm::Module& m) override {
    for (llvm::Function& f : m)
      if (!f.isDeclaration())
        contract_mul_add(f);
    optimize_module(m, *tm_, true);
    // LDS accesses are addrspace(3) loads, stores and intrinsics; inline assembly counts as one.
    const BarrierRules barriers{llvm::Intrinsic::amdgcn_s_barrier, shared_address_space(),
                                [](const std::string&) { return true; }};
    for (llvm::Function& f : m)
      if (!f.isDeclaration()) {
        sink_casts_past_joins(f);
        distribute_uniform_products(f);
        sink_into_cold_paths(f);
        remove_idle_barriers(f, barriers);
      }
  }

  void emit(llvm::Module& m, GpuKernelBinary& out, bool /*fp_fusion*/) override {
    auto copy = llvm::CloneModule(m);
    out.assembly = emit_to_string(*copy, *tm_, false);
    out.stages.emplace_back("amdgcn", out.assembly);
    std::string object = emit_to_string(m, *tm_, true);
    out.binary = link_hsaco(object, out.name);
    out.stages.emplace_back("hsaco.meta", hsaco_metadata(out.binary));
  }

private:
  const Arch& model_;
  std::string arch_;
  AmdMatrix matrix_{model_};
  AsyncOps async_;
  int code_object_;
  int warp_;
  std::set<std::string> ocml_users_; // where the kernel calls ocml, for the error without it
  std::unique_ptr<llvm::TargetMachine> tm_;
};

} // namespace

std::unique_ptr<TargetInfo> make_amdgpu_target(const GpuTarget& t) {
  return std::make_unique<AmdgpuTarget>(t);
}

} // namespace tritium::gpu
