// The untyped builders behind the typed DSL: shape checks, broadcasting, conversions.
#include <tritium/error.hpp>
#include <tritium/ir/builder.hpp>
#include <tritium/ir/extern_math.hpp>
#include <tritium/lang/tracer.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace tritium::lang::detail {
namespace {

using ir::DType;
using ir::OpKind;
using ir::ScalarKind;
using ir::Type;
using ir::Value;

std::string shape_str(const std::vector<int64_t>& s) {
  return ir::shape_string(s);
}

bool fits(int64_t v, DType t) {
  switch (t.kind) {
  case ScalarKind::I1:
    return v == 0 || v == 1;
  case ScalarKind::I8:
    return v >= -128 && v <= 255; // literals may spell bit patterns
  case ScalarKind::U8:
    return v >= -128 && v <= 255;
  case ScalarKind::I16:
  case ScalarKind::U16:
    return v >= -32768 && v <= 65535;
  case ScalarKind::I32:
  case ScalarKind::U32:
    return v >= std::numeric_limits<int32_t>::min() && v <= 0xffffffffLL;
  default:
    return true;
  }
}

std::vector<int64_t> common_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                  const Loc& loc) {
  if (a.empty())
    return b;
  if (b.empty())
    return a;
  size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i + a.size() >= r ? a[i + a.size() - r] : 1;
    int64_t db = i + b.size() >= r ? b[i + b.size() - r] : 1;
    if (da != db && da != 1 && db != 1)
      fail(loc, fmt::format("shapes {} and {} cannot be broadcast together (dimension {}: {} vs "
                            "{})",
                            shape_str(a), shape_str(b), i, da, db));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Whether `from` broadcasts to exactly `to` (Triton's rules, aligned at the right).
bool broadcasts_to(const std::vector<int64_t>& from, const std::vector<int64_t>& to) {
  if (from.size() > to.size())
    return false;
  for (size_t i = 0; i < from.size(); ++i) {
    int64_t f = from[from.size() - 1 - i], t = to[to.size() - 1 - i];
    if (f != t && f != 1)
      return false;
  }
  return true;
}

// Whether two shapes broadcast together (Triton's rules: align right, 1 stretches).
bool broadcastable(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    int64_t da = a[a.size() - 1 - i], db = b[b.size() - 1 - i];
    if (da != db && da != 1 && db != 1)
      return false;
  }
  return true;
}

// As in Triton, every dimension of a block is a power of two and a block holds at most 2^20
// elements: GPU layouts spread blocks over lanes and warps by halving.
void check_block_shape(const std::vector<int64_t>& shape, const Loc& loc) {
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] <= 0 || (shape[i] & (shape[i] - 1)) != 0)
      fail(loc, fmt::format("shape {}: dimension {} has {} elements; each dimension's count must "
                            "be a power of two (as in Triton)",
                            ir::shape_string(shape), i, shape[i]));
    n *= shape[i];
  }
  if (n > (int64_t{1} << 20))
    fail(loc, fmt::format("shape {} has {} elements; a block holds at most 2^20",
                          ir::shape_string(shape), n));
}

Value* create1(OpKind k, std::vector<Value*> ops, Type t, const Loc& loc, ir::Attrs attrs = {}) {
  return builder(loc).create1(k, std::move(ops), std::move(t), std::move(attrs));
}

// The operand classes of ops.def, checked when tracing so that the error names the user's line.
void check_operand(OpKind kind, size_t i, DType t, const Loc& loc) {
  ir::OperandClass c = ir::operand_class(kind, i);
  if (!ir::admits(c, t))
    fail(loc, fmt::format("'{}' needs {} operands, got {}", ir::op_name(kind),
                          ir::operand_class_name(c), ir::to_string(t)));
}

// A name from Triton's API (sem="acq_rel", input_precision="tf32", ...) as its enum.
template <class E>
E enum_option(std::string_view what, std::string_view name, const Loc& loc) {
  E e;
  if (!ir::parse_enum(name, e))
    fail(loc, fmt::format("unknown {} '{}' (one of: {})", what, name, ir::enum_names<E>()));
  return e;
}

void check_axis(int axis, int rank, const Loc& loc) {
  if (axis < 0 || axis >= rank)
    fail(loc, fmt::format("axis {} is out of range for a tensor of rank {}", axis, rank));
}

} // namespace

Value* program_id(int axis, const Loc& loc) {
  if (axis < 0 || axis > 2)
    fail(loc, fmt::format("program_id axis must be 0, 1 or 2, got {}", axis));
  return create1(OpKind::ProgramId, {}, Type(ScalarKind::I32), loc, {{attr::axis, int64_t{axis}}});
}

