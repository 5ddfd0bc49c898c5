// rfa-bench attention: the fused RFA attention kernel next to the runtime's own SDPA.
#pragma once

#include <string>
#include <vector>

namespace rfa::bench {

// `rfa-bench attention [--json] [--n 256,1024,4096] [--heads 8] [--dim 32] [--batch 1]
//                      [--variants M2,M1,M2.6,AFA,AFA_FULL,AFA_FULL_IRLS2,RT,sdpa] [--reps 3] [--device SEL]`
int bench_attention(const std::vector<std::string>& args);

}  // namespace rfa::bench
