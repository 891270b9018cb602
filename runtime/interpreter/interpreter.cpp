// The reference interpreter: executes the IR directly over host memory, one program after
// another, with Triton's semantics. It is written to be obviously right, not fast: every
// backend is tested against it. It also checks every memory access against the buffers it
// allocated, so an out-of-bounds load or store is an error naming the kernel's source line.
#include <tritium/error.hpp>
#include <tritium/float16.hpp>
#include <tritium/float_format.hpp>
#include <tritium/ir/extern_math.hpp>
#include <tritium/ir/printer.hpp>
#include <tritium/ir/reduce_order.hpp>
#include <tritium/runtime/backend.hpp>

#include "allocations.hpp"
#include "scalar.hpp"
#include "time_limit.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>

namespace tritium {
namespace {

using interp::binary;
using interp::compare;
using interp::convert;
using interp::elem_bytes;
using interp::float_scalar;
using interp::from_bits;
using interp::int_scalar;
using interp::math;
using interp::normalize;
using interp::Scalar;
using interp::to_bits;
using interp::unary;
using ir::DType;
using ir::Op;
using ir::OpKind;
using ir::ScalarKind;
using ir::Type;
using ir::Value;

struct Tensor {
  Type type;
  std::vector<Scalar> data; // row-major; one element for a scalar
  size_t size() const { return data.size(); }
};

using interp::Allocations;

class Program {
public:
  Program(const ir::Function& f, const Allocations& allocs, const LaunchGrid& grid,
          std::span<const ArgSlot> args, std::optional<interp::TimeLimit> limit)
      : f_(f), allocs_(allocs), grid_(grid), args_(args), limit_(limit) {}

  void run(int64_t px, int64_t py, int64_t pz) {
    pid_[0] = px;
    pid_[1] = py;
    pid_[2] = pz;
    env_.clear();
    const auto& params = f_.args();
    for (size_t i = 0; i < params.size(); ++i) {
      Tensor t{params[i]->type, {}};
      DType d = t.type.elem;
      Scalar s = d.is_float() ? float_scalar(std::bit_cast<double>(args_[i]))
                              : int_scalar(static_cast<int64_t>(args_[i]));
      t.data.push_back(normalize(s, d));
      env_[params[i]] = std::move(t);
    }
    block(f_.entry());
  }

private:
  [[noreturn]] void fail(const Op& op, const std::string& what) const {
    throw Error(fmt::format("{}: in kernel '{}', program ({}, {}, {}), op '{}': {}", op.loc.str(),
                            f_.name, pid_[0], pid_[1], pid_[2], ir::op_name(op.kind), what));
  }

  void check_time(const Op& loop, int64_t iteration) const {
    if (limit_ && limit_->passed())
      fail(loop, fmt::format("TRITIUM_INTERPRETER_TIMEOUT={} s passed; the interpreter stopped "
                             "this launch at iteration {} of this loop",
                             limit_->seconds(), iteration));
  }

  const Tensor& get(const Value* v) const { return env_.at(v); }
  void set(const Value* v, Tensor t) { env_[v] = std::move(t); }

  // Runs a block; returns the operands of its terminator (yield/condition), if any.
  std::vector<Tensor> block(const ir::Block& b) {
    for (const auto& op : b.ops) {
      if (ir::op_category(op->kind) != ir::OpCategory::Terminator) {
        execute(*op);
        continue;
      }
      std::vector<Tensor> out;
      switch (ir::as<ir::TerminatorOp>(op->kind)) {
      case ir::TerminatorOp::Yield:
      case ir::TerminatorOp::Condition:
        for (Value* v : op->operands)
          out.push_back(get(v));
        break;
      case ir::TerminatorOp::Return:
        break;
      }
      return out;
    }
    return {};
  }

  std::vector<Tensor> region(const ir::Block& b, std::vector<Tensor> args) {
    for (size_t i = 0; i < b.args.size(); ++i)
      set(b.args[i], std::move(args[i]));
    return block(b);
  }