Value* num_programs(int axis, const Loc& loc) {
  if (axis < 0 || axis > 2)
    fail(loc, fmt::format("num_programs axis must be 0, 1 or 2, got {}", axis));
  return create1(OpKind::NumPrograms, {}, Type(ScalarKind::I32), loc,
                 {{attr::axis, int64_t{axis}}});
}

Value* arange(int64_t start, int64_t end, const Loc& loc) {
  int64_t n = end - start;
  if (n <= 0)
    fail(loc, fmt::format("arange({}, {}) is empty: end must be greater than start", start, end));
  if ((n & (n - 1)) != 0)
    fail(loc, fmt::format("arange({}, {}) has {} elements; the count must be a power of two", start,
                          end, n));
  if (start < std::numeric_limits<int32_t>::min() || end > std::numeric_limits<int32_t>::max())
    fail(loc, fmt::format("arange({}, {}) does not fit in int32", start, end));
  if (n > (1 << 20))
    fail(loc,
         fmt::format("arange({}, {}) has {} elements; a block holds at most 2^20", start, end, n));
  return create1(OpKind::Arange, {}, Type(ScalarKind::I32, {n}), loc,
                 {{attr::start, start}, {attr::end, end}});
}

Value* constant_int(int64_t v, DType t, std::vector<int64_t> shape, const Loc& loc) {
  check_block_shape(shape, loc);
  if (t.is_float())
    return constant_float(static_cast<double>(v), t, std::move(shape), loc);
  if (t.is_ptr())
    fail(loc, "pointer constants are not supported");
  if (!fits(v, t))
    fail(loc, fmt::format("the constant {} does not fit in {}", v, ir::to_string(t)));
  return create1(OpKind::Constant, {}, Type(t, std::move(shape)), loc, {{attr::value, v}});
}

Value* constant_float(double v, DType t, std::vector<int64_t> shape, const Loc& loc) {
  check_block_shape(shape, loc);
  if (!t.is_float()) {
    if (std::isfinite(v) && v == std::trunc(v))
      return constant_int(static_cast<int64_t>(v), t, std::move(shape), loc);
    fail(loc, fmt::format("the constant {} is not an integer of type {}", v, ir::to_string(t)));
  }
  return create1(OpKind::Constant, {}, Type(t, std::move(shape)), loc, {{attr::value, v}});
}

Value* cast(Value* v, DType to, const Loc& loc) {
  if (v->type.elem == to)
    return v;
  if (v->type.elem.is_ptr() && to.is_ptr())
    return create1(OpKind::Bitcast, {v}, v->type.with_elem(to), loc);
  if (v->type.elem.is_ptr() != to.is_ptr() &&
      !(v->type.elem.is_ptr() ? to.kind == ScalarKind::I64 || to.kind == ScalarKind::U64
                              : v->type.elem.bits() == 64))
    fail(loc, fmt::format("cannot convert {} to {}: pointers convert only to and from 64-bit "
                          "integers",
                          ir::to_string(v->type.elem), ir::to_string(to)));
  return create1(OpKind::Cast, {v}, v->type.with_elem(to), loc);
}

Value* bitcast(Value* v, DType to, const Loc& loc) {
  if (v->type.elem == to)
    return v;
  if (v->type.elem.bits() != to.bits())
    fail(loc, fmt::format("bitcast from {} to {} changes the width ({} vs {} bits)",
                          ir::to_string(v->type.elem), ir::to_string(to), v->type.elem.bits(),
                          to.bits()));
  return create1(OpKind::Bitcast, {v}, v->type.with_elem(to), loc);
}

Value* broadcast_to(Value* v, const std::vector<int64_t>& shape, const Loc& loc) {
  check_block_shape(shape, loc);
  const auto& s = v->type.shape;
  if (s == shape)
    return v;
  if (s.empty())
    return create1(OpKind::Splat, {v}, v->type.with_shape(shape), loc);
  if (s.size() > shape.size())
    fail(loc, fmt::format("cannot broadcast shape {} to the lower-rank shape {}", shape_str(s),
                          shape_str(shape)));
  while (v->type.rank() < static_cast<int>(shape.size()))
    v = expand_dims(v, 0, loc);
  for (size_t i = 0; i < shape.size(); ++i)
    if (v->type.shape[i] != shape[i] && v->type.shape[i] != 1)
      fail(loc, fmt::format("cannot broadcast shape {} to {} (dimension {}: {} vs {})",
                            shape_str(s), shape_str(shape), i, v->type.shape[i], shape[i]));
  if (v->type.shape == shape)
    return v;
  return create1(OpKind::Broadcast, {v}, v->type.with_shape(shape), loc);
}

