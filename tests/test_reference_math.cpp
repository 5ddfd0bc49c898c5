// The CPU twin's scalar kernels (reference/rfa_math) against hand values (docs/math.md §6), the regime
// closed forms (docs/math.md §5), the reference's switches (docs/reference-code.md §4.3) and quadratures of the
// Differential Lyapunov Equation integrals that the covariance kernels solve in closed form.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <complex>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "reference/rfa_math.hpp"

using namespace rfa;
using cd = std::complex<double>;

namespace {

constexpr double kNoClamp = -1e30;

// One head, covariance `cov`, no shift, no clamp, no floor unless set.
AttentionParams one_head(Covariance cov, double mu, double s2t, double sigma2, double eta2, double gamma2,
                         double cov_floor = 0.0, double shift = 0.0) {
  AttentionParams p;
  p.heads = 1;
  p.dim = 4;
  p.sw.covariance = cov;
  p.sw.cov_floor = cov_floor;
  p.sw.min_exponent = kNoClamp;
  p.sw.max_exponent = 0.0;
  HeadParams h;
  h.mu = mu;
  h.s2t = s2t;
  h.sigma2 = sigma2;
  h.eta2 = eta2;
  h.gamma2 = gamma2;
  h.nu = 10.0;
  h.kappa = (10.0 + 4.0) / 4.0;
  h.lag_shift = shift;
  p.head = {h};
  p.omega.assign(4, 0.0);
  return p;
}

// Composite Simpson rule on [a, b] with n (even) intervals.
double simpson(const std::function<double(double)>& f, double a, double b, int n = 20000) {
  const double hstep = (b - a) / n;
  double s = f(a) + f(b);
  for (int k = 1; k < n; ++k) s += (k % 2 ? 4.0 : 2.0) * f(a + k * hstep);
  return s * hstep / 3.0;
}

using Mat2 = std::array<std::array<cd, 2>, 2>;

Mat2 matmul(const Mat2& a, const Mat2& b) {
  Mat2 c{};
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) c[i][j] = a[i][0] * b[0][j] + a[i][1] * b[1][j];
  return c;
}

}  // namespace

TEST_CASE("stationary covariance: docs/math.md §6 hand values") {
  // mu = 0.1, stationary variance 5, eta2 = 1, no query noise, no floor, no shift, no clamp.
  const AttentionParams p = one_head(Covariance::stationary, 0.1, 5.0, 0.0, 1.0, 0.0);
  CHECK(ref::vcov(p, 0, 0.0) == doctest::Approx(1.0).epsilon(1e-12));
  CHECK(std::fabs(ref::vcov(p, 0, 0.1) - 1.079205) < 1e-6);
  CHECK(std::fabs(ref::vcov(p, 0, 1.0) - 1.725077) < 1e-6);
  CHECK(std::fabs(ref::vcov(p, 0, 10.0) - 4.458659) < 1e-6);
  // Exactly 5 - 4 e^{-0.2 lag}.
  for (double lag : {0.0, 0.1, 1.0, 10.0, 100.0})
    CHECK(ref::vcov(p, 0, lag) == doctest::Approx(5.0 - 4.0 * std::exp(-0.2 * lag)).epsilon(1e-13));
}