  Tensor make(const Type& t) {
    return Tensor{t, std::vector<Scalar>(std::max<int64_t>(1, t.numel()))};
  }

  // Row-major strides of a shape.
  static std::vector<int64_t> strides(const std::vector<int64_t>& shape) {
    std::vector<int64_t> s(shape.size(), 1);
    for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
      s[i] = s[i + 1] * shape[i + 1];
    return s;
  }

  uintptr_t checked(const Op& op, int64_t addr, DType t, size_t lane) {
    size_t n = elem_bytes(t);
    if (!allocs_.contains(static_cast<uintptr_t>(addr), n))
      fail(op, fmt::format("lane {} accesses {} bytes at address {:#x}, outside every buffer "
                           "(out of bounds; mask it)",
                           lane, n, static_cast<uint64_t>(addr)));
    if (addr % n != 0)
      fail(op, fmt::format("lane {} accesses a misaligned address {:#x}", lane,
                           static_cast<uint64_t>(addr)));
    return static_cast<uintptr_t>(addr);
  }

  Scalar read(uintptr_t addr, DType t) {
    uint64_t bits = 0;
    std::memcpy(&bits, reinterpret_cast<const void*>(addr), elem_bytes(t));
    return from_bits(bits, t);
  }
  void write(uintptr_t addr, DType t, Scalar s) {
    uint64_t bits = to_bits(s, t);
    std::memcpy(reinterpret_cast<void*>(addr), &bits, elem_bytes(t));
  }

  // Applies `f(lane)` to every lane of op's one result.
  template <class F>
  void lanes(const Op& op, F f) {
    Tensor r = make(op.result()->type);
    for (size_t i = 0; i < r.size(); ++i)
      r.data[i] = f(i);
    set(op.result(), std::move(r));
  }

