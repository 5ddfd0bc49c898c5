#include "sampler.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace rfa {

int64_t Sampler::next(const float* logits, int vocab) {
  if (o_.temperature <= 0.0) return std::max_element(logits, logits + vocab) - logits;
  std::vector<int> idx(vocab);
  std::iota(idx.begin(), idx.end(), 0);
  // Sort candidates by logit, descending; ties broken by id so the order is deterministic.
  std::sort(idx.begin(), idx.end(), [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  size_t keep = (o_.top_k > 0 && o_.top_k < vocab) ? (size_t)o_.top_k : (size_t)vocab;
  std::vector<double> p(keep);
  const double mx = logits[idx[0]];
  double sum = 0;
  for (size_t i = 0; i < keep; ++i) sum += p[i] = std::exp(((double)logits[idx[i]] - mx) / o_.temperature);
  if (o_.top_p < 1.0) {
    double acc = 0;
    size_t cut = keep;
    for (size_t i = 0; i < keep; ++i) {
      acc += p[i] / sum;
      if (acc >= o_.top_p) {
        cut = i + 1;
        break;
      }
    }
    keep = cut;
    p.resize(keep);
    sum = std::accumulate(p.begin(), p.end(), 0.0);
  }
  std::uniform_real_distribution<double> u(0.0, sum);
  double r = u(rng_), acc = 0;
  for (size_t i = 0; i < keep; ++i) {
    acc += p[i];
    if (r < acc) return idx[i];
  }
  return idx[keep - 1];
}

}  // namespace rfa