std::pair<Value*, Value*> broadcast_pair(Value* a, Value* b, const Loc& loc) {
  auto s = common_shape(a->type.shape, b->type.shape, loc);
  return {broadcast_to(a, s, loc), broadcast_to(b, s, loc)};
}

Value* arith(OpKind kind, Value* a, Value* b, DType elem, const Loc& loc) {
  auto [x, y] = broadcast_pair(cast(a, elem, loc), cast(b, elem, loc), loc);
  check_operand(kind, 0, elem, loc);
  return create1(kind, {x, y}, x->type, loc);
}

Value* compare(ir::CmpPred pred, Value* a, Value* b, DType common, const Loc& loc) {
  auto [x, y] = broadcast_pair(cast(a, common, loc), cast(b, common, loc), loc);
  return create1(OpKind::Cmp, {x, y}, Type(ScalarKind::I1, x->type.shape), loc,
                 {{attr::pred, pred}});
}

Value* unary(OpKind kind, Value* a, const Loc& loc) {
  check_operand(kind, 0, a->type.elem, loc);
  return create1(kind, {a}, a->type, loc);
}

Value* extern_elementwise(std::string_view name, const std::vector<Value*>& args, const Loc& loc) {
  const ir::ExternMath* f = ir::find_extern_math(name);
  if (!f)
    fail(loc, fmt::format("extern_elementwise: '{}' is none of the C math functions every device "
                          "has ({})",
                          name, ir::extern_math_names()));
  if (f->arity != static_cast<int>(args.size()))
    fail(loc, fmt::format("extern_elementwise: '{}' takes {} argument{}, got {}", name, f->arity,
                          f->arity == 1 ? "" : "s", args.size()));
  DType t = args[0]->type.elem;
  if (!t.is_float())
    fail(loc, fmt::format("extern_elementwise: '{}' needs floating-point operands, got {}", name,
                          ir::to_string(t)));
  // The libraries have f32 and f64 versions: f16 and bf16 go through f32.
  DType work = t.bits() < 32 ? DType(ScalarKind::F32) : t;
  ir::Attrs attrs{{attr::symbol, std::string(name)}};
  Value* r;
  if (f->arity == 1) {
    Value* x = cast(args[0], work, loc);
    r = create1(OpKind::ExternUnary, {x}, x->type, loc, attrs);
  } else {
    auto s = common_shape(args[0]->type.shape, args[1]->type.shape, loc);
    Value* x = broadcast_to(cast(args[0], work, loc), s, loc);
    Value* y = broadcast_to(cast(args[1], work, loc), s, loc);
    r = create1(OpKind::ExternBinary, {x, y}, x->type, loc, attrs);
  }
  return cast(r, t, loc);
}

Value* fma(Value* a, Value* b, Value* c, DType elem, const Loc& loc) {
  a = cast(a, elem, loc);
  b = cast(b, elem, loc);
  c = cast(c, elem, loc);
  auto s = common_shape(common_shape(a->type.shape, b->type.shape, loc), c->type.shape, loc);
  a = broadcast_to(a, s, loc);
  b = broadcast_to(b, s, loc);
  c = broadcast_to(c, s, loc);
  return create1(OpKind::Fma, {a, b, c}, a->type, loc);
}

Value* select(Value* c, Value* a, Value* b, DType elem, const Loc& loc) {
  if (!c->type.elem.is_bool())
    fail(loc, fmt::format("where's condition must be i1, got {}", ir::to_string(c->type.elem)));
  a = cast(a, elem, loc);
  b = cast(b, elem, loc);
  auto s = common_shape(common_shape(c->type.shape, a->type.shape, loc), b->type.shape, loc);
  return create1(OpKind::Select,
                 {broadcast_to(c, s, loc), broadcast_to(a, s, loc), broadcast_to(b, s, loc)},
                 Type(elem, s), loc);
}

Value* add_ptr(Value* p, Value* offset, const Loc& loc) {
  if (!p->type.elem.is_ptr())
    fail(loc, "pointer arithmetic on a value that is not a pointer");
  if (!offset->type.elem.is_int() || offset->type.elem.is_bool())
    fail(loc,
         fmt::format("pointer offsets must be integers, got {}", ir::to_string(offset->type.elem)));
  auto [x, y] = broadcast_pair(p, offset, loc);
  return create1(OpKind::AddPtr, {x, y}, x->type, loc);
}

