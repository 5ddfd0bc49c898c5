// The sampler's candidate order in O(V): token ids sorted by logit descending, ties by id
// ascending, exactly the order of std::sort with the comparator
//   logits[a] > logits[b] || (logits[a] == logits[b] && a < b)
// but from a stable LSD radix sort of order-preserving 32-bit keys. As that comparator says, -0 and
// +0 are one value. NaN (for which the comparator is no ordering at all) goes last.
#pragma once

#include <cstdint>
#include <vector>

namespace rfa::sample {

// The key that sorts ascending in the order above: larger logit, smaller key (the GPU's `sk`).
uint32_t order_key(float x);

// The first `count` ids of the order (count clamped to [0, vocab]).
std::vector<int> descending_order(const float* logits, int vocab, int count);

}  // namespace rfa::sample
