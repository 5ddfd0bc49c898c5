// rfa-run --dump-attention on the device: the [B, N, N] maps of Ahat and A of each requested
// (layer, head), what the CPU twin writes for the same input.
//
// Probes read the caches, and a sliding window's caches are a ring that forgets old keys: after a
// prefill of N > W positions the first rows' keys are gone. So the maps are filled while the
// session runs: the input goes in by pieces of at most piece() positions, and after each piece its
// rows are probed over the keys they see [r - W + 1, r], all still in the ring then (it holds
// W + piece - 1 positions). Entries outside a row's band stay 0, as the twin's masked entries.
// Without a window the caches hold everything, and one probe after the whole input does.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "rfa/session.hpp"

namespace rfa::dump {

using Pairs = std::vector<std::pair<int, int>>;

class AttentionMaps {
 public:
  // `positions`: how many positions per batch row the run will feed in all (input + generated).
  AttentionMaps(Pairs pairs, int batch, int positions);

  bool empty() const { return pairs_.empty(); }
  // Positions the session may take in between two probe() calls without losing a key that a row
  // not yet probed sees: the ring's slots - W + 1 (= min(W, 256)) with a window, else all.
  static int piece(const Session& s);
  // Rows probed so far (rows [0, done()) are filled in).
  int done() const { return done_; }
  // Whether probe() can still reach every key of rows [done(), s.position()).
  bool reachable(const Session& s) const;
  // Probes rows [done(), s.position()) of every pair and batch row over the keys they see.
  // An unreachable key is an input_error naming the rows and the oldest cached position.
  Status probe(Session& s);
  // Forgets the rows probed (a replay of the same positions fills them again).
  void restart() { done_ = 0; }
  // The files: attn_L{l}_H{h}.npy (Ahat) and attn_decayed_L{l}_H{h}.npy (A), float32 [B, N, N].
  std::vector<std::pair<std::string, std::vector<float>>> take();

 private:
  Pairs pairs_;
  int batch_ = 1, n_ = 0, done_ = 0;
  std::vector<std::vector<float>> ahat_, a_;  // per pair: [B][n][n]
};

}  // namespace rfa::dump
