#include <tritium/error.hpp>
#include <tritium/ir/extern_math.hpp>
#include <tritium/ir/printer.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>
#include <variant>

namespace tritium::ir {
namespace {

class Verifier {
public:
  void run(const Function& f) {
    if (f.arg_info.size() != f.args().size())
      throw Error(fmt::format("function {}: {} arguments but {} argument infos", f.name,
                              f.args().size(), f.arg_info.size()));
    for (Value* a : f.args())
      defined_.insert(a);
    block(f.entry(), nullptr);
    const Op* t = f.entry().terminator();
    if (!t || t->kind != OpKind::Return)
      throw Error(fmt::format("function {}: the body does not end with return", f.name));
  }

private:
  [[noreturn]] void fail(const Op& op, const std::string& what) {
    throw Error(fmt::format("{}: invalid IR: op '{}': {}", op.loc.str(), op_name(op.kind), what));
  }
  void check(bool ok, const Op& op, const std::string& what) {
    if (!ok)
      fail(op, what);
  }
  void results(const Op& op, size_t n) {
    check(op.results.size() == n, op, fmt::format("expects {} results", n));
  }

  void block(const Block& b, const Op* owner) {
    for (Value* a : b.args)
      defined_.insert(a);
    for (size_t i = 0; i < b.ops.size(); ++i) {
      const Op& op = *b.ops[i];
      for (Value* v : op.operands)
        check(defined_.count(v) > 0, op, "uses a value that is not defined before it");
      bool last = i + 1 == b.ops.size();
      if (op_category(op.kind) == OpCategory::Terminator)
        check(last, op, "a terminator must end its block");
      spec(op);
      attributes(op);
      one(op);
      for (auto& r : op.regions)
        block(*r->block, &op);
      for (Value* v : op.results)
        defined_.insert(v);
    }
    (void)owner;
  }

  // Every attribute is one attrs.def lists, holding the kind of value it lists.
  void attributes(const Op& op) {
    for (const auto& [key, v] : op.attrs) {
      const AttrKind* kind = attr_kind(key);
      check(
          kind != nullptr, op,
          fmt::format("has the attribute '{}', which tritium's IR does not know (attrs.def)", key));
      static constexpr const char* what[] = {"an integer",         "a float",
                                             "a number",           "a string",
                                             "a list of integers", "an integer or a list of them",
                                             "one of its names"};
      check(attr_holds(*kind, key, v), op,
            fmt::format("the attribute '{}' must be {}", key, what[static_cast<int>(*kind)]));
      check(carries(op.kind, key), op,
            fmt::format("cannot carry the attribute '{}' (attrs.def lists the ops that may)", key));
    }
  }
  // Whether attrs.def lets ops of `kind` carry `key`.
  static bool carries(OpKind kind, std::string_view key) {
    using enum OpKind;
    struct Entry {
      std::string_view key;
      std::vector<OpKind> ops;
    };
#define TRITIUM_ATTR_OPS_(...)                                                                     \
  { __VA_ARGS__ }
#define TRITIUM_ATTR(id, key, kind, ops) {key, TRITIUM_ATTR_OPS_ ops},
    static const Entry table[] = {
#include <tritium/ir/attrs.def>
    };
#undef TRITIUM_ATTR
#undef TRITIUM_ATTR_OPS_
    for (const Entry& e : table)
      if (e.key == key)
        return std::find(e.ops.begin(), e.ops.end(), kind) != e.ops.end();
    return false;
  }
  template <class... E>
  static bool enum_holds(std::string_view key, const AttrValue& v) {
    return ((key == EnumAttr<E>::key && std::holds_alternative<E>(v)) || ...);
  }
  static bool attr_holds(AttrKind kind, std::string_view key, const AttrValue& v) {
    const bool i = std::holds_alternative<int64_t>(v), f = std::holds_alternative<double>(v),
               list = std::holds_alternative<std::vector<int64_t>>(v);
    switch (kind) {
    case AttrKind::Int:
      return i;
    case AttrKind::Float:
      return f;
    case AttrKind::Number:
      return i || f;
    case AttrKind::Str:
      return std::holds_alternative<std::string>(v);
    case AttrKind::Ints:
      return list;
    case AttrKind::IntOrInts:
      return i || list;
    case AttrKind::Enum:
      return enum_holds<CmpPred, AtomicOp, MemSem, MemScope, CacheModifier, EvictionPolicy,
                        InputPrecision>(key, v);
    }
    return false;
  }

