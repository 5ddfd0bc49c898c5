// The runtime's host physics (model/physics: lag kernels, regimes, pair terms from the rotated
// caches) against the double twin (reference/rfa_math, reference/attention_ref), which is written
// separately from the definitions: every covariance, bias, precision and switch, random heads,
// lags from 0 to 1e4, the Brownian limits.
#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <random>

#include "model/physics.hpp"
#include "model_factory.hpp"
#include "reference/attention_ref.hpp"
#include "reference/rfa_math.hpp"

using namespace rfa;

namespace {

bool close(double a, double b, double tol = 1e-12) {
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::fabs(a - b) <= tol * (1.0 + std::fabs(b));
}

AttentionParams random_params(uint32_t seed, int H, int D) {
  std::mt19937 rng(seed);
  AttentionParams p = test::make_params(H, D, rng);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (auto& hp : p.head) {
    hp.c_exp = 0.3 * u(rng);
    hp.beta_exp = 0.1 * u(rng);
    hp.a_per = 0.2 * u(rng);
    hp.b_per = -0.1 * u(rng);
    hp.omega_per = u(rng);
  }
  p.head[0].mu = 0.0;     // Brownian
  p.head[1].mu = 3e-6;    // the L'Hopital branch
  return p;
}

}  // namespace

TEST_CASE("lag kernels and regimes equal the twin for every switch") {
  const std::vector<double> lags = {0.0, 1e-7, 0.3, 1.0, 7.5, 100.0, 1e4};
  int checked = 0;
  for (int cov = 0; cov < 5; ++cov)
    for (int bias = 0; bias < 3; ++bias)
      for (int prec = 0; prec < 3; ++prec) {
        AttentionParams p = random_params(100 + cov * 9 + bias * 3 + prec, 4, 8);
        p.sw.covariance = (Covariance)cov;
        p.sw.additive_bias = (AdditiveBias)bias;
        p.sw.precision = (RobustPrecision)prec;
        for (int h = 0; h < p.heads; ++h) {
          const RegimeInfo a = physics::regime(p, h), b = ref::regime(p, h);
          CHECK(a.regime == b.regime);
          CHECK(close(a.stationary_variance, b.stationary_variance));
          CHECK(close(a.alpha, b.alpha));
          CHECK(close(a.beta, b.beta));
          for (double lag : lags) {
            CAPTURE(cov);
            CAPTURE(bias);
            CAPTURE(prec);
            CAPTURE(h);
            CAPTURE(lag);
            const physics::LagTerms t = physics::lag_terms(p, h, lag);
            CHECK(close(t.dt, ref::shifted_lag(p, h, lag)));
            CHECK(close(t.E, ref::decay(p, h, lag)));
            CHECK(close(t.vcov, ref::vcov(p, h, lag), 1e-10));
            CHECK(close(t.B, ref::bias(p, h, lag), 1e-10));
            CHECK(close(t.P, ref::precision(p, h, lag), 1e-10));
            ++checked;
          }
        }
      }
  CHECK(checked == 5 * 3 * 3 * 4 * 7);
}

TEST_CASE("pair terms from the rotated caches equal the twin's, formed from the residual directly") {
  for (bool full : {true, false})
    for (bool robust : {true, false})
      for (bool causal : {true, false}) {
        AttentionParams p = random_params(7 + full + 2 * robust + 4 * causal, 3, 8);
        p.sw.full_residual = full;
        p.sw.robust = robust;
        p.sw.causal = causal;
        std::mt19937 rng(11);
        std::normal_distribution<double> g(0.0, 1.0);
        for (int h = 0; h < p.heads; ++h)
          for (auto [ti, tj] : {std::pair{5.0, 2.0}, std::pair{1.0e6 + 3.5, 1.0e6}, std::pair{2.0, 7.0}}) {
            const int D = p.dim;
            std::vector<std::complex<double>> q(D), k(D), q_rot(D), k_rot(D);
            for (int d = 0; d < D; ++d) {
              q[d] = {g(rng), g(rng)};
              k[d] = {g(rng), g(rng)};
              const double w = p.omega[(size_t)h * D + d];
              q_rot[d] = q[d] * std::polar(1.0, -w * ti);  // the stationary frame, as the caches hold it
              k_rot[d] = k[d] * std::polar(1.0, -w * tj);
            }
            const physics::PairTerms a = physics::pair_terms(p, h, q_rot, k_rot, ti, tj);
            const ref::PairTerms b = ref::pair_terms(p, h, q.data(), k.data(), ti, tj);
            const double t_query = ti;  // a plain copy: CAPTURE cannot name a structured binding (clang 14)
            CAPTURE(h);
            CAPTURE(t_query);
            CHECK(close(a.lag, b.lag));
            CHECK(close(a.k.E, b.E));
            CHECK(close(a.q_norm2, b.q_norm2, 1e-9));
            CHECK(close(a.k_norm2, b.k_norm2, 1e-9));
            // At t ~ 1e6 the phases carry ~1e-10 relative error in double: tolerances say so.
            CHECK(close(a.cross, b.cross, 1e-8));
            CHECK(close(a.R2, b.R2, 1e-8));
            CHECK(close(a.L, b.L, 1e-8));
            CHECK(close(a.logit, b.logit, 1e-8));
          }
      }
}
