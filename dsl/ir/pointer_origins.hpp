// Which kernel argument each pointer derives from, for TRITIUM_CHECK to check an access
// against that argument's extent.
#pragma once

#include <tritium/ir/ir.hpp>

#include <unordered_map>

namespace tritium::ir {

// Which argument a pointer value derives from: a lattice of "not yet known" (kPending), one
// argument's index, or "none or several" (kNone), solved by iterating to a fixed point so that
// loop-carried pointers (advanced by addptr every trip) keep their argument.
class Origins {
public:
  static constexpr int kPending = -2;
  static constexpr int kNone = -1;

private:
  static int merge(int a, int b) {
    if (a == kPending)
      return b;
    if (b == kPending || a == b)
      return a;
    return kNone;
  }

public:
  explicit Origins(const Function& f) {
    for (const Value* a : f.args())
      if (a->type.elem.is_ptr())
        of_[a] = static_cast<int>(a->index);
    do {
      changed_ = false;
      visit(f.entry());
    } while (changed_);
  }

  // `copy` (a value of a copied op) derives from what `v` derives from.
  void alias(const Value* copy, const Value* v) { of_[copy] = of(v); }

  int of(const Value* v) const {
    auto it = of_.find(v);
    return it == of_.end() ? kPending : it->second;
  }

private:
  void set(const Value* v, int o) {
    if (!v->type.elem.is_ptr())
      return;
    int& slot = of_.try_emplace(v, kPending).first->second;
    int merged = merge(slot, o);
    if (merged != slot) {
      slot = merged;
      changed_ = true;
    }
  }

  void visit(const Block& b) {
    for (const auto& op : b.ops) {
      transfer(*op);
      for (const auto& r : op->regions)
        visit(*r->block);
    }
  }

  void transfer(const Op& op) {
    const auto& o = op.operands;
    switch (op.kind) {
    case OpKind::AddPtr:
    case OpKind::Splat:
    case OpKind::Broadcast:
    case OpKind::ExpandDims:
    case OpKind::Reshape:
    case OpKind::Trans:
    case OpKind::ConvertLayout:
    case OpKind::Hint:
    case OpKind::Bitcast:
    case OpKind::Split:
      for (const Value* r : op.results)
        set(r, of(o[0]));
      return;
    case OpKind::Join:
    case OpKind::Cat:
      set(op.result(), merge(of(o[0]), of(o[1])));
      return;
    case OpKind::Select:
      set(op.result(), merge(of(o[1]), of(o[2])));
      return;
    case OpKind::For: {
      const Block& body = op.body();
      const Op* yield = body.terminator();
      for (size_t k = 0; k < op.results.size(); ++k) {
        int m = merge(of(o[3 + k]), of(yield->operand(k)));
        set(body.args[k + 1], m);
        set(op.result(k), m);
      }
      return;
    }
    case OpKind::If:
      for (size_t k = 0; k < op.results.size(); ++k)
        set(op.result(k), merge(of(op.body(0).terminator()->operand(k)),
                                of(op.body(1).terminator()->operand(k))));
      return;
    case OpKind::While: {
      const Op* cond = op.body(0).terminator();
      const Op* yield = op.body(1).terminator();
      for (size_t k = 0; k < o.size(); ++k)
        set(op.body(0).args[k], merge(of(o[k]), of(yield->operand(k))));
      for (size_t k = 0; k < op.results.size(); ++k) {
        set(op.body(1).args[k], of(cond->operand(k + 1)));
        set(op.result(k), of(cond->operand(k + 1)));
      }
      return;
    }
    default:
      // A pointer loaded from memory, made from an integer, or returned by an atomic.
      for (const Value* r : op.results)
        set(r, kNone);
      return;
    }
  }

  std::unordered_map<const Value*, int> of_;
  bool changed_ = false;
};

} // namespace tritium::ir