namespace {
ir::Attrs memory_attrs(const LoadOptions& o, const Loc& loc) {
  ir::Attrs a;
  if (!o.cache_modifier.empty()) {
    ir::CacheModifier c;
    if (!o.cache_modifier.starts_with(".") || !ir::parse_enum(o.cache_modifier.substr(1), c))
      fail(loc, fmt::format("unknown cache_modifier '{}' (expected .ca, .cg, .cv, .cs, .wb or .wt)",
                            o.cache_modifier));
    a[attr::cache] = c;
  }
  if (!o.eviction_policy.empty()) {
    ir::EvictionPolicy e;
    if (!ir::parse_enum(o.eviction_policy, e))
      fail(loc, fmt::format("unknown eviction_policy '{}' (expected evict_first, evict_last or "
                            "evict_normal)",
                            o.eviction_policy));
    a[attr::evict] = e;
  }
  if (o.is_volatile)
    a[attr::volatile_] = int64_t{1};
  return a;
}
} // namespace

Value* load(Value* p, Value* mask, Value* other, const LoadOptions& o, const Loc& loc) {
  if (!p->type.elem.is_ptr())
    fail(loc, "load needs pointers");
  DType elem = p->type.elem.element_of_pointer();
  auto s = p->type.shape;
  if (mask) {
    if (!mask->type.elem.is_bool())
      fail(loc, "load's mask must be i1");
    if (!broadcastable(s, mask->type.shape))
      fail(loc, fmt::format("load's mask has shape {} but the pointers have shape {}",
                            shape_str(mask->type.shape), shape_str(s)));
    s = common_shape(s, mask->type.shape, loc);
  }
  std::vector<Value*> ops{broadcast_to(p, s, loc)};
  if (mask)
    ops.push_back(broadcast_to(mask, s, loc));
  if (other) {
    if (!mask)
      fail(loc, "load's `other` needs a mask");
    ops.push_back(broadcast_to(cast(other, elem, loc), s, loc));
  }
  return create1(OpKind::Load, ops, Type(elem, s), loc, memory_attrs(o, loc));
}

void describe_load(Value* loaded, Value* base, const std::vector<Value*>& shape,
                   const std::vector<Value*>& strides, const std::vector<Value*>& offsets,
                   const Loc& loc) {
  ir::Op* ld = loaded->def;
  if (!ld || ld->kind != OpKind::Load)
    fail(loc, "internal error: a descriptor's block is not a load");
  if (!base->type.is_scalar())
    return; // a block of bases: no one tensor to describe
  // The id ties hint and load together through the passes; counted per function so that a
  // kernel traces to the same IR every time.
  ir::Builder& b = builder(loc);
  int64_t id = 0;
  ir::walk(b.function().entry(), [&](ir::Op& op) { id += op.kind == OpKind::DescHint; });
  ld->attrs[attr::desc] = id;
  std::vector<Value*> ops{base};
  ops.insert(ops.end(), shape.begin(), shape.end());
  ops.insert(ops.end(), strides.begin(), strides.end());
  ops.insert(ops.end(), offsets.begin(), offsets.end());
  debug_op(OpKind::DescHint, std::move(ops), {{attr::desc, id}}, loc);
}

void store(Value* p, Value* v, Value* mask, const LoadOptions& o, const Loc& loc) {
  if (!p->type.elem.is_ptr())
    fail(loc, "store needs pointers");
  DType elem = p->type.elem.element_of_pointer();
  const auto& s = p->type.shape;
  if (!broadcasts_to(v->type.shape, s))
    fail(loc, fmt::format("store of a value of shape {} through pointers of shape {}",
                          shape_str(v->type.shape), shape_str(s)));
  std::vector<Value*> ops{p, broadcast_to(cast(v, elem, loc), s, loc)};
  if (mask) {
    if (!mask->type.elem.is_bool())
      fail(loc, "store's mask must be i1");
    if (!broadcasts_to(mask->type.shape, s))
      fail(loc, fmt::format("store's mask has shape {} but the pointers have shape {}",
                            shape_str(mask->type.shape), shape_str(s)));
    ops.push_back(broadcast_to(mask, s, loc));
  }
  builder(loc).create(OpKind::Store, ops, {}, memory_attrs(o, loc));
}

namespace {
ir::Attrs atomic_options(std::string_view sem, std::string_view scope, const Loc& loc) {
  ir::MemSem m;
  ir::MemScope c;
  if (!ir::parse_enum(sem, m))
    fail(loc, fmt::format("unknown atomic sem '{}' (relaxed, acquire, release, acq_rel)", sem));
  if (!ir::parse_enum(scope, c))
    fail(loc, fmt::format("unknown atomic scope '{}' (gpu, cta, sys)", scope));
  return {{attr::sem, m}, {attr::scope, c}};
}
} // namespace