  // Every op kind is handled here: each category's enum is switched over without a default,
  // so an op added to ops.def that the interpreter misses does not compile.
  void execute(const Op& op) {
    const auto& o = op.operands;
    auto arg = [&](size_t k, size_t i) { return get(o[k]).data[o[k]->type.is_scalar() ? 0 : i]; };
    switch (ir::op_category(op.kind)) {
    case ir::OpCategory::Source:
      return source(op, ir::as<ir::SourceOp>(op.kind));
    case ir::OpCategory::Binary: {
      auto k = ir::as<ir::BinaryOp>(op.kind);
      DType t = op.result()->type.elem;
      return lanes(op, [&](size_t i) { return binary(k, t, arg(0, i), arg(1, i)); });
    }
    case ir::OpCategory::Compare: {
      switch (ir::as<ir::CompareOp>(op.kind)) {
      case ir::CompareOp::Cmp: {
        auto pred = op.enum_attr<ir::CmpPred>();
        DType t = o[0]->type.elem;
        return lanes(op,
                     [&](size_t i) { return int_scalar(compare(pred, t, arg(0, i), arg(1, i))); });
      }
      }
      return;
    }
    case ir::OpCategory::Unary: {
      auto k = ir::as<ir::UnaryOp>(op.kind);
      DType t = op.result()->type.elem;
      return lanes(op, [&](size_t i) { return unary(k, t, arg(0, i)); });
    }
    case ir::OpCategory::Math: {
      auto k = ir::as<ir::MathOp>(op.kind);
      DType t = op.result()->type.elem;
      return lanes(op, [&](size_t i) {
        return math(k, t, arg(0, i), o.size() > 1 ? arg(1, i) : float_scalar(0));
      });
    }
    case ir::OpCategory::Extern: {
      // The host's C math library in double, rounded to the type (what the CPU backend does).
      const ir::ExternMath* f = ir::find_extern_math(op.str_attr(attr::symbol));
      if (!f)
        fail(op, "unknown C math function '" + op.str_attr(attr::symbol) + "'");
      DType t = op.result()->type.elem;
      switch (ir::as<ir::ExternOp>(op.kind)) {
      case ir::ExternOp::ExternUnary:
        return lanes(op,
                     [&](size_t i) { return normalize(float_scalar(f->host1(arg(0, i).f)), t); });
      case ir::ExternOp::ExternBinary:
        return lanes(op, [&](size_t i) {
          return normalize(float_scalar(f->host2(arg(0, i).f, arg(1, i).f)), t);
        });
      }
      return;
    }
    case ir::OpCategory::Ternary:
      switch (ir::as<ir::TernaryOp>(op.kind)) {
      case ir::TernaryOp::Fma: {
        DType t = op.result()->type.elem;
        return lanes(op, [&](size_t i) {
          double a = arg(0, i).f, b = arg(1, i).f, c = arg(2, i).f;
          double v =
              t.kind == ScalarKind::F32
                  ? std::fmaf(static_cast<float>(a), static_cast<float>(b), static_cast<float>(c))
                  : std::fma(a, b, c);
          return normalize(float_scalar(v), t);
        });
      }
      }
      return;
    case ir::OpCategory::Select:
      switch (ir::as<ir::SelectOp>(op.kind)) {
      case ir::SelectOp::Select:
        return lanes(op, [&](size_t i) { return arg(0, i).i ? arg(1, i) : arg(2, i); });
      }
      return;
    case ir::OpCategory::Convert: {
      DType from = o[0]->type.elem, to = op.result()->type.elem;
      switch (ir::as<ir::ConvertOp>(op.kind)) {
      case ir::ConvertOp::Cast:
        return lanes(op, [&](size_t i) { return convert(arg(0, i), from, to); });
      case ir::ConvertOp::Bitcast:
        return lanes(op, [&](size_t i) { return from_bits(to_bits(arg(0, i), from), to); });
      }
      return;
    }
    case ir::OpCategory::Shape:
      return shape(op, ir::as<ir::ShapeOp>(op.kind));
    case ir::OpCategory::Memory:
      return memory(op, ir::as<ir::MemoryOp>(op.kind));
    case ir::OpCategory::Shared:
      fail(op, "a GPU-only op (made by the GPU passes, which the interpreter does not run)");
    case ir::OpCategory::Collective:
      switch (ir::as<ir::CollectiveOp>(op.kind)) {
      case ir::CollectiveOp::Reduce:
      case ir::CollectiveOp::Scan:
        return collective(op);
      case ir::CollectiveOp::Dot:
        return dot(op);
      case ir::CollectiveOp::Histogram:
        return histogram(op);
      }
      return;
    case ir::OpCategory::Control:
      return control(op, ir::as<ir::ControlOp>(op.kind));
    case ir::OpCategory::Terminator:
      fail(op, "internal error: a terminator is run by its block");
    case ir::OpCategory::Hint:
      switch (ir::as<ir::HintOp>(op.kind)) {
      case ir::HintOp::Hint:
        return set(op.result(), get(o[0]));
      case ir::HintOp::DescHint:
        return; // the load it describes computes the block itself
      }
      return;
    case ir::OpCategory::Debug:
      return debug(op, ir::as<ir::DebugOp>(op.kind));
    }
  }

  void source(const Op& op, ir::SourceOp k) {
    Tensor t = make(op.result()->type);
    switch (k) {
    case ir::SourceOp::ProgramId:
      t.data[0] = int_scalar(pid_[op.int_attr(attr::axis)]);
      break;
    case ir::SourceOp::NumPrograms: {
      int64_t axis = op.int_attr(attr::axis);
      t.data[0] = int_scalar(axis == 0 ? grid_.x : axis == 1 ? grid_.y : grid_.z);
      break;
    }
    case ir::SourceOp::Constant: {
      DType d = t.type.elem;
      Scalar s = d.is_float() ? float_scalar(op.float_attr(attr::value))
                              : int_scalar(op.int_attr(attr::value));
      std::fill(t.data.begin(), t.data.end(), normalize(s, d));
      break;
    }
    case ir::SourceOp::Arange: {
      int64_t start = op.int_attr(attr::start);
      for (size_t i = 0; i < t.size(); ++i)
        t.data[i] = int_scalar(start + static_cast<int64_t>(i));
      break;
    }
    }
    set(op.result(), std::move(t));
  }

