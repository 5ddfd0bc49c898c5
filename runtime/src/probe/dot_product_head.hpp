// The canonical-form settings (docs/math.md §3) under which an RFA head is plain scaled dot-product
// attention, the setting of the Laplace-Radon paper's experiments (docs/DIAGNOSTICS.md §3): the pure-
// rotation path (M2.6: Gaussian kernel, cross-term residual, no bias, precision 1/sqrt(D)) with
// mu = 0 (E = 1), no noise, no lag shift and omega = 0 (no rotation). Then
//   logit_ij = tau_h P E Re(Q_i^H K_j) = tau_h q_i . k_j / sqrt(D)
// with q, k the 2D-real vectors of the head; tau_h = 1/sqrt(2) makes it q . k / sqrt(2D) = q.k/sqrt(d_k).
#pragma once

#include <cmath>

#include "rfa/params.hpp"

namespace rfa::probe {

inline AttentionParams dot_product_params(int heads, int dim, bool causal) {
  AttentionParams p;
  p.heads = heads;
  p.dim = dim;
  p.sw.robust = false;
  p.sw.full_residual = false;
  p.sw.additive_bias = AdditiveBias::none;
  p.sw.precision = RobustPrecision::inv_sqrt_d;
  p.sw.causal = causal;
  for (int h = 0; h < heads; ++h) {
    HeadParams hp;  // mu, sigma2, s2t, eta2, lag_shift = 0
    hp.gamma2 = 1.0;  // unused by this path (no covariance is formed)
    hp.nu = 1.0;
    hp.kappa = 1.0;
    hp.tau = 1.0 / std::sqrt(2.0);
    p.head.push_back(hp);
  }
  p.omega.assign((size_t)heads * dim, 0.0);
  return p;
}

}  // namespace rfa::probe
