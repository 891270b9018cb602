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

constexpr std::array<KindInfo, 14> kinds{{
    {ScalarKind::I1, "i1", 1},
    {ScalarKind::I8, "i8", 8},
    {ScalarKind::I16, "i16", 16},
    {ScalarKind::I32, "i32", 32},
    {ScalarKind::I64, "i64", 64},
    {ScalarKind::U8, "u8", 8},
    {ScalarKind::U16, "u16", 16},
    {ScalarKind::U32, "u32", 32},
    {ScalarKind::U64, "u64", 64},
    {ScalarKind::F16, "f16", 16},
    {ScalarKind::BF16, "bf16", 16},
    {ScalarKind::F32, "f32", 32},
    {ScalarKind::F64, "f64", 64},
    {ScalarKind::Ptr, "ptr", 64},
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
