// The double-precision CPU twin, part 1: the per-head, per-lag scalar kernels of RFA
// (decay E, covariance Vcov, additive bias B, robust precision P, regime), written straight from
// docs/math.md §2-§5 and docs/reference-code.md §4-§5. This is the tests' oracle: it favours the plain
// definition over speed and never shares code with the GPU path.
//
// Every function takes the RAW lag (normally |t_i - t_j| >= 0) and adds the head's lag shift
// inside: dt = lag + s_h, as the reference does (docs/reference-code.md §4.1). The clamped decay exponent
// e = clamp(-mu * dt, min_exponent, max_exponent) feeds E = exp(e) and 1 - E^2 = -expm1(2e);
// the Brownian branches and the linear-lag bias / precision use the unclamped dt.
#pragma once

#include <vector>

#include "rfa/params.hpp"

namespace rfa::ref {

// |mu| below this switches ou_rate / colored / hybrid covariances to their Brownian (L'Hôpital)
// branch (reference `epsilon = 1e-5`, also the threshold for the colored exponential / periodic
// limits).
inline constexpr double kBrownianMu = 1e-5;
// The colored covariance is clamped from below at this value (reference `clamp(V, min=cov_epsilon)`
// with cov_epsilon hard-coded to 0.01), whatever AttentionSwitches::cov_floor says.
inline constexpr double kColoredClamp = 0.01;
// The reference's args.epsilon (used in the colored budget F = 0.95 min(eta2+gamma2, sigma2/(2mu+eps)+gamma2)).
inline constexpr double kRefEpsilon = 1e-5;

// dt = lag + s_h.
double shifted_lag(const AttentionParams& p, int h, double lag);
// e = clamp(-mu_h * dt, min_exponent, max_exponent).
double decay_exponent(const AttentionParams& p, int h, double lag);
// E = exp(e).
double decay(const AttentionParams& p, int h, double lag);
// 1 - E^2 computed as -expm1(2e) (exact for small mu * dt).
double one_minus_decay_sq(const AttentionParams& p, int h, double lag);

// Covariance Vcov(lag) for every Covariance kind (docs/reference-code.md §4.3; stationary = paper Alg. 1):
//   stationary          s2t (1-E^2) + eta2 E^2 + gamma2 + cov_floor
//   ou_rate             sigma2 phi + eta2 E^2 + gamma2 + cov_floor, phi = dt if |mu| < 1e-5 else (1-E^2)/(2 mu)
//   residual_diffusion  s2t (1-E^2) + sigma2 dt + eta2 E^2 + gamma2 + cov_floor
//   hybrid              (s2t dt if |mu| < 1e-5 else s2t (1-E^2)) + eta2 E^2 + gamma2 + cov_floor
//   colored             max(V_const + V_exp + V_per + eta2 E^2 + gamma2 + cov_floor, 0.01)
//                       V_const = sigma2 phi (as ou_rate); V_exp = c E^2 expm1(r dt)/r, r = 2 mu +
//                       beta_exp (c E^2 dt when |r| < 1e-5); V_per as in
//                       colored_terms(). c_exp, beta_exp, a_per, b_per are taken as already
//                       transformed (softplus / amplitude budget applied by the loader); omega_per raw.
double vcov(const AttentionParams& p, int h, double lag);
// The three colored-prior terms separately (0 for other kinds), for the viewer and the tests.
struct ColoredTerms {
  double v_const = 0, v_exp = 0, v_per = 0;
};
ColoredTerms colored_terms(const AttentionParams& p, int h, double lag);
// The reference's budget on the periodic amplitudes (docs/reference-code.md §4.3 rule 2):
// (a, b) = (a_raw, b_raw) (F/A) tanh(A/F), A = sqrt(a^2+b^2+1e-8), F = 0.95 min(eta2+gamma2,
// sigma2/(2 mu + 1e-5) + gamma2), computed from the head's physical sigma2, mu, eta2, gamma2.
// Offered for loaders and tests; vcov() does NOT apply it (HeadParams holds transformed values).
void colored_periodic_budget(const HeadParams& hp, double a_raw, double b_raw, double* a, double* b);

// Additive bias B(lag) (docs/reference-code.md §5.2): none -> 0, neg_log_vcov -> -log Vcov,
// linear_lag -> -(sigma2 / (eta2 + gamma2)) dt.
double bias(const AttentionParams& p, int h, double lag);
// Precision P(lag) inside the robust / Gaussian term: inv_sqrt_d -> 1/sqrt(D),
// inv_nu_vcov -> 1/(nu Vcov), inv_linear -> 1/(sigma2 dt + eta2).
double precision(const AttentionParams& p, int h, double lag);

// Regime of a head (docs/math.md §5). stationary variance: s2t for stationary / hybrid /
// residual_diffusion, sigma2 / (2 mu) for ou_rate / colored. alpha = eta2 - sv,
// beta = gamma2 + sv + cov_floor. Brownian when mu == 0, or when |mu| < 1e-5 for a covariance with a
// L'Hôpital branch (ou_rate, colored, hybrid); then for ou_rate / colored the stationary variance is
// +inf (alpha = -inf, beta = +inf). Otherwise integrative if alpha > 0, else diffusive.
RegimeInfo regime(const AttentionParams& p, int h);

// The viewer's curves of one head over the given raw lags.
struct Curves {
  std::vector<double> lag;              // as given
  std::vector<double> E;                // decay
  std::vector<double> vcov;             // covariance
  std::vector<double> P;                // precision as used by the logits (switch-dependent)
  std::vector<double> B;                // additive bias as used by the logits (switch-dependent)
  std::vector<double> prior_precision;  // 1 / Vcov (the paper's P(lag))
  std::vector<double> log_prior;        // -log Vcov (the paper's B(lag))
};
Curves curves(const AttentionParams& p, int h, const std::vector<double>& lags);

}  // namespace rfa::ref
