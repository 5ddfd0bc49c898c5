#include "sample/order.hpp"

#include <algorithm>
#include <array>
#include <cstring>

namespace rfa::sample {

uint32_t order_key(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return 0xFFFFFFFFu;  // NaN: last
  if ((b & 0x7FFFFFFFu) == 0u) b = 0u;                      // -0 == +0
  const uint32_t key = (b >> 31) ? ~b : (b | 0x80000000u);  // larger float, larger key
  return ~key;
}

std::vector<int> descending_order(const float* logits, int vocab, int count) {
  if (vocab <= 0) return {};
  count = std::clamp(count, 0, vocab);
  // (key, id) in one 64-bit word: ascending words are the order, and every word is distinct.
  std::vector<uint64_t> a((size_t)vocab);
  for (int i = 0; i < vocab; ++i) a[(size_t)i] = (uint64_t)order_key(logits[i]) << 32 | (uint32_t)i;
  if ((int64_t)count * 8 <= vocab) {
    // A few candidates (top-k): selection, then a sort of those only.
    std::nth_element(a.begin(), a.begin() + count, a.end());
    std::sort(a.begin(), a.begin() + count);
  } else {
    // LSD radix sort on the key bytes; stable, and the words start in id order, so ties stay in
    // id order. A byte that is the same in every key needs no pass.
    std::array<std::array<uint32_t, 256>, 4> hist{};
    for (uint64_t w : a)
      for (int d = 0; d < 4; ++d) ++hist[(size_t)d][(w >> (32 + 8 * d)) & 0xFF];
    std::vector<uint64_t> tmp(a.size());
    for (int d = 0; d < 4; ++d) {
      auto& h = hist[(size_t)d];
      if (h[(a[0] >> (32 + 8 * d)) & 0xFF] == (uint32_t)vocab) continue;
      uint32_t sum = 0;
      for (auto& c : h) {
        const uint32_t n = c;
        c = sum;
        sum += n;
      }
      for (uint64_t w : a) tmp[h[(w >> (32 + 8 * d)) & 0xFF]++] = w;
      a.swap(tmp);
    }
  }
  std::vector<int> ids((size_t)count);
  for (int i = 0; i < count; ++i) ids[(size_t)i] = (int)(uint32_t)a[(size_t)i];
  return ids;
}

}  // namespace rfa::sample