  // What ops.def says: operand count and classes, result count, one type for all.
  void spec(const Op& op) {
    const OpSpec& s = op_spec(op.kind);
    size_t n = op.operands.size();
    if (s.min_operands == s.max_operands)
      check(n == s.min_operands, op, fmt::format("expects {} operands, got {}", s.min_operands, n));
    else if (s.max_operands == kManyOperands)
      check(n >= s.min_operands, op,
            fmt::format("expects at least {} operands, got {}", s.min_operands, n));
    else
      check(n >= s.min_operands && n <= s.max_operands, op,
            fmt::format("expects {} to {} operands, got {}", s.min_operands, s.max_operands, n));
    if (s.results != kManyOperands)
      check(op.results.size() == s.results, op,
            fmt::format("expects {} results, got {}", s.results, op.results.size()));
    for (size_t i = 0; i < n; ++i) {
      DType t = op.operands[i]->type.elem;
      OperandClass c = operand_class(op.kind, i);
      bool ok = admits(c, t);
      check(ok, op,
            fmt::format("operand {} must be {}, got {}", i, operand_class_name(c), to_string(t)));
    }
    check(op.regions.empty() || has_trait(op.kind, OpTrait::Regions), op, "has no regions");
    if (has_trait(op.kind, OpTrait::SameType))
      same_types(op);
  }

  // Element type and shape: what an op's rule constructs (the layout, after the GPU passes, is
  // the operands' business, checked where values meet: same-type ops, yields, carried values).
  static bool like(const Type& a, const Type& b) {
    return a.elem == b.elem && a.shape == b.shape;
  }

  void same_types(const Op& op) {
    for (Value* v : op.operands)
      check(v->type == op.operands[0]->type, op,
            fmt::format("operand types differ: {} and {}", to_string(op.operands[0]->type),
                        to_string(v->type)));
    for (Value* v : op.results)
      check(v->type == op.operands[0]->type, op, "result type differs from the operands'");
  }

  const Op* yield_of(const Op& op, unsigned region) {
    const Op* t = op.body(region).terminator();
    check(t && t->kind == OpKind::Yield, op, fmt::format("region {} must end with yield", region));
    return t;
  }
  void yields(const Op& op, unsigned region, const std::vector<Type>& types) {
    const Op* y = yield_of(op, region);
    check(y->operands.size() == types.size(), op,
          fmt::format("region {} yields {} values, expected {}", region, y->operands.size(),
                      types.size()));
    for (size_t i = 0; i < types.size(); ++i)
      check(y->operands[i]->type == types[i], op,
            fmt::format("region {} yields {} as value {}, expected {}", region,
                        to_string(y->operands[i]->type), i, to_string(types[i])));
  }
  static std::vector<Type> types_of(const std::vector<Value*>& vs) {
    std::vector<Type> t;
    for (auto* v : vs)
      t.push_back(v->type);
    return t;
  }