Value* atomic_rmw(ir::AtomicOp op, Value* p, Value* v, Value* mask, std::string_view sem,
                  std::string_view scope, const Loc& loc) {
  ir::Attrs attrs = atomic_options(sem, scope, loc);
  attrs[attr::op] = op;
  DType elem = p->type.elem.element_of_pointer();
  const std::string_view name = ir::enum_name(op);
  if ((op == ir::AtomicOp::And || op == ir::AtomicOp::Or || op == ir::AtomicOp::Xor) &&
      !elem.is_int())
    fail(loc, fmt::format("atomic_{} needs integer elements", name));
  // As Triton: 32- and 64-bit elements, and 16-bit floats for add and xchg only.
  bool ok = elem.bits() >= 32 ||
            (elem.is_float() && (op == ir::AtomicOp::Add || op == ir::AtomicOp::Xchg));
  if (!ok)
    fail(loc, fmt::format("atomic_{} on {} elements is not supported (atomics take 32- and "
                          "64-bit elements; f16 and bf16 only with add and xchg)",
                          name, ir::to_string(elem)));
  const auto& s = p->type.shape;
  if (!broadcasts_to(v->type.shape, s))
    fail(loc, fmt::format("atomic_{} of values of shape {} through pointers of shape {}", name,
                          shape_str(v->type.shape), shape_str(s)));
  std::vector<Value*> ops{p, broadcast_to(cast(v, elem, loc), s, loc)};
  if (mask) {
    if (!mask->type.elem.is_bool())
      fail(loc, "an atomic's mask must be i1");
    if (!broadcasts_to(mask->type.shape, s))
      fail(loc, fmt::format("atomic_{}'s mask has shape {} but the pointers have shape {}", name,
                            shape_str(mask->type.shape), shape_str(s)));
    ops.push_back(broadcast_to(mask, s, loc));
  }
  return create1(OpKind::AtomicRmw, ops, Type(elem, s), loc, std::move(attrs));
}

Value* atomic_cas(Value* p, Value* cmp, Value* v, std::string_view sem, std::string_view scope,
                  const Loc& loc) {
  ir::Attrs attrs = atomic_options(sem, scope, loc);
  DType elem = p->type.elem.element_of_pointer();
  if (elem.bits() < 16)
    fail(loc,
         fmt::format("atomic_cas needs 16-, 32- or 64-bit elements, got {}", ir::to_string(elem)));
  const auto& s = p->type.shape;
  return create1(
      OpKind::AtomicCas,
      {p, broadcast_to(cast(cmp, elem, loc), s, loc), broadcast_to(cast(v, elem, loc), s, loc)},
      Type(elem, s), loc, std::move(attrs));
}

Value* expand_dims(Value* v, int axis, const Loc& loc) {
  int rank = v->type.rank();
  if (axis < 0)
    axis += rank + 1;
  if (axis < 0 || axis > rank)
    fail(loc,
         fmt::format("expand_dims axis {} is out of range for a tensor of rank {}", axis, rank));
  auto s = v->type.shape;
  s.insert(s.begin() + axis, 1);
  return create1(OpKind::ExpandDims, {v}, v->type.with_shape(s), loc,
                 {{attr::axis, int64_t{axis}}});
}

Value* reshape(Value* v, std::vector<int64_t> shape, const Loc& loc) {
  check_block_shape(shape, loc);
  int64_t n = 1;
  for (auto d : shape)
    n *= d;
  if (n != v->type.numel())
    fail(loc, fmt::format("cannot reshape {} ({} elements) to {} ({} elements)",
                          shape_str(v->type.shape), v->type.numel(), shape_str(shape), n));
  if (shape == v->type.shape)
    return v;
  return create1(OpKind::Reshape, {v}, v->type.with_shape(std::move(shape)), loc);
}

Value* trans(Value* v, std::vector<int64_t> order, const Loc& loc) {
  int rank = v->type.rank();
  std::vector<int64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  bool perm = static_cast<int>(order.size()) == rank;
  for (int i = 0; perm && i < rank; ++i)
    perm = sorted[i] == i;
  if (!perm)
    fail(loc, fmt::format("trans order {} is not a permutation of the {} dimensions",
                          shape_str(order), rank));
  std::vector<int64_t> s;
  for (auto d : order)
    s.push_back(v->type.shape[d]);
  return create1(OpKind::Trans, {v}, v->type.with_shape(s), loc, {{attr::order, order}});
}

Value* join(Value* a, Value* b, const Loc& loc) {
  auto [x, y] = broadcast_pair(a, b, loc);
  if (!(x->type.elem == y->type.elem))
    fail(loc, "join needs two tensors of one element type");
  auto s = x->type.shape;
  s.push_back(2);
  return create1(OpKind::Join, {x, y}, x->type.with_shape(s), loc);
}

std::pair<Value*, Value*> split(Value* v, const Loc& loc) {
  auto s = v->type.shape;
  if (s.empty() || s.back() != 2)
    fail(loc, fmt::format("split needs a last dimension of 2, got shape {}", shape_str(s)));
  s.pop_back();
  ir::Op& op =
      builder(loc).create(OpKind::Split, {v}, {v->type.with_shape(s), v->type.with_shape(s)});
  return {op.results[0], op.results[1]};
}

