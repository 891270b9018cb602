// AMDGPU: gfx90a, gfx942 (wave64) and gfx1100 (wave32). LLVM emits a relocatable ELF object,
// Debian's ld.lld-19 links it (`-shared`) into the HSACO that hipModuleLoadData takes (see
// docs/gpu-codegen.md for why lld runs as a subprocess rather than in process). Code object
// v5 by default, v4 on request. Math: LLVM's AMDGPU intrinsics for exp/exp2/log/log2/sin/cos
// on f32 and the shared expansions for tanh/erf/pow; ROCm's ocml is not packaged in Debian 12
// (`apt-cache search rocm-device-libs` lists the 5.2 bitcode, not installed here), so f64
// transcendentals are an error for now.
#include "gpu/target_info.hpp"

#include <tritium/error.hpp>

#include <fmt/format.h>

#include <llvm/BinaryFormat/ELF.h>
#include <llvm/BinaryFormat/MsgPackDocument.h>
#include <llvm/IR/IntrinsicsAMDGPU.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <atomic>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace tritium::gpu {
namespace {

namespace fs = std::filesystem;

std::string find_lld() {
  if (const char* p = std::getenv("TRITIUM_LLD"); p && *p)
    return p;
  for (const char* c : {"/usr/bin/ld.lld-19", "/usr/lib/llvm-19/bin/ld.lld", "/usr/bin/ld.lld"})
    if (fs::exists(c))
      return c;
  throw Error("AMDGPU: ld.lld (Debian package lld-19) is needed to link the HSACO and was not "
              "found; install lld-19 or set TRITIUM_LLD");
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
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  if (rc == 0)
    waitpid(pid, &status, 0);
  std::stringstream errs;
  errs << std::ifstream(err).rdbuf();
  if (rc != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fs::remove_all(dir);
    throw Error(
        fmt::format("kernel '{}': linking the HSACO with {} failed: {}", kernel, lld, errs.str()));
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

class AmdgpuTarget final : public TargetInfo {
public:
  explicit AmdgpuTarget(const GpuTarget& t) : arch_(t.arch), code_object_(t.code_object) {
    if (arch_ == "gfx90a" || arch_ == "gfx942" || arch_ == "gfx940" || arch_ == "gfx941")
      warp_ = 64;
    else if (arch_ == "gfx1100" || arch_ == "gfx1101" || arch_ == "gfx1102")
      warp_ = 32;
    else
      throw Error(
          fmt::format("AMDGPU: unsupported architecture '{}' (gfx90a, gfx942, gfx1100)", arch_));
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
  int max_shared_bytes() const override { return 64 * 1024; }

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
  llvm::Value* shuffle_xor(llvm::IRBuilder<>& b, llvm::Value* v, int lane_mask) override {
    // ds_bpermute reads lane (address / 4) of the wave.
    llvm::Value* lane = b.CreateAnd(thread_id(b), b.getInt32(warp_ - 1));
    llvm::Value* addr = b.CreateShl(b.CreateXor(lane, b.getInt32(lane_mask)), 2);
    return b.CreateIntrinsic(llvm::Intrinsic::amdgcn_ds_bpermute, {}, {addr, v});
  }
  llvm::Value* shuffle_idx(llvm::IRBuilder<>& b, llvm::Value* v, llvm::Value* src_lane) override {
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
    if (warp_ == 32)
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

  llvm::SyncScope::ID sync_scope(llvm::LLVMContext& ctx, const std::string& scope) override {
    if (scope == "cta")
      return ctx.getOrInsertSyncScopeID("workgroup");
    if (scope == "sys")
      return llvm::SyncScope::System;
    return ctx.getOrInsertSyncScopeID("agent");
  }

  llvm::Value* math(llvm::IRBuilder<>& b, ir::OpKind kind, std::vector<llvm::Value*> args,
                    const ir::Op& op) override {
    llvm::Value* x = args[0];
    bool f64 = x->getType()->isDoubleTy();
    llvm::Intrinsic::ID id = llvm_math_intrinsic(kind);
    if (id == llvm::Intrinsic::not_intrinsic)
      return expand_math(b, kind, args, *this, op);
    if (f64) // no ocml (Debian 12 does not package it): our own f64 expansions
      return expand_math_f64(b, kind, x, op);
    return b.CreateUnaryIntrinsic(id, x);
  }

  void make_kernel(llvm::Function& f, int num_threads) override {
    f.setCallingConv(llvm::CallingConv::AMDGPU_KERNEL);
    f.addFnAttr("amdgpu-flat-work-group-size", fmt::format("1,{}", num_threads));
    f.addFnAttr("uniform-work-group-size", "true");
  }

  void prepare_module(llvm::Module& m) override {
    m.addModuleFlag(llvm::Module::Error, "amdhsa_code_object_version",
                    static_cast<uint32_t>(code_object_ * 100));
  }

  void optimize(llvm::Module& m) override { optimize_module(m, *tm_); }

  void emit(llvm::Module& m, GpuKernelBinary& out) override {
    auto copy = llvm::CloneModule(m);
    out.assembly = emit_to_string(*copy, *tm_, false);
    out.stages.emplace_back("amdgcn", out.assembly);
    std::string object = emit_to_string(m, *tm_, true);
    out.binary = link_hsaco(object, out.name);
    out.stages.emplace_back("hsaco.meta", hsaco_metadata(out.binary));
  }

private:
  std::string arch_;
  int code_object_;
  int warp_ = 64;
  std::unique_ptr<llvm::TargetMachine> tm_;
};

} // namespace

std::unique_ptr<TargetInfo> make_amdgpu_target(const GpuTarget& t) {
  return std::make_unique<AmdgpuTarget>(t);
}

} // namespace tritium::gpu