  void one(const Op& op) {
    const auto& o = op.operands;
    switch (op_category(op.kind)) {
    case OpCategory::Source:
      if (op.kind == OpKind::ProgramId || op.kind == OpKind::NumPrograms) {
        int64_t axis = op.int_attr(attr::axis);
        check(axis >= 0 && axis < 3, op, "axis must be 0, 1 or 2");
        check(op.result()->type == Type(ScalarKind::I32), op, "result must be i32");
      } else if (op.kind == OpKind::Arange) {
        int64_t n = op.int_attr(attr::end) - op.int_attr(attr::start);
        check(n > 0 && (n & (n - 1)) == 0, op, "the range's length must be a power of two");
        check(like(op.result()->type, Type(ScalarKind::I32, {n})), op,
              "result must be i32[end-start]");
      } else if (op.kind == OpKind::Constant) {
        check(op.has_attr(attr::value), op, "needs a value");
      }
      break;
    case OpCategory::Binary:
    case OpCategory::Unary:
    case OpCategory::Math:
    case OpCategory::Ternary:
      break; // ops.def says it all
    case OpCategory::Hint:
      if (op.kind == OpKind::DescHint) {
        check(o.size() % 3 == 1 && o[0]->type.is_scalar(), op,
              "takes a base pointer and the shape, strides and offsets of each dimension");
        for (const Value* v : o)
          check(v->type.is_scalar(), op, "takes scalars");
        check(op.has_attr(attr::desc), op, "needs the id of its load");
      }
      break;
    case OpCategory::Extern: {
      // f32 or f64 (the DSL computes f16/bf16 through f32), and a C math function it knows
      // that takes this many operands.
      ScalarKind k = o[0]->type.elem.kind;
      check(k == ScalarKind::F32 || k == ScalarKind::F64, op, "needs f32 or f64 operands");
      check(op.has_attr(attr::symbol) &&
                std::holds_alternative<std::string>(op.attrs.at(attr::symbol)),
            op, "needs a symbol");
      const ExternMath* f = find_extern_math(op.str_attr(attr::symbol));
      check(f != nullptr, op, "'" + op.str_attr(attr::symbol) + "' is not a known C math function");
      check(f->arity == static_cast<int>(o.size()), op,
            fmt::format("'{}' takes {} operands", f->name, f->arity));
      break;
    }
    case OpCategory::Compare:
      check(o[0]->type == o[1]->type, op, "operand types differ");
      check(like(op.result()->type, Type(ScalarKind::I1, o[0]->type.shape)), op,
            "result must be i1");
      (void)op.enum_attr<CmpPred>();
      break;
    case OpCategory::Select:
      check(like(o[0]->type, Type(ScalarKind::I1, o[1]->type.shape)), op,
            "condition must be i1 of the values' shape");
      check(o[1]->type == o[2]->type && op.result()->type == o[1]->type, op,
            "both values and the result must share one type");
      break;
    case OpCategory::Convert:
      check(o[0]->type.shape == op.result()->type.shape, op, "a conversion keeps the shape");
      if (op.kind == OpKind::Bitcast)
        check(o[0]->type.elem.bits() == op.result()->type.elem.bits(), op,
              "bitcast needs element types of one width");
      break;
    case OpCategory::Shape:
      shape_op(op);
      break;
    case OpCategory::Memory:
      memory_op(op);
      break;
    case OpCategory::Shared:
      shared_op(op);
      break;
    case OpCategory::Collective:
      collective_op(op);
      break;
    case OpCategory::Control:
      control_op(op);
      break;
    case OpCategory::Terminator:
      if (op.kind == OpKind::Condition)
        check(o[0]->type.is_scalar(), op, "the first operand must be an i1 scalar");
      break;
    case OpCategory::Debug:
      break;
    }
  }

