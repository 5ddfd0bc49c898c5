// The CPU twin of memory-optimised Adaptive Filter Attention (reference/afa_ref) against independent
// computations (docs/variant-afa.md): the thesis's worked values, the damped spiral's e^{0.1 A}, the
// factorised rotated-frame form of the score and aggregate, the RFA kernel it reduces to with one
// decay per head, the zero-noise and large-noise limits against dot-product attention with
// rotations, the unitary switch, decode against prefill, time rescaling and shifting, and errors.
#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "afa_twin_support.hpp"
#include "cpu_test_support.hpp"
#include "reference/afa_ref.hpp"

using namespace rfa;
using namespace rfa::ref;

namespace {

using rfa::test::random_complex;
using rfa::test::afa_random_params;
using rfa::test::max_rel_diff;

// Irregular timestamps on a 1/32 grid (every sum and difference exact in double, offsets included).
std::vector<double> grid_times(int B, int N, uint32_t seed, double offset = 0.0) {
  test::TimeSteps steps;
  steps.grid = 32;
  return test::irregular_times(B, N, seed, offset, steps);
}

constexpr double kPi = 3.14159265358979323846;

cd cis(double a) { return cd(std::cos(a), std::sin(a)); }

// The memory-optimised layer in the factorised, rotated-frame form a kernel would use (rotations
// per token, decays per pair, the residual expanded as |q|^2 + e^2 |k|^2 - 2 e Re(conj(q~) k~)),
// written here without the twin's code: it shares only the definitions.
struct Naive {
  std::vector<cd> filtered, est;
  std::vector<double> attn, lse;
};
Naive naive_afa(const AfaParams& p, int B, int N, const std::vector<cd>& Q, const std::vector<cd>& K,
                const std::vector<cd>& V, const std::vector<double>& t, const std::vector<double>& horizon = {}) {
  REQUIRE(!p.unitary);
  const int H = p.heads, D = p.dim;
  Naive o;
  o.filtered.assign((size_t)B * N * H * D, 0.0);
  o.est = o.filtered;
  o.attn.assign((size_t)B * H * N * N, 0.0);
  o.lse.assign((size_t)B * H * N, 0.0);
  auto idx = [&](int b, int n, int h, int k) { return (((size_t)b * N + n) * H + h) * D + k; };
  auto cov = [&](int h, int k, double al) {
    const size_t c = (size_t)h * D + k;
    const double mu = -p.lambda_re[c];
    const double e2 = std::exp(-2.0 * mu * al);
    const double g2 = p.gamma2.empty() ? 0.0 : p.gamma2[c];
    return p.sigma2[c] * (mu > 0 ? (1.0 - e2) / (2.0 * mu) : al) + p.eta2[c] * e2 + g2;
  };
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      const AfaHeadParams& hp = p.head[(size_t)h];
      for (int i = 0; i < N; ++i) {
        const double ti = t[(size_t)b * N + i];
        std::vector<double> logit((size_t)N, -INFINITY);
        double m = -INFINITY;
        for (int j = 0; j < N; ++j) {
          if (p.causal && j > i) continue;
          const double tj = t[(size_t)b * N + j], al = std::fabs(ti - tj);
          double vC = 0.0;
          if (p.precision == AfaPrecision::channel_sum)
            for (int k = 0; k < D; ++k) vC += cov(h, k, al);
          else if (p.precision == AfaPrecision::one_channel)
            vC = cov(h, hp.precision_channel, al);
          else {
            double prec = hp.weight_bias;
            for (int k = 0; k < D; ++k) prec += p.weight[(size_t)h * D + k] / cov(h, k, al);
            vC = 1.0 / prec;
          }
          double R2 = 0.0;
          for (int k = 0; k < D; ++k) {
            const double w = p.omega[(size_t)h * D + k], e = std::exp(p.lambda_re[(size_t)h * D + k] * al);
            const cd q = Q[idx(b, i, h, k)], kk = K[idx(b, j, h, k)];
            const cd qr = q * cis(-w * ti), kr = kk * cis(-w * tj);
            R2 += std::norm(q) + e * e * std::norm(kk) - 2.0 * e * (std::conj(qr) * kr).real();
          }
          logit[(size_t)j] = -hp.alpha * hp.alpha * std::log(hp.nu * vC + R2 + hp.eps);
          m = std::fmax(m, logit[(size_t)j]);
        }
        double l = 0.0;
        for (int j = 0; j < N; ++j) l += std::exp(logit[(size_t)j] - m);
        const size_t r = ((size_t)b * H + h) * N + i;
        o.lse[r] = m + std::log(l);
        for (int j = 0; j < N; ++j) o.attn[r * N + j] = std::exp(logit[(size_t)j] - m) / l;
        const double hz = horizon.empty() ? hp.pred_dt : horizon[(size_t)b * N + i];
        for (int k = 0; k < D; ++k) {
          const double w = p.omega[(size_t)h * D + k], re = p.lambda_re[(size_t)h * D + k];
          cd acc = 0.0;
          for (int j = 0; j < N; ++j) {
            if (p.causal && j > i) continue;
            const double tj = t[(size_t)b * N + j];
            acc += o.attn[r * N + j] * std::exp(re * std::fabs(ti - tj)) * (V[idx(b, j, h, k)] * cis(-w * tj));
          }
          acc *= cis(w * ti);
          if (p.mix) {
            const double s = 1.0 / (1.0 + std::exp(-p.delta[(size_t)h * D + k]));
            acc = (1.0 - s) * V[idx(b, i, h, k)] + s * acc;
          }
          o.filtered[idx(b, i, h, k)] = acc;
          o.est[idx(b, i, h, k)] = std::exp(cd(re, w) * hz) * acc;
        }
      }
    }
  return o;
}

AfaOutputs run(const AfaParams& p, int B, int N, const std::vector<cd>& Q, const std::vector<cd>& K,
               const std::vector<cd>& V, const std::vector<double>& t, const std::vector<double>* horizon = nullptr) {
  AfaOutputs o;
  AfaOptions opt;
  opt.want_matrices = true;
  opt.horizon = horizon;
  const Status s = afa_forward(p, B, N, Q, K, V, t, &o, opt);
  INFO(s.message());
  REQUIRE(s.ok());
  return o;
}

bool contains(const Status& s, const std::string& what) { return !s.ok() && s.message().find(what) != std::string::npos; }

// The real dot product of two complex vectors embedded as (re, im) pairs, each pair rotated by its
// own angle: RoPE.
double rope_dot(const std::vector<cd>& a, const std::vector<double>& angle_a, const std::vector<cd>& b,
                const std::vector<double>& angle_b) {
  double s = 0.0;
  for (size_t k = 0; k < a.size(); ++k) {
    const double ax = a[k].real() * std::cos(angle_a[k]) - a[k].imag() * std::sin(angle_a[k]);
    const double ay = a[k].real() * std::sin(angle_a[k]) + a[k].imag() * std::cos(angle_a[k]);
    const double bx = b[k].real() * std::cos(angle_b[k]) - b[k].imag() * std::sin(angle_b[k]);
    const double by = b[k].real() * std::sin(angle_b[k]) + b[k].imag() * std::cos(angle_b[k]);
    s += ax * bx + ay * by;
  }
  return s;
}

}  // namespace

