// The NVPTX target's two families of instructions beside its TargetInfo (nvptx.cpp): the matrix
// unit's (nvptx_matrix.cpp) and the asynchronous copies' (nvptx_async.cpp), and the inline-PTX
// helpers they share.
#pragma once

#include "gpu/target_info.hpp"
#include "gpu_ir/arch.hpp"

#include <llvm/IR/IRBuilder.h>

#include <memory>
#include <string>

namespace tritium::gpu {

std::unique_ptr<MatrixOps> make_nvptx_matrix(const Arch& model);
std::unique_ptr<AsyncOps> make_nvptx_async(const Arch& model);

// A side-effecting PTX statement without operands.
void ptx_statement(llvm::IRBuilder<>& b, const std::string& text);
// A shared-memory pointer as the 32-bit address PTX's .shared instructions take.
llvm::Value* shared_u32(llvm::IRBuilder<>& b, llvm::Value* p);

} // namespace tritium::gpu