TEST_CASE("e^{0.1 A} of the damped spiral via its eigen-decomposition and via the series") {
  // A = [[0.9, -2], [1, -1.1]]: trace -0.2, det 1.01, eigenvalues -0.1 +/- i.
  const Mat2 A{{{cd(0.9), cd(-2.0)}, {cd(1.0), cd(-1.1)}}};
  const cd tr = A[0][0] + A[1][1];
  const cd det = A[0][0] * A[1][1] - A[0][1] * A[1][0];
  const cd disc = std::sqrt(tr * tr / 4.0 - det);
  cd l1 = tr / 2.0 + disc, l2 = tr / 2.0 - disc;
  if (l1.imag() < l2.imag()) std::swap(l1, l2);  // the branch of sqrt() is not ours to rely on
  CHECK(std::abs(l1 - cd(-0.1, 1.0)) < 1e-12);
  CHECK(std::abs(l2 - cd(-0.1, -1.0)) < 1e-12);
  // Spectral decomposition: e^{tA} = e^{t l1} (A - l2 I)/(l1 - l2) + e^{t l2} (A - l1 I)/(l2 - l1).
  const double t = 0.1;
  Mat2 eig{};
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      const cd Iij = i == j ? cd(1.0) : cd(0.0);
      eig[i][j] = std::exp(t * l1) * (A[i][j] - l2 * Iij) / (l1 - l2) + std::exp(t * l2) * (A[i][j] - l1 * Iij) / (l2 - l1);
    }
  // Power series sum_k (tA)^k / k!.
  Mat2 series{{{cd(1.0), cd(0.0)}, {cd(0.0), cd(1.0)}}};
  Mat2 term = series;
  Mat2 tA{};
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) tA[i][j] = t * A[i][j];
  for (int k = 1; k < 30; ++k) {
    term = matmul(term, tA);
    for (auto& row : term)
      for (auto& x : row) x /= (double)k;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) series[i][j] += term[i][j];
  }
  const double expect[2][2] = {{1.083944, -0.197680}, {0.098840, 0.886264}};
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      CHECK(std::fabs(eig[i][j].real() - expect[i][j]) < 1e-6);
      CHECK(std::fabs(eig[i][j].imag()) < 1e-12);
      CHECK(std::fabs(series[i][j].real() - expect[i][j]) < 1e-6);
      CHECK(std::abs(series[i][j] - eig[i][j]) < 1e-13);
    }
  // The isotropic form: mu = 0.1, omega = 1 per head. |e^{t l}| is the twin's decay at lag t.
  const AttentionParams p = one_head(Covariance::ou_rate, 0.1, 0.0, 1.0, 1.0, 0.0);
  CHECK(ref::decay(p, 0, t) == doctest::Approx(std::abs(std::exp(t * l1))).epsilon(1e-14));
}

TEST_CASE("regimes: closed forms of docs/math.md §5 match vcov") {
  const std::vector<double> lags = {0.0, 0.25, 1.0, 3.0, 10.0, 40.0, 200.0};
  struct Case {
    Covariance cov;
    double mu, s2t, sigma2, eta2, gamma2, floor, shift;
    Regime expect;
  };
  const std::vector<Case> cases = {
      // stationary: sv = s2t
      {Covariance::stationary, 0.1, 5.0, 0.0, 1.0, 0.0, 0.0, 0.0, Regime::diffusive},
      {Covariance::stationary, 0.05, 0.5, 0.0, 2.0, 0.3, 0.01, 0.7, Regime::integrative},
      // ou_rate: sv = sigma2 / (2 mu)
      {Covariance::ou_rate, 0.02, 0.0, 0.4, 1.31, 1.31, 0.01, 0.6931, Regime::diffusive},  // sv = 10
      {Covariance::ou_rate, 0.05, 0.0, 0.01, 1.31, 1.31, 0.01, 0.6931, Regime::integrative},  // sv = 0.1
      // hybrid: sv = s2t
      {Covariance::hybrid, 0.3, 4.0, 0.0, 1.0, 0.2, 0.01, 0.0, Regime::diffusive},
      {Covariance::hybrid, 0.3, 0.2, 0.0, 3.0, 0.2, 0.01, 1.5, Regime::integrative},
  };
  for (const Case& c : cases) {
    CAPTURE((int)c.cov);
    CAPTURE(c.mu);
    const AttentionParams p = one_head(c.cov, c.mu, c.s2t, c.sigma2, c.eta2, c.gamma2, c.floor, c.shift);
    const RegimeInfo r = ref::regime(p, 0);
    const double sv = c.cov == Covariance::ou_rate ? c.sigma2 / (2 * c.mu) : c.s2t;
    CHECK(r.stationary_variance == doctest::Approx(sv).epsilon(1e-14));
    CHECK(r.alpha == doctest::Approx(c.eta2 - sv).epsilon(1e-14));
    CHECK(r.beta == doctest::Approx(c.gamma2 + sv + c.floor).epsilon(1e-14));
    CHECK(r.regime == c.expect);
    for (double lag : lags) {
      CAPTURE(lag);
      const double dt = lag + c.shift;
      const double V = ref::vcov(p, 0, lag);
      if (r.regime == Regime::diffusive) {
        // B = -log(beta) - log(1 - (|alpha|/beta) e^{-2 mu dt})
        const double B = -std::log(r.beta) - std::log(1.0 - (std::fabs(r.alpha) / r.beta) * std::exp(-2 * c.mu * dt));
        CHECK(-std::log(V) == doctest::Approx(B).epsilon(1e-12));
        // precision is highest at lag 0 and falls with lag
        CHECK(ref::vcov(p, 0, lag + 1.0) >= V);
      } else {
        // P = sigmoid(2 mu dt - ln(alpha/beta)) / beta
        const double x = 2 * c.mu * dt - std::log(r.alpha / r.beta);
        const double P = 1.0 / (1.0 + std::exp(-x)) / r.beta;
        CHECK(1.0 / V == doctest::Approx(P).epsilon(1e-12));
        CHECK(ref::vcov(p, 0, lag + 1.0) <= V);  // precision rises with lag
      }
    }
  }
}