TEST_CASE("afa twin: the worked example (D = 1, full AFA equals the memory-optimised form)") {
  // lambda = -0.1 + 1i, sigma2 = 1, eta2 = 0.5, gamma2 = 0, nu = alpha = 1, eps = 0, t = (0, 1).
  const test::AfaWorkedExample e = test::afa_worked_example(false);
  const AfaParams& p = e.p;
  const std::vector<cd>&Q = e.Q, &K = e.K, &V = e.V;
  const std::vector<double>& t = e.t;

  const AfaChannelKernel k1 = afa_channel_kernel(p, 0, 0, 1.0), k0 = afa_channel_kernel(p, 0, 0, 0.0);
  CHECK(k1.cov == doctest::Approx(1.315712).epsilon(1e-6));
  CHECK(k1.P == doctest::Approx(0.760045).epsilon(1e-6));
  CHECK(k0.cov == 0.5);
  CHECK(k0.P == 2.0);
  const AfaPairTerms j0 = afa_pair_terms(p, 0, &Q[1], &K[0], 1.0, 0.0), j1 = afa_pair_terms(p, 0, &Q[1], &K[1], 1.0, 1.0);
  CHECK(j0.R2 == doctest::Approx(1.681874).epsilon(1e-6));
  CHECK(j1.R2 == doctest::Approx(0.04).epsilon(1e-12));
  // The full form's robust weight and value-side precision, from the kernels (A6, A7 with D = 1).
  const double W0 = 1.0 / (1.0 + k1.P * j0.R2), W1 = 1.0 / (1.0 + k0.P * j1.R2);
  CHECK(W0 == doctest::Approx(0.438924).epsilon(1e-6));
  CHECK(W1 == doctest::Approx(0.925926).epsilon(1e-6));
  CHECK(W0 * k1.P == doctest::Approx(0.333602).epsilon(1e-6));
  CHECK(W1 * k0.P == doctest::Approx(1.851852).epsilon(1e-6));

  const AfaOutputs o = run(p, 1, 2, Q, K, V, t);
  // Memory-optimised weights exp(-log(v + R2)) = 1/(v + R2) = W P: the two forms agree at D = 1.
  CHECK(o.attn[2] == doctest::Approx(W0 * k1.P / (W0 * k1.P + W1 * k0.P)).epsilon(1e-13));
  CHECK(o.attn[2] == doctest::Approx(0.152646).epsilon(1e-5));
  CHECK(o.attn[3] == doctest::Approx(0.847354).epsilon(1e-6));
  CHECK(o.attn[1] == 0.0);  // causal
  CHECK(o.filtered[1].real() == doctest::Approx(0.074627).epsilon(1e-5));
  CHECK(o.filtered[1].imag() == doctest::Approx(0.963578).epsilon(1e-6));
  CHECK(o.est[1].real() == doctest::Approx(-0.697179).epsilon(1e-6));
  CHECK(o.est[1].imag() == doctest::Approx(0.527900).epsilon(1e-6));
  // First position: one key at lag 0, so the estimate is V_0 itself.
  CHECK(o.filtered[0] == V[0]);
}

TEST_CASE("afa twin: per-channel covariance hand values (mu = 0.1, stationary variance 5, eta2 = 1)") {
  AfaParams p;
  p.heads = 1;
  p.dim = 1;
  p.lambda_re = {-0.1};
  p.omega = {0.0};
  p.sigma2 = {1.0};  // sigma2 / (2 mu) = 5
  p.eta2 = {1.0};
  p.head = {AfaHeadParams{}};
  CHECK(afa_channel_kernel(p, 0, 0, 0.0).cov == doctest::Approx(1.0).epsilon(1e-15));
  CHECK(afa_channel_kernel(p, 0, 0, 0.1).cov == doctest::Approx(1.079205).epsilon(1e-6));
  CHECK(afa_channel_kernel(p, 0, 0, 1.0).cov == doctest::Approx(1.725077).epsilon(1e-6));
  CHECK(afa_channel_kernel(p, 0, 0, 10.0).cov == doctest::Approx(4.458659).epsilon(1e-6));
  // Brownian limit: at mu = 0 the process term is sigma2 l exactly, and tiny mu approaches it
  // smoothly (no threshold on mu alone: at l = 1e4 a threshold at mu = 1e-5 would jump by 10%).
  p.lambda_re = {0.0};
  CHECK(afa_channel_kernel(p, 0, 0, 1e4).cov == 1e4 + 1.0);
  p.lambda_re = {-1e-9};
  CHECK(afa_channel_kernel(p, 0, 0, 1e4).phi == doctest::Approx(1e4 * (1.0 - 1e-5)).epsilon(1e-9));
}

TEST_CASE("afa twin: the damped spiral's prediction step is e^{0.1 A} in the original basis") {
  // S Lambda S^-1 with Lambda = diag(-0.1 - i, -0.1 + i): one conjugate pair.
  AfaParams p;
  p.heads = 1;
  p.dim = 2;
  REQUIRE(afa_set_conjugate_pairs(&p, {-0.1}, {-1.0}).ok());
  CHECK(p.omega[0] == -1.0);
  CHECK(p.omega[1] == 1.0);
  p.sigma2 = {0.3, 0.3};
  p.eta2 = {0.2, 0.2};
  p.head = {AfaHeadParams{}};
  p.head[0].pred_dt = 0.1;
  const cd i1(0, 1);
  const std::vector<cd> S = {1.0 - i1, 1.0 + i1, 1.0, 1.0};                      // [2][2]
  const std::vector<cd> Si = {0.5 * i1, 0.5 * (1.0 - i1), -0.5 * i1, 0.5 * (1.0 + i1)};
  std::vector<AfaChannelInfo> info;
  REQUIRE(afa_channel_info(p, 0, &info).ok());
  const cd lam[2] = {cd(info[0].lambda_re, info[0].omega), cd(info[1].lambda_re, info[1].omega)};
  const double A_hand[4] = {0.9, -2.0, 1.0, -1.1};
  const double expA_hand[4] = {1.083944, -0.197680, 0.098840, 0.886264};
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 2; ++c) {
      const cd a = S[r * 2 + 0] * lam[0] * Si[0 * 2 + c] + S[r * 2 + 1] * lam[1] * Si[1 * 2 + c];
      CHECK(a.real() == doctest::Approx(A_hand[r * 2 + c]).epsilon(1e-14));
      CHECK(std::fabs(a.imag()) < 1e-14);
    }
  // Column c of e^{0.1 A}: S * predict(S^-1 e_c) with one position (the estimate is V_0 itself).
  for (int c = 0; c < 2; ++c) {
    const std::vector<cd> V = {Si[0 * 2 + c], Si[1 * 2 + c]};
    const AfaOutputs o = run(p, 1, 1, V, V, V, {0.0});
    for (int r = 0; r < 2; ++r) {
      const cd x = S[r * 2 + 0] * o.est[0] + S[r * 2 + 1] * o.est[1];
      CHECK(x.real() == doctest::Approx(expA_hand[r * 2 + c]).epsilon(1e-6));
      CHECK(std::fabs(x.imag()) < 1e-15);
    }
  }
  // Basis consistency: W_V = S^-1, W_P = S is consistent; W_P = 2 S leaves W_V W_P - I = I.
  const Result<double> ok = afa_basis_consistency(Si, S, 2, 2);
  REQUIRE(ok.ok());
  CHECK(ok.value() < 1e-15);
  std::vector<cd> S2 = S;
  for (auto& x : S2) x *= 2.0;
  CHECK(afa_basis_consistency(Si, S2, 2, 2).value() == doctest::Approx(std::sqrt(2.0)).epsilon(1e-14));
  // The eigenvalues' time constant and period (the viewer's eigenvalue plot).
  CHECK(info[0].time_constant == doctest::Approx(10.0).epsilon(1e-15));
  CHECK(info[1].period == doctest::Approx(2 * kPi).epsilon(1e-15));
}