  void shape(const Op& op, ir::ShapeOp k) {
    const auto& o = op.operands;
    auto result_type = [&](unsigned i = 0) -> const Type& { return op.results[i]->type; };
    switch (k) {
    case ir::ShapeOp::Splat: {
      Tensor r = make(result_type());
      std::fill(r.data.begin(), r.data.end(), get(o[0]).data[0]);
      return set(op.result(), std::move(r));
    }
    case ir::ShapeOp::Broadcast: {
      const Tensor& a = get(o[0]);
      Tensor r = make(result_type());
      auto rs = r.type.shape;
      auto as = strides(a.type.shape);
      auto st = strides(rs);
      for (int64_t i = 0; i < static_cast<int64_t>(r.size()); ++i) {
        int64_t src = 0;
        for (size_t d = 0; d < rs.size(); ++d) {
          int64_t idx = (i / st[d]) % rs[d];
          if (a.type.shape[d] != 1)
            src += idx * as[d];
        }
        r.data[i] = a.data[src];
      }
      return set(op.result(), std::move(r));
    }
    case ir::ShapeOp::ExpandDims:
    case ir::ShapeOp::Reshape:
    case ir::ShapeOp::ConvertLayout: {
      Tensor r{result_type(), get(o[0]).data};
      return set(op.result(), std::move(r));
    }
    case ir::ShapeOp::Trans: {
      const Tensor& a = get(o[0]);
      Tensor r = make(result_type());
      auto order = op.ints_attr(attr::order);
      auto as = strides(a.type.shape);
      auto rs = strides(r.type.shape);
      for (int64_t i = 0; i < static_cast<int64_t>(r.size()); ++i) {
        int64_t src = 0;
        for (size_t d = 0; d < order.size(); ++d)
          src += ((i / rs[d]) % r.type.shape[d]) * as[order[d]];
        r.data[i] = a.data[src];
      }
      return set(op.result(), std::move(r));
    }
    case ir::ShapeOp::Join: {
      const Tensor &a = get(o[0]), &b = get(o[1]);
      Tensor r = make(result_type());
      for (size_t i = 0; i < a.size(); ++i) {
        r.data[2 * i] = a.data[i];
        r.data[2 * i + 1] = b.data[i];
      }
      return set(op.result(), std::move(r));
    }
    case ir::ShapeOp::Split: {
      const Tensor& a = get(o[0]);
      Tensor x = make(result_type(0)), y = make(result_type(1));
      for (size_t i = 0; i < x.size(); ++i) {
        x.data[i] = a.data[2 * i];
        y.data[i] = a.data[2 * i + 1];
      }
      set(op.results[0], std::move(x));
      return set(op.results[1], std::move(y));
    }
    case ir::ShapeOp::Cat: {
      Tensor r{result_type(), get(o[0]).data};
      const auto& b = get(o[1]).data;
      r.data.insert(r.data.end(), b.begin(), b.end());
      return set(op.result(), std::move(r));
    }
    }
  }

