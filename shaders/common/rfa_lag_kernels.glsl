// The per-lag scalar kernels of one head (docs/reference-code.md §4.2-§5.2): decay E, covariance Vcov,
// additive bias B and precision P, selected by the COV / BIAS / PREC specialization constants that
// the including shader declares. The head's numbers come from the per-head table written by
// ops/rfa_attention.cpp at the offsets of common/rfa_head_table.h.
#ifndef RFA_LAG_KERNELS_GLSL
#define RFA_LAG_KERNELS_GLSL

#include "rfa_head_table.h"

struct Head {
  float mu, sigma2, s2t, eta2, gamma2, nu, kappa, tau, shift;
  float c_exp, a_per, b_per, omega_per;
  float gate_prior, gate_scale_exp, gate_c;
  bool brownian;
  float min_exp, max_exp, cov_floor, inv_sqrt_d, inv_two_mu, lin_coef;
  float col_r, col_rsq;
  bool col_r_small, col_rsq_small;
};

Head load_head(uint h) {
  const uint o = h * kHeadStride;
  Head p;
  p.mu = hp[o + kMu]; p.sigma2 = hp[o + kSigma2]; p.s2t = hp[o + kS2t]; p.eta2 = hp[o + kEta2];
  p.gamma2 = hp[o + kGamma2]; p.nu = hp[o + kNu]; p.kappa = hp[o + kKappa]; p.tau = hp[o + kTau];
  p.shift = hp[o + kShift]; p.c_exp = hp[o + kCExp]; p.a_per = hp[o + kAPer];
  p.b_per = hp[o + kBPer]; p.omega_per = hp[o + kOmegaPer]; p.gate_prior = hp[o + kGatePrior];
  p.gate_scale_exp = hp[o + kGateScaleExp]; p.gate_c = hp[o + kGateC];
  p.brownian = hp[o + kBrownian] != 0.0; p.min_exp = hp[o + kMinExp]; p.max_exp = hp[o + kMaxExp];
  p.cov_floor = hp[o + kCovFloor]; p.inv_sqrt_d = hp[o + kInvSqrtD];
  p.inv_two_mu = hp[o + kInvTwoMu]; p.lin_coef = hp[o + kLinCoef]; p.col_r = hp[o + kColR];
  p.col_r_small = hp[o + kColRSmall] != 0.0; p.col_rsq = hp[o + kColRsq];
  p.col_rsq_small = hp[o + kColRsqSmall] != 0.0;
  return p;
}

// e^x - 1 without cancellation: Taylor (to x^10, < 3e-10 relative) below 0.5, exp(x) - 1 above.
float rfa_expm1(float x) {
  if (abs(x) < 0.5) {
    float s = 1.0 / 3628800.0;
    s = fma(s, x, 1.0 / 362880.0); s = fma(s, x, 1.0 / 40320.0); s = fma(s, x, 1.0 / 5040.0);
    s = fma(s, x, 1.0 / 720.0); s = fma(s, x, 1.0 / 120.0); s = fma(s, x, 1.0 / 24.0);
    s = fma(s, x, 1.0 / 6.0); s = fma(s, x, 0.5); s = fma(s, x, 1.0);
    return s * x;
  }
  return exp(x) - 1.0;
}

// log(1 + x) accurate for tiny x (huge nu makes P R2 ~ 1e-9 while kappa ~ nu/D multiplies it).
float rfa_log1p(float x) {
  precise float u = 1.0 + x;
  if (u == 1.0) return x;
  precise float um1 = u - 1.0;
  return log(u) * (x / um1);
}

struct LagTerms {
  float dt, E, vcov, B, P;
};

// Every kernel of head p at raw lag `lag` (already |t_i - t_j| or t_i - t_j).
LagTerms lag_terms(Head p, float lag) {
  LagTerms r;
  r.dt = lag + p.shift;
  const float e = clamp(-p.mu * r.dt, p.min_exp, p.max_exp);
  r.E = exp(e);
  const float E2 = r.E * r.E;
  r.vcov = 1.0;
  if (BIAS == 1 || PREC == 1 || WANT_VCOV) {
    const float om = -rfa_expm1(2.0 * e);  // 1 - E^2
    const float meas = p.eta2 * E2 + p.gamma2 + p.cov_floor;
    if (COV == 0) {
      r.vcov = p.s2t * om + meas;
    } else if (COV == 2) {
      r.vcov = p.s2t * om + p.sigma2 * r.dt + meas;
    } else if (COV == 3) {
      r.vcov = (p.brownian ? p.s2t * r.dt : p.s2t * om) + meas;
    } else {
      const float vconst = p.brownian ? p.sigma2 * r.dt : p.sigma2 * om * p.inv_two_mu;
      if (COV == 1) {
        r.vcov = vconst + meas;
      } else {  // colored (COV == 4)
        const float frac = p.col_r_small ? r.dt : rfa_expm1(p.col_r * r.dt) / p.col_r;
        const float vexp = p.c_exp * E2 * frac;
        float vper;
        if (p.col_rsq_small) {
          vper = p.a_per * r.dt;
        } else {
          const float two_mu = 2.0 * p.mu, w = p.omega_per;
          const float c = cos(w * r.dt), s = sin(w * r.dt), dc = c - E2;
          vper = (p.a_per * (two_mu * dc + w * s) + p.b_per * (two_mu * s - w * dc)) / p.col_rsq;
        }
        r.vcov = max(vconst + vexp + vper + meas, 0.01);
      }
    }
  }
  if (BIAS == 0) r.B = 0.0;
  else if (BIAS == 1) r.B = -log(r.vcov);
  else r.B = -p.lin_coef * r.dt;
  if (PREC == 0) r.P = p.inv_sqrt_d;
  else if (PREC == 1) r.P = 1.0 / (p.nu * r.vcov);
  else r.P = 1.0 / (p.sigma2 * r.dt + p.eta2);
  return r;
}

#endif