TEST_CASE("afa twin: momentum hand values (critical damping of the second-order iteration)") {
  // The hand value and the corrected discriminant (the tied iterations' momentum itself:
  // tests/test_reference_afa_full.cpp).
  const double e = 0.5, g = (std::sqrt(e) - 1.0) * (std::sqrt(e) - 1.0);
  CHECK(g == doctest::Approx(0.085786).epsilon(1e-5));
  CHECK(std::sqrt(g) == doctest::Approx(0.292893).epsilon(1e-6));
  // Characteristic polynomial x^2 - (1 + g - e) x + g: discriminant (1 + g - e)^2 - 4 g is 0 here,
  // and the double root is (1 + g - e)/2 = sqrt(g).
  CHECK(std::fabs((1 + g - e) * (1 + g - e) - 4 * g) < 1e-15);
  CHECK((1 + g - e) / 2 == doctest::Approx(std::sqrt(g)).epsilon(1e-15));
  // The thesis's printed form (1 + g e)^2 - 4 g is not zero at critical damping.
  CHECK(std::fabs((1 + g * e) * (1 + g * e) - 4 * g) > 0.5);
}

TEST_CASE("afa twin: agrees with the factorised rotated-frame form at every size, switch and precision source") {
  for (int B : {1, 2})
    for (int N : {1, 2, 61, 127})
      for (int D : {4, 8})
        for (int H : {1, 3}) {
          CAPTURE(B);
          CAPTURE(N);
          CAPTURE(D);
          CAPTURE(H);
          const uint32_t seed = (uint32_t)(B * 1000 + N * 10 + D + H);
          AfaParams p = afa_random_params(H, D, seed, (N + D) % 2 == 0);
          const size_t n = (size_t)B * N * H * D;
          const auto Q = random_complex(n, seed + 1), K = random_complex(n, seed + 2), V = random_complex(n, seed + 3);
          const auto t = grid_times(B, N, seed + 4);
          for (AfaPrecision prec : {AfaPrecision::channel_sum, AfaPrecision::one_channel, AfaPrecision::weighted})
            for (int sw = 0; sw < 3; ++sw) {
              CAPTURE((int)prec);
              CAPTURE(sw);
              p.precision = prec;
              p.mix = sw == 1;
              p.causal = sw != 2;
              const AfaOutputs o = run(p, B, N, Q, K, V, t);
              const Naive r = naive_afa(p, B, N, Q, K, V, t);
              // The factorised form rotates by omega t (t up to ~250): its phases carry ~|omega t| ulp.
              CHECK(max_rel_diff(o.filtered, r.filtered) < 1e-11);
              CHECK(max_rel_diff(o.est, r.est) < 1e-11);
              CHECK(max_rel_diff(o.attn, r.attn) < 1e-11);
              CHECK(max_rel_diff(o.row_lse, r.lse) < 1e-11);
              // Rows of the attention sum to 1 and the causal mask holds.
              double worst_sum = 0.0, masked = 0.0;
              for (int b = 0; b < B; ++b)
                for (int h = 0; h < H; ++h)
                  for (int i = 0; i < N; ++i) {
                    const size_t row = ((size_t)b * H + h) * N + i;
                    double sum = 0.0;
                    for (int j = 0; j < N; ++j) {
                      sum += o.attn[row * N + j];
                      if (p.causal && j > i) masked = std::fmax(masked, std::fabs(o.attn[row * N + j]));
                    }
                    worst_sum = std::fmax(worst_sum, std::fabs(sum - 1.0));
                  }
              CHECK(worst_sum < 1e-13);
              CHECK(masked == 0.0);
            }
        }
}

TEST_CASE("afa twin: first position returns V_0, with and without the mix; the prediction is e^{lambda h} V_0") {
  for (int D : {4, 8}) {
    AfaParams p = afa_random_params(3, D, 77);
    const int B = 2, N = 61;
    const size_t n = (size_t)B * N * 3 * D;
    const auto Q = random_complex(n, 1), K = random_complex(n, 2), V = random_complex(n, 3);
    const auto t = grid_times(B, N, 4, 5.0);
    for (bool mix : {false, true}) {
      p.mix = mix;
      const AfaOutputs o = run(p, B, N, Q, K, V, t);
      for (int b = 0; b < B; ++b)
        for (int h = 0; h < 3; ++h)
          for (int k = 0; k < D; ++k) {
            const size_t x = (((size_t)b * N + 0) * 3 + h) * D + k;
            if (mix)
              CHECK(std::abs(o.filtered[x] - V[x]) < 1e-15 * std::abs(V[x]) + 1e-300);
            else
              CHECK(o.filtered[x] == V[x]);
            const cd lam(p.lambda_re[(size_t)h * D + k], p.omega[(size_t)h * D + k]);
            CHECK(std::abs(o.est[x] - std::exp(lam * p.head[(size_t)h].pred_dt) * V[x]) < 1e-14 * std::abs(V[x]));
          }
    }
  }
}

TEST_CASE("afa twin: the mix blends the query's own value with the aggregate per channel") {
  const int B = 1, N = 61, H = 3, D = 8;
  AfaParams p = afa_random_params(H, D, 5);
  const size_t n = (size_t)B * N * H * D;
  const auto Q = random_complex(n, 6), K = random_complex(n, 7), V = random_complex(n, 8);
  const auto t = grid_times(B, N, 9);
  const AfaOutputs plain = run(p, B, N, Q, K, V, t);
  p.mix = true;
  const AfaOutputs mixed = run(p, B, N, Q, K, V, t);
  std::vector<AfaChannelInfo> info;
  for (int h = 0; h < H; ++h) {
    REQUIRE(afa_channel_info(p, h, &info).ok());
    for (int i = 0; i < N; ++i)
      for (int k = 0; k < D; ++k) {
        const size_t x = ((size_t)i * H + h) * D + k;
        const double s = info[(size_t)k].mix_gate;
        CHECK(s == doctest::Approx(1.0 / (1.0 + std::exp(-p.delta[(size_t)h * D + k]))).epsilon(1e-15));
        CHECK(std::abs(mixed.filtered[x] - ((1 - s) * V[x] + s * plain.filtered[x])) < 1e-14);
      }
  }
}