Value* cat(Value* a, Value* b, const Loc& loc) {
  const auto& sa = a->type.shape;
  const auto& sb = b->type.shape;
  if (sa.empty() || sa.size() != sb.size() || !std::equal(sa.begin() + 1, sa.end(), sb.begin() + 1))
    fail(loc, fmt::format("cat needs tensors whose shapes differ only in dimension 0, got {} and "
                          "{}",
                          shape_str(sa), shape_str(sb)));
  auto s = sa;
  s[0] += sb[0];
  check_block_shape(s, loc);
  return create1(OpKind::Cat, {a, b}, a->type.with_shape(s), loc);
}

Value* flip(Value* v, int axis, const Loc& loc) {
  int rank = v->type.rank();
  if (rank == 0)
    fail(loc, "flip needs a tensor, got a scalar");
  if (axis < 0)
    axis += rank;
  check_axis(axis, rank, loc);
  int64_t n = v->type.shape[axis];
  if ((n & (n - 1)) != 0)
    fail(loc, fmt::format("flip needs a power-of-two dimension, dimension {} is {}", axis, n));
  if (n == 1)
    return v;
  // Move `axis` last, so that each step works on the minor dimension.
  std::vector<int64_t> order, inverse(rank);
  for (int d = 0; d < rank; ++d)
    if (d != axis)
      order.push_back(d);
  order.push_back(axis);
  for (int d = 0; d < rank; ++d)
    inverse[order[d]] = d;
  Value* x = axis == rank - 1 ? v : trans(v, order, loc);
  std::vector<int64_t> outer = x->type.shape;
  outer.pop_back();
  for (int64_t lo = 1; lo < n; lo *= 2) {
    // View the index as (hi, bit, lo) and swap the two values of `bit`.
    std::vector<int64_t> s = outer;
    s.insert(s.end(), {n / (2 * lo), 2, lo});
    x = reshape(x, s, loc);
    std::vector<int64_t> swap_last(s.size());
    for (size_t d = 0; d < s.size(); ++d)
      swap_last[d] = static_cast<int64_t>(d);
    std::swap(swap_last[s.size() - 1], swap_last[s.size() - 2]);
    if (lo > 1)
      x = trans(x, swap_last, loc);
    else
      x = reshape(x, std::vector<int64_t>(s.begin(), s.end() - 1), loc);
    auto [a, b] = split(x, loc);
    x = join(b, a, loc);
    if (lo > 1)
      x = trans(x, swap_last, loc);
    std::vector<int64_t> back = outer;
    back.push_back(n);
    x = reshape(x, back, loc);
  }
  return axis == rank - 1 ? x : trans(x, inverse, loc);
}

Value* histogram(Value* v, Value* mask, int num_bins, const Loc& loc) {
  if (v->type.rank() != 1 || !v->type.elem.is_int() || v->type.elem.is_bool())
    fail(loc, fmt::format("histogram needs a 1-D integer tensor, got {}", ir::to_string(v->type)));
  if (num_bins <= 0 || (num_bins & (num_bins - 1)) != 0)
    fail(loc, fmt::format("histogram's num_bins must be a power of two, got {}", num_bins));
  std::vector<Value*> operands{v};
  if (mask) {
    if (!(mask->type == ir::Type(ScalarKind::I1, v->type.shape)))
      fail(loc, fmt::format("histogram's mask has type {}, expected {}", ir::to_string(mask->type),
                            ir::to_string(ir::Type(ScalarKind::I1, v->type.shape))));
    operands.push_back(mask);
  }
  // One op, not a one-hot [n, num_bins] summed over n: GPUs count in shared memory (a 4096 x
  // 256 one-hot took 86 s to compile for gfx942 and spilled), the CPU expands it (cpu/
  // expand_histogram.cpp).
  return create1(OpKind::Histogram, std::move(operands), Type(ScalarKind::I32, {num_bins}), loc,
                 {{attr::num_bins, int64_t{num_bins}}});
}

