// The trace session, handle registration, and control flow (loops and branches whose bodies
// are traced once, with reassigned handles turned into carried values).
#include <tritium/error.hpp>
#include <tritium/ir/builder.hpp>
#include <tritium/ir/printer.hpp>
#include <tritium/lang/control.hpp>
#include <tritium/lang/tracer.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

namespace tritium::lang::detail {

class Tracer {
public:
  explicit Tracer(std::string name)
      : func(std::make_unique<ir::Function>()), builder(*func, func->entry()) {
    func->name = std::move(name);
  }

  std::unique_ptr<ir::Function> func;
  ir::Builder builder;
  HandleBase* head = nullptr;
  int open_scopes = 0;
  std::string pending_error; // set where throwing is impossible (destructors)

  // Handles that currently hold a value or may be assigned in a body (all registered).
  std::vector<HandleBase*> live() const {
    std::vector<HandleBase*> out;
    for (HandleBase* h = head; h; h = h->next_)
      out.push_back(h);
    return out;
  }
  // Whether h is still registered (a body may destroy handles it did not create).
  bool alive(const HandleBase* h) const {
    for (HandleBase* x = head; x; x = x->next_)
      if (x == h)
        return true;
    return false;
  }
  static ir::Value*& value_of(HandleBase* h) { return h->v_; }
  // Handles that outlive the trace (e.g. stored by the user) must not point at it.
  void release_handles() {
    for (HandleBase* h = head; h; h = h->next_)
      h->owner_ = nullptr;
    head = nullptr;
  }
};

namespace {

thread_local Tracer* current = nullptr;

Tracer& tracer(const Loc& loc) {
  if (!current)
    throw Error(fmt::format("{}:{}: a tritium language function was called outside a kernel "
                            "being traced",
                            loc.file_name(), loc.line()));
  return *current;
}

ir::SourceLoc to_ir(const Loc& loc) {
  return {loc.file_name(), loc.line()};
}

std::vector<ir::Type> types_of(const std::vector<ir::Value*>& vs) {
  std::vector<ir::Type> t;
  for (auto* v : vs)
    t.push_back(v->type);
  return t;
}

// Removes block arguments whose index is in `drop` and renumbers the rest.
void drop_args(ir::Block& b, const std::vector<bool>& drop) {
  std::vector<ir::Value*> kept;
  for (size_t i = 0; i < b.args.size(); ++i)
    if (!drop[i])
      kept.push_back(b.args[i]);
  b.args = std::move(kept);
  for (size_t i = 0; i < b.args.size(); ++i)
    b.args[i]->index = static_cast<unsigned>(i);
}

void add_results(ir::Function& f, ir::Op& op, const std::vector<ir::Type>& types) {
  for (const auto& t : types) {
    ir::Value* v = f.new_value(t);
    v->def = &op;
    v->index = static_cast<unsigned>(op.results.size());
    op.results.push_back(v);
  }
}

std::string lost_handle(const char* what);

// Makes sure the handle's new value can stand where its old one stood.
void check_carried(const ir::Value* before, const ir::Value* after, const char* what,
                   const Loc& loc) {
  if (!after) // the handle lives, but its value was moved out in the body
    fail(loc, lost_handle(what));
  if (before->type == after->type)
    return;
  fail(loc, fmt::format("a value carried by {} changes type from {} to {}; convert it with "
                        ".to<T>() or broadcast it before the {}",
                        what, ir::to_string(before->type), ir::to_string(after->type), what));
}

// A handle that held a value when a loop began and was destroyed in its body cannot be
// carried: its new value lives in another handle the loop does not know.
std::string lost_handle(const char* what) {
  return fmt::format("a tensor variable that existed before this {} was destroyed or moved from "
                     "in its body (e.g. a std::vector of tensors reassigned by move or grown "
                     "there); assign such tensors element by element so that the loop can carry "
                     "them",
                     what);
}

struct ScopeGuard {
  Tracer& t;
  ir::Block& outer;
  explicit ScopeGuard(Tracer& tr) : t(tr), outer(tr.builder.block()) { ++t.open_scopes; }
  ~ScopeGuard() {
    t.builder.set_block(outer);
    --t.open_scopes;
  }
};

// One open tl::range loop per entry, innermost last.
struct LoopFrame {
  ir::Op* op;
  ir::Block* outer;
  std::vector<HandleBase*> handles;
  std::vector<ir::Value*> before; // each handle's value before the loop (may be null)
  std::vector<ir::Value*> args;   // the block argument standing for it in the body
};
thread_local std::vector<LoopFrame> loop_frames;

} // namespace

// --- handles ------------------------------------------------------------------------------

void HandleBase::attach() {
  owner_ = current;
  if (!owner_)
    return;
  next_ = owner_->head;
  if (next_)
    next_->prev_ = this;
  owner_->head = this;
}

void HandleBase::detach() {
  if (!owner_ || owner_ != current)
    return;
  if (prev_)
    prev_->next_ = next_;
  else
    owner_->head = next_;
  if (next_)
    next_->prev_ = prev_;
  owner_ = nullptr;
}

ir::Value* HandleBase::use(const Loc& loc) const {
  if (!v_)
    fail(loc, "use of a tensor variable that has no value (declared but never assigned, or "
              "assigned only inside a loop body or one branch)");
  return v_;
}

// --- session ------------------------------------------------------------------------------

[[noreturn]] void fail(const Loc& loc, const std::string& message) {
  if (current)
    throw Error(fmt::format("{}:{}: in kernel '{}': {}", loc.file_name(), loc.line(),
                            current->func->name, message));
  throw Error(fmt::format("{}:{}: {}", loc.file_name(), loc.line(), message));
}

ir::Builder& builder(const Loc& loc) {
  Tracer& t = tracer(loc);
  t.builder.set_loc(to_ir(loc));
  return t.builder;
}

std::string kernel_name() {
  return current ? current->func->name : std::string();
}

TraceSession::TraceSession(std::string kernel_name) {
  if (current)
    throw Error(fmt::format("kernel '{}' is traced while kernel '{}' is being traced; a kernel "
                            "cannot launch or trace another",
                            kernel_name, current->func->name));
  tracer_ = std::make_unique<Tracer>(std::move(kernel_name));
  current = tracer_.get();
  loop_frames.clear();
}

TraceSession::~TraceSession() {
  tracer_->release_handles();
  loop_frames.clear();
  current = nullptr;
}

ir::Value* TraceSession::add_arg(ir::DType t, ir::ArgInfo info) {
  ir::Function& f = *tracer_->func;
  tracer_->func->arg_info.push_back(std::move(info));
  return tracer_->builder.add_block_arg(f.entry(), ir::Type(t));
}

std::unique_ptr<ir::Function> TraceSession::finish() {
  if (!tracer_->pending_error.empty())
    throw Error(tracer_->pending_error);
  tracer_->builder.set_block(tracer_->func->entry());
  tracer_->builder.set_loc({});
  tracer_->builder.create(ir::OpKind::Return, {}, {});
  ir::verify(*tracer_->func);
  return std::move(tracer_->func);
}

// --- loops --------------------------------------------------------------------------------

ir::Value* for_begin(ir::Value* lb, ir::Value* ub, ir::Value* step, const Loc& loc,
                     ir::Attrs attrs) {
  Tracer& t = tracer(loc);
  ir::Builder& b = builder(loc);
  // Bounds share the widest integer type among them (i32 unless one is i64).
  ir::DType it(ir::ScalarKind::I32);
  for (ir::Value* v : {lb, ub, step}) {
    if (!v->type.is_scalar() || !v->type.elem.is_int())
      fail(loc,
           fmt::format("tl::range bounds must be integer scalars, got {}", ir::to_string(v->type)));
    if (v->type.elem.bits() == 64)
      it = ir::DType(ir::ScalarKind::I64);
  }
  if (step->def && step->def->kind == ir::OpKind::Constant &&
      step->def->int_attr(attr::value, 1) == 0)
    fail(loc, "tl::range with step 0 never ends");
  lb = cast(lb, it, loc);
  ub = cast(ub, it, loc);
  step = cast(step, it, loc);
  LoopFrame frame;
  frame.outer = &b.block();
  frame.op = &b.create(ir::OpKind::For, {lb, ub, step}, {}, std::move(attrs), 1);
  ir::Block& body = frame.op->body();
  ir::Value* iv = b.add_block_arg(body, ir::Type(it));
  frame.handles = t.live();
  for (HandleBase* h : frame.handles) {
    ir::Value* v = Tracer::value_of(h);
    frame.before.push_back(v);
    ir::Value* arg = v ? b.add_block_arg(body, v->type) : nullptr;
    frame.args.push_back(arg);
    if (arg)
      Tracer::value_of(h) = arg;
  }
  b.set_block(body);
  ++t.open_scopes;
  loop_frames.push_back(std::move(frame));
  return iv;
}

void for_end(const Loc& loc) {
  Tracer& t = tracer(loc);
  if (loop_frames.empty())
    fail(loc, "internal: tl::range closed without being opened");
  LoopFrame frame = std::move(loop_frames.back());
  loop_frames.pop_back();
  --t.open_scopes;
  ir::Function& f = *t.func;
  ir::Block& body = frame.op->body();
  std::vector<bool> drop(body.args.size(), false);
  std::vector<ir::Value*> inits, yields;
  std::vector<HandleBase*> carried;
  for (size_t i = 0; i < frame.handles.size(); ++i) {
    HandleBase* h = frame.handles[i];
    ir::Value* arg = frame.args[i];
    if (arg && !t.alive(h))
      fail(loc, lost_handle("tl::range"));
    ir::Value* now = t.alive(h) ? Tracer::value_of(h) : arg;
    if (!arg) {
      // Declared before the loop without a value: what the body assigned stays inside it.
      if (t.alive(h))
        Tracer::value_of(h) = nullptr;
      continue;
    }
    if (now == arg) {
      f.replace_all_uses(arg, frame.before[i]);
      drop[arg->index] = true;
      if (t.alive(h))
        Tracer::value_of(h) = frame.before[i];
      continue;
    }
    check_carried(arg, now, "tl::range", loc);
    inits.push_back(frame.before[i]);
    yields.push_back(now);
    carried.push_back(h);
  }
  drop_args(body, drop);
  ir::Builder& b = t.builder;
  b.set_block(body);
  b.set_loc(to_ir(loc));
  b.create(ir::OpKind::Yield, yields, {});
  for (ir::Value* v : inits)
    frame.op->operands.push_back(v);
  add_results(f, *frame.op, types_of(inits));
  for (size_t i = 0; i < carried.size(); ++i)
    Tracer::value_of(carried[i]) = frame.op->results[i];
  b.set_block(*frame.outer);
}

void for_abandon() {
  if (!current || loop_frames.empty())
    return;
  LoopFrame frame = std::move(loop_frames.back());
  loop_frames.pop_back();
  --current->open_scopes;
  current->builder.set_block(*frame.outer);
  for (size_t i = 0; i < frame.handles.size(); ++i)
    if (current->alive(frame.handles[i]))
      Tracer::value_of(frame.handles[i]) = frame.before[i];
}

// --- branches -----------------------------------------------------------------------------

void if_op(ir::Value* cond, const std::function<void()>& then_fn,
           const std::function<void()>& else_fn, const Loc& loc) {
  Tracer& t = tracer(loc);
  if (!(cond->type == ir::Type(ir::ScalarKind::I1)))
    fail(loc,
         fmt::format("tl::if_ needs an i1 scalar condition, got {}", ir::to_string(cond->type)));
  ir::Builder& b = builder(loc);
  ir::Op& op = b.create(ir::OpKind::If, {cond}, {}, {}, 2);
  std::vector<HandleBase*> handles = t.live();
  std::vector<ir::Value*> before;
  for (HandleBase* h : handles)
    before.push_back(Tracer::value_of(h));

  auto run_branch = [&](unsigned region, const std::function<void()>& fn) {
    ScopeGuard guard(t);
    b.set_block(op.body(region));
    fn();
    std::vector<ir::Value*> after;
    for (size_t i = 0; i < handles.size(); ++i) {
      bool alive = t.alive(handles[i]);
      after.push_back(alive ? Tracer::value_of(handles[i]) : before[i]);
      if (alive)
        Tracer::value_of(handles[i]) = before[i];
    }
    return after;
  };
  std::vector<ir::Value*> then_vals = run_branch(0, then_fn);
  std::vector<ir::Value*> else_vals = run_branch(1, else_fn);

  std::vector<ir::Value*> then_yield, else_yield;
  std::vector<HandleBase*> results;
  for (size_t i = 0; i < handles.size(); ++i) {
    if (then_vals[i] == before[i] && else_vals[i] == before[i])
      continue;
    if (!then_vals[i] || !else_vals[i]) {
      // Assigned in one branch only, with no value before: it has no value after the if.
      continue;
    }
    if (!(then_vals[i]->type == else_vals[i]->type))
      fail(loc, fmt::format("a variable assigned in tl::if_ has type {} in one branch and {} in "
                            "the other",
                            ir::to_string(then_vals[i]->type), ir::to_string(else_vals[i]->type)));
    then_yield.push_back(then_vals[i]);
    else_yield.push_back(else_vals[i]);
    results.push_back(handles[i]);
  }
  ir::Block& outer = b.block();
  b.set_loc(to_ir(loc));
  b.set_block(op.body(0));
  b.create(ir::OpKind::Yield, then_yield, {});
  b.set_block(op.body(1));
  b.create(ir::OpKind::Yield, else_yield, {});
  b.set_block(outer);
  add_results(*t.func, op, types_of(then_yield));
  for (size_t i = 0; i < results.size(); ++i)
    Tracer::value_of(results[i]) = op.results[i];
}

void while_op(const std::function<ir::Value*()>& cond_fn, const std::function<void()>& body_fn,
              const Loc& loc) {
  Tracer& t = tracer(loc);
  ir::Builder& b = builder(loc);
  std::vector<HandleBase*> handles;
  std::vector<ir::Value*> inits;
  for (HandleBase* h : t.live())
    if (Tracer::value_of(h)) {
      handles.push_back(h);
      inits.push_back(Tracer::value_of(h));
    }
  ir::Op& op = b.create(ir::OpKind::While, inits, {}, {}, 2);
  ir::Block& before = op.body(0);
  ir::Block& after = op.body(1);
  std::vector<ir::Value*> before_args, after_args;
  for (ir::Value* v : inits) {
    before_args.push_back(b.add_block_arg(before, v->type));
    after_args.push_back(b.add_block_arg(after, v->type));
  }
  std::vector<ir::Value*> body_vals;
  {
    ScopeGuard guard(t);
    b.set_block(before);
    for (size_t i = 0; i < handles.size(); ++i)
      Tracer::value_of(handles[i]) = before_args[i];
    ir::Value* cond = cond_fn();
    if (!(cond->type == ir::Type(ir::ScalarKind::I1)))
      fail(loc, fmt::format("tl::while_'s condition must be an i1 scalar, got {}",
                            ir::to_string(cond->type)));
    for (size_t i = 0; i < handles.size(); ++i)
      if (t.alive(handles[i]) && Tracer::value_of(handles[i]) != before_args[i])
        fail(loc, "tl::while_'s condition must not assign variables");
    std::vector<ir::Value*> passed{cond};
    passed.insert(passed.end(), before_args.begin(), before_args.end());
    b.set_loc(to_ir(loc));
    b.create(ir::OpKind::Condition, passed, {});

    b.set_block(after);
    for (size_t i = 0; i < handles.size(); ++i)
      Tracer::value_of(handles[i]) = after_args[i];
    body_fn();
    for (size_t i = 0; i < handles.size(); ++i) {
      if (!t.alive(handles[i]))
        fail(loc, lost_handle("tl::while_"));
      body_vals.push_back(Tracer::value_of(handles[i]));
    }
  }
  // Variables the body did not change are not carried: their arguments become the initial value.
  ir::Function& f = *t.func;
  std::vector<bool> drop(inits.size(), false);
  std::vector<ir::Value*> yields, kept_inits, cond_ops{op.body(0).terminator()->operands[0]};
  std::vector<HandleBase*> carried;
  for (size_t i = 0; i < handles.size(); ++i) {
    if (body_vals[i] == after_args[i]) {
      f.replace_all_uses(before_args[i], inits[i]);
      f.replace_all_uses(after_args[i], inits[i]);
      drop[i] = true;
      if (t.alive(handles[i]))
        Tracer::value_of(handles[i]) = inits[i];
      continue;
    }
    check_carried(after_args[i], body_vals[i], "tl::while_", loc);
    yields.push_back(body_vals[i]);
    kept_inits.push_back(inits[i]);
    cond_ops.push_back(before_args[i]);
    carried.push_back(handles[i]);
  }
  drop_args(before, drop);
  drop_args(after, drop);
  op.operands = kept_inits;
  before.terminator()->operands = cond_ops;
  ir::Block& outer = b.block();
  b.set_block(after);
  b.set_loc(to_ir(loc));
  b.create(ir::OpKind::Yield, yields, {});
  b.set_block(outer);
  add_results(f, op, types_of(kept_inits));
  for (size_t i = 0; i < carried.size(); ++i)
    Tracer::value_of(carried[i]) = op.results[i];
}

} // namespace tritium::lang::detail

