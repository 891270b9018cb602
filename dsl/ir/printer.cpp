#include <tritium/ir/printer.hpp>

#include <fmt/format.h>

#include <cmath>
#include <type_traits>
#include <unordered_map>
#include <utility>

namespace tritium::ir {
namespace {

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

struct AttrPrinter {
  std::string operator()(int64_t i) const { return fmt::format("{}", i); }
  std::string operator()(double d) const {
    if (std::isnan(d))
      return "nan";
    if (std::isinf(d))
      return d > 0 ? "inf" : "-inf";
    std::string s = fmt::format("{}", d);
    if (s.find_first_of(".e") == std::string::npos)
      s += ".0";
    return s;
  }
  std::string operator()(const std::string& s) const { return quote(s); }
  std::string operator()(const std::vector<int64_t>& v) const {
    return fmt::format("[{}]", fmt::join(v, ", "));
  }
  template <class E>
  requires std::is_enum_v<E> std::string operator()(E e) const { return std::string(enum_name(e)); }
};

class Printer {
public:
  explicit Printer(const std::function<std::string(const Op&)>* annotate, bool locations = false)
      : annotate_(annotate), locations_(locations) {}

  std::string run(const Function& f) {
    if (!f.module.empty()) {
      Attrs m;
      const ModuleAttrs& a = f.module;
      if (!a.target.empty())
        m[attr::target] = a.target;
      using Number = std::pair<const char*, int64_t>;
      for (auto [key, v] :
           {Number{attr::num_warps, a.num_warps}, Number{attr::num_stages, a.num_stages},
            Number{attr::warp_size, a.warp_size}})
        if (v)
          m[key] = v;
      if (!a.matrix_unit.empty())
        m[attr::matrix_unit] = a.matrix_unit;
      out_ += "module";
      print_attrs(m);
      out_ += "\n";
    }
    out_ += fmt::format("func @{}(", f.name);
    const auto& args = f.args();
    for (size_t i = 0; i < args.size(); ++i) {
      if (i)
        out_ += ", ";
      out_ += fmt::format("{}: {}", name(args[i]), to_string(args[i]->type));
      Attrs a;
      const ArgInfo& info = f.arg_info.at(i);
      if (!info.name.empty())
        a[attr::name] = info.name;
      if (info.divisibility != 1)
        a[attr::div] = info.divisibility;
      if (info.is_constant)
        a[attr::const_] = info.constant;
      if (info.range32)
        a[attr::range32] = int64_t{1};
      print_attrs(a);
    }
    out_ += ") {\n";
    print_ops(f.entry(), 1);
    out_ += "}\n";
    return std::move(out_);
  }

private:
  std::string name(const Value* v) {
    auto [it, inserted] = names_.try_emplace(v, names_.size());
    return fmt::format("%{}", it->second);
  }

  void print_attrs(const Attrs& attrs) {
    if (attrs.empty())
      return;
    out_ += " {";
    bool first = true;
    for (const auto& [k, v] : attrs) {
      out_ += fmt::format("{}{} = {}", first ? "" : ", ", k, print_attr(v));
      first = false;
    }
    out_ += "}";
  }

  void print_ops(const Block& b, int depth) {
    for (const auto& op : b.ops)
      print_op(*op, depth);
  }

  void print_op(const Op& op, int depth) {
    std::string indent(2 * depth, ' ');
    out_ += indent;
    if (!op.results.empty()) {
      for (size_t i = 0; i < op.results.size(); ++i)
        out_ += (i ? ", " : "") + name(op.results[i]);
      out_ += " = ";
    }
    out_ += fmt::format("{}(", op_name(op.kind));
    for (size_t i = 0; i < op.operands.size(); ++i)
      out_ += (i ? ", " : "") + name(op.operands[i]);
    out_ += ")";
    print_attrs(op.attrs);
    if (!op.results.empty()) {
      out_ += " : ";
      for (size_t i = 0; i < op.results.size(); ++i)
        out_ += (i ? ", " : "") + to_string(op.results[i]->type);
    }
    if (locations_ && !op.loc.file.empty())
      out_ += fmt::format(" loc({}:{})", quote(op.loc.file), op.loc.line);
    // A note ends the op's first line: after the opening brace of its first region, if any.
    std::string note;
    if (annotate_ && *annotate_)
      if (note = (*annotate_)(op); !note.empty())
        note = " // " + note;
    if (op.regions.empty())
      out_ += note;
    for (const auto& r : op.regions) {
      out_ += " {" + std::exchange(note, "") + "\n" + indent + "^(";
      const Block& b = *r->block;
      for (size_t i = 0; i < b.args.size(); ++i)
        out_ += fmt::format("{}{}: {}", i ? ", " : "", name(b.args[i]), to_string(b.args[i]->type));
      out_ += "):\n";
      print_ops(b, depth + 1);
      out_ += indent + "}";
    }
    out_ += "\n";
  }

  const std::function<std::string(const Op&)>* annotate_;
  bool locations_;
  std::string out_;
  std::unordered_map<const Value*, size_t> names_;
};

} // namespace

std::string print_attr(const AttrValue& v) {
  return std::visit(AttrPrinter{}, v);
}

std::string print(const Function& f) {
  return Printer(nullptr).run(f);
}

std::string print_with_locations(const Function& f) {
  return Printer(nullptr, true).run(f);
}

std::string print(const Function& f, const std::function<std::string(const Op&)>& annotate) {
  return Printer(&annotate).run(f);
}

} // namespace tritium::ir
