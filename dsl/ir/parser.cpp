#include <tritium/error.hpp>
#include <tritium/ir/builder.hpp>
#include <tritium/ir/printer.hpp>

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <optional>
#include <unordered_map>

namespace tritium::ir {
namespace {

// A bare word as the value of an enum attribute (attrs.hpp) under its key.
template <class... E>
bool enum_value(std::string_view key, std::string_view word, AttrValue& out) {
  bool found = false;
  auto one = [&]<class T>(T*) {
    T v;
    if (!found && key == EnumAttr<T>::key && parse_enum(word, v)) {
      out = v;
      found = true;
    }
  };
  (one(static_cast<E*>(nullptr)), ...);
  return found;
}

template <class... E>
std::string enum_choices(std::string_view key) {
  std::string s;
  ((key == EnumAttr<E>::key ? (s = enum_names<E>(), 0) : 0), ...);
  return s;
}

#define TRITIUM_ENUM_ATTRS_                                                                        \
  CmpPred, AtomicOp, MemSem, MemScope, CacheModifier, EvictionPolicy, InputPrecision

class Parser {
public:
  Parser(std::string_view text, const LayoutParser& layouts, std::string source)
      : s_(text), layouts_(layouts), source_(std::move(source)) {}

  std::unique_ptr<Function> run() {
    auto f = std::make_unique<Function>();
    func_ = f.get();
    Builder b(*f, f->entry());
    builder_ = &b;
    skip_ws();
    if (s_.substr(pos_, 6) == "module") {
      keyword("module");
      f->module = module_attrs();
    }
    keyword("func");
    expect('@');
    f->name = ident();
    expect('(');
    if (!peek(')')) {
      do {
        std::string n = value_name();
        expect(':');
        Type t = type();
        Value* v = b.add_block_arg(f->entry(), t);
        define(n, v);
        ArgInfo info;
        if (peek('{')) {
          Attrs a = attrs();
          if (auto it = a.find(attr::name); it != a.end())
            info.name = arg_attr<std::string>(n, *it);
          if (auto it = a.find(attr::div); it != a.end())
            info.divisibility = arg_attr<int64_t>(n, *it);
          if (auto it = a.find(attr::range32); it != a.end())
            info.range32 = arg_attr<int64_t>(n, *it) != 0;
          if (auto it = a.find(attr::const_); it != a.end()) {
            info.is_constant = true;
            info.constant = arg_attr<int64_t>(n, *it);
          }
        }
        f->arg_info.push_back(info);
      } while (accept(','));
    }
    expect(')');
    expect('{');
    while (!peek('}'))
      op();
    expect('}');
    skip_ws();
    if (pos_ != s_.size())
      fail("text after the end of the function");
    return f;
  }

private:
  ModuleAttrs module_attrs() {
    ModuleAttrs m;
    for (const auto& a : attrs()) {
      const std::string& k = a.first;
      if (k == attr::target || k == attr::matrix_unit) {
        (k == attr::target ? m.target : m.matrix_unit) = module_attr<std::string>(a);
      } else if (k == attr::num_warps || k == attr::num_stages || k == attr::warp_size) {
        int64_t v = module_attr<int64_t>(a);
        if (v < 1 || v > (1 << 16))
          fail(fmt::format("module: {} = {} is not a count from 1 to 65536", k, v));
        (k == attr::num_warps    ? m.num_warps
         : k == attr::num_stages ? m.num_stages
                                 : m.warp_size) = v;
      } else {
        fail(fmt::format("module: unknown attribute '{}' (target, num_warps, num_stages, "
                         "warp_size, matrix_unit)",
                         k));
      }
    }
    return m;
  }
  template <class T>
  T module_attr(const Attrs::value_type& attr) {
    if (const T* v = std::get_if<T>(&attr.second))
      return *v;
    fail(fmt::format("module: attribute '{}' has the wrong kind of value", attr.first));
  }

  template <class T>
  T arg_attr(const std::string& arg, const Attrs::value_type& attr) {
    if (const T* v = std::get_if<T>(&attr.second))
      return *v;
    fail(fmt::format("argument %{}: attribute '{}' has the wrong kind of value", arg, attr.first));
  }

  // The line of text position `pos`, counted on from the last one asked (ops come in order).
  uint32_t line_at(size_t pos) {
    if (pos < counted_pos_) {
      counted_pos_ = 0;
      counted_line_ = 1;
    }
    for (; counted_pos_ < pos && counted_pos_ < s_.size(); ++counted_pos_)
      counted_line_ += s_[counted_pos_] == '\n';
    return counted_line_;
  }

  [[noreturn]] void fail(const std::string& what) {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw Error(fmt::format("IR parse error at {}:{}: {}", line, col, what));
  }