TEST_CASE("ou_rate: the small-mu (L'Hopital) switch and mu = 0 heads") {
  const double sigma2 = 0.3, eta2 = 1.2, gamma2 = 0.4, floor = 0.01, shift = 0.5;
  // Below 1e-5: Brownian branch, sigma2 dt exactly.
  const AttentionParams lo = one_head(Covariance::ou_rate, 9e-6, 0.0, sigma2, eta2, gamma2, floor, shift);
  // Above: (1 - E^2) / (2 mu), which is sigma2 dt (1 - mu dt + ...).
  const AttentionParams hi = one_head(Covariance::ou_rate, 1.1e-5, 0.0, sigma2, eta2, gamma2, floor, shift);
  for (double lag : {0.0, 1.0, 10.0, 100.0, 511.0}) {
    CAPTURE(lag);
    const double dt = lag + shift;
    const double Elo = std::exp(-9e-6 * dt), Ehi = std::exp(-1.1e-5 * dt);
    CHECK(ref::vcov(lo, 0, lag) == doctest::Approx(sigma2 * dt + eta2 * Elo * Elo + gamma2 + floor).epsilon(1e-14));
    CHECK(ref::vcov(hi, 0, lag) ==
          doctest::Approx(sigma2 * (1 - Ehi * Ehi) / (2 * 1.1e-5) + eta2 * Ehi * Ehi + gamma2 + floor).epsilon(1e-9));
    // The two branches agree to O(mu dt) across the switch.
    CHECK(std::fabs(ref::vcov(lo, 0, lag) - ref::vcov(hi, 0, lag)) <= 2e-5 * dt * (sigma2 * dt + eta2) + 1e-12);
  }
  CHECK(ref::regime(lo, 0).regime == Regime::brownian);
  CHECK(std::isinf(ref::regime(lo, 0).stationary_variance));
  CHECK(ref::regime(hi, 0).regime == Regime::diffusive);  // sigma2 / (2 mu) = 13636 >> eta2

  // mu = 0: no decay at any lag, linear growth, Brownian label for every covariance kind.
  const AttentionParams zero = one_head(Covariance::ou_rate, 0.0, 0.0, sigma2, eta2, gamma2, floor, shift);
  for (double lag : {0.0, 3.0, 1e4}) {
    CHECK(ref::decay(zero, 0, lag) == 1.0);
    CHECK(ref::vcov(zero, 0, lag) == doctest::Approx(sigma2 * (lag + shift) + eta2 + gamma2 + floor).epsilon(1e-14));
  }
  for (Covariance c : {Covariance::stationary, Covariance::ou_rate, Covariance::residual_diffusion, Covariance::hybrid,
                       Covariance::colored}) {
    AttentionParams z = one_head(c, 0.0, 2.0, sigma2, eta2, gamma2, floor, shift);
    CAPTURE((int)c);
    CHECK(ref::regime(z, 0).regime == Regime::brownian);
    CHECK(std::isfinite(ref::vcov(z, 0, 7.0)));
  }
  // Stationary at mu = 0 is flat: eta2 + gamma2 + floor.
  const AttentionParams sz = one_head(Covariance::stationary, 0.0, 2.0, 0.0, eta2, gamma2, floor);
  CHECK(ref::vcov(sz, 0, 1e5) == doctest::Approx(eta2 + gamma2 + floor).epsilon(1e-14));
  // Hybrid at small mu: s2t dt.
  const AttentionParams hz = one_head(Covariance::hybrid, 1e-6, 2.0, 0.0, eta2, gamma2, floor);
  CHECK(ref::vcov(hz, 0, 10.0) == doctest::Approx(2.0 * 10.0 + eta2 * std::exp(-2e-5) + gamma2 + floor).epsilon(1e-14));
  CHECK(ref::regime(hz, 0).regime == Regime::brownian);
  CHECK(ref::regime(hz, 0).stationary_variance == 2.0);
}

