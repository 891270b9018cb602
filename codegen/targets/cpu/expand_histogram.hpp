// tl::histogram on the CPU: the compare-and-sum the vector units do well.
#pragma once

#include <tritium/ir/ir.hpp>

#include <memory>

namespace tritium::cpu {

// A copy of `f` in which every histogram of x[n] into num_bins bins is the sum over n of the
// one-hot (x[i] == b) & mask[i] (a [n, num_bins] compare reduced along n); null where `f` has
// none. GPUs count in shared memory instead (gpu/lower_collective.cpp).
std::unique_ptr<ir::Function> expand_histograms(const ir::Function& f);

} // namespace tritium::cpu
