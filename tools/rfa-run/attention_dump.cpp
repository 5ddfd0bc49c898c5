// rfa-run --dump-attention on the device: maps filled piece by piece while the session runs (see
// attention_dump.hpp for why).
#include "attention_dump.hpp"

#include <algorithm>
#include "rfa/inspect.hpp"

namespace rfa::dump {

namespace {

// The first key row r sees that probe() must read: r - W + 1 with a window, else position 0.
int first_key(const Session& s, int r) { return s.window() > 0 ? std::max(0, r - s.window() + 1) : 0; }

}  // namespace

AttentionMaps::AttentionMaps(Pairs pairs, int batch, int positions)
    : pairs_(std::move(pairs)), batch_(batch), n_(positions) {
  const size_t cells = (size_t)batch_ * (size_t)n_ * (size_t)n_;
  ahat_.assign(pairs_.size(), std::vector<float>(cells, 0.0f));
  a_.assign(pairs_.size(), std::vector<float>(cells, 0.0f));
}

int AttentionMaps::piece(const Session& s) {
  return s.window() > 0 ? s.max_context() - s.window() + 1 : s.max_context();
}

bool AttentionMaps::reachable(const Session& s) const {
  return done_ >= s.position() || first_key(s, done_) >= s.oldest_position();
}

Status AttentionMaps::probe(Session& s) {
  const int r0 = done_, r1 = std::min(s.position(), n_);
  if (r0 >= r1 || pairs_.empty()) {
    done_ = std::max(done_, r1);
    return Status::Ok();
  }
  // Keys after a row are masked for causal models and read for the others: every key fed so far.
  const int c0 = first_key(s, r0), c1 = std::min(s.position(), n_);
  if (c0 < s.oldest_position())
    return Status(Code::input_error, "--dump-attention: rows [" + std::to_string(r0) + ", " + std::to_string(r1) +
                                         ") see keys from position " + std::to_string(c0) +
                                         ", but the sliding window's cache holds positions from " +
                                         std::to_string(s.oldest_position()) + " on");
  const size_t w = (size_t)(c1 - c0), n = (size_t)n_;
  for (size_t k = 0; k < pairs_.size(); ++k) {
    const auto [layer, head] = pairs_[k];
    for (int b = 0; b < batch_; ++b) {
      for (int decayed = 0; decayed < 2; ++decayed) {
        auto got = rfa::Inspector(s).attention(layer, head, b, r0, r1, c0, c1, decayed != 0);
        if (!got) return got.status();
        std::vector<float>& dst = decayed ? a_[k] : ahat_[k];
        for (int r = r0; r < r1; ++r)
          std::copy_n(got->begin() + (size_t)(r - r0) * w, w, dst.begin() + ((size_t)b * n + (size_t)r) * n + (size_t)c0);
      }
    }
  }
  done_ = r1;
  return Status::Ok();
}

std::vector<std::pair<std::string, std::vector<float>>> AttentionMaps::take() {
  std::vector<std::pair<std::string, std::vector<float>>> out;
  for (size_t k = 0; k < pairs_.size(); ++k) {
    const std::string lh = "_L" + std::to_string(pairs_[k].first) + "_H" + std::to_string(pairs_[k].second) + ".npy";
    out.push_back({"attn" + lh, std::move(ahat_[k])});
    out.push_back({"attn_decayed" + lh, std::move(a_[k])});
  }
  pairs_.clear();
  return out;
}

}  // namespace rfa::dump
