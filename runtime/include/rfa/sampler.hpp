// Picking the next token from logits: greedy, temperature, top-k, top-p (nucleus), seeded.
//
// The rule, for temperature T > 0: order the tokens by logit descending, ties by id ascending; keep
// the first top_k; p_i = exp((x_i - max) / T) in double; with top_p < 1 keep the shortest prefix
// whose running sum of p_i / sum reaches top_p; draw r = u * (kept sum) and return the first token
// whose running sum exceeds r. T <= 0 is greedy: the first index of the largest logit, no draw.
//
// The GPU sampler (ops/sample.hpp) takes the same u per row and returns the same token except when
// r lies within rounding of a boundary of the running sum (see there). Logits are expected to be
// finite or -inf; a NaN is never sampled on the GPU and has no defined place in the host's order.
#pragma once

#include "rfa/export.h"

#include <cstdint>
#include <random>

namespace rfa {

struct SamplerOptions {
  double temperature = 0.0;  // <= 0: greedy (argmax)
  int top_k = 0;             // <= 0 or >= vocab: no limit
  double top_p = 1.0;        // >= 1: no limit; <= 0 keeps the most likely token only
  uint64_t seed = 0;
};

class RFA_API Sampler {
 public:
  explicit Sampler(const SamplerOptions& o) : o_(o), rng_(o.seed) {}

  const SamplerOptions& options() const { return o_; }

  // One step: pick(logits, vocab, options(), u) with u = draw() when temperature > 0; greedy
  // steps draw nothing, so the stream of draws is the same as rfa-run's sampler always had.
  int64_t next(const float* logits, int vocab);

  // The step's uniform u in [0, 1): std::generate_canonical<double, 53> of the seeded
  // std::mt19937_64 (one engine call), which is what uniform_real_distribution<double>(0, s)
  // scales by s in libstdc++. A batch draws one u per row, in row order.
  double draw() { return std::generate_canonical<double, 53>(rng_); }

  // The token for one row given the step's u (ignored when greedy). Pure: the GPU's twin. O(V):
  // the order comes from a radix sort of the keys, not a comparison sort. vocab <= 0 gives 0.
  static int64_t pick(const float* logits, int vocab, const SamplerOptions& o, double u);

 private:
  SamplerOptions o_;
  std::mt19937_64 rng_;
};

}  // namespace rfa
