// The CPU twin of full (anisotropic) AFA and of tied iterations (reference/afa_full_ref.cpp,
// afa_layer_ref.cpp) against independent computations (docs/variant-afa-full.md §7): the
// worked example digit for digit, a rotated-frame form written here from the equations, the
// reduction to the memory-optimised form at D = 1, per-channel normalisation, the first position,
// equal residuals, long timestamps, IRLS against explicit passes with shared parameters (and its
// momentum), decode against prefill, windows, and errors that name the field.
#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <random>
#include <string>
#include <vector>

#include "afa_twin_support.hpp"
#include "cpu_test_support.hpp"
#include "reference/afa_ref.hpp"

using namespace rfa;
using namespace rfa::ref;

namespace {

using rfa::test::max_rel_diff;
using rfa::test::random_complex;

cd cis(double a) { return cd(std::cos(a), std::sin(a)); }
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// A full layer of varied random parameters (tests/afa_twin_support.hpp), the mix and the iterations set.
AfaParams full_params(int H, int D, uint32_t seed, bool mix = false, int iterations = 1, double momentum = 0.0) {
  AfaParams p = test::afa_random_params(H, D, seed, true);
  p.weight.clear();
  p.full = true;
  p.mix = mix;
  p.irls_iterations = iterations;
  p.irls_momentum = momentum;
  return p;
}

AfaOutputs run(const AfaParams& p, int B, int N, const std::vector<cd>& Q, const std::vector<cd>& K,
               const std::vector<cd>& V, const std::vector<double>& t, int window = 0) {
  AfaOutputs o;
  AfaOptions opt;
  opt.want_matrices = true;
  opt.want_iterates = true;
  opt.window = window;
  const Status s = afa_forward(p, B, N, Q, K, V, t, &o, opt);
  INFO(s.message());
  REQUIRE(s.ok());
  return o;
}

std::vector<double> irregular(int B, int N, uint32_t seed) {
  test::TimeSteps steps;
  steps.grid = 32;
  return test::irregular_times(B, N, seed, 0.0, steps);
}

bool contains(const Status& s, const std::string& what) { return !s.ok() && s.message().find(what) != std::string::npos; }

// One pass of the full form (before the mix) written here from A3-A8 in the rotated frame a kernel
// uses (X~_j = e^{-i omega_k t_j} X_j, the residual expanded, the decay per pair), sharing nothing
// with the twin but the definitions. Returns Zbar [B][N][H][D].
std::vector<cd> naive_full_pass(const AfaParams& p, int B, int N, const std::vector<cd>& Q, const std::vector<cd>& K,
                                const std::vector<cd>& V, const std::vector<double>& t, int window) {
  const int H = p.heads, D = p.dim;
  std::vector<cd> out((size_t)B * N * H * D, 0.0);
  auto idx = [&](int b, int n, int h, int k) { return (((size_t)b * N + n) * H + h) * D + k; };
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      const AfaHeadParams& hp = p.head[(size_t)h];
      for (int i = 0; i < N; ++i) {
        const double ti = t[(size_t)b * N + i];
        std::vector<double> den((size_t)D, 0.0);
        std::vector<cd> num((size_t)D, 0.0);
        for (int j = 0; j < N; ++j) {
          if (p.causal && (j > i || (window > 0 && j <= i - window))) continue;
          const double tj = t[(size_t)b * N + j], al = std::fabs(ti - tj);
          std::vector<double> P((size_t)D), e((size_t)D);
          double D2 = 0.0;
          for (int k = 0; k < D; ++k) {
            const size_t c = (size_t)h * D + k;
            const double mu = -p.lambda_re[c], w = p.omega[c];
            e[(size_t)k] = std::exp(-mu * al);
            const double phi = mu > 0 ? (1.0 - e[(size_t)k] * e[(size_t)k]) / (2.0 * mu) : al;
            P[(size_t)k] = 1.0 / (p.sigma2[c] * phi + p.eta2[c] * e[(size_t)k] * e[(size_t)k] + p.gamma2[c] + hp.eps);
            const cd qr = Q[idx(b, i, h, k)] * cis(-w * ti), kr = K[idx(b, j, h, k)] * cis(-w * tj);
            D2 += P[(size_t)k] * (std::norm(qr) + e[(size_t)k] * e[(size_t)k] * std::norm(kr) -
                                  2.0 * e[(size_t)k] * (std::conj(qr) * kr).real());
          }
          const double W = std::exp(-hp.alpha * hp.alpha * std::log1p(D2 / hp.nu));
          for (int k = 0; k < D; ++k) {
            const double w = p.omega[(size_t)h * D + k];
            den[(size_t)k] += W * P[(size_t)k];
            num[(size_t)k] += W * P[(size_t)k] * e[(size_t)k] * (V[idx(b, j, h, k)] * cis(-w * tj));
          }
        }
        for (int k = 0; k < D; ++k)
          out[idx(b, i, h, k)] = num[(size_t)k] / den[(size_t)k] * cis(p.omega[(size_t)h * D + k] * ti);
      }
    }
  return out;
}

}  // namespace