  void skip_ws() {
    while (pos_ < s_.size()) {
      if (std::isspace(static_cast<unsigned char>(s_[pos_]))) {
        ++pos_;
      } else if (s_.substr(pos_, 2) == "//") {
        while (pos_ < s_.size() && s_[pos_] != '\n')
          ++pos_;
      } else {
        break;
      }
    }
  }
  bool peek(char c) {
    skip_ws();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  bool accept(char c) {
    if (!peek(c))
      return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!accept(c))
      fail(fmt::format("expected '{}'", c));
  }
  std::string ident() {
    skip_ws();
    size_t start = pos_;
    while (pos_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
      ++pos_;
    if (start == pos_)
      fail("expected a name");
    return std::string(s_.substr(start, pos_ - start));
  }
  void keyword(std::string_view k) {
    if (ident() != k)
      fail(fmt::format("expected '{}'", k));
  }
  std::string value_name() {
    expect('%');
    return ident();
  }
  void define(const std::string& n, Value* v) {
    if (!values_.emplace(n, v).second)
      fail(fmt::format("value %{} is defined twice", n));
  }
  Value* use(const std::string& n) {
    auto it = values_.find(n);
    if (it == values_.end())
      fail(fmt::format("value %{} is used before it is defined", n));
    return it->second;
  }

  int64_t integer() {
    skip_ws();
    size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-')
      ++pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_])))
      ++pos_;
    int64_t v = 0;
    auto r = std::from_chars(s_.data() + start, s_.data() + pos_, v);
    if (r.ec != std::errc() || start == pos_)
      fail("expected an integer");
    return v;
  }

  Type type() {
    skip_ws();
    if (s_.substr(pos_, 7) != "tensor<")
      return Type(dtype());
    pos_ += 7;
    std::vector<int64_t> shape;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      shape.push_back(integer());
      if (pos_ >= s_.size() || s_[pos_] != 'x')
        fail("expected 'x' after a dimension");
      ++pos_;
    }
    Type t(dtype(), shape);
    if (accept(','))
      t.layout = layout();
    expect('>');
    return t;
  }

  // '#' up to its matching '>' (brackets nest), handed to the layout hook.
  LayoutPtr layout() {
    skip_ws();
    size_t start = pos_;
    if (!peek('#'))
      fail("expected a layout ('#…')");
    int depth = 0;
    for (; pos_ < s_.size(); ++pos_) {
      char c = s_[pos_];
      if (c == '\n' || (depth == 0 && c == ','))
        break;
      if (c == '<' || c == '[' || c == '(') {
        ++depth;
      } else if (c == '>' || c == ']' || c == ')') {
        if (depth == 0) // the type's own '>': a layout without brackets
          break;
        if (--depth == 0 && c == '>') {
          ++pos_;
          break;
        }
      }
    }
    if (depth != 0)
      fail("unterminated layout");
    std::string_view text = s_.substr(start, pos_ - start);
    if (!layouts_) {
      pos_ = start;
      fail("a type with a layout, but no layout parser (ir::parse(text, gpu::parse_layout))");
    }
    try {
      LayoutPtr l = layouts_(text);
      if (!l)
        throw Error("not a layout");
      return l;
    } catch (const Error& e) {
      pos_ = start;
      fail(fmt::format("bad layout '{}': {}", text, e.what()));
    }
  }

  DType dtype() {
    std::string n = ident();
    if (n == "ptr") {
      expect('<');
      n += "<" + ident() + ">";
      expect('>');
    }
    DType d;
    if (!parse_dtype(n, d))
      fail(fmt::format("unknown element type '{}'", n));
    return d;
  }

  AttrValue attr_value(std::string_view key) {
    skip_ws();
    if (accept('"')) {
      std::string out;
      while (pos_ < s_.size() && s_[pos_] != '"') {
        char c = s_[pos_++];
        if (c == '\\' && pos_ < s_.size()) {
          c = s_[pos_++];
          if (c == 'n')
            c = '\n';
        }
        out += c;
      }
      expect('"');
      return out;
    }
    if (accept('[')) {
      std::vector<int64_t> v;
      if (!peek(']'))
        do
          v.push_back(integer());
        while (accept(','));
      expect(']');
      return v;
    }
    size_t start = pos_;
    while (pos_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '-' ||
            s_[pos_] == '+' || s_[pos_] == '.' || s_[pos_] == '_'))
      ++pos_;
    std::string tok(s_.substr(start, pos_ - start));
    if (tok.empty())
      fail("expected an attribute value");
    if (tok == "nan")
      return std::numeric_limits<double>::quiet_NaN();
    if (tok == "inf")
      return std::numeric_limits<double>::infinity();
    if (tok == "-inf")
      return -std::numeric_limits<double>::infinity();
    if (std::isalpha(static_cast<unsigned char>(tok[0]))) {
      AttrValue v;
      if (enum_value<TRITIUM_ENUM_ATTRS_>(key, tok, v))
        return v;
      std::string choices = enum_choices<TRITIUM_ENUM_ATTRS_>(key);
      pos_ = start;
      fail(choices.empty()
               ? fmt::format("attribute '{}' takes no word like '{}'", key, tok)
               : fmt::format("'{}' is no value of attribute '{}' (one of: {})", tok, key, choices));
    }
    if (tok.find_first_of(".e") != std::string::npos) {
      char* end = nullptr;
      double d = std::strtod(tok.c_str(), &end);
      if (end != tok.c_str() + tok.size())
        fail(fmt::format("bad number '{}'", tok));
      return d;
    }
    int64_t v = 0;
    auto r = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    if (r.ec != std::errc() || r.ptr != tok.data() + tok.size())
      fail(fmt::format("bad number '{}'", tok));
    return v;
  }

  Attrs attrs() {
    Attrs a;
    expect('{');
    if (!peek('}'))
      do {
        std::string k = ident();
        expect('=');
        a[k] = attr_value(k);
      } while (accept(','));
    expect('}');
    return a;
  }

  void op() {
    skip_ws();
    // The op's line, for the verifier's and the lowering's messages ("kernel.tir:12: ..."),
    // unless the text names where the op came from (a dump's `loc("file.cpp":12)`).
    builder_->set_loc(SourceLoc{source_, line_at(pos_)});
    std::vector<std::string> result_names;
    if (peek('%')) {
      do
        result_names.push_back(value_name());
      while (accept(','));
      expect('=');
    }
    std::string n = ident();
    OpKind kind;
    if (!op_kind_from_name(n, kind))
      fail(fmt::format("unknown op '{}'", n));
    expect('(');
    std::vector<Value*> operands;
    if (!peek(')'))
      do
        operands.push_back(use(value_name()));
      while (accept(','));
    expect(')');
    Attrs a;
    // An attribute dictionary starts "{name =", a region "{\n^(".
    skip_ws();
    if (peek('{') && !region_follows())
      a = attrs();
    std::vector<Type> types;
    if (!result_names.empty()) {
      expect(':');
      do
        types.push_back(type());
      while (accept(','));
      if (types.size() != result_names.size())
        fail(fmt::format("{} results but {} types", result_names.size(), types.size()));
    }
    if (std::optional<SourceLoc> at = location())
      builder_->set_loc(*at);
    Op& created = builder_->create(kind, operands, types, a);
    for (size_t i = 0; i < result_names.size(); ++i)
      define(result_names[i], created.results[i]);
    Block& outer = builder_->block();
    while (peek('{') && region_follows()) {
      // Bounded so that a deeply nested text is an error, not a stack overflow here or in the
      // recursive passes after.
      if (depth_ >= kMaxNesting)
        fail(fmt::format("regions nested more than {} deep", kMaxNesting));
      ++depth_;
      expect('{');
      created.regions.push_back(std::make_unique<Region>());
      Region& r = *created.regions.back();
      r.parent = &created;
      r.block->parent = &r;
      expect('^');
      expect('(');
      if (!peek(')'))
        do {
          std::string an = value_name();
          expect(':');
          define(an, builder_->add_block_arg(*r.block, type()));
        } while (accept(','));
      expect(')');
      expect(':');
      builder_->set_block(*r.block);
      while (!peek('}'))
        op();
      expect('}');
      builder_->set_block(outer);
      --depth_;
    }
  }

  // `loc("file":line)`, as ir::print_with_locations writes it after an op's types.
  std::optional<SourceLoc> location() {
    skip_ws();
    if (s_.substr(pos_, 4) != "loc(")
      return std::nullopt;
    pos_ += 4;
    skip_ws();
    if (!peek('"'))
      fail("expected a quoted file name in loc(...)");
    SourceLoc at;
    at.file = std::get<std::string>(attr_value("loc"));
    expect(':');
    skip_ws();
    size_t start = pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_])))
      ++pos_;
    const std::string_view digits = s_.substr(start, pos_ - start);
    auto r = std::from_chars(digits.data(), digits.data() + digits.size(), at.line);
    if (digits.empty() || r.ec != std::errc())
      fail("expected a line number in loc(...)");
    expect(')');
    return at;
  }

  bool region_follows() {
    size_t save = pos_;
    bool r = accept('{') && peek('^');
    pos_ = save;
    return r;
  }

  static constexpr int kMaxNesting = 64;
  std::string_view s_;
  const LayoutParser& layouts_;
  std::string source_;
  size_t pos_ = 0;
  size_t counted_pos_ = 0;
  uint32_t counted_line_ = 1;
  int depth_ = 0;
  Function* func_ = nullptr;
  Builder* builder_ = nullptr;
  std::unordered_map<std::string, Value*> values_;
};

} // namespace

std::unique_ptr<Function> parse(std::string_view text, const LayoutParser& parse_layout,
                                std::string source) {
  return Parser(text, parse_layout, std::move(source)).run();
}

} // namespace tritium::ir