  void memory(const Op& op, ir::MemoryOp k) {
    const auto& o = op.operands;
    switch (k) {
    case ir::MemoryOp::AddPtr: {
      const Tensor &p = get(o[0]), &off = get(o[1]);
      Tensor r = make(op.result()->type);
      int64_t size = static_cast<int64_t>(elem_bytes(p.type.elem.element_of_pointer()));
      for (size_t i = 0; i < r.size(); ++i)
        r.data[i] = int_scalar(p.data[i].i + off.data[i].i * size);
      return set(op.result(), std::move(r));
    }
    case ir::MemoryOp::Load: {
      const Tensor& p = get(o[0]);
      const Tensor* mask = o.size() > 1 ? &get(o[1]) : nullptr;
      const Tensor* other = o.size() > 2 ? &get(o[2]) : nullptr;
      Tensor r = make(op.result()->type);
      DType t = r.type.elem;
      for (size_t i = 0; i < r.size(); ++i) {
        if (mask && !mask->data[i].i) {
          r.data[i] = other ? other->data[i] : normalize(int_scalar(0), t);
          if (!other && t.is_float())
            r.data[i] = float_scalar(0.0);
          continue;
        }
        r.data[i] = read(checked(op, p.data[i].i, t, i), t);
      }
      return set(op.result(), std::move(r));
    }
    case ir::MemoryOp::Store: {
      const Tensor &p = get(o[0]), &v = get(o[1]);
      const Tensor* mask = o.size() > 2 ? &get(o[2]) : nullptr;
      DType t = v.type.elem;
      for (size_t i = 0; i < p.size(); ++i)
        if (!mask || mask->data[i].i)
          write(checked(op, p.data[i].i, t, i), t, v.data[i]);
      return;
    }
    case ir::MemoryOp::AtomicRmw: {
      const Tensor &p = get(o[0]), &v = get(o[1]);
      const Tensor* mask = o.size() > 2 ? &get(o[2]) : nullptr;
      Tensor r = make(op.result()->type);
      DType t = r.type.elem;
      const ir::AtomicOp kind = op.enum_attr<ir::AtomicOp>();
      for (size_t i = 0; i < p.size(); ++i) {
        if (mask && !mask->data[i].i) {
          r.data[i] = t.is_float() ? float_scalar(0) : int_scalar(0);
          continue;
        }
        uintptr_t addr = checked(op, p.data[i].i, t, i);
        Scalar old = read(addr, t);
        write(addr, t, atomic_combine(kind, t, old, v.data[i]));
        r.data[i] = old;
      }
      return set(op.result(), std::move(r));
    }
    case ir::MemoryOp::AtomicCas: {
      const Tensor &p = get(o[0]), &c = get(o[1]), &v = get(o[2]);
      const Tensor* mask = o.size() > 3 ? &get(o[3]) : nullptr;
      Tensor r = make(op.result()->type);
      DType t = r.type.elem;
      for (size_t i = 0; i < p.size(); ++i) {
        if (mask && !mask->data[i].i) { // masked-off lanes touch no memory, as in atomic_rmw
          r.data[i] = t.is_float() ? float_scalar(0) : int_scalar(0);
          continue;
        }
        uintptr_t addr = checked(op, p.data[i].i, t, i);
        Scalar old = read(addr, t);
        if (to_bits(old, t) == to_bits(c.data[i], t))
          write(addr, t, v.data[i]);
        r.data[i] = old;
      }
      return set(op.result(), std::move(r));
    }
    }
  }

  Scalar atomic_combine(ir::AtomicOp k, DType t, Scalar old, Scalar v) {
    switch (k) {
    case ir::AtomicOp::Add:
      return binary(ir::BinaryOp::Add, t, old, v);
    case ir::AtomicOp::Max:
      return binary(ir::BinaryOp::Max, t, old, v);
    case ir::AtomicOp::Min:
      return binary(ir::BinaryOp::Min, t, old, v);
    case ir::AtomicOp::And:
      return binary(ir::BinaryOp::And, t, old, v);
    case ir::AtomicOp::Or:
      return binary(ir::BinaryOp::Or, t, old, v);
    case ir::AtomicOp::Xor:
      return binary(ir::BinaryOp::Xor, t, old, v);
    case ir::AtomicOp::Xchg:
      return v;
    }
    return v;
  }

