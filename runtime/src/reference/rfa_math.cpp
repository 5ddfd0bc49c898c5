#include "reference/rfa_math.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rfa::ref {

namespace {

const HeadParams& head(const AttentionParams& p, int h) { return p.head[(size_t)h]; }

// sigma2 * phi(mu, dt): the OU process term with the L'Hôpital (Brownian) switch.
double ou_process_term(const AttentionParams& p, int h, double lag) {
  const HeadParams& hp = head(p, h);
  if (std::fabs(hp.mu) < kBrownianMu) return hp.sigma2 * shifted_lag(p, h, lag);
  return hp.sigma2 * one_minus_decay_sq(p, h, lag) / (2.0 * hp.mu);
}

// eta2 E^2 + gamma2 + cov_floor: the measurement part common to every covariance.
double measurement_term(const AttentionParams& p, int h, double lag) {
  const HeadParams& hp = head(p, h);
  const double E = decay(p, h, lag);
  return hp.eta2 * E * E + hp.gamma2 + p.sw.cov_floor;
}

}  // namespace

double shifted_lag(const AttentionParams& p, int h, double lag) { return lag + head(p, h).lag_shift; }

double decay_exponent(const AttentionParams& p, int h, double lag) {
  const double e = -head(p, h).mu * shifted_lag(p, h, lag);
  return std::clamp(e, p.sw.min_exponent, p.sw.max_exponent);
}

double decay(const AttentionParams& p, int h, double lag) { return std::exp(decay_exponent(p, h, lag)); }

double one_minus_decay_sq(const AttentionParams& p, int h, double lag) {
  return -std::expm1(2.0 * decay_exponent(p, h, lag));
}

ColoredTerms colored_terms(const AttentionParams& p, int h, double lag) {
  ColoredTerms t;
  if (p.sw.covariance != Covariance::colored) return t;
  const HeadParams& hp = head(p, h);
  const double dt = shifted_lag(p, h, lag);
  const double E = decay(p, h, lag);
  const double E2 = E * E;
  t.v_const = ou_process_term(p, h, lag);
  // Exponential term: c E^2 (e^{r dt} - 1) / r, with its r -> 0 limit c E^2 dt.
  const double r = 2.0 * hp.mu + hp.beta_exp;
  const double frac = std::fabs(r) < kBrownianMu ? dt : std::expm1(r * dt) / r;
  t.v_exp = hp.c_exp * E2 * frac;
  // Periodic term (harmonic noise of frequency omega_per), with its (mu, omega) -> 0 limit a dt.
  const double two_mu = 2.0 * hp.mu;
  const double w = hp.omega_per;
  const double r_sq = two_mu * two_mu + w * w;
  if (r_sq < kBrownianMu) {
    t.v_per = hp.a_per * dt;
  } else {
    const double c = std::cos(w * dt), s = std::sin(w * dt);
    const double dc = c - E2;
    t.v_per = (hp.a_per * (two_mu * dc + w * s) + hp.b_per * (two_mu * s - w * dc)) / r_sq;
  }
  return t;
}

void colored_periodic_budget(const HeadParams& hp, double a_raw, double b_raw, double* a, double* b) {
  const double v_zero = hp.eta2 + hp.gamma2;
  const double v_inf = hp.sigma2 / (2.0 * hp.mu + kRefEpsilon) + hp.gamma2;
  const double F = 0.95 * std::min(v_zero, v_inf);
  const double A = std::sqrt(a_raw * a_raw + b_raw * b_raw + 1e-8);
  const double scale = (F / A) * std::tanh(A / F);
  *a = a_raw * scale;
  *b = b_raw * scale;
}

double vcov(const AttentionParams& p, int h, double lag) {
  const HeadParams& hp = head(p, h);
  const double dt = shifted_lag(p, h, lag);
  const double meas = measurement_term(p, h, lag);
  switch (p.sw.covariance) {
    case Covariance::stationary:
      return hp.s2t * one_minus_decay_sq(p, h, lag) + meas;
    case Covariance::ou_rate:
      return ou_process_term(p, h, lag) + meas;
    case Covariance::residual_diffusion:
      return hp.s2t * one_minus_decay_sq(p, h, lag) + hp.sigma2 * dt + meas;
    case Covariance::hybrid: {
      const double proc = std::fabs(hp.mu) < kBrownianMu ? hp.s2t * dt : hp.s2t * one_minus_decay_sq(p, h, lag);
      return proc + meas;
    }
    case Covariance::colored: {
      const ColoredTerms t = colored_terms(p, h, lag);
      return std::max(t.v_const + t.v_exp + t.v_per + meas, kColoredClamp);
    }
  }
  return std::numeric_limits<double>::quiet_NaN();
}

double bias(const AttentionParams& p, int h, double lag) {
  const HeadParams& hp = head(p, h);
  switch (p.sw.additive_bias) {
    case AdditiveBias::none: return 0.0;
    case AdditiveBias::neg_log_vcov: return -std::log(vcov(p, h, lag));
    case AdditiveBias::linear_lag: return -(hp.sigma2 / (hp.eta2 + hp.gamma2)) * shifted_lag(p, h, lag);
  }
  return std::numeric_limits<double>::quiet_NaN();
}

double precision(const AttentionParams& p, int h, double lag) {
  const HeadParams& hp = head(p, h);
  switch (p.sw.precision) {
    case RobustPrecision::inv_sqrt_d: return 1.0 / std::sqrt((double)p.dim);
    case RobustPrecision::inv_nu_vcov: return 1.0 / (hp.nu * vcov(p, h, lag));
    case RobustPrecision::inv_linear: return 1.0 / (hp.sigma2 * shifted_lag(p, h, lag) + hp.eta2);
  }
  return std::numeric_limits<double>::quiet_NaN();
}

RegimeInfo regime(const AttentionParams& p, int h) {
  const HeadParams& hp = head(p, h);
  const Covariance cov = p.sw.covariance;
  const bool has_lhopital = cov == Covariance::ou_rate || cov == Covariance::colored || cov == Covariance::hybrid;
  const bool brownian = hp.mu == 0.0 || (has_lhopital && std::fabs(hp.mu) < kBrownianMu);
  const double inf = std::numeric_limits<double>::infinity();
  RegimeInfo r;
  if (cov == Covariance::ou_rate || cov == Covariance::colored) {
    r.stationary_variance = brownian ? inf : hp.sigma2 / (2.0 * hp.mu);
  } else {
    r.stationary_variance = hp.s2t;
  }
  r.alpha = hp.eta2 - r.stationary_variance;
  r.beta = hp.gamma2 + r.stationary_variance + p.sw.cov_floor;
  if (brownian) {
    r.regime = Regime::brownian;
  } else {
    r.regime = r.alpha > 0 ? Regime::integrative : Regime::diffusive;
  }
  return r;
}

Curves curves(const AttentionParams& p, int h, const std::vector<double>& lags) {
  Curves c;
  c.lag = lags;
  const size_t n = lags.size();
  c.E.resize(n);
  c.vcov.resize(n);
  c.P.resize(n);
  c.B.resize(n);
  c.prior_precision.resize(n);
  c.log_prior.resize(n);
  for (size_t k = 0; k < n; ++k) {
    const double l = lags[k];
    c.E[k] = decay(p, h, l);
    c.vcov[k] = vcov(p, h, l);
    c.P[k] = precision(p, h, l);
    c.B[k] = bias(p, h, l);
    c.prior_precision[k] = 1.0 / c.vcov[k];
    c.log_prior[k] = -std::log(c.vcov[k]);
  }
  return c;
}

}  // namespace rfa::ref