  void shape_op(const Op& op) {
    const auto& o = op.operands;
    const Type& r = op.results.empty() ? o.at(0)->type : op.result()->type;
    switch (op.kind) {
    case OpKind::Splat:
      check(o[0]->type.is_scalar() && o[0]->type.elem == r.elem, op,
            "splats a scalar of the result's element type");
      break;
    case OpKind::Broadcast: {
      const Type& t = o[0]->type;
      check(t.elem == r.elem && t.rank() == r.rank(), op, "keeps element type and rank");
      for (int i = 0; i < t.rank(); ++i)
        check(
            t.shape[i] == r.shape[i] || t.shape[i] == 1, op,
            fmt::format("cannot broadcast {} to {}", shape_string(t.shape), shape_string(r.shape)));
      break;
    }
    case OpKind::ExpandDims: {
      auto s = o[0]->type.shape;
      int64_t axis = op.int_attr(attr::axis);
      check(axis >= 0 && axis <= static_cast<int64_t>(s.size()), op, "axis out of range");
      s.insert(s.begin() + axis, 1);
      check(like(r, o[0]->type.with_shape(s)), op, "result shape must have a 1 inserted at axis");
      break;
    }
    case OpKind::Reshape:
      check(o[0]->type.numel() == r.numel() && o[0]->type.elem == r.elem, op,
            "reshape keeps the number of elements");
      break;
    case OpKind::Trans: {
      auto order = op.ints_attr(attr::order);
      const auto& s = o[0]->type.shape;
      check(order.size() == s.size(), op, "order must name every dimension");
      std::vector<int64_t> expect;
      for (auto d : order) {
        check(d >= 0 && d < static_cast<int64_t>(s.size()), op, "order out of range");
        expect.push_back(s[d]);
      }
      check(like(r, o[0]->type.with_shape(expect)), op, "result shape must be the permuted shape");
      break;
    }
    case OpKind::Join: {
      check(like(o[0]->type, o[1]->type), op, "joins two tensors of one type");
      auto s = o[0]->type.shape;
      s.push_back(2);
      check(like(r, o[0]->type.with_shape(s)), op, "result gains a minor dimension of 2");
      break;
    }
    case OpKind::Split: {
      auto s = o[0]->type.shape;
      check(!s.empty() && s.back() == 2, op, "splits a minor dimension of 2");
      s.pop_back();
      for (Value* v : op.results)
        check(like(v->type, o[0]->type.with_shape(s)), op, "results drop the minor dimension");
      break;
    }
    case OpKind::Cat: {
      const auto& a = o[0]->type;
      const auto& b = o[1]->type;
      check(a.elem == b.elem && a.rank() == b.rank() && a.rank() >= 1, op,
            "concatenates tensors of one element type and rank");
      auto s = a.shape;
      s[0] += b.shape[0];
      check(like(r, a.with_shape(s)), op, "result shape is the sum along dimension 0");
      break;
    }
    default:
      break;
    }
  }

  // GPU shared-memory ops: buffers are tensors whose layout the GPU passes set.
  void shared_op(const Op& op) {
    const auto& o = op.operands;
    switch (op.kind) {
    case OpKind::LocalAlloc:
      check(op.result()->type.rank() >= 2, op, "allocates a stage dimension and a tile");
      break;
    case OpKind::MemdescIndex: {
      check(o[1]->type == Type(ScalarKind::I32), op, "the slot must be an i32 scalar");
      auto shape = o[0]->type.shape;
      check(!shape.empty(), op, "indexes a buffer with a stage dimension");
      if (!shape.empty())
        shape.erase(shape.begin());
      check(op.result()->type.shape == shape && op.result()->type.elem == o[0]->type.elem, op,
            "the result is one slot of the buffers");
      break;
    }
    case OpKind::AsyncCopy:
      check(o.size() == 2 || o.size() == 3, op, "takes a buffer, pointers and an optional mask");
      if (o.size() >= 2) {
        check(o[1]->type.elem.is_ptr() && o[1]->type.shape == o[0]->type.shape &&
                  o[1]->type.elem.element_of_pointer() == o[0]->type.elem,
              op, "pointers must match the buffer's element type and shape");
        if (o.size() == 3)
          check(like(o[2]->type, Type(ScalarKind::I1, o[1]->type.shape)), op, "mask must be i1");
      }
      break;
    case OpKind::AsyncCommit:
      break;
    case OpKind::AsyncWait:
      check(op.int_attr(attr::pending, -1) >= 0, op, "needs pending >= 0");
      break;
    case OpKind::TmaCreate:
      for (const Value* v : o)
        check(v->type.is_scalar(), op, "takes scalars");
      check(op.result()->type == o[0]->type, op, "gives the map's address as the base's type");
      check(op.has_attr(attr::box) && op.has_attr(attr::swizzle) && op.has_attr(attr::slot), op,
            "needs box, swizzle and slot");
      break;
    case OpKind::TmaCopy:
      check(o[0]->type.rank() == 2 && o[4]->type.rank() >= 1, op,
            "copies into one tile and signals one mbarrier");
      for (size_t i = 1; i < 4; ++i)
        check(o[i]->type.is_scalar(), op, "the map and coordinates are scalars");
      check(o[5]->type == Type(ScalarKind::I1), op, "the predicate is an i1 scalar");
      break;
    case OpKind::MbarWait:
      check(o[1]->type == Type(ScalarKind::I32), op, "the phase is an i32 scalar");
      break;
    case OpKind::LocalLoad:
      check(op.result()->type.shape == o[0]->type.shape &&
                op.result()->type.elem == o[0]->type.elem,
            op, "loads the buffer's type");
      break;
    case OpKind::LocalStore:
      check(o[1]->type.shape == o[0]->type.shape && o[1]->type.elem == o[0]->type.elem, op,
            "stores the buffer's type");
      break;
    default:
      break;
    }
  }