Value* gather(Value* src, Value* index, int axis, const Loc& loc) {
  int rank = src->type.rank();
  if (rank == 0 || index->type.rank() != rank)
    fail(loc, fmt::format("gather needs src and index of one rank (1 or more), got {} and {}",
                          ir::to_string(src->type), ir::to_string(index->type)));
  if (!index->type.elem.is_int() || index->type.elem.is_bool())
    fail(loc, "gather's index must be integers");
  if (axis < 0)
    axis += rank;
  check_axis(axis, rank, loc);
  for (int d = 0; d < rank; ++d)
    if (d != axis && src->type.shape[d] != index->type.shape[d])
      fail(loc, fmt::format("gather's src {} and index {} differ in dimension {} (only the "
                            "gathered axis {} may differ)",
                            shape_str(src->type.shape), shape_str(index->type.shape), d, axis));
  int64_t n = src->type.shape[axis];
  if ((n & (n - 1)) != 0)
    fail(loc,
         fmt::format("gather needs a power-of-two source dimension, dimension {} is {}", axis, n));
  // Move `axis` last in both, then compare every index with every source position:
  // picked[..., j, s] = (index[..., j] == s) ? src[..., s] : 0, summed over s.
  std::vector<int64_t> order, inverse(rank);
  for (int d = 0; d < rank; ++d)
    if (d != axis)
      order.push_back(d);
  order.push_back(axis);
  for (int d = 0; d < rank; ++d)
    inverse[order[d]] = d;
  bool moved = axis != rank - 1;
  Value* s = moved ? trans(src, order, loc) : src;
  Value* i = moved ? trans(index, order, loc) : index;
  i = cast(i, DType(ScalarKind::I32), loc);
  Value* positions = arange(0, n, loc);
  Value* hit =
      compare(ir::CmpPred::Eq, expand_dims(i, rank, loc), positions, DType(ScalarKind::I32), loc);
  Value* zero = src->type.elem.is_float() ? constant_float(0.0, src->type.elem, {}, loc)
                                          : constant_int(0, src->type.elem, {}, loc);
  Value* picked = select(hit, expand_dims(s, rank - 1, loc), zero, src->type.elem, loc);
  Value* out =
      reduce_simple(picked, rank, false, src->type.elem.is_bool() ? OpKind::Or : OpKind::Add, loc);
  return moved ? trans(out, inverse, loc) : out;
}

void static_print(const std::string& text, const Loc& loc) {
  builder(loc); // only inside a kernel being traced
  std::fputs(fmt::format("{}:{}: {}\n", loc.file_name(), loc.line(), text).c_str(), stdout);
}

Value* dot(Value* a, Value* b, Value* acc, std::string_view input_precision,
           int64_t max_num_imprecise_acc, const Loc& loc) {
  int r = a->type.rank();
  if ((r != 2 && r != 3) || b->type.rank() != r || acc->type.rank() != r)
    fail(loc, fmt::format("dot needs 2-D (or batched 3-D) operands, got shapes {}, {} and "
                          "accumulator {}",
                          shape_str(a->type.shape), shape_str(b->type.shape),
                          shape_str(acc->type.shape)));
  int64_t m = a->type.shape[r - 2], k = a->type.shape[r - 1];
  int64_t kb = b->type.shape[r - 2], n = b->type.shape[r - 1];
  if (k != kb)
    fail(loc, fmt::format("dot's inner dimensions differ: a is {} and b is {}",
                          shape_str(a->type.shape), shape_str(b->type.shape)));
  if (acc->type.shape[r - 2] != m || acc->type.shape[r - 1] != n ||
      (r == 3 && (acc->type.shape[0] != a->type.shape[0] || b->type.shape[0] != a->type.shape[0])))
    fail(loc, fmt::format("dot's accumulator has shape {}, expected {}", shape_str(acc->type.shape),
                          shape_str(r == 3 ? std::vector<int64_t>{a->type.shape[0], m, n}
                                           : std::vector<int64_t>{m, n})));
  if (m < 16 || n < 16 || k < 16)
    fail(loc, fmt::format("dot needs every dimension to be at least 16 (as Triton), got M={} "
                          "N={} K={}",
                          m, n, k));
  DType ea = a->type.elem, eb = b->type.elem, ec = acc->type.elem;
  // Two fp8 formats may meet, as in Triton (e4m3 activations with e5m2 gradients).
  if (!(ea == eb) && !(ea.is_storage_float() && eb.is_storage_float()))
    fail(loc, fmt::format("dot's operands must share an element type, got {} and {}",
                          ir::to_string(ea), ir::to_string(eb)));
  bool ok = ea.is_storage_float() && ec.kind == ScalarKind::F32;
  switch (ea.kind) {
  case ScalarKind::F16:
  case ScalarKind::BF16:
    ok = ec.kind == ScalarKind::F32 || ec == ea;
    break;
  case ScalarKind::F32:
    ok = ec.kind == ScalarKind::F32;
    break;
  case ScalarKind::F64:
    ok = ec.kind == ScalarKind::F64;
    break;
  case ScalarKind::I8:
  case ScalarKind::U8:
    ok = ec.kind == ScalarKind::I32;
    break;
  default:
    break;
  }
  if (!ok)
    fail(loc, fmt::format("dot of {} operands cannot accumulate in {} (f16/bf16 -> f32 or the "
                          "same type, fp8 -> f32, f32 -> f32, f64 -> f64, i8 -> i32)",
                          ir::to_string(ea), ir::to_string(ec)));
  auto precision = enum_option<ir::InputPrecision>("input_precision", input_precision, loc);
  ir::Attrs attrs{{attr::input_precision, precision}};
  if (max_num_imprecise_acc != 0) {
    if (!ea.is_storage_float())
      fail(loc, fmt::format("max_num_imprecise_acc applies to fp8 operands (as Triton), not {}",
                            ir::to_string(ea)));
    if (max_num_imprecise_acc < 0)
      fail(loc,
           fmt::format("max_num_imprecise_acc must be positive, got {}", max_num_imprecise_acc));
    attrs[attr::max_num_imprecise_acc] = max_num_imprecise_acc;
  }
  return create1(OpKind::Dot, {a, b, acc}, acc->type, loc, std::move(attrs));
}