TEST_CASE("afa twin: one decay per head reduces to the RFA kernel with kappa = 1 and tau = alpha^2") {
  // RFA (docs/math.md): L = -log Vcov - log(1 + R2 / (nu Vcov)), logits tau L, A = Ahat E, the
  // aggregate counter-rotated; ou_rate covariance with sigma2 = sum_k sigma2_k, eta2 = sum_k eta2_k,
  // gamma2 = sum_k gamma2_k. The row constant -alpha^2 log nu cancels in the softmax.
  const int B = 2, N = 61, H = 3, D = 8;
  AfaParams p = afa_random_params(H, D, 11, true);
  for (int h = 0; h < H; ++h) {
    p.head[(size_t)h].eps = 0.0;
    for (int k = 0; k < D; ++k) p.lambda_re[(size_t)h * D + k] = -0.05 * (h + 1);
  }
  const size_t n = (size_t)B * N * H * D;
  const auto Q = random_complex(n, 12), K = random_complex(n, 13), V = random_complex(n, 14);
  const auto t = grid_times(B, N, 15);
  const AfaOutputs o = run(p, B, N, Q, K, V, t);
  double worst = 0.0;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      double s2 = 0, e2 = 0, g2 = 0;
      for (int k = 0; k < D; ++k) {
        s2 += p.sigma2[(size_t)h * D + k];
        e2 += p.eta2[(size_t)h * D + k];
        g2 += p.gamma2[(size_t)h * D + k];
      }
      const double mu = -p.lambda_re[(size_t)h * D], nu = p.head[(size_t)h].nu;
      const double tau = p.head[(size_t)h].alpha * p.head[(size_t)h].alpha;
      for (int i = 0; i < N; ++i) {
        const double ti = t[(size_t)b * N + i];
        std::vector<double> logit((size_t)i + 1), E((size_t)i + 1);
        double m = -INFINITY;
        for (int j = 0; j <= i; ++j) {
          const double lag = ti - t[(size_t)b * N + j];
          E[(size_t)j] = std::exp(-mu * lag);
          const double Vcov = s2 * (1 - E[(size_t)j] * E[(size_t)j]) / (2 * mu) + e2 * E[(size_t)j] * E[(size_t)j] + g2;
          double R2 = 0;
          for (int k = 0; k < D; ++k) {
            const cd q = Q[(((size_t)b * N + i) * H + h) * D + k], kk = K[(((size_t)b * N + j) * H + h) * D + k];
            R2 += std::norm(q - E[(size_t)j] * cis(p.omega[(size_t)h * D + k] * lag) * kk);
          }
          logit[(size_t)j] = tau * (-std::log(Vcov) - std::log1p(R2 / (nu * Vcov)));
          m = std::fmax(m, logit[(size_t)j]);
        }
        double l = 0;
        for (int j = 0; j <= i; ++j) l += std::exp(logit[(size_t)j] - m);
        for (int k = 0; k < D; ++k) {
          cd acc = 0;
          for (int j = 0; j <= i; ++j) {
            const double A = std::exp(logit[(size_t)j] - m) / l * E[(size_t)j];
            acc += A * cis(p.omega[(size_t)h * D + k] * (ti - t[(size_t)b * N + j])) *
                   V[(((size_t)b * N + j) * H + h) * D + k];
          }
          worst = std::fmax(worst, std::abs(acc - o.filtered[(((size_t)b * N + i) * H + h) * D + k]));
        }
      }
    }
  CHECK(worst < 1e-13);
}

TEST_CASE("afa twin: equal residuals under a constant precision give weights exactly 1/n") {
  // mu = 0 and sigma2 = 0: v^C = sum eta2 at every lag; q = 0 and unit-modulus keys: R2 = D for
  // every key. The row is uniform, its entropy log(i + 1).
  const int N = 61, H = 3, D = 4;
  AfaParams p = afa_random_params(H, D, 21);
  for (auto& x : p.lambda_re) x = 0.0;
  for (auto& x : p.sigma2) x = 0.0;
  const size_t n = (size_t)N * H * D;
  std::vector<cd> Q(n, cd(0, 0)), K = random_complex(n, 22), V = random_complex(n, 23);
  for (auto& x : K) x /= std::abs(x);
  const auto t = grid_times(1, N, 24);
  const AfaOutputs o = run(p, 1, N, Q, K, V, t);
  AfaRowDiagnostics d;
  REQUIRE(afa_row_diagnostics(p, 1, N, t, o, &d).ok());
  for (int h = 0; h < H; ++h)
    for (int i = 0; i < N; ++i) {
      const size_t r = (size_t)h * N + i;
      for (int j = 0; j <= i; ++j) CHECK(o.attn[r * N + j] == doctest::Approx(1.0 / (i + 1)).epsilon(1e-14));
      CHECK(d.entropy[r] == doctest::Approx(std::log(i + 1.0)).epsilon(1e-13));
      CHECK(d.max_weight[r] == doctest::Approx(1.0 / (i + 1)).epsilon(1e-14));
    }
}

TEST_CASE("afa twin: zero noise and zero decay is a power kernel of the rotated dot product, not its softmax") {
  // Exact: with v^C = 0, eps = 0, mu = 0 and unit-modulus channels, R2 = 2 (D - s) with s the RoPE
  // dot product of query and key, so Q_ij = (D - s_ij)^{-alpha^2} / sum_j' (D - s_ij')^{-alpha^2}.
  for (int D : {4, 8})
    for (int N : {2, 61}) {
      CAPTURE(D);
      CAPTURE(N);
      const int H = 3;
      AfaParams p = afa_random_params(H, D, 31);
      for (auto& x : p.sigma2) x = 0.0;
      for (auto& x : p.eta2) x = 0.0;
      for (auto& hp : p.head) hp.eps = 0.0;
      p.unitary = true;  // Re(lambda) = 0, phases only
      const size_t n = (size_t)N * H * D;
      const auto Q = random_complex(n, 32), K = random_complex(n, 33), V = random_complex(n, 34);
      const auto t = grid_times(1, N, 35);
      const AfaOutputs o = run(p, 1, N, Q, K, V, t);
      double worst_w = 0, worst_v = 0, thesis_gap = 0;
      for (int h = 0; h < H; ++h)
        for (int i = 0; i < N; ++i) {
          std::vector<cd> q((size_t)D);
          std::vector<double> ang_i((size_t)D);
          for (int k = 0; k < D; ++k) {
            const cd z = Q[((size_t)i * H + h) * D + k];
            q[(size_t)k] = z / std::abs(z);
            ang_i[(size_t)k] = -p.omega[(size_t)h * D + k] * t[(size_t)i];
          }
          std::vector<double> s((size_t)i + 1), w((size_t)i + 1), soft((size_t)i + 1);
          double sum = 0, ssum = 0;
          const double a2 = p.head[(size_t)h].alpha * p.head[(size_t)h].alpha;
          for (int j = 0; j <= i; ++j) {
            std::vector<cd> kk((size_t)D);
            std::vector<double> ang_j((size_t)D);
            for (int k = 0; k < D; ++k) {
              const cd z = K[((size_t)j * H + h) * D + k];
              kk[(size_t)k] = z / std::abs(z);
              ang_j[(size_t)k] = -p.omega[(size_t)h * D + k] * t[(size_t)j];
            }
            s[(size_t)j] = rope_dot(q, ang_i, kk, ang_j);
            w[(size_t)j] = std::pow(D - s[(size_t)j], -a2);
            soft[(size_t)j] = std::exp(a2 * s[(size_t)j] / D);  // the thesis's first-order reading
            sum += w[(size_t)j];
            ssum += soft[(size_t)j];
          }
          for (int j = 0; j <= i; ++j) {
            worst_w = std::fmax(worst_w, std::fabs(o.attn[((size_t)h * N + i) * N + j] - w[(size_t)j] / sum));
            thesis_gap = std::fmax(thesis_gap, std::fabs(soft[(size_t)j] / ssum - w[(size_t)j] / sum));
          }
          for (int k = 0; k < D; ++k) {
            cd acc = 0;
            for (int j = 0; j <= i; ++j)
              acc += w[(size_t)j] / sum * cis(p.omega[(size_t)h * D + k] * (t[(size_t)i] - t[(size_t)j])) *
                     V[((size_t)j * H + h) * D + k];
            worst_v = std::fmax(worst_v, std::abs(acc - o.filtered[((size_t)i * H + h) * D + k]));
          }
        }
      CHECK(worst_w < 1e-13);
      CHECK(worst_v < 1e-13);
      // softmax(alpha^2 s / D) is only the first-order expansion; on unit-modulus inputs s/D is
      // not small and the two rows differ visibly.
      if (N > 2) CHECK(thesis_gap > 1e-3);
    }
}