  void memory_op(const Op& op) {
    const auto& o = op.operands;
    const Type& p = o[0]->type;
    auto mask_ok = [&](size_t i) {
      check(like(o[i]->type, Type(ScalarKind::I1, p.shape)), op,
            fmt::format("mask must be i1{}", shape_string(p.shape)));
    };
    switch (op.kind) {
    case OpKind::AddPtr:
      check(o[1]->type.elem.is_int() && o[1]->type.shape == p.shape, op,
            "offset must be integers of the pointers' shape");
      check(like(op.result()->type, p), op, "result has the pointers' type");
      break;
    case OpKind::Load:
      (void)op.enum_attr<CacheModifier>(CacheModifier::Ca);
      (void)op.enum_attr<EvictionPolicy>(EvictionPolicy::Normal);
      check(like(op.result()->type, p.with_elem(p.elem.element_of_pointer())), op,
            "result is the pointee type in the pointers' shape");
      if (o.size() >= 2)
        mask_ok(1);
      if (o.size() == 3)
        check(like(o[2]->type, op.result()->type), op, "other must have the result's type");
      break;
    case OpKind::Store:
      (void)op.enum_attr<CacheModifier>(CacheModifier::Ca);
      (void)op.enum_attr<EvictionPolicy>(EvictionPolicy::Normal);
      check(like(o[1]->type, p.with_elem(p.elem.element_of_pointer())), op,
            "values must be the pointee type in the pointers' shape");
      if (o.size() == 3)
        mask_ok(2);
      break;
    case OpKind::AtomicRmw:
      (void)op.enum_attr<AtomicOp>();
      (void)op.enum_attr<MemSem>(MemSem::AcqRel);
      (void)op.enum_attr<MemScope>(MemScope::Gpu);
      check(like(o[1]->type, p.with_elem(p.elem.element_of_pointer())), op,
            "values must be the pointee type in the pointers' shape");
      check(like(op.result()->type, o[1]->type), op, "returns the old values");
      if (o.size() == 3)
        mask_ok(2);
      break;
    case OpKind::AtomicCas:
      (void)op.enum_attr<MemSem>(MemSem::AcqRel);
      (void)op.enum_attr<MemScope>(MemScope::Gpu);
      check(like(o[1]->type, o[2]->type) &&
                like(o[1]->type, p.with_elem(p.elem.element_of_pointer())),
            op, "compare and values must be the pointee type in the pointers' shape");
      if (o.size() == 4)
        mask_ok(3);
      break;
    default:
      break;
    }
  }