Value* hint(Value* v, std::string_view name, int64_t value, const Loc& loc) {
  if (value <= 0)
    fail(loc, fmt::format("{} must be positive, got {}", name, value));
  return create1(OpKind::Hint, {v}, v->type, loc, {{std::string(name), value}});
}

void debug_op(OpKind kind, std::vector<Value*> operands, ir::Attrs attrs, const Loc& loc) {
  builder(loc).create(kind, std::move(operands), {}, std::move(attrs));
}

namespace {
std::vector<Value*> collective(OpKind kind, std::vector<Value*> xs, int axis, ir::Attrs attrs,
                               const Combine& combine, bool keep_dims, const Loc& loc) {
  if (xs.empty())
    fail(loc, "a reduction needs at least one operand");
  int rank = xs[0]->type.rank();
  if (rank == 0)
    fail(loc, "cannot reduce or scan a scalar");
  if (axis < 0)
    axis += rank;
  check_axis(axis, rank, loc);
  for (Value* x : xs)
    if (x->type.shape != xs[0]->type.shape)
      fail(loc, "the operands of a reduction must share one shape");
  attrs[attr::axis] = int64_t{axis};
  std::vector<Type> result_types;
  for (Value* x : xs) {
    auto s = x->type.shape;
    if (kind == OpKind::Reduce) {
      if (keep_dims)
        s[axis] = 1;
      else
        s.erase(s.begin() + axis);
    }
    result_types.push_back(x->type.with_shape(s));
  }
  ir::Builder& b = builder(loc);
  ir::Op& op = b.create(kind, xs, result_types, attrs, 1);
  ir::Block& body = op.body();
  std::vector<Value*> args;
  for (int side = 0; side < 2; ++side)
    for (Value* x : xs)
      args.push_back(b.add_block_arg(body, x->type.scalar()));
  ir::Block& outer = b.block();
  b.set_block(body);
  std::vector<Value*> out;
  try {
    out = combine(args);
  } catch (...) {
    b.set_block(outer);
    throw;
  }
  if (out.size() != xs.size())
    fail(loc, fmt::format("the combine function returns {} values for {} operands", out.size(),
                          xs.size()));
  for (size_t i = 0; i < out.size(); ++i)
    if (!(out[i]->type == xs[i]->type.scalar()))
      fail(loc, fmt::format("the combine function returns {} for an operand of {}",
                            ir::to_string(out[i]->type), ir::to_string(xs[i]->type.scalar())));
  b.set_loc({loc.file_name(), loc.line()});
  b.create(OpKind::Yield, out, {});
  b.set_block(outer);
  return op.results;
}
} // namespace

std::vector<Value*> reduce(std::vector<Value*> xs, int axis, bool keep_dims, const Combine& combine,
                           const Loc& loc) {
  ir::Attrs attrs;
  if (keep_dims)
    attrs[attr::keep_dims] = int64_t{1};
  return collective(OpKind::Reduce, std::move(xs), axis, attrs, combine, keep_dims, loc);
}

std::vector<Value*> scan(std::vector<Value*> xs, int axis, bool reverse, const Combine& combine,
                         const Loc& loc) {
  ir::Attrs attrs;
  attrs[attr::reverse] = int64_t{reverse ? 1 : 0};
  return collective(OpKind::Scan, std::move(xs), axis, attrs, combine, false, loc);
}

Value* reduce_simple(Value* x, int axis, bool keep_dims, OpKind combine_kind, const Loc& loc) {
  auto combine = [&](const std::vector<Value*>& a) -> std::vector<Value*> {
    return {create1(combine_kind, {a[0], a[1]}, a[0]->type, loc)};
  };
  return reduce({x}, axis, keep_dims, combine, loc)[0];
}

} // namespace tritium::lang::detail