TEST_CASE("afa twin: a large constant noise with matched temperature tends to RoPE dot-product softmax") {
  // With v^C = V constant (sigma2 = 0, mu = 0), unit-modulus channels and alpha^2 = beta (nu V + 2D)/2:
  // alpha^2 L = const + beta s + O(beta D^2 / V), so Q -> softmax_j(beta s_ij) as V grows.
  const int N = 61, H = 1, D = 8;
  const double beta = 0.7;
  AfaParams p = afa_random_params(H, D, 41);
  for (auto& x : p.sigma2) x = 0.0;
  p.unitary = true;
  p.head[0].eps = 0.0;
  p.head[0].nu = 1.0;
  const size_t n = (size_t)N * H * D;
  const auto Q = random_complex(n, 42), K = random_complex(n, 43), V = random_complex(n, 44);
  const auto t = grid_times(1, N, 45);
  // The RoPE softmax, computed here.
  std::vector<double> ref((size_t)N * N, 0.0);
  for (int i = 0; i < N; ++i) {
    std::vector<cd> q((size_t)D);
    std::vector<double> ai((size_t)D);
    for (int k = 0; k < D; ++k) {
      q[(size_t)k] = Q[(size_t)i * D + k] / std::abs(Q[(size_t)i * D + k]);
      ai[(size_t)k] = -p.omega[(size_t)k] * t[(size_t)i];
    }
    double sum = 0;
    for (int j = 0; j <= i; ++j) {
      std::vector<cd> kk((size_t)D);
      std::vector<double> aj((size_t)D);
      for (int k = 0; k < D; ++k) {
        kk[(size_t)k] = K[(size_t)j * D + k] / std::abs(K[(size_t)j * D + k]);
        aj[(size_t)k] = -p.omega[(size_t)k] * t[(size_t)j];
      }
      ref[(size_t)i * N + j] = std::exp(beta * rope_dot(q, ai, kk, aj));
      sum += ref[(size_t)i * N + j];
    }
    for (int j = 0; j <= i; ++j) ref[(size_t)i * N + j] /= sum;
  }
  double err[2];
  const double Vs[2] = {1e3, 1e5};
  for (int x = 0; x < 2; ++x) {
    for (auto& e : p.eta2) e = Vs[x] / D;
    p.head[0].alpha = std::sqrt(beta * (Vs[x] + 2 * D) / 2);
    const AfaOutputs o = run(p, 1, N, Q, K, V, t);
    err[x] = 0;
    for (size_t y = 0; y < ref.size(); ++y) err[x] = std::fmax(err[x], std::fabs(o.attn[y] - ref[y]));
    // Logit error <= beta D^2 / (V + 2D) (1 + O(D/V)); a softmax moves by at most about twice that.
    CHECK(err[x] < 2.5 * beta * D * D / Vs[x]);
  }
  // First order in 1/V: a hundredfold V shrinks the gap about a hundredfold.
  CHECK(err[0] / err[1] > 50.0);
  CHECK(err[0] / err[1] < 200.0);
}

TEST_CASE("afa twin: the unitary switch is the general form with zero real parts on unit-modulus channels") {
  for (int N : {2, 61, 127})
    for (int D : {4, 8}) {
      CAPTURE(N);
      CAPTURE(D);
      const int B = 2, H = 3;
      AfaParams pu = afa_random_params(H, D, 51);
      pu.unitary = true;
      pu.mix = true;
      AfaParams pg = pu;
      pg.unitary = false;
      for (auto& x : pg.lambda_re) x = 0.0;
      const size_t n = (size_t)B * N * H * D;
      auto Q = random_complex(n, 52), K = random_complex(n, 53);
      const auto V = random_complex(n, 54);
      const auto t = grid_times(B, N, 55);
      const AfaOutputs ou = run(pu, B, N, Q, K, V, t);
      for (auto& z : Q) z /= std::abs(z);
      for (auto& z : K) z /= std::abs(z);
      const AfaOutputs og = run(pg, B, N, Q, K, V, t);
      CHECK(max_rel_diff(ou.filtered, og.filtered) < 1e-14);
      CHECK(max_rel_diff(ou.est, og.est) < 1e-14);
      CHECK(max_rel_diff(ou.attn, og.attn) < 1e-14);
      // On unit-modulus channels the residual is 2 (D - s) (the thesis's unitary score).
      for (int j = 0; j < N; j += 7) {
        const int i = N - 1, h = 1;
        const cd* q = &Q[(((size_t)1 * N + i) * H + h) * D];
        const cd* k = &K[(((size_t)1 * N + j) * H + h) * D];
        double s = 0;
        for (int c = 0; c < D; ++c)
          s += (std::conj(q[c]) * cis(pu.omega[(size_t)h * D + c] * (t[(size_t)N + i] - t[(size_t)N + j])) * k[c]).real();
        CHECK(afa_pair_terms(pu, h, q, k, t[(size_t)N + i], t[(size_t)N + j]).R2 ==
              doctest::Approx(2.0 * (D - s)).epsilon(1e-13));
      }
      std::vector<AfaChannelInfo> info;
      REQUIRE(afa_channel_info(pu, 0, &info).ok());
      CHECK(info[0].regime == AfaRegime::brownian);
      CHECK(info[0].lambda_re == 0.0);
    }
}

TEST_CASE("afa twin: decode steps equal the prefill, position by position") {
  for (int N : {1, 2, 61, 127})
    for (int D : {4, 8})
      for (int H : {1, 3}) {
        CAPTURE(N);
        CAPTURE(D);
        CAPTURE(H);
        const int B = 2;
        AfaParams p = afa_random_params(H, D, (uint32_t)(N + D + H), true);
        p.mix = true;
        p.precision = H == 3 ? AfaPrecision::weighted : AfaPrecision::channel_sum;
        const size_t n = (size_t)B * N * H * D;
        const auto Q = random_complex(n, 61), K = random_complex(n, 62), V = random_complex(n, 63);
        const auto t = grid_times(B, N, 64, 3.0);
        std::vector<double> horizon((size_t)B * N);
        for (size_t x = 0; x < horizon.size(); ++x) horizon[x] = 0.25 * (double)(x % 5);
        for (bool with_h : {false, true}) {
          const AfaOutputs o = run(p, B, N, Q, K, V, t, with_h ? &horizon : nullptr);
          double worst = 0.0;
          for (int b = 0; b < B; ++b) {
            AfaDecodeState st;
            REQUIRE(afa_decode_reset(p, &st).ok());
            for (int i = 0; i < N; ++i) {
              const size_t base = ((size_t)b * N + i) * H * D;
              AfaStepOutput so;
              const double* hz = with_h ? &horizon[(size_t)b * N + i] : nullptr;
              REQUIRE(afa_decode_step(p, &st, &Q[base], &K[base], &V[base], t[(size_t)b * N + i], &so, hz).ok());
              REQUIRE(st.n == i + 1);
              for (size_t x = 0; x < (size_t)H * D; ++x) {
                worst = std::fmax(worst, std::abs(so.filtered[x] - o.filtered[base + x]));
                worst = std::fmax(worst, std::abs(so.est[x] - o.est[base + x]));
              }
              for (int h = 0; h < H; ++h) {
                const size_t r = ((size_t)b * H + h) * N + i;
                worst = std::fmax(worst, std::fabs(so.row_lse[(size_t)h] - o.row_lse[r]) / std::fmax(1.0, std::fabs(o.row_lse[r])));
                for (int j = 0; j <= i; ++j)
                  worst = std::fmax(worst, std::fabs(so.attn[(size_t)h * (i + 1) + j] - o.attn[r * N + j]));
              }
            }
          }
          CHECK(worst < 1e-14);
        }
      }
}

