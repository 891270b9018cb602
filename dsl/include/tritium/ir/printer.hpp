// Text form of the IR. print() and parse() round-trip: print(parse(print(f))) == print(f).
#pragma once

#include <tritium/ir/ir.hpp>

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace tritium::ir {

std::string print(const Function& f);
// The same, with `annotate(op)` (when not empty) as a comment at the end of each op's line:
// how analyses show what they know (`tritium opt --pass print_axis_info`).
std::string print(const Function& f, const std::function<std::string(const Op&)>& annotate);
// The same, with each op's source location after its types, ` loc("kernel.cpp":42)`: what
// TRITIUM_DUMP writes, so that the verifier and the lowering name the user's line when the
// dump is compiled again (`tritium compile`). parse() reads it back.
std::string print_with_locations(const Function& f);
std::string print_attr(const AttrValue& v);

// Reads a layout's text (as Layout::str() writes it, from '#' to its closing '>'); throws
// tritium::Error for text it does not understand. Layout kinds belong to codegen
// (gpu::parse_layout), so the parser takes them as a hook.
using LayoutParser = std::function<LayoutPtr(std::string_view text)>;

// Parses the text form; throws tritium::Error naming the line and column of a mistake. Types
// with layouts need `parse_layout`. Ops are located at `source`:line (a file's name), unless the
// text gives their location.
std::unique_ptr<Function> parse(std::string_view text, const LayoutParser& parse_layout = {},
                                std::string source = "ir text");

// Checks the structural and typing rules of every op; throws tritium::Error naming the op
// and its source location on the first violation.
void verify(const Function& f);

} // namespace tritium::ir