TEST_CASE("afa full twin: the worked example of docs/variant-afa-full.md 7, digit for digit") {
  const test::AfaWorkedExample e = test::afa_worked_example(true);
  const AfaParams& p = e.p;
  const std::vector<cd>&Q = e.Q, &K = e.K, &V = e.V;
  const std::vector<double>& t = e.t;
  auto r6 = [](double x) { return std::round(x * 1e6) / 1e6; };  // the hand values' six decimals

  const AfaFullPairTerms j0 = afa_full_pair_terms(p, 0, &Q[1], &K[0], 1.0, 0.0);
  const AfaFullPairTerms j1 = afa_full_pair_terms(p, 0, &Q[1], &K[1], 1.0, 1.0);
  CHECK(j0.lag == 1.0);
  CHECK(r6(j0.cov[0]) == 1.315712);
  CHECK(r6(j0.P[0]) == 0.760045);
  CHECK(r6(j0.r[0].real()) == -1.136254);
  CHECK(r6(j0.r[0].imag()) == 0.625140);
  CHECK(r6(std::norm(j0.r[0])) == 1.681874);
  CHECK(r6(j0.W) == 0.438924);
  CHECK(r6(j0.WP[0]) == 0.333602);
  CHECK(j1.lag == 0.0);
  CHECK(j1.cov[0] == 0.5);
  CHECK(j1.P[0] == 2.0);
  CHECK(std::abs(j1.r[0] - cd(0, 0.2)) < 1e-15);
  CHECK(r6(std::norm(j1.r[0])) == 0.04);
  CHECK(r6(j1.W) == 0.925926);
  CHECK(r6(j1.WP[0]) == 1.851852);

  const AfaOutputs o = run(p, 1, 2, Q, K, V, t);
  // channel_attn [b][h][k][i][j]: row 1
  CHECK(r6(o.channel_attn[2]) == 0.152646);
  CHECK(r6(o.channel_attn[3]) == 0.847354);
  CHECK(o.channel_attn[1] == 0.0);  // causal
  CHECK(r6(o.reweight[2]) == 0.438924);
  CHECK(r6(o.reweight[3]) == 0.925926);
  CHECK(r6(o.filtered[1].real()) == 0.074627);
  CHECK(r6(o.filtered[1].imag()) == 0.963578);
  CHECK(r6(o.est[1].real()) == -0.697179);
  CHECK(r6(o.est[1].imag()) == 0.527900);
  CHECK(o.den[1] == doctest::Approx(0.333602 + 1.851852).epsilon(1e-6));
  CHECK(o.filtered[0] == V[0]);  // first position: one key at lag 0
}