TEST_CASE("afa twin: uniform and irregular timestamps; only lags in the units of lambda matter") {
  const int B = 2, N = 61, H = 3, D = 8;
  AfaParams p = afa_random_params(H, D, 71, true);
  p.mix = true;
  const size_t n = (size_t)B * N * H * D;
  const auto Q = random_complex(n, 72), K = random_complex(n, 73), V = random_complex(n, 74);
  // Empty timestamps are positions 0..N-1.
  std::vector<double> idx((size_t)B * N);
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < N; ++i) idx[(size_t)b * N + i] = i;
  const AfaOutputs o_empty = run(p, B, N, Q, K, V, {}), o_idx = run(p, B, N, Q, K, V, idx);
  CHECK(max_rel_diff(o_empty.est, o_idx.est) == 0.0);
  CHECK(max_rel_diff(o_empty.attn, o_idx.attn) == 0.0);

  // Rescaling time by c, with lambda -> lambda c, sigma2 -> sigma2 c, horizons -> h / c, changes
  // nothing: uniform steps of 0.25 against index time, and an irregular grid against its rescaling.
  const double c = 0.25;
  AfaParams ps = p;
  for (auto& x : ps.lambda_re) x *= c;
  for (auto& x : ps.omega) x *= c;
  for (auto& x : ps.sigma2) x *= c;
  for (auto& hp : ps.head) hp.pred_dt /= c;
  std::vector<double> uni((size_t)B * N);
  for (size_t x = 0; x < uni.size(); ++x) uni[x] = c * idx[x];
  const auto irr = grid_times(B, N, 75);
  std::vector<double> irr_scaled = irr;
  for (auto& x : irr_scaled) x /= c;
  const AfaOutputs o_uni = run(p, B, N, Q, K, V, uni), o_uni_s = run(ps, B, N, Q, K, V, idx);
  CHECK(max_rel_diff(o_uni.est, o_uni_s.est) < 1e-13);
  CHECK(max_rel_diff(o_uni.attn, o_uni_s.attn) < 1e-13);
  const AfaOutputs o_irr = run(p, B, N, Q, K, V, irr), o_irr_s = run(ps, B, N, Q, K, V, irr_scaled);
  CHECK(max_rel_diff(o_irr.est, o_irr_s.est) < 1e-12);
  CHECK(max_rel_diff(o_irr.attn, o_irr_s.attn) < 1e-12);
  // And the lags do matter: the irregular grid gives other weights than the uniform one.
  CHECK(max_rel_diff(o_irr.attn, o_uni.attn) > 1e-3);
  // Uniform timestamps: every pair's per-channel kernel is the table entry at its integer lag.
  AfaKernelCurves tab;
  std::vector<double> lags((size_t)N);
  for (int l = 0; l < N; ++l) lags[(size_t)l] = c * l;
  REQUIRE(afa_kernel_curves(p, 2, lags, &tab).ok());
  for (int i = 0; i < N; i += 5)
    for (int j = 0; j <= i; ++j)
      for (int k = 0; k < D; ++k) {
        const AfaChannelKernel ck = afa_channel_kernel(p, 2, k, uni[(size_t)i] - uni[(size_t)j]);
        CHECK(ck.E == tab.E[(size_t)k * N + (i - j)]);
        CHECK(ck.cov == tab.cov[(size_t)k * N + (i - j)]);
      }
  // A float32 lag table (what a uniform-time kernel would read) stays within float rounding of it.
  for (int k = 0; k < D; ++k)
    for (int l = 0; l < N; ++l) {
      const float e32 = std::exp(-(float)(-p.lambda_re[(size_t)2 * D + k]) * (float)lags[(size_t)l]);
      CHECK(std::fabs(e32 - tab.E[(size_t)k * N + l]) <= 4 * std::numeric_limits<float>::epsilon() * tab.E[(size_t)k * N + l]);
    }
}

TEST_CASE("afa twin: timestamps near 1e6 give the results of timestamps near 0; no factorised overflow") {
  const int B = 2, N = 127, H = 3, D = 4;
  AfaParams p = afa_random_params(H, D, 81, true);
  const size_t n = (size_t)B * N * H * D;
  const auto Q = random_complex(n, 82), K = random_complex(n, 83), V = random_complex(n, 84);
  // On a 1/32 grid the shifted lags are the same doubles: the results are identical.
  const auto t0 = grid_times(B, N, 85, 0.0), t6 = grid_times(B, N, 85, 1e6);
  const AfaOutputs a = run(p, B, N, Q, K, V, t0), b = run(p, B, N, Q, K, V, t6);
  CHECK(max_rel_diff(a.est, b.est) == 0.0);
  CHECK(max_rel_diff(a.attn, b.attn) == 0.0);
  CHECK(max_rel_diff(a.row_lse, b.row_lse) == 0.0);
  // Off the grid the lags carry the rounding of 1e6 + x (half an ulp of 1e6, ~6e-11 each).
  std::vector<double> u0((size_t)B * N), u6((size_t)B * N);
  for (size_t x = 0; x < u0.size(); ++x) {
    u0[x] = 0.1 * (double)(x % N) + 0.037 * std::sin((double)x);
    u6[x] = 1e6 + u0[x];
  }
  const AfaOutputs c = run(p, B, N, Q, K, V, u0), d = run(p, B, N, Q, K, V, u6);
  CHECK(max_rel_diff(c.est, d.est) < 1e-8);
  CHECK(max_rel_diff(c.attn, d.attn) < 1e-8);

  // mu = 0.1 at t up to 1e4: the thesis's factorisation e^{lambda t_i} (e^{-lambda t_j} z) is
  // inf * 0 in double; the twin forms e^{lambda (t_i - t_j)} from the lag and stays finite.
  AfaParams q1 = afa_random_params(1, 4, 86);
  for (auto& x : q1.lambda_re) x = -0.1;
  std::vector<double> tl((size_t)N);
  for (int i = 0; i < N; ++i) tl[(size_t)i] = 1e4 - 2.0 * (N - 1 - i);
  std::vector<double> tl0 = tl;
  for (auto& x : tl0) x -= tl[0];
  const size_t n1 = (size_t)N * 4;
  const auto Q1 = random_complex(n1, 87), K1 = random_complex(n1, 88), V1 = random_complex(n1, 89);
  const AfaOutputs far = run(q1, 1, N, Q1, K1, V1, tl), near = run(q1, 1, N, Q1, K1, V1, tl0);
  CHECK(max_rel_diff(far.est, near.est) == 0.0);
  const cd lam(-0.1, q1.omega[0]);
  const cd factorised = std::exp(lam * tl[(size_t)N - 1]) * (std::exp(-lam * tl[(size_t)N - 1]) * K1[0]);
  CHECK(!std::isfinite(std::abs(factorised)));
  const cd per_pair = std::exp(lam * (tl[(size_t)N - 1] - tl[(size_t)N - 1])) * K1[0];
  CHECK(std::isfinite(std::abs(per_pair)));
}

TEST_CASE("afa twin: keys that match the query exactly under zero noise take the whole row, no NaN") {
  AfaParams p = afa_random_params(1, 4, 91);
  for (auto& x : p.sigma2) x = 0.0;
  for (auto& x : p.eta2) x = 0.0;
  p.head[0].eps = 0.0;
  const int N = 3;
  auto Q = random_complex((size_t)N * 4, 92), K = random_complex((size_t)N * 4, 93);
  const auto V = random_complex((size_t)N * 4, 94);
  for (int k = 0; k < 4; ++k) K[(size_t)2 * 4 + k] = Q[(size_t)2 * 4 + k];  // key 2 == query 2 at lag 0
  const AfaOutputs o = run(p, 1, N, Q, K, V, {0.0, 0.5, 1.0});
  CHECK(o.attn[2 * N + 2] == 1.0);
  CHECK(o.attn[2 * N + 0] == 0.0);
  CHECK(o.row_lse[2] == std::numeric_limits<double>::infinity());
  for (int k = 0; k < 4; ++k) CHECK(o.filtered[(size_t)2 * 4 + k] == V[(size_t)2 * 4 + k]);
}

