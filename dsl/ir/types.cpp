#include <tritium/ir/types.hpp>

#include <fmt/format.h>

#include <array>
#include <utility>

namespace tritium::ir {
namespace {

struct KindInfo {
  ScalarKind kind;
  std::string_view name;
  int bits;
};

constexpr std::array<KindInfo, kNumScalarKinds> kinds{{
#define TRITIUM_DTYPE(Kind, ir_name, bits, family, cpp_type, dlpack_code)                          \
  {ScalarKind::Kind, ir_name, bits},
#include <tritium/ir/dtypes.def>
}};

const KindInfo& info(ScalarKind k) {
  return kinds[static_cast<size_t>(k)];
}

} // namespace

int DType::bits() const {
  return info(kind).bits;
}

DType DType::element_of_pointer() const {
  return DType(pointee);
}

std::string to_string(DType t) {
  if (t.is_ptr())
    return fmt::format("ptr<{}>", info(t.pointee).name);
  return std::string(info(t.kind).name);
}

bool parse_dtype(std::string_view s, DType& out) {
  if (s.starts_with("ptr<") && s.ends_with(">")) {
    DType inner;
    if (!parse_dtype(s.substr(4, s.size() - 5), inner) || inner.is_ptr())
      return false;
    out = DType::pointer_to(inner.kind);
    return true;
  }
  for (const auto& k : kinds)
    if (k.name == s && k.kind != ScalarKind::Ptr) {
      out = DType(k.kind);
      return true;
    }
  return false;
}

int64_t Type::numel() const {
  int64_t n = 1;
  for (auto d : shape)
    n *= d;
  return n;
}

bool same_layout(const LayoutPtr& a, const LayoutPtr& b) {
  if (!a || !b)
    return !a && !b;
  return a == b || a->equals(*b);
}

bool operator==(const Type& a, const Type& b) {
  return a.elem == b.elem && a.shape == b.shape && same_layout(a.layout, b.layout);
}

std::string shape_string(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

std::string to_string(const Type& t) {
  if (t.is_scalar() && !t.layout)
    return to_string(t.elem);
  std::string s = "tensor<";
  for (auto d : t.shape)
    s += fmt::format("{}x", d);
  s += to_string(t.elem);
  if (t.layout)
    s += ", " + t.layout->str();
  return s + ">";
}

} // namespace tritium::ir
