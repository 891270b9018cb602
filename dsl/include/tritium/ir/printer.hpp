// Text form of the IR. print() and parse() round-trip: print(parse(print(f))) == print(f).
#pragma once

#include <tritium/ir/ir.hpp>

#include <memory>
#include <string>
#include <string_view>

namespace tritium::ir {

std::string print(const Function& f);
std::string print_attr(const AttrValue& v);

// Parses the text form; throws tritium::Error naming the line and column of a mistake.
std::unique_ptr<Function> parse(std::string_view text);

// Checks the structural and typing rules of every op; throws tritium::Error naming the op
// and its source location on the first violation.
void verify(const Function& f);

} // namespace tritium::ir