TEST_CASE("afa twin: precision sources relate as defined") {
  const int B = 1, N = 61, H = 3, D = 4;
  const size_t n = (size_t)B * N * H * D;
  const auto Q = random_complex(n, 101), K = random_complex(n, 102), V = random_complex(n, 103);
  const auto t = grid_times(B, N, 104);
  // Identical channels: one channel's covariance with nu D is the channel sum with nu.
  AfaParams p = afa_random_params(H, D, 105);
  for (int h = 0; h < H; ++h)
    for (int k = 0; k < D; ++k) {
      const size_t x = (size_t)h * D + k, y = (size_t)h * D;
      p.lambda_re[x] = p.lambda_re[y];
      p.sigma2[x] = p.sigma2[y];
      p.eta2[x] = p.eta2[y];
    }
  const AfaOutputs sum = run(p, B, N, Q, K, V, t);
  AfaParams p1 = p;
  p1.precision = AfaPrecision::one_channel;
  for (auto& hp : p1.head) hp.nu *= D;
  CHECK(max_rel_diff(run(p1, B, N, Q, K, V, t).est, sum.est) < 1e-13);
  // Weighted: v^C = 1 / (sum_k w_k / cov_k + b).
  AfaParams pw = afa_random_params(H, D, 106, true);
  pw.precision = AfaPrecision::weighted;
  // A zero weight drops its channel, even a noiseless one (precision +inf: no 0 * inf).
  pw.weight[1] = 0.0;
  pw.sigma2[1] = pw.eta2[1] = pw.gamma2[1] = 0.0;
  CHECK(afa_channel_kernel(pw, 0, 1, 0.3).P == std::numeric_limits<double>::infinity());
  for (double lag : {0.0, 0.3, 7.0}) {
    double prec = pw.head[0].weight_bias;
    for (int k = 0; k < D; ++k)
      if (k != 1) prec += pw.weight[(size_t)k] * afa_channel_kernel(pw, 0, k, lag).P;
    CHECK(afa_score_variance(pw, 0, lag) == doctest::Approx(1.0 / prec).epsilon(1e-15));
  }
  // A noiseless channel with a positive weight makes v^C = 0.
  pw.weight[1] = 0.5;
  CHECK(afa_score_variance(pw, 0, 0.3) == 0.0);
  // D = 1, w = 1, b = 0: the weighted and summed sources coincide.
  AfaParams one = afa_random_params(1, 2, 107);
  one.dim = 1;
  for (auto* v : {&one.lambda_re, &one.omega, &one.sigma2, &one.eta2, &one.delta, &one.weight}) v->resize(1);
  one.weight[0] = 1.0;
  one.head[0].weight_bias = 0.0;
  one.head[0].precision_channel = 0;
  const auto q1 = random_complex(N, 108), k1 = random_complex(N, 109), v1 = random_complex(N, 110);
  const AfaOutputs os = run(one, 1, N, q1, k1, v1, t);
  one.precision = AfaPrecision::weighted;
  CHECK(max_rel_diff(run(one, 1, N, q1, k1, v1, t).est, os.est) < 1e-14);
}

TEST_CASE("afa twin: conjugate-symmetric inputs give conjugate-symmetric estimates") {
  // With interleaved conjugate pairs and pair-symmetric noise, channel 2m+1 holding conj(channel 2m)
  // in Q, K and V keeps the estimate conjugate-symmetric: the real output W_P maps it to is exact.
  const int N = 61, H = 3, D = 8;
  AfaParams p = afa_random_params(H, D, 111);
  p.mix = true;
  for (int h = 0; h < H; ++h)
    for (int m = 0; m < D / 2; ++m)
      for (auto* v : {&p.sigma2, &p.eta2, &p.delta}) (*v)[(size_t)h * D + 2 * m + 1] = (*v)[(size_t)h * D + 2 * m];
  const size_t n = (size_t)N * H * D;
  auto Q = random_complex(n, 112), K = random_complex(n, 113), V = random_complex(n, 114);
  for (auto* z : {&Q, &K, &V})
    for (size_t x = 0; x < n; x += 2) (*z)[x + 1] = std::conj((*z)[x]);
  const AfaOutputs o = run(p, 1, N, Q, K, V, grid_times(1, N, 115));
  double worst = 0;
  for (size_t x = 0; x < n; x += 2) worst = std::fmax(worst, std::abs(o.est[x + 1] - std::conj(o.est[x])));
  CHECK(worst < 1e-14);
}

TEST_CASE("afa twin: diagnostics") {
  const int B = 2, N = 61, H = 3, D = 4;
  AfaParams p = afa_random_params(H, D, 121, true);
  p.mix = true;
  // Channel 0 of head 0 Brownian, channel 1 integrative (eta2 > sigma2 / (2 mu)), channel 2 diffusive.
  p.lambda_re[0] = 0.0;
  p.lambda_re[1] = -0.5;
  p.sigma2[1] = 0.1;
  p.eta2[1] = 2.0;
  p.lambda_re[2] = -0.05;
  p.sigma2[2] = 1.0;
  p.eta2[2] = 0.5;
  std::vector<AfaChannelInfo> info;
  REQUIRE(afa_channel_info(p, 0, &info).ok());
  CHECK(info[0].regime == AfaRegime::brownian);
  CHECK(info[0].time_constant == std::numeric_limits<double>::infinity());
  CHECK(info[1].regime == AfaRegime::integrative);
  CHECK(info[1].stationary_var == doctest::Approx(0.1).epsilon(1e-15));
  CHECK(info[1].alpha == doctest::Approx(1.9).epsilon(1e-15));
  CHECK(info[2].regime == AfaRegime::diffusive);
  CHECK(info[2].stationary_var == doctest::Approx(10.0).epsilon(1e-15));
  CHECK(info[2].period == doctest::Approx(2 * kPi / std::fabs(p.omega[2])).epsilon(1e-15));

  // Kernel curves: integrative precision rises with the lag, diffusive falls.
  AfaKernelCurves cv;
  const std::vector<double> lags = {0.0, 1.0, 10.0};
  REQUIRE(afa_kernel_curves(p, 0, lags, &cv).ok());
  CHECK(cv.P[1 * 3 + 2] > cv.P[1 * 3 + 0]);
  CHECK(cv.P[2 * 3 + 2] < cv.P[2 * 3 + 0]);
  for (size_t x = 0; x < lags.size(); ++x) {
    CHECK(cv.score_var[x] == doctest::Approx(afa_score_variance(p, 0, lags[x])).epsilon(1e-15));
    const double a2 = p.head[0].alpha * p.head[0].alpha;
    CHECK(cv.score_bias[x] == doctest::Approx(-a2 * std::log(p.head[0].nu * cv.score_var[x] + p.head[0].eps)).epsilon(1e-15));
  }

  // Row statistics against the matrices.
  const size_t n = (size_t)B * N * H * D;
  const auto Q = random_complex(n, 122), K = random_complex(n, 123), V = random_complex(n, 124);
  const auto t = grid_times(B, N, 125);
  const AfaOutputs o = run(p, B, N, Q, K, V, t);
  AfaRowDiagnostics d;
  REQUIRE(afa_row_diagnostics(p, B, N, t, o, &d).ok());
  const int b = 1, h = 2, i = 40;
  const size_t r = ((size_t)b * H + h) * N + i;
  double el = 0, ent = 0, mass[4] = {0, 0, 0, 0};
  for (int j = 0; j <= i; ++j) {
    const double w = o.attn[r * N + j], lag = t[(size_t)b * N + i] - t[(size_t)b * N + j];
    el += w * lag;
    ent -= w * std::log(w);
    for (int k = 0; k < D; ++k) mass[k] += w * std::exp(p.lambda_re[(size_t)h * D + k] * lag);
  }
  CHECK(d.expected_lag[r] == doctest::Approx(el).epsilon(1e-13));
  CHECK(d.entropy[r] == doctest::Approx(ent).epsilon(1e-13));
  for (int k = 0; k < D; ++k) {
    CHECK(d.channel_mass[r * D + k] == doctest::Approx(mass[k]).epsilon(1e-13));
    CHECK(d.channel_mass[r * D + k] <= 1.0);
  }

  // Pulled-forward estimates of a noise-free eigen-trajectory V_j = e^{lambda t_j} z collapse onto
  // the truth e^{lambda t_i} z at every j.
  std::vector<cd> Vt(n);
  for (int bb = 0; bb < B; ++bb)
    for (int j = 0; j < N; ++j)
      for (int hh = 0; hh < H; ++hh)
        for (int k = 0; k < D; ++k) {
          const cd lam(p.lambda_re[(size_t)hh * D + k], p.omega[(size_t)hh * D + k]);
          Vt[(((size_t)bb * N + j) * H + hh) * D + k] = std::exp(lam * t[(size_t)bb * N + j]) * cd(1.0 + k, -0.5);
        }
  std::vector<cd> pf;
  REQUIRE(afa_pulled_forward(p, B, N, Vt, t, b, h, i, &pf).ok());
  REQUIRE(pf.size() == (size_t)(i + 1) * D);
  for (int j = 0; j <= i; ++j)
    for (int k = 0; k < D; ++k)
      CHECK(std::abs(pf[(size_t)j * D + k] - Vt[(((size_t)b * N + i) * H + h) * D + k]) < 1e-12);
}