TEST_CASE("afa full twin: agrees with the rotated-frame form written from A3-A8, every switch") {
  for (int H : {1, 3})
    for (int D : {2, 4})
      for (int N : {1, 2, 7, 13})
        for (int window : {0, 3}) {
          const int B = 2;
          const AfaParams p = full_params(H, D, 100u + (uint32_t)(N * 7 + D + H + window));
          const std::vector<cd> Q = random_complex((size_t)B * N * H * D, 1u + N);
          const std::vector<cd> K = random_complex((size_t)B * N * H * D, 2u + N);
          const std::vector<cd> V = random_complex((size_t)B * N * H * D, 3u + N);
          const std::vector<double> t = irregular(B, N, 4u + (uint32_t)N);
          const AfaOutputs o = run(p, B, N, Q, K, V, t, window);
          const std::vector<cd> ref = naive_full_pass(p, B, N, Q, K, V, t, window);
          INFO("H " << H << " D " << D << " N " << N << " window " << window);
          CHECK(max_rel_diff(o.filtered, ref) < 1e-12);
          // The prediction of the filtered estimate over pred_dt.
          for (int b = 0; b < B; ++b)
            for (int n = 0; n < N; ++n)
              for (int h = 0; h < H; ++h)
                for (int k = 0; k < D; ++k) {
                  const size_t c = (((size_t)b * N + n) * H + h) * D + k, pc = (size_t)h * D + k;
                  const cd f = std::exp(cd(p.lambda_re[pc], p.omega[pc]) * p.head[(size_t)h].pred_dt);
                  CHECK(std::abs(o.est[c] - f * o.filtered[c]) <= 1e-13 * (1.0 + std::abs(o.est[c])));
                }
          // Per-channel normalisation: every channel's weights of a row sum to 1; masked cells are 0;
          // the mean view is their channel mean; W is in (0, 1].
          for (int b = 0; b < B; ++b)
            for (int h = 0; h < H; ++h)
              for (int i = 0; i < N; ++i) {
                double mean_row = 0.0;
                for (int k = 0; k < D; ++k) {
                  double s = 0.0;
                  for (int j = 0; j < N; ++j) {
                    const double w = o.channel_attn[((((size_t)b * H + h) * D + k) * N + i) * N + j];
                    if (j > i || (window > 0 && j <= i - window)) CHECK(w == 0.0);
                    s += w;
                  }
                  CHECK(s == doctest::Approx(1.0).epsilon(1e-13));
                }
                for (int j = 0; j < N; ++j) {
                  const double a = o.attn[(((size_t)b * H + h) * N + i) * N + j];
                  double m = 0.0;
                  for (int k = 0; k < D; ++k) m += o.channel_attn[((((size_t)b * H + h) * D + k) * N + i) * N + j] / D;
                  CHECK(a == doctest::Approx(m).epsilon(1e-14));
                  mean_row += a;
                  const double W = o.reweight[(((size_t)b * H + h) * N + i) * N + j];
                  CHECK(W >= 0.0);
                  CHECK(W <= 1.0);
                }
                CHECK(mean_row == doctest::Approx(1.0).epsilon(1e-13));
              }
        }
}

TEST_CASE("afa full twin: at D = 1 with nu = alpha = 1 and eps = 0 it is the memory-optimised form") {
  const int B = 2, N = 11, H = 3, D = 1;
  AfaParams p = full_params(H, 2, 7);
  // D = 1: one channel per head, no conjugate pairs.
  p.dim = D;
  p.lambda_re = {-0.05, -0.2, 0.0};
  p.omega = {0.7, -1.3, 0.4};
  p.sigma2.resize(H);
  p.eta2.resize(H);
  p.gamma2.assign(H, 0.0);
  p.delta.resize(H);
  for (AfaHeadParams& hp : p.head) hp.nu = hp.alpha = 1.0, hp.eps = 0.0;
  const std::vector<cd> Q = random_complex((size_t)B * N * H * D, 11), K = random_complex((size_t)B * N * H * D, 12),
                        V = random_complex((size_t)B * N * H * D, 13);
  const std::vector<double> t = irregular(B, N, 14);
  AfaParams m = p;
  m.full = false;
  const AfaOutputs of = run(p, B, N, Q, K, V, t), om = run(m, B, N, Q, K, V, t);
  CHECK(max_rel_diff(of.filtered, om.filtered) < 1e-13);
  CHECK(max_rel_diff(of.attn, om.attn) < 1e-13);
  // One channel: the mean log-normaliser is the softmax's log-sum-exp (W P = 1 / (v + R2) = e^logit).
  for (size_t r = 0; r < of.row_lse.size(); ++r) CHECK(of.row_lse[r] == doctest::Approx(om.row_lse[r]).epsilon(1e-13));
}