  void control(const Op& op, ir::ControlOp k) {
    const auto& o = op.operands;
    switch (k) {
    case ir::ControlOp::For: {
      int64_t lb = get(o[0]).data[0].i, ub = get(o[1]).data[0].i, step = get(o[2]).data[0].i;
      if (step == 0)
        fail(op, "tl::range step is zero");
      std::vector<Tensor> carried;
      for (size_t i = 3; i < o.size(); ++i)
        carried.push_back(get(o[i]));
      DType it = get(o[0]).type.elem;
      int64_t trip = 0;
      for (int64_t iv = lb; step > 0 ? iv < ub : iv > ub; iv += step) {
        check_time(op, trip++);
        std::vector<Tensor> args;
        args.push_back(Tensor{Type(it), {int_scalar(iv)}});
        for (auto& c : carried)
          args.push_back(std::move(c));
        carried = region(op.body(), std::move(args));
      }
      for (size_t i = 0; i < op.results.size(); ++i)
        set(op.results[i], std::move(carried[i]));
      return;
    }
    case ir::ControlOp::If: {
      auto out = block(op.body(get(o[0]).data[0].i ? 0 : 1));
      for (size_t i = 0; i < op.results.size(); ++i)
        set(op.results[i], std::move(out[i]));
      return;
    }
    case ir::ControlOp::While: {
      std::vector<Tensor> state;
      for (Value* v : o)
        state.push_back(get(v));
      for (int64_t trip = 0;; ++trip) {
        check_time(op, trip);
        auto c = region(op.body(0), std::move(state));
        bool go = c[0].data[0].i != 0;
        std::vector<Tensor> passed(std::make_move_iterator(c.begin() + 1),
                                   std::make_move_iterator(c.end()));
        if (!go) {
          for (size_t i = 0; i < op.results.size(); ++i)
            set(op.results[i], std::move(passed[i]));
          return;
        }
        state = region(op.body(1), std::move(passed));
      }
    }
    }
  }

  void debug(const Op& op, ir::DebugOp k) {
    const auto& o = op.operands;
    switch (k) {
    case ir::DebugOp::Assume: {
      for (const auto& s : get(o[0]).data)
        if (!s.i)
          fail(op, "tl::assume's condition is false");
      return;
    }
    case ir::DebugOp::Assert: {
      const Tensor& c = get(o[0]);
      for (size_t i = 0; i < c.size(); ++i)
        if (!c.data[i].i)
          fail(op,
               fmt::format("device_assert failed at lane {}: {}", i, op.str_attr(attr::message)));
      return;
    }
    case ir::DebugOp::Print: {
      std::string line =
          fmt::format("pid ({}, {}, {}) {}", pid_[0], pid_[1], pid_[2], op.str_attr(attr::prefix));
      for (Value* v : o) {
        const Tensor& t = get(v);
        std::vector<std::string> items;
        for (const auto& s : t.data)
          items.push_back(t.type.elem.is_float() ? fmt::format("{}", s.f) : fmt::format("{}", s.i));
        line += fmt::format(" [{}]", fmt::join(items, ", "));
      }
      std::fputs((line + "\n").c_str(), stdout);
      return;
    }
    case ir::DebugOp::Barrier:
      return;
    }
  }

  // Applies a combine region to two scalar tuples.
  std::vector<Scalar> combine(const Op& op, const std::vector<Scalar>& a,
                              const std::vector<Scalar>& b) {
    const ir::Block& body = op.body();
    size_t n = a.size();
    std::vector<Tensor> args;
    for (size_t i = 0; i < 2 * n; ++i)
      args.push_back(Tensor{body.args[i]->type, {i < n ? a[i] : b[i - n]}});
    auto out = region(body, std::move(args));
    std::vector<Scalar> r;
    for (auto& t : out)
      r.push_back(t.data[0]);
    return r;
  }

