// Picking the next token from logits: greedy, temperature, top-k, top-p (nucleus), seeded.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace rfa {

struct SamplerOptions {
  double temperature = 0.0;  // 0: greedy (argmax)
  int top_k = 0;             // 0: no limit
  double top_p = 1.0;        // 1: no limit
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(const SamplerOptions& o) : o_(o), rng_(o.seed) {}
  int64_t next(const float* logits, int vocab);

 private:
  SamplerOptions o_;
  std::mt19937_64 rng_;
};

}  // namespace rfa