TEST_CASE("decay: lag shift and exponent clamp; 1 - E^2 via expm1") {
  AttentionParams p = one_head(Covariance::stationary, 1.0, 3.0, 0.0, 1.0, 0.0, 0.0, 0.25);
  p.sw.min_exponent = -10.0;
  CHECK(ref::shifted_lag(p, 0, 2.0) == 2.25);
  CHECK(ref::decay(p, 0, 2.0) == doctest::Approx(std::exp(-2.25)).epsilon(1e-15));
  CHECK(ref::decay(p, 0, 0.0) == doctest::Approx(std::exp(-0.25)).epsilon(1e-15));  // the diagonal decays too
  CHECK(ref::decay(p, 0, 50.0) == doctest::Approx(std::exp(-10.0)).epsilon(1e-15));  // clamped
  // The covariance uses the clamped E, in (1 - E^2) as well.
  const double Ec = std::exp(-10.0);
  CHECK(ref::vcov(p, 0, 50.0) == doctest::Approx(3.0 * (1 - Ec * Ec) + Ec * Ec).epsilon(1e-15));
  // max_exponent clamps growth for negative mu.
  AttentionParams n = one_head(Covariance::stationary, -0.5, 3.0, 0.0, 1.0, 0.0);
  CHECK(ref::decay(n, 0, 4.0) == 1.0);
  // 1 - E^2 for tiny mu * dt keeps full relative precision.
  const AttentionParams s = one_head(Covariance::stationary, 1e-3, 1.0, 0.0, 0.0, 0.0);
  CHECK(ref::one_minus_decay_sq(s, 0, 1e-10) == doctest::Approx(2e-13).epsilon(1e-9));
  CHECK(ref::vcov(s, 0, 1e-10) == doctest::Approx(2e-13).epsilon(1e-9));
}

TEST_CASE("residual diffusion adds sigma2 dt to the stationary form") {
  const AttentionParams p = one_head(Covariance::residual_diffusion, 0.2, 1.5, 0.05, 0.8, 0.1, 0.01, 0.3);
  for (double lag : {0.0, 1.0, 20.0}) {
    const double dt = lag + 0.3, E = std::exp(-0.2 * dt);
    CHECK(ref::vcov(p, 0, lag) == doctest::Approx(1.5 * (1 - E * E) + 0.05 * dt + 0.8 * E * E + 0.1 + 0.01).epsilon(1e-14));
  }
  CHECK(ref::regime(p, 0).stationary_variance == 1.5);
}

TEST_CASE("colored covariance: each term is its DLE integral; floor; limits; amplitude budget") {
  // V(dt) = int_0^dt e^{-2 mu (dt - s)} q(s) ds with the noise rate q(s) = sigma2 + c e^{beta s} +
  // a cos(w s) + b sin(w s), plus the measurement terms.
  AttentionParams p = one_head(Covariance::colored, 0.07, 0.0, 0.3, 1.1, 0.4, 0.01, 0.2);
  HeadParams& h = p.head[0];
  h.c_exp = 0.05;
  h.beta_exp = 0.02;
  h.a_per = 0.15;
  h.b_per = -0.1;
  h.omega_per = 0.9;
  for (double lag : {0.0, 0.5, 3.0, 17.0}) {
    CAPTURE(lag);
    const double dt = lag + 0.2;
    auto kernel = [&](double s) { return std::exp(-2 * h.mu * (dt - s)); };
    const double vc = simpson([&](double s) { return kernel(s) * h.sigma2; }, 0, dt);
    const double ve = simpson([&](double s) { return kernel(s) * h.c_exp * std::exp(h.beta_exp * s); }, 0, dt);
    const double vp = simpson(
        [&](double s) { return kernel(s) * (h.a_per * std::cos(h.omega_per * s) + h.b_per * std::sin(h.omega_per * s)); }, 0,
        dt);
    const ref::ColoredTerms t = ref::colored_terms(p, 0, lag);
    CHECK(t.v_const == doctest::Approx(vc).epsilon(1e-10));
    CHECK(t.v_exp == doctest::Approx(ve).epsilon(1e-10));
    CHECK(std::fabs(t.v_per - vp) < 1e-10);
    const double E = std::exp(-h.mu * dt);
    CHECK(ref::vcov(p, 0, lag) == doctest::Approx(vc + ve + vp + h.eta2 * E * E + h.gamma2 + 0.01).epsilon(1e-10));
  }
  CHECK(ref::regime(p, 0).stationary_variance == doctest::Approx(0.3 / 0.14).epsilon(1e-14));

  // The clamp from below at 0.01.
  AttentionParams neg = p;
  neg.head[0].a_per = -50.0;
  neg.head[0].omega_per = 0.0;
  CHECK(ref::vcov(neg, 0, 10.0) == 0.01);

  // Limits: mu = 0 and omega_per = 0 -> periodic a dt; 2 mu + beta = 0 -> exponential c E^2 dt.
  AttentionParams lim = one_head(Covariance::colored, 0.0, 0.0, 0.3, 1.0, 0.5, 0.01);
  lim.head[0].c_exp = 0.2;
  lim.head[0].beta_exp = 0.0;
  lim.head[0].a_per = 0.1;
  lim.head[0].omega_per = 0.0;
  const ref::ColoredTerms tl = ref::colored_terms(lim, 0, 4.0);
  CHECK(tl.v_const == doctest::Approx(0.3 * 4.0));
  CHECK(tl.v_exp == doctest::Approx(0.2 * 4.0));
  CHECK(tl.v_per == doctest::Approx(0.1 * 4.0));
  // Other kinds report no colored terms.
  const ref::ColoredTerms none = ref::colored_terms(one_head(Covariance::ou_rate, 0.1, 0, 1, 1, 1), 0, 3.0);
  CHECK(none.v_const == 0.0);
  CHECK(none.v_exp == 0.0);
  CHECK(none.v_per == 0.0);

  // Amplitude budget: |(a, b)| stays below F = 0.95 min(eta2 + gamma2, sigma2/(2 mu + 1e-5) + gamma2),
  // and small amplitudes pass nearly unchanged.
  double a = 0, b = 0;
  ref::colored_periodic_budget(h, 30.0, 40.0, &a, &b);
  const double F = 0.95 * std::min(h.eta2 + h.gamma2, h.sigma2 / (2 * h.mu + 1e-5) + h.gamma2);
  CHECK(std::hypot(a, b) < F);
  CHECK(std::hypot(a, b) == doctest::Approx(F * std::tanh(50.0 / F)).epsilon(1e-6));
  CHECK(a / b == doctest::Approx(30.0 / 40.0));
  ref::colored_periodic_budget(h, 1e-3, 0.0, &a, &b);
  CHECK(a == doctest::Approx(1e-3).epsilon(1e-5));
}