TEST_CASE("afa twin: bad inputs give errors that name the field") {
  const int B = 2, N = 5, H = 2, D = 4;
  const AfaParams good = afa_random_params(H, D, 131);
  const size_t n = (size_t)B * N * H * D;
  const auto Q = random_complex(n, 132), K = random_complex(n, 133), V = random_complex(n, 134);
  const auto t = grid_times(B, N, 135);
  AfaOutputs o;
  REQUIRE(afa_forward(good, B, N, Q, K, V, t, &o).ok());

  auto with = [&](auto edit) {
    AfaParams p = good;
    edit(p);
    return afa_forward(p, B, N, Q, K, V, t, &o);
  };
  CHECK(contains(with([](AfaParams& p) { p.lambda_re[1 * 4 + 2] = 0.2; }), "params.lambda_re[h=1][k=2]"));
  CHECK(contains(with([](AfaParams& p) { p.lambda_re[1 * 4 + 2] = 0.2; }), "positive"));
  CHECK(contains(with([](AfaParams& p) { p.sigma2[1] = -0.1; }), "params.sigma2[h=0][k=1]"));
  CHECK(contains(with([](AfaParams& p) { p.eta2.pop_back(); }), "params.eta2 has 7 entries"));
  CHECK(contains(with([](AfaParams& p) { p.gamma2.assign(8, 0.1); p.gamma2[5] = -1; }), "params.gamma2[h=1][k=1]"));
  CHECK(contains(with([](AfaParams& p) { p.omega[3] = NAN; }), "params.omega[h=0][k=3]"));
  CHECK(contains(with([](AfaParams& p) { p.head[1].nu = 0.0; }), "params.head[1].nu"));
  CHECK(contains(with([](AfaParams& p) { p.head[0].eps = -1e-3; }), "params.head[0].eps"));
  CHECK(contains(with([](AfaParams& p) { p.head[0].pred_dt = -1.0; }), "params.head[0].pred_dt"));
  CHECK(contains(with([](AfaParams& p) { p.head.pop_back(); }), "params.head has 1 entries"));
  CHECK(contains(with([](AfaParams& p) { p.precision = AfaPrecision::one_channel; p.head[1].precision_channel = 4; }),
                 "params.head[1].precision_channel"));
  CHECK(contains(with([](AfaParams& p) {
                   p.precision = AfaPrecision::weighted;
                   for (int k = 0; k < 4; ++k) p.weight[(size_t)4 + k] = 0.0;
                   p.head[1].weight_bias = 0.0;
                 }),
                 "params.weight[h=1]"));
  CHECK(contains(with([](AfaParams& p) { p.precision = AfaPrecision::weighted; p.weight[0] = -1.0; }),
                 "params.weight[h=0][k=0]"));
  CHECK(contains(with([](AfaParams& p) { p.mix = true; p.delta.clear(); }), "params.delta"));
  CHECK(contains(with([](AfaParams& p) { p.dim = 0; }), "params.dim"));

  auto Qs = Q;
  Qs.pop_back();
  CHECK(contains(afa_forward(good, B, N, Qs, K, V, t, &o), "Q holds"));
  CHECK(contains(afa_forward(good, B, N, Q, K, Qs, t, &o), "V holds"));
  auto Qn = Q;
  Qn[(((size_t)1 * N + 3) * H + 1) * D + 2] = cd(NAN, 0);
  const Status sn = afa_forward(good, B, N, Qn, K, V, t, &o);
  CHECK(contains(sn, "Q[b=1][n=3][h=1][d=2]"));
  CHECK(sn.code() == Code::input_error);
  CHECK(contains(afa_forward(good, B, N, Q, K, V, {0.0, 1.0}, &o), "t holds 2"));
  auto tb = t;
  tb[(size_t)N + 3] = tb[(size_t)N + 2] - 0.5;
  const Status st = afa_forward(good, B, N, Q, K, V, tb, &o);
  CHECK(contains(st, "t[b=1][n=3] decreases"));
  CHECK(st.code() == Code::input_error);
  AfaParams nc = good;
  nc.causal = false;
  CHECK(afa_forward(nc, B, N, Q, K, V, tb, &o).ok());  // any order is fine without the mask
  auto tn = t;
  tn[2] = INFINITY;
  CHECK(contains(afa_forward(good, B, N, Q, K, V, tn, &o), "t[b=0][n=2]"));
  std::vector<double> hz((size_t)B * N, 1.0);
  hz[5] = -0.5;
  AfaOptions opt;
  opt.horizon = &hz;
  CHECK(contains(afa_forward(good, B, N, Q, K, V, t, &o, opt), "options.horizon[5]"));
  hz.pop_back();
  CHECK(contains(afa_forward(good, B, N, Q, K, V, t, &o, opt), "options.horizon holds"));

  AfaDecodeState ds;
  CHECK(contains(afa_decode_reset(nc, &ds), "causal"));
  REQUIRE(afa_decode_reset(good, &ds).ok());
  AfaStepOutput so;
  REQUIRE(afa_decode_step(good, &ds, &Q[0], &K[0], &V[0], 5.0, &so).ok());
  CHECK(contains(afa_decode_step(good, &ds, &Q[0], &K[0], &V[0], 4.0, &so), "earlier"));
  CHECK(ds.n == 1);  // a refused step leaves the state alone
  CHECK(contains(afa_decode_step(good, &ds, nullptr, &K[0], &V[0], 6.0, &so), "q is null"));
  const double neg = -1.0;
  CHECK(contains(afa_decode_step(good, &ds, &Q[0], &K[0], &V[0], 6.0, &so, &neg), "horizon"));
  AfaParams other = afa_random_params(H, 8, 136);
  CHECK(contains(afa_decode_step(other, &ds, &Q[0], &K[0], &V[0], 6.0, &so), "afa_decode_reset"));

  AfaParams odd;
  odd.heads = 1;
  odd.dim = 3;
  CHECK(contains(afa_set_conjugate_pairs(&odd, {-0.1}, {1.0}), "even"));
  CHECK(contains(afa_basis_consistency({1.0}, {1.0, 2.0}, 1, 1).status(), "W_P"));
}
