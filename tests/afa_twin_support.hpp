// What the AFA twin's tests of both forms share (tests/test_reference_afa.cpp,
// test_reference_afa_full.cpp): a layer of varied random parameters, and the worked example.
//
// The AFA worked example (docs/variant-afa.md §13, docs/variant-afa-full.md §7),
// shared by the twin's tests of both forms: D = 1, lambda = -0.1 + 1i, sigma2 = 1, eta2 = 0.5,
// gamma2 = 0, nu = alpha = 1, eps = 0, horizon 1, t = (0, 1), q_1 = 1, k_0 = 0.5 + 0.5i,
// k_1 = 1 + 0.2i, v_0 = 1, v_1 = i (q_0 is not part of the example: any value).
#pragma once

#include <random>
#include <vector>

#include <doctest/doctest.h>

#include "reference/afa_ref.hpp"

namespace rfa::test {

// A layer with varied per-channel parameters: stable conjugate-pair eigenvalues (interleaved),
// per-channel noise, per-head scales.
inline ref::AfaParams afa_random_params(int H, int D, uint32_t seed, bool with_gamma = false) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  ref::AfaParams p;
  p.heads = H;
  p.dim = D;
  std::vector<double> re_half, om_half;
  for (int x = 0; x < H * D / 2; ++x) {
    re_half.push_back(-(0.01 + 0.3 * u(rng)));
    om_half.push_back(-2.0 + 4.0 * u(rng));
  }
  REQUIRE(ref::afa_set_conjugate_pairs(&p, re_half, om_half).ok());
  for (int x = 0; x < H * D; ++x) {
    p.sigma2.push_back(0.05 + u(rng));
    p.eta2.push_back(0.1 + u(rng));
    if (with_gamma) p.gamma2.push_back(0.5 * u(rng));
    p.delta.push_back(-1.0 + 3.0 * u(rng));
    p.weight.push_back(0.2 + u(rng));
  }
  for (int h = 0; h < H; ++h) {
    ref::AfaHeadParams hp;
    hp.nu = 0.5 + 1.5 * u(rng);
    hp.alpha = 0.5 + u(rng);
    hp.eps = h % 2 ? 1e-3 : 0.0;
    hp.pred_dt = 0.3 + u(rng);
    hp.precision_channel = (h + 1) % D;
    hp.weight_bias = 0.1 * u(rng);
    p.head.push_back(hp);
  }
  return p;
}


struct AfaWorkedExample {
  ref::AfaParams p;
  std::vector<ref::cd> Q, K, V;
  std::vector<double> t;
};

inline AfaWorkedExample afa_worked_example(bool full) {
  using ref::cd;
  AfaWorkedExample e;
  e.p.heads = 1;
  e.p.dim = 1;
  e.p.lambda_re = {-0.1};
  e.p.omega = {1.0};
  e.p.sigma2 = {1.0};
  e.p.eta2 = {0.5};
  e.p.head = {ref::AfaHeadParams{}};
  e.p.head[0].pred_dt = 1.0;
  e.p.full = full;
  e.Q = {cd(0.3, -0.7), cd(1, 0)};
  e.K = {cd(0.5, 0.5), cd(1, 0.2)};
  e.V = {cd(1, 0), cd(0, 1)};
  e.t = {0.0, 1.0};
  return e;
}

}  // namespace rfa::test