TEST_CASE("bias and precision types; curves") {
  AttentionParams p = one_head(Covariance::ou_rate, 0.05, 0.0, 0.2, 1.3, 0.7, 0.01, 0.69);
  p.head[0].nu = 130.58;
  const double lag = 5.0, dt = lag + 0.69;
  const double V = ref::vcov(p, 0, lag);

  p.sw.additive_bias = AdditiveBias::none;
  CHECK(ref::bias(p, 0, lag) == 0.0);
  p.sw.additive_bias = AdditiveBias::neg_log_vcov;
  CHECK(ref::bias(p, 0, lag) == doctest::Approx(-std::log(V)).epsilon(1e-15));
  p.sw.additive_bias = AdditiveBias::linear_lag;
  CHECK(ref::bias(p, 0, lag) == doctest::Approx(-(0.2 / (1.3 + 0.7)) * dt).epsilon(1e-15));

  p.sw.precision = RobustPrecision::inv_sqrt_d;
  CHECK(ref::precision(p, 0, lag) == doctest::Approx(0.5).epsilon(1e-15));  // D = 4
  p.sw.precision = RobustPrecision::inv_nu_vcov;
  CHECK(ref::precision(p, 0, lag) == doctest::Approx(1.0 / (130.58 * V)).epsilon(1e-15));
  p.sw.precision = RobustPrecision::inv_linear;
  CHECK(ref::precision(p, 0, lag) == doctest::Approx(1.0 / (0.2 * dt + 1.3)).epsilon(1e-15));

  p.sw.additive_bias = AdditiveBias::neg_log_vcov;
  p.sw.precision = RobustPrecision::inv_nu_vcov;
  const std::vector<double> lags = {0, 1, 2, 100, 1000};
  const ref::Curves c = ref::curves(p, 0, lags);
  REQUIRE(c.E.size() == lags.size());
  for (size_t k = 0; k < lags.size(); ++k) {
    CHECK(c.lag[k] == lags[k]);
    CHECK(c.E[k] == ref::decay(p, 0, lags[k]));
    CHECK(c.vcov[k] == ref::vcov(p, 0, lags[k]));
    CHECK(c.P[k] == ref::precision(p, 0, lags[k]));
    CHECK(c.B[k] == ref::bias(p, 0, lags[k]));
    CHECK(c.prior_precision[k] == doctest::Approx(1.0 / c.vcov[k]).epsilon(1e-15));
    CHECK(c.log_prior[k] == doctest::Approx(c.B[k]).epsilon(1e-15));
    if (k > 0) CHECK(c.E[k] <= c.E[k - 1]);
  }
}
