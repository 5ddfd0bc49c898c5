// rfa-bench diagnostics: the attention tomography (Session::head_diagnostics).
#pragma once

#include <string>
#include <vector>

namespace rfa::bench {

// `rfa-bench diagnostics --synthetic [--seed S] [--examples 256] [--alphas LIST] [--json]`: the
//   Laplace-Radon paper's synthetic experiment (section 13, Table 1) through the runtime, beside the paper.
// `rfa-bench diagnostics [--model DIR] [--window 64,128,256,512] [--reps 5] [--json]`: the cost
//   of one diagnostics call (GPU, host SVD, host eigen) per window size: the viewer's per-frame cost.
int bench_diagnostics(const std::vector<std::string>& args);

}  // namespace rfa::bench