  void collective_op(const Op& op) {
    const auto& o = op.operands;
    if (op.kind == OpKind::Histogram) {
      check(o[0]->type.rank() == 1, op, "x must be 1-D");
      if (o.size() == 2)
        check(o[1]->type.shape == o[0]->type.shape, op, "the mask must have x's shape");
      const int64_t bins = op.int_attr(attr::num_bins);
      check(bins > 0 && (bins & (bins - 1)) == 0, op, "num_bins must be a power of two");
      check(like(op.result()->type, Type(ScalarKind::I32, {bins})), op,
            "the result must be i32[num_bins]");
      return;
    }
    if (op.kind == OpKind::Dot) {
      const auto &a = o[0]->type, &b = o[1]->type, &c = o[2]->type;
      check(a.rank() == b.rank() && a.rank() == c.rank() && (a.rank() == 2 || a.rank() == 3), op,
            "operands must all be 2-D or all 3-D");
      int r = a.rank();
      check(a.shape[r - 1] == b.shape[r - 2], op, "inner dimensions differ");
      check(c.shape[r - 2] == a.shape[r - 2] && c.shape[r - 1] == b.shape[r - 1], op,
            "accumulator shape must be M x N");
      check(a.elem == b.elem || (a.elem.is_storage_float() && b.elem.is_storage_float()), op,
            "a and b must share an element type (or both be fp8)");
      check(like(op.result()->type, c), op, "result has the accumulator's type");
      (void)op.enum_attr<InputPrecision>(InputPrecision::Ieee);
      return;
    }
    check(op.regions.size() == 1, op, "needs one combine region");
    const Block& body = op.body();
    check(body.args.size() == 2 * o.size(), op, "combine region takes two values per operand");
    std::vector<Type> scalars;
    for (size_t i = 0; i < o.size(); ++i) {
      check(o[i]->type.shape == o[0]->type.shape, op, "operands must share one shape");
      scalars.push_back(o[i]->type.scalar());
      check(body.args[i]->type == scalars.back() && body.args[i + o.size()]->type == scalars.back(),
            op, "combine arguments must be the operands' scalar types");
    }
    yields(op, 0, scalars);
    results(op, o.size());
    int64_t axis = op.int_attr(attr::axis);
    int rank = o[0]->type.rank();
    check(axis >= 0 && axis < rank, op, "axis out of range");
    for (size_t i = 0; i < o.size(); ++i) {
      auto s = o[i]->type.shape;
      if (op.kind == OpKind::Reduce && !op.int_attr(attr::keep_dims, 0))
        s.erase(s.begin() + axis);
      else if (op.kind == OpKind::Reduce)
        s[axis] = 1;
      check(like(op.results[i]->type, o[i]->type.with_shape(s)), op, "wrong result shape");
    }
  }

  void control_op(const Op& op) {
    const auto& o = op.operands;
    switch (op.kind) {
    case OpKind::For: {
      check(op.regions.size() == 1, op, "needs one body region");
      for (int i = 0; i < 3; ++i)
        check(o[i]->type.is_scalar(), op, "bounds and step must be integer scalars");
      check(o[0]->type == o[1]->type && o[1]->type == o[2]->type, op,
            "bounds and step must share a type");
      std::vector<Value*> inits(o.begin() + 3, o.end());
      auto types = types_of(inits);
      check(types_of(op.results) == types, op, "results must match the initial values");
      const Block& b = op.body();
      check(b.args.size() == inits.size() + 1 && b.args[0]->type == o[0]->type, op,
            "body takes the induction variable and the carried values");
      for (size_t i = 0; i < inits.size(); ++i)
        check(b.args[i + 1]->type == types[i], op, "carried argument types must match");
      yields(op, 0, types);
      break;
    }
    case OpKind::If: {
      check(o[0]->type == Type(ScalarKind::I1), op, "condition must be an i1 scalar");
      check(op.regions.size() == 2, op, "needs a then and an else region");
      yields(op, 0, types_of(op.results));
      yields(op, 1, types_of(op.results));
      break;
    }
    case OpKind::While: {
      check(op.regions.size() == 2, op, "needs a before and an after region");
      auto inits = types_of(o);
      const Block& before = op.body(0);
      check(types_of(before.args) == inits, op, "before-region arguments must match inits");
      const Op* c = before.terminator();
      check(c && c->kind == OpKind::Condition, op, "before-region must end with condition");
      std::vector<Value*> passed(c->operands.begin() + 1, c->operands.end());
      check(types_of(op.results) == types_of(passed), op, "results must match the condition's");
      check(types_of(op.body(1).args) == types_of(passed), op,
            "after-region arguments must match the condition's values");
      yields(op, 1, inits);
      break;
    }
    default:
      break;
    }
  }

  std::unordered_set<const Value*> defined_;
};

} // namespace

void verify(const Function& f) {
  Verifier().run(f);
}

} // namespace tritium::ir
