// Names of the files TRITIUM_DUMP writes, one set per specialization.
#pragma once

#include <string>
#include <string_view>

namespace tritium::ir {

// The common start of the files (`<dir>/<stem>.<stage>`) of one compilation of `kernel`, whose
// traced IR prints as `ir_text`, with these options. The first specialization of a kernel this
// process dumps into `dir` is plain `<kernel>`; each different one after it is
// `<kernel>.<8 hex digits of its hash>`, so that none overwrites another (three autotuned
// configurations, or one kernel at two argument alignments) while a kernel compiled once keeps
// the name tools look for. The same specialization gets the same stem every time.
std::string dump_stem(std::string_view dir, std::string_view kernel, std::string_view ir_text,
                      int num_warps, int num_stages);

} // namespace tritium::ir