namespace tritium::lang::detail {

RangeBase::RangeBase(IntArg lo, IntArg hi, IntArg step, RangeOptions opts, Loc loc)
    : lo_(lo.v), hi_(hi.v), step_(step.v), loc_(loc) {
  if (opts.num_stages < -1 || opts.loop_unroll_factor < -1 || opts.num_stages == 0 ||
      opts.loop_unroll_factor == 0)
    detail::fail(loc, fmt::format("tl::range options must be positive (num_stages {}, "
                                  "loop_unroll_factor {})",
                                  opts.num_stages, opts.loop_unroll_factor));
  if (opts.num_stages > 0)
    attrs_[attr::num_stages] = int64_t{opts.num_stages};
  if (opts.loop_unroll_factor > 0)
    attrs_[attr::loop_unroll_factor] = int64_t{opts.loop_unroll_factor};
  if (opts.warp_specialize)
    attrs_[attr::warp_specialize] = int64_t{1};
  if (opts.disallow_acc_multi_buffer)
    attrs_[attr::disallow_acc_multi_buffer] = int64_t{1};
  if (opts.flatten)
    attrs_[attr::flatten] = int64_t{1};
}

RangeBase::~RangeBase() {
  if (state_ == State::InBody || state_ == State::BodyDone) {
    detail::for_abandon();
    if (detail::current && std::uncaught_exceptions() == 0)
      detail::current->pending_error =
          fmt::format("{}:{}: in kernel '{}': a tl::range loop body was left by break or return; "
                      "use tl::while_ for loops with early exits",
                      loc_.file_name(), loc_.line(), detail::current->func->name);
  }
}

bool RangeBase::advance() {
  switch (state_) {
  case State::Ready:
    iv_ = detail::for_begin(lo_, hi_, step_, loc_, attrs_);
    state_ = State::InBody;
    return true;
  case State::BodyDone:
    detail::for_end(loc_);
    state_ = State::Closed;
    return false;
  case State::InBody:
    detail::fail(loc_, "internal: tl::range advanced twice without finishing the body");
  case State::Closed:
    return false;
  }
  return false;
}

} // namespace tritium::lang::detail