TEST_CASE("afa full twin: the first position returns V_0 (with the mix too); equal residuals give 1/n") {
  for (bool mix : {false, true}) {
    const AfaParams p = full_params(2, 4, 21, mix);
    const std::vector<cd> Q = random_complex(8, 1), K = random_complex(8, 2), V = random_complex(8, 3);
    const AfaOutputs o = run(p, 1, 1, Q, K, V, {5.0});
    for (int x = 0; x < 8; ++x) CHECK(std::abs(o.filtered[(size_t)x] - V[(size_t)x]) < 1e-15);
  }
  // Constant precision (mu = 0, sigma2 = 0: cov = eta2 + gamma2 at every lag) and keys on a circle
  // around the query, rotated with the channel's frequency so every |r_k| is the same: W P equal for
  // every key, so every channel's weights are exactly 1/n (App. 7.14).
  const int N = 6, D = 2;
  AfaParams p = full_params(1, D, 22);
  p.lambda_re = {0.0, 0.0};
  p.omega = {0.3, -0.3};
  p.sigma2 = {0.0, 0.0};
  p.eta2 = {0.7, 0.7};
  p.gamma2 = {0.0, 0.0};
  p.head[0].eps = 0.0;
  std::vector<cd> Q((size_t)N * D), K((size_t)N * D), V = random_complex((size_t)N * D, 5);
  std::vector<double> t(N);
  for (int j = 0; j < N; ++j) {
    t[(size_t)j] = j;
    for (int k = 0; k < D; ++k) Q[(size_t)j * D + k] = cd(1.0, 0.5) * cis(p.omega[(size_t)k] * j);
  }
  for (int j = 0; j < N; ++j) {
    for (int k = 0; k < D; ++k) {
      // transported to t_i: e^{i omega (t_i - t_j)} K_j = q_i + 0.3 e^{i phase_j}
      K[(size_t)j * D + k] = cis(-p.omega[(size_t)k] * (N - 1 - j)) * (Q[(size_t)(N - 1) * D + k] + 0.3 * cis(1.1 * j));
    }
  }
  const AfaOutputs o = run(p, 1, N, Q, K, V, t);
  for (int k = 0; k < D; ++k)
    for (int j = 0; j < N; ++j) CHECK(o.channel_attn[((size_t)k * N + (N - 1)) * N + j] == doctest::Approx(1.0 / N).epsilon(1e-14));
}

TEST_CASE("afa full twin: timestamps near 1e4 with mu = 0.1 stay finite, and equal those near 0") {
  const int B = 1, N = 9, H = 2, D = 4;
  AfaParams p = full_params(H, D, 31);
  for (double& re : p.lambda_re) re = -0.1;
  const std::vector<cd> Q = random_complex((size_t)N * H * D, 1), K = random_complex((size_t)N * H * D, 2),
                        V = random_complex((size_t)N * H * D, 3);
  std::vector<double> t0 = irregular(B, N, 4), t1 = t0;
  for (double& x : t1) x += 1e4;  // a dyadic shift of a 1/32 grid: every lag identical in double
  const AfaOutputs a = run(p, B, N, Q, K, V, t0), b = run(p, B, N, Q, K, V, t1);
  for (const cd& z : b.filtered) CHECK((std::isfinite(z.real()) && std::isfinite(z.imag())));
  // The factorised e^{mu t_i} e^{-mu t_j} is not finite there: the twin never forms it.
  CHECK(!std::isfinite(std::exp(0.1 * 1e4)));
  // Same lags, same weights; the outputs differ only by each position's rotation of the frame.
  CHECK(max_rel_diff(a.channel_attn, b.channel_attn) < 1e-12);
}

TEST_CASE("afa twin: tied iterations equal explicit passes with shared parameters, both forms, with momentum") {
  const int B = 2, N = 9, H = 2, D = 4;
  for (bool full : {true, false})
    for (int n : {2, 3, 4})
      for (double g : {0.0, 0.35}) {
        AfaParams p = full_params(H, D, 40u + (uint32_t)n, true, n, g);
        p.full = full;
        const std::vector<cd> Q = random_complex((size_t)B * N * H * D, 41), K = random_complex((size_t)B * N * H * D, 42),
                              V = random_complex((size_t)B * N * H * D, 43);
        const std::vector<double> t = irregular(B, N, 44);
        const AfaOutputs o = run(p, B, N, Q, K, V, t, 5);
        // n explicit one-pass layers: z1 = V, z2 = mix(z1, AFA(Q, K, z1)), z_{k+1} = mix(z_k, AFA(z_k, z_k, z_k)) + g (z_k - z_{k-1}).
        AfaParams one = p;
        one.irls_iterations = 1;
        one.mix = false;  // the pass's aggregate alone; the mix is applied here
        std::vector<cd> prev, z = V;
        for (int it = 0; it < n; ++it) {
          const AfaOutputs pass = it == 0 ? run(one, B, N, Q, K, z, t, 5) : run(one, B, N, z, z, z, t, 5);
          std::vector<cd> next(z.size());
          for (size_t c = 0; c < z.size(); ++c) {
            const double s = sigmoid(p.delta[c % ((size_t)H * D)]);
            next[c] = (1.0 - s) * z[c] + s * pass.filtered[c] + (it > 0 ? g * (z[c] - prev[c]) : cd(0.0));
          }
          prev = z;
          z = next;
          // The trajectory: iterate it + 1 of the tied layer.
          const std::vector<cd> zi(o.iterates.begin() + (ptrdiff_t)((it + 1) * z.size()),
                                   o.iterates.begin() + (ptrdiff_t)((it + 2) * z.size()));
          CHECK(max_rel_diff(zi, z) < 1e-12);
        }
        INFO("full " << full << " n " << n << " g " << g);
        CHECK(max_rel_diff(o.filtered, z) < 1e-12);
        CHECK(o.iterates.size() == (size_t)(n + 1) * z.size());
      }
}

