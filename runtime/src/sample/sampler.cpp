// rfa::Sampler: rfa-run's sampler moved into the library, with the draw split from the choice so
// the GPU sampler can take the same u. The arithmetic after the ordering is the original's, step
// for step; see the comments for where the order of operations decides the result.
#include "rfa/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "sample/order.hpp"

namespace rfa {

int64_t Sampler::next(const float* logits, int vocab) {
  return pick(logits, vocab, o_, o_.temperature > 0.0 ? draw() : 0.0);
}

int64_t Sampler::pick(const float* logits, int vocab, const SamplerOptions& o, double u) {
  if (vocab <= 0) return 0;
  if (o.temperature <= 0.0) return std::max_element(logits, logits + vocab) - logits;  // first of equals
  size_t keep = (o.top_k > 0 && o.top_k < vocab) ? (size_t)o.top_k : (size_t)vocab;
  // Only the kept prefix of the order is needed, and only it is sorted.
  const std::vector<int> idx = sample::descending_order(logits, vocab, (int)keep);
  std::vector<double> p(keep);
  const double mx = logits[idx[0]];
  // Every sum below runs in the order, largest first: double addition is not associative, and the
  // walk's `r < acc` compares against these exact partial sums.
  double sum = 0;
  for (size_t i = 0; i < keep; ++i) sum += p[i] = std::exp(((double)logits[idx[i]] - mx) / o.temperature);
  if (o.top_p < 1.0) {
    // The cut accumulates p_i / sum (not the partial sum divided once), as the original did.
    double acc = 0;
    size_t cut = keep;
    for (size_t i = 0; i < keep; ++i) {
      acc += p[i] / sum;
      if (acc >= o.top_p) {
        cut = i + 1;
        break;
      }
    }
    keep = cut;
    p.resize(keep);
    sum = std::accumulate(p.begin(), p.end(), 0.0);
  }
  // uniform_real_distribution<double>(0, sum) in libstdc++: canonical * (b - a) + a.
  const double r = u * (sum - 0.0) + 0.0;
  double acc = 0;
  for (size_t i = 0; i < keep; ++i) {
    acc += p[i];
    if (r < acc) return idx[i];
  }
  return idx[keep - 1];  // r rounded up to the whole sum
}

}  // namespace rfa
