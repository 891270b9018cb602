// Vector versions of a scalar call that the loop vectorizer may use: each declared in the
// module (kept until the vectorizer, which is what calls it) and named on the call by its
// VFABI mangling, as LLVM's InjectTLIMappings does for the functions in its tables.
#pragma once

#include <string>
#include <vector>

namespace llvm {
class CallInst;
}

namespace tritium::cpu {

struct VectorVersion {
  int lanes;
  std::string name; // the vector function, e.g. _ZGVeN16v_logf
};

// Declares each version (every argument and the result widened to `lanes`, the scalar callee's
// attributes) and names them all on `call`; nothing where `versions` is empty.
void add_vector_versions(llvm::CallInst* call, const std::vector<VectorVersion>& versions);

} // namespace tritium::cpu
