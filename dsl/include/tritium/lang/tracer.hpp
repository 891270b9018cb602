// The tracer: while a kernel function runs under tritium::lang::trace, every DSL call appends
// ops to the kernel's IR. The typed DSL in tensor.hpp/ops.hpp is a thin layer over the untyped
// builders declared here (implemented in dsl/lang/).
#pragma once

#include <tritium/ir/builder.hpp>
#include <tritium/ir/ir.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

namespace tritium::lang::detail {

using Loc = std::source_location;

class Tracer;

// Base of every DSL handle. Handles register with the active tracer so that control flow
// can find which variables a loop body or branch reassigned (loop-carried values).
class HandleBase {
public:
  ir::Value* value() const { return v_; }
  // The value, or an error naming `loc` if the handle was never assigned.
  ir::Value* use(const Loc& loc) const;

protected:
  HandleBase() { attach(); }
  explicit HandleBase(ir::Value* v) : v_(v) { attach(); }
  HandleBase(const HandleBase& o) : v_(o.v_) { attach(); }
  HandleBase& operator=(const HandleBase& o) {
    v_ = o.v_;
    return *this;
  }
  ~HandleBase() { detach(); }
  void set(ir::Value* v) { v_ = v; }

private:
  friend class Tracer;
  void attach();
  void detach();
  ir::Value* v_ = nullptr;
  HandleBase* prev_ = nullptr;
  HandleBase* next_ = nullptr;
  Tracer* owner_ = nullptr;
};

struct LoadOptions {
  std::string cache_modifier;  // "", ".ca", ".cg", ".cv"
  std::string eviction_policy; // "", "evict_first", "evict_last"
  bool is_volatile = false;
};

// --- untyped builders --------------------------------------------------------------------
// Each records `loc` on the ops it creates and reports misuse as tritium::Error naming it.
[[noreturn]] void fail(const Loc& loc, const std::string& message);
ir::Builder& builder(const Loc& loc); // throws when no kernel is being traced
std::string kernel_name();

ir::Value* program_id(int axis, const Loc& loc);
ir::Value* num_programs(int axis, const Loc& loc);
ir::Value* arange(int64_t start, int64_t end, const Loc& loc);
ir::Value* constant_int(int64_t v, ir::DType t, std::vector<int64_t> shape, const Loc& loc);
ir::Value* constant_float(double v, ir::DType t, std::vector<int64_t> shape, const Loc& loc);
ir::Value* cast(ir::Value* v, ir::DType to, const Loc& loc);
ir::Value* bitcast(ir::Value* v, ir::DType to, const Loc& loc);
// Broadcasts a and b to one shape (Triton's rules) and returns them.
std::pair<ir::Value*, ir::Value*> broadcast_pair(ir::Value* a, ir::Value* b, const Loc& loc);
ir::Value* broadcast_to(ir::Value* v, const std::vector<int64_t>& shape, const Loc& loc);
// Converts both operands to `elem`, broadcasts them, and applies `kind`.
ir::Value* arith(ir::OpKind kind, ir::Value* a, ir::Value* b, ir::DType elem, const Loc& loc);
ir::Value* compare(ir::CmpPred pred, ir::Value* a, ir::Value* b, ir::DType common, const Loc& loc);
ir::Value* unary(ir::OpKind kind, ir::Value* a, const Loc& loc);
// A call of the C math function `name` (ir/extern_math.hpp) on one or two floating-point
// operands of one type; f16/bf16 are computed in f32.
ir::Value* extern_elementwise(std::string_view name, const std::vector<ir::Value*>& args,
                              const Loc& loc);
ir::Value* fma(ir::Value* a, ir::Value* b, ir::Value* c, ir::DType elem, const Loc& loc);
ir::Value* select(ir::Value* c, ir::Value* a, ir::Value* b, ir::DType elem, const Loc& loc);
ir::Value* add_ptr(ir::Value* p, ir::Value* offset, const Loc& loc);
ir::Value* load(ir::Value* p, ir::Value* mask, ir::Value* other, const LoadOptions& o,
                const Loc& loc);
void store(ir::Value* p, ir::Value* v, ir::Value* mask, const LoadOptions& o, const Loc& loc);
// Marks `loaded` (a load's result) as a tensor descriptor's block: a desc_hint op records the
// descriptor's base, shape, strides (i64) and offsets (i32) for targets that copy with TMA.
void describe_load(ir::Value* loaded, ir::Value* base, const std::vector<ir::Value*>& shape,
                   const std::vector<ir::Value*>& strides, const std::vector<ir::Value*>& offsets,
                   const Loc& loc);
ir::Value* atomic_rmw(ir::AtomicOp op, ir::Value* p, ir::Value* v, ir::Value* mask,
                      std::string_view sem, std::string_view scope, const Loc& loc);
ir::Value* atomic_cas(ir::Value* p, ir::Value* cmp, ir::Value* v, std::string_view sem,
                      std::string_view scope, const Loc& loc);
ir::Value* expand_dims(ir::Value* v, int axis, const Loc& loc);
ir::Value* reshape(ir::Value* v, std::vector<int64_t> shape, const Loc& loc);
ir::Value* trans(ir::Value* v, std::vector<int64_t> order, const Loc& loc);
ir::Value* join(ir::Value* a, ir::Value* b, const Loc& loc);
std::pair<ir::Value*, ir::Value*> split(ir::Value* v, const Loc& loc);
ir::Value* cat(ir::Value* a, ir::Value* b, const Loc& loc);
// Counts of 0 .. num_bins - 1 in the 1-D integer tensor v (where mask, if given, is true).
ir::Value* histogram(ir::Value* v, ir::Value* mask, int num_bins, const Loc& loc);
// Triton's gather along `axis`, from compares and a sum.
ir::Value* gather(ir::Value* src, ir::Value* index, int axis, const Loc& loc);
// Sorts v along its last dimension (a power of two) with a bitonic network of compares and
// selects; `descending` reverses the order.
ir::Value* sort(ir::Value* v, bool descending, const Loc& loc);
// The k largest along the last dimension, largest first; k and the dimension powers of two.
ir::Value* topk(ir::Value* v, int64_t k, const Loc& loc);
// Reverses v along `axis` (negative counts from the end) using reshape/trans/split/join.
ir::Value* flip(ir::Value* v, int axis, const Loc& loc);
// Writes "file:line: text" to stdout while tracing (tl::static_print).
void static_print(const std::string& text, const Loc& loc);
ir::Value* dot(ir::Value* a, ir::Value* b, ir::Value* acc, std::string_view input_precision,
               int64_t max_num_imprecise_acc, const Loc& loc);
ir::Value* hint(ir::Value* v, std::string_view name, int64_t value, const Loc& loc);
void debug_op(ir::OpKind kind, std::vector<ir::Value*> operands, ir::Attrs attrs, const Loc& loc);

// A reduction or scan along `axis` whose combine function is traced from `combine`, which
// receives 2N scalar values and returns N.
using Combine = std::function<std::vector<ir::Value*>(const std::vector<ir::Value*>&)>;
std::vector<ir::Value*> reduce(std::vector<ir::Value*> xs, int axis, bool keep_dims,
                               const Combine& combine, const Loc& loc);
std::vector<ir::Value*> scan(std::vector<ir::Value*> xs, int axis, bool reverse,
                             const Combine& combine, const Loc& loc);
// The builtin reductions name their combine op directly.
ir::Value* reduce_simple(ir::Value* x, int axis, bool keep_dims, ir::OpKind combine,
                         const Loc& loc);

// --- control flow ---------------------------------------------------------------------------
// A region being traced (loop body or branch). Handles that change inside it become
// loop-carried values or branch results.
class ControlScope;

// Dynamic `for`: begin opens the loop and returns the induction variable, end closes it.
// `attrs` (num_stages, loop_unroll_factor, ...) are recorded on the loop for the compiler.
ir::Value* for_begin(ir::Value* lb, ir::Value* ub, ir::Value* step, const Loc& loc,
                     ir::Attrs attrs = {});
void for_end(const Loc& loc);
void for_abandon(); // the body was left by break, return or an exception
// if/else: both bodies run once at trace time.
void if_op(ir::Value* cond, const std::function<void()>& then_fn,
           const std::function<void()>& else_fn, const Loc& loc);
void while_op(const std::function<ir::Value*()>& cond_fn, const std::function<void()>& body_fn,
              const Loc& loc);

// --- tracing a kernel --------------------------------------------------------------------
class TraceSession {
public:
  explicit TraceSession(std::string kernel_name);
  ~TraceSession();
  TraceSession(const TraceSession&) = delete;
  TraceSession& operator=(const TraceSession&) = delete;

  ir::Value* add_arg(ir::DType t, ir::ArgInfo info);
  // Ends the trace: adds the return, verifies, and hands the function over.
  std::unique_ptr<ir::Function> finish();

private:
  std::unique_ptr<Tracer> tracer_;
};

} // namespace tritium::lang::detail