TEST_CASE("afa twin: decode steps equal the prefill, full form and tied iterations") {
  const int B = 1, N = 12, H = 2, D = 4;
  for (bool full : {true, false})
    for (int n : {1, 3}) {
      AfaParams p = full_params(H, D, 50u + (uint32_t)n, true, n, n > 1 ? 0.2 : 0.0);
      p.full = full;
      const std::vector<cd> Q = random_complex((size_t)N * H * D, 51), K = random_complex((size_t)N * H * D, 52),
                            V = random_complex((size_t)N * H * D, 53);
      const std::vector<double> t = irregular(B, N, 54);
      const AfaOutputs o = run(p, B, N, Q, K, V, t);
      AfaDecodeState st;
      REQUIRE(afa_decode_reset(p, &st).ok());
      for (int i = 0; i < N; ++i) {
        AfaStepOutput so;
        const size_t base = (size_t)i * H * D;
        REQUIRE(afa_decode_step(p, &st, &Q[base], &K[base], &V[base], t[(size_t)i], &so).ok());
        for (int x = 0; x < H * D; ++x) {
          CHECK(std::abs(so.filtered[(size_t)x] - o.filtered[base + x]) < 1e-13);
          CHECK(std::abs(so.est[(size_t)x] - o.est[base + x]) < 1e-13);
        }
        for (int h = 0; h < H; ++h) {
          CHECK(so.row_lse[(size_t)h] == doctest::Approx(o.row_lse[(size_t)h * N + i]).epsilon(1e-13));
          for (int j = 0; j <= i; ++j)
            CHECK(so.attn[(size_t)h * (i + 1) + j] == doctest::Approx(o.attn[((size_t)h * N + i) * N + j]).epsilon(1e-13));
        }
      }
      AfaStepOutput so;
      AfaParams other = p;
      other.irls_iterations = n + 1;
      CHECK(contains(afa_decode_step(other, &st, &Q[0], &K[0], &V[0], 100.0, &so), "afa_decode_reset"));
    }
}

TEST_CASE("afa full twin: bad parameters name the field") {
  const AfaParams good = full_params(2, 4, 60);
  const std::vector<cd> Z = random_complex(2 * 2 * 4, 1);
  AfaOutputs o;
  auto fails = [&](AfaParams p, const std::string& what) {
    const Status s = afa_forward(p, 1, 2, Z, Z, Z, {0.0, 1.0}, &o);
    INFO(s.message());
    CHECK(contains(s, what));
  };
  AfaParams p = good;
  p.precision = AfaPrecision::weighted;
  p.weight.assign(8, 1.0);
  fails(p, "params.precision");
  p = good;
  p.irls_iterations = 0;
  fails(p, "params.irls_iterations = 0");
  p.irls_iterations = kAfaMaxIrlsIterations + 1;
  fails(p, "params.irls_iterations");
  p = good;
  p.irls_momentum = 1.0;
  fails(p, "params.irls_momentum");
  p = good;
  p.eta2[5] = 0.0;
  p.gamma2[5] = 0.0;
  p.head[1].eps = 0.0;
  fails(p, "params.eta2[h=1][k=1]");
  p = good;
  p.sigma2[2] = 0.0;
  p.gamma2[2] = 0.0;
  p.head[0].eps = 0.0;
  fails(p, "params.sigma2[h=0][k=2]");
  // The memory-optimised form has no such floor: zero noise is its defined limit.
  p.full = false;
  CHECK(afa_forward(p, 1, 2, Z, Z, Z, {0.0, 1.0}, &o).ok());
}
