// The per-lag scalar kernels of one head (docs/reference-code.md §4.2-§5.2): decay E, covariance Vcov,
// additive bias B and precision P, selected by the COV / BIAS / PREC specialization constants that
// the including shader declares. The head's numbers come from the per-head table written by
// ops/rfa_attention.cpp at the offsets of common/rfa_head_table.h.
#ifndef RFA_LAG_KERNELS_GLSL
#define RFA_LAG_KERNELS_GLSL

#include "rfa_head_table.h"

const float RFA_LN2 = 0.69314718055994531;
const float RFA_LOG2E = 1.4426950408889634;

struct Head {
  float mu, sigma2, s2t, eta2, gamma2, nu, kappa, tau, shift;
  float c_exp, a_per, b_per, omega_per;
  float gate_prior, gate_scale_exp, gate_c;
  bool brownian;
  float min_exp, max_exp, cov_floor, inv_sqrt_d, inv_two_mu, lin_coef;
  float col_r, col_rsq;
  bool col_r_small, col_rsq_small;
  float tau2, tau_kappa;  // tau log2(e) and tau kappa: the logit in base 2 (rfa_pair_logit2)
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
  p.tau2 = p.tau * RFA_LOG2E;
  p.tau_kappa = p.tau * p.kappa;
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

// log2(1 + x) to a relative 2^-20 with no division (docs/math.md §9, "Lean per-pair math"):
// huge nu makes P R2 ~ 1e-9 while kappa ~ nu/D multiplies it, so log(1 + x) must keep its relative
// accuracy at tiny x. On [-0.25, 0.75] a degree-8 polynomial in x of log2(1 + x) / x (Chebyshev
// fit; 2^-21.8 relative evaluated in fp32 with fma, tests/test_attention_paths.cpp transcribes it);
// elsewhere log2(1 + x), where 1 + x >= 1.75 keeps log2's absolute error (2^-21 on [0.5, 2] in
// Vulkan's precision table) and the rounding of 1 + x (2^-24 relative) under 2^-21 of the result.
// The old form, log(u) x / (u - 1) (Kahan), needed a division and a relative accuracy of log near
// u = 1 that Vulkan does not promise. Below -0.25 (only the expanded, non-full residual reaches
// negative x) the result follows log2's absolute error.
float rfa_log2_1p(float x) {
  if (x >= -0.25 && x <= 0.75) {
    float s = 3.592484817e-02;
    s = fma(s, x, -1.219025329e-01); s = fma(s, x, 2.009507269e-01); s = fma(s, x, -2.463550121e-01);
    s = fma(s, x, 2.901162505e-01); s = fma(s, x, -3.605565131e-01); s = fma(s, x, 4.808459580e-01);
    s = fma(s, x, -7.213477492e-01); s = fma(s, x, 1.442695260e+00);
    return s * x;
  }
  return log2(1.0 + x);
}

// log(1 + x), as accurate (rfa_log2_1p times ln 2).
float rfa_log1p(float x) { return RFA_LN2 * rfa_log2_1p(x); }

struct LagTerms {
  float dt, E, E2, vcov, B, P;  // E2 = E * E (the lag table keeps it beside E, B, P)
};

// Every kernel of head p at raw lag `lag` (already |t_i - t_j| or t_i - t_j).
LagTerms lag_terms(Head p, float lag) {
  LagTerms r;
  r.dt = lag + p.shift;
  const float e = clamp(-p.mu * r.dt, p.min_exp, p.max_exp);
  r.E = exp(e);
  const float E2 = r.E * r.E;
  r.E2 = E2;
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