  void collective(const Op& op) {
    const auto& o = op.operands;
    size_t n = o.size();
    const auto& shape = get(o[0]).type.shape;
    int64_t axis = op.int_attr(attr::axis);
    int64_t len = shape[axis], inner = 1, outer = 1;
    for (size_t d = axis + 1; d < shape.size(); ++d)
      inner *= shape[d];
    for (int64_t d = 0; d < axis; ++d)
      outer *= shape[d];
    std::vector<Tensor> results;
    for (size_t k = 0; k < n; ++k)
      results.push_back(make(op.results[k]->type));
    bool reverse = op.kind == OpKind::Scan && op.int_attr(attr::reverse, 0);
    // A scan combines in order; a reduction in the order of ir/reduce_order.hpp: partial
    // results over every P-th element, then a halving tree (P = 1: in order).
    const int64_t parts = op.kind == OpKind::Reduce ? ir::reduce_partials(len, outer * inner) : 1;
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t c = 0; c < inner; ++c) {
        std::vector<std::vector<Scalar>> acc(parts);
        for (int64_t j = 0; j < len; ++j) {
          int64_t jj = reverse ? len - 1 - j : j;
          int64_t src = (a * len + jj) * inner + c;
          std::vector<Scalar> x;
          for (size_t k = 0; k < n; ++k)
            x.push_back(get(o[k]).data[src]);
          auto& p = acc[j % parts];
          p = j < parts ? x : combine(op, p, x);
          if (op.kind == OpKind::Scan)
            for (size_t k = 0; k < n; ++k)
              results[k].data[src] = p[k];
        }
        for (int64_t h = parts / 2; h >= 1; h /= 2)
          for (int64_t k = 0; k < h; ++k)
            acc[k] = combine(op, acc[k], acc[k + h]);
        if (op.kind == OpKind::Reduce)
          for (size_t k = 0; k < n; ++k)
            results[k].data[a * inner + c] = acc[0][k];
      }
    for (size_t k = 0; k < n; ++k)
      set(op.results[k], std::move(results[k]));
  }

  // Values outside [0, num_bins) are not counted (u64 values above 2^63 read as negative).
  void histogram(const Op& op) {
    const Tensor& x = get(op.operand(0));
    const Tensor* mask = op.operands.size() > 1 ? &get(op.operand(1)) : nullptr;
    Tensor r = make(op.result()->type);
    for (Scalar& s : r.data)
      s = int_scalar(0);
    const int64_t bins = op.int_attr(attr::num_bins);
    for (size_t i = 0; i < x.size(); ++i)
      if ((!mask || mask->data[i].i) && x.data[i].i >= 0 && x.data[i].i < bins)
        ++r.data[static_cast<size_t>(x.data[i].i)].i;
    set(op.result(), std::move(r));
  }

  void dot(const Op& op) {
    const Tensor &a = get(op.operand(0)), &b = get(op.operand(1)), &c = get(op.operand(2));
    Tensor r = c;
    int rank = a.type.rank();
    int64_t batch = rank == 3 ? a.type.shape[0] : 1;
    int64_t m = a.type.shape[rank - 2], k = a.type.shape[rank - 1], n = b.type.shape[rank - 1];
    DType in = a.type.elem, acc = c.type.elem;
    bool tf32 =
        in.kind == ScalarKind::F32 &&
        op.enum_attr<ir::InputPrecision>(ir::InputPrecision::Ieee) != ir::InputPrecision::Ieee;
    auto round_tf32 = [](double x) {
      // tf32 keeps 10 mantissa bits: round the f32 to nearest even at bit 13.
      uint32_t u = std::bit_cast<uint32_t>(static_cast<float>(x));
      if ((u & 0x7f800000u) != 0x7f800000u)
        u = (u + 0x0fffu + ((u >> 13) & 1u)) & ~0x1fffu;
      return static_cast<double>(std::bit_cast<float>(u));
    };
    for (int64_t bt = 0; bt < batch; ++bt)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          Scalar& out = r.data[(bt * m + i) * n + j];
          if (acc.is_float()) {
            // Products are exact in f32 for f16/bf16 inputs; sums round per step in the
            // accumulator type, in k order.
            double s = out.f;
            for (int64_t kk = 0; kk < k; ++kk) {
              double x = a.data[(bt * m + i) * k + kk].f, y = b.data[(bt * k + kk) * n + j].f;
              if (tf32) {
                x = round_tf32(x);
                y = round_tf32(y);
              }
              if (acc.kind == ScalarKind::F32)
                s = std::fmaf(static_cast<float>(x), static_cast<float>(y), static_cast<float>(s));
              else
                s = normalize(float_scalar(std::fma(x, y, s)), acc).f;
            }
            out = float_scalar(s);
          } else {
            int64_t s = out.i;
            for (int64_t kk = 0; kk < k; ++kk)
              s += a.data[(bt * m + i) * k + kk].i * b.data[(bt * k + kk) * n + j].i;
            out = normalize(int_scalar(s), acc);
          }
        }
    set(op.result(), std::move(r));
  }

