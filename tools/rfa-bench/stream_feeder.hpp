// What rfa-bench stream feeds a session, position by position: token ids for language models, a
// simulated damped spiral (with its timestamps) for 2-dimensional signal models, Gaussian noise of
// the right width for the others. Shared by the timed stream and the soak (bench_soak.cpp).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "rfa/session.hpp"
#include "rfa/spiral.hpp"

namespace rfa::bench {

struct Feeder {
  ModelInfo info;
  int batch = 1;
  std::mt19937 rng{1};
  std::vector<SpiralSimulator> spirals;
  Feeder(const ModelInfo& i, int b) : info(i), batch(b) {
    for (int r = 0; r < b; ++r) {
      SpiralSimulator::Options o;
      o.seed = 1000 + (uint64_t)r;
      spirals.emplace_back(o);
    }
  }
  bool lm() const { return info.architecture == "lm"; }
  // The next position of every batch row: ids [B] or values [B * input_dim], timestamps [B] or none.
  void next(std::vector<int64_t>* ids, std::vector<float>* vals, std::vector<double>* ts) {
    ids->clear();
    vals->clear();
    ts->clear();
    for (int b = 0; b < batch; ++b) {
      if (lm()) {
        ids->push_back(std::uniform_int_distribution<int>(0, info.vocab - 1)(rng));
      } else if (info.input_dim == 2) {
        const SpiralSimulator::Measurement s = spirals[(size_t)b].next();
        vals->push_back((float)s.y[0]);
        vals->push_back((float)s.y[1]);
        ts->push_back(s.t);
      } else {
        std::normal_distribution<float> g(0.f, 1.f);
        for (int d = 0; d < info.input_dim; ++d) vals->push_back(g(rng));
      }
    }
  }
  Status feed(Session& s, const std::vector<int64_t>& ids, const std::vector<float>& vals,
              const std::vector<double>& ts) const {
    return lm() ? s.step_tokens(ids, ts) : s.step_values(vals, ts);
  }
};

}  // namespace rfa::bench