  const ir::Function& f_;
  const Allocations& allocs_;
  LaunchGrid grid_;
  std::span<const ArgSlot> args_;
  std::optional<interp::TimeLimit> limit_;
  int64_t pid_[3] = {0, 0, 0};
  std::unordered_map<const Value*, Tensor> env_;
};

class InterpretedKernel : public CompiledKernel {
public:
  InterpretedKernel(std::shared_ptr<const ir::Function> f, const Allocations& a)
      : f_(std::move(f)), allocs_(a) {}
  void launch(const LaunchGrid& grid, std::span<const ArgSlot> args, void*) override {
    if (args.size() != f_->args().size())
      throw Error(fmt::format("kernel '{}': {} arguments for {} parameters", f_->name, args.size(),
                              f_->args().size()));
    Program p(*f_, allocs_, grid, args, interp::TimeLimit::from_env());
    for (int64_t z = 0; z < grid.z; ++z)
      for (int64_t y = 0; y < grid.y; ++y)
        for (int64_t x = 0; x < grid.x; ++x)
          p.run(x, y, z);
  }
  std::string artifact(std::string_view stage) const override {
    return stage == "ir" ? ir::print(*f_) : std::string();
  }

private:
  std::shared_ptr<const ir::Function> f_;
  const Allocations& allocs_;
};

class InterpreterBackend : public Backend {
public:
  std::string_view name() const override { return "interpreter"; }
  std::string target() const override { return "interpreter"; }
  bool host_memory() const override { return true; }
  void* alloc(size_t bytes) override {
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p)
      throw Error(fmt::format("interpreter: cannot allocate {} bytes", bytes));
    allocs_.add(p, bytes);
    return p;
  }
  void free(void* p) override {
    allocs_.remove(p);
    std::free(p);
  }
  // Adopted memory counts as allocated while adopted, unless it is ours already (a buffer of
  // this device that went out through DLPack and came back).
  void adopt(void* p, size_t bytes) override {
    if (!allocs_.contains(reinterpret_cast<uintptr_t>(p), bytes))
      allocs_.add_adopted(p, bytes);
  }
  void release_adopted(void* p) override { allocs_.remove_adopted(p); }
  void copy_to_device(void* dst, const void* src, size_t n) override { std::memcpy(dst, src, n); }
  void copy_to_host(void* dst, const void* src, size_t n) override { std::memcpy(dst, src, n); }
  void copy_device_to_device(void* dst, const void* src, size_t n) override {
    std::memmove(dst, src, n);
  }
  std::unique_ptr<CompiledKernel> compile(std::shared_ptr<const ir::Function> f,
                                          const CompileOptions&) override {
    return std::make_unique<InterpretedKernel>(std::move(f), allocs_);
  }

private:
  Allocations allocs_;
};

} // namespace

BackendFactory interpreter_backend() {
  return {"interpreter", 0, [](int index, std::string* why) -> std::unique_ptr<Backend> {
            if (index != 0) {
              *why = "there is one interpreter device, interpreter:0";
              return nullptr;
            }
            return std::make_unique<InterpreterBackend>();
          }};
}

} // namespace tritium
