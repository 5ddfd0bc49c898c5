// The CPU twin's attention (reference/attention_ref) against independent computations: softmax
// identities, the RoPE limit computed separately, a hand-computed 2-token example, the expanded
// residual of docs/reference-code.md §5.1, masking, extreme parameters, long timestamps and the gate.
#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <limits>
#include <random>
#include <vector>

#include "cpu_test_support.hpp"
#include "reference/attention_ref.hpp"
#include "reference/ops_ref.hpp"
#include "reference/rfa_math.hpp"

using namespace rfa;
using cd = std::complex<double>;

namespace {

using rfa::test::random_complex;
using rfa::test::irregular_times;
using rfa::test::all_finite;
using rfa::test::max_abs_diff;

constexpr double kPi = 3.14159265358979323846;

// A multi-head layer in the reference's default form (ou_rate, Student-t, full residual), with
// varied per-head parameters and conjugate-pair frequencies.
AttentionParams default_params(int H, int D, uint32_t seed = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  AttentionParams p;
  p.heads = H;
  p.dim = D;
  for (int h = 0; h < H; ++h) {
    HeadParams hp;
    hp.mu = h == 0 ? 0.0 : 0.01 + 0.2 * u(rng);
    hp.sigma2 = 0.05 + 0.5 * u(rng);
    hp.s2t = 0.5 + u(rng);
    hp.eta2 = 0.5 + u(rng);
    hp.gamma2 = 0.2 + u(rng);
    hp.nu = D * (1.0 + 3.0 * u(rng)) + 2.0;
    hp.kappa = (hp.nu + D) / D;
    hp.tau = 0.5 + u(rng);
    hp.lag_shift = 0.3 + u(rng);
    p.head.push_back(hp);
    for (int k = 0; k < D / 2; ++k) {
      const double w = std::pow(10000.0, -(double)k / (D / 2)) * (1.0 + 0.1 * h);
      p.omega.push_back(w);
      p.omega.push_back(-w);
    }
  }
  return p;
}

}  // namespace

TEST_CASE("softmax identities: rows of Ahat sum to 1, A = Ahat E, masked entries zero") {
  const int B = 2, N = 9, H = 3, D = 4;
  for (bool causal : {true, false}) {
    CAPTURE(causal);
    AttentionParams p = default_params(H, D);
    p.sw.causal = causal;
    const size_t n = (size_t)B * N * H * D;
    const auto Q = random_complex(n, 1), K = random_complex(n, 2), V = random_complex(n, 3);
    const auto t = irregular_times(B, N, 4);
    ref::AttentionOutputs o;
    ref::AttentionOptions opt;
    opt.want_matrices = true;
    REQUIRE(ref::attention(p, B, N, Q, K, V, t, &o, opt).ok());
    CHECK(all_finite(o.est));
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h)
        for (int i = 0; i < N; ++i) {
          const size_t r = ((size_t)b * H + h) * N + i;
          double sum = 0, mass = 0;
          for (int j = 0; j < N; ++j) {
            const double ah = o.Ahat[r * N + j], a = o.A[r * N + j];
            if (causal && j > i) {
              CHECK(ah == 0.0);
              CHECK(a == 0.0);
              continue;
            }
            const double ti = t[(size_t)b * N + i], tj = t[(size_t)b * N + j];
            const double lag = causal ? ti - tj : std::fabs(ti - tj);
            CHECK(a == doctest::Approx(ah * ref::decay(p, h, lag)).epsilon(1e-14));
            // Ahat = exp(logit - m) / l with the row statistics.
            const ref::PairTerms pt = ref::pair_terms(p, N, Q, K, t, b, h, i, j);
            CHECK(ah == doctest::Approx(std::exp(pt.logit - o.row_max[r]) / o.row_sum[r]).epsilon(1e-12));
            sum += ah;
            mass += a;
          }
          CHECK(sum == doctest::Approx(1.0).epsilon(1e-13));
          CHECK(o.decayed_mass[r] == doctest::Approx(mass).epsilon(1e-13));
          CHECK(mass <= 1.0 + 1e-13);
          CHECK(o.row_lse[r] == doctest::Approx(o.row_max[r] + std::log(o.row_sum[r])).epsilon(1e-14));
        }
  }
}

TEST_CASE("pure rotation settings equal RoPE dot-product attention computed separately") {
  // M2.6-like: Gaussian kernel, cross-only residual, no additive bias, P = 1/sqrt(D), mu = 0, no shift.
  const int B = 2, N = 7, H = 2, D = 6;
  AttentionParams p = default_params(H, D, 7);
  p.sw.robust = false;
  p.sw.full_residual = false;
  p.sw.additive_bias = AdditiveBias::none;
  p.sw.precision = RobustPrecision::inv_sqrt_d;
  for (auto& hp : p.head) {
    hp.mu = 0.0;
    hp.lag_shift = 0.0;
  }
  const size_t n = (size_t)B * N * H * D;
  const auto Q = random_complex(n, 11), K = random_complex(n, 12), V = random_complex(n, 13);
  const auto t = irregular_times(B, N, 14, 3.0);
  ref::AttentionOutputs o;
  ref::AttentionOptions opt;
  opt.want_matrices = true;
  REQUIRE(ref::attention(p, B, N, Q, K, V, t, &o, opt).ok());

  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      const double tau = p.head[(size_t)h].tau;
      auto at = [&](const std::vector<cd>& Z, int i, int d) { return Z[(((size_t)b * N + i) * H + h) * D + d]; };
      auto rot = [&](int i, int d) { return std::polar(1.0, -p.omega[(size_t)h * D + d] * t[(size_t)b * N + i]); };
      for (int i = 0; i < N; ++i) {
        // softmax_j(tau Re(sum_d conj(Q e^{-i w t_i}) K e^{-i w t_j}) / sqrt(D)), j <= i
        std::vector<double> s((size_t)i + 1);
        double m = -1e300;
        for (int j = 0; j <= i; ++j) {
          double dot = 0;
          for (int d = 0; d < D; ++d) dot += (std::conj(at(Q, i, d) * rot(i, d)) * (at(K, j, d) * rot(j, d))).real();
          s[(size_t)j] = tau * dot / std::sqrt((double)D);
          m = std::fmax(m, s[(size_t)j]);
        }
        double l = 0;
        for (double& x : s) l += (x = std::exp(x - m));
        std::vector<cd> est((size_t)D, cd(0));
        for (int j = 0; j <= i; ++j) {
          const double w = s[(size_t)j] / l;
          const size_t r = ((size_t)b * H + h) * N + i;
          CHECK(o.Ahat[r * N + j] == doctest::Approx(w).epsilon(1e-12));
          CHECK(o.A[r * N + j] == doctest::Approx(w).epsilon(1e-12));  // E = 1
          for (int d = 0; d < D; ++d) est[(size_t)d] += w * at(V, j, d) * rot(j, d);
        }
        for (int d = 0; d < D; ++d) {
          const cd expect = est[(size_t)d] / rot(i, d);  // counter-rotation e^{+i w t_i}
          CHECK(std::abs(at(o.est, i, d) - expect) < 1e-12);
        }
      }
    }
}

TEST_CASE("hand-computed 2-token example") {
  // H = 1, D = 1, stationary covariance, mu = ln 2 (E(1) = 1/2), s2t = 2, eta2 = 1, gamma2 = 0.5,
  // no floor, no shift, nu = 3, kappa = 4, tau = 1.5, omega = pi/2; t = [0, 1];
  // Q = [1, i], K = [1, 1 + i], V = [2, -i].
  AttentionParams p;
  p.heads = 1;
  p.dim = 1;
  p.sw.covariance = Covariance::stationary;
  p.sw.cov_floor = 0.0;
  HeadParams hp;
  hp.mu = std::log(2.0);
  hp.s2t = 2.0;
  hp.eta2 = 1.0;
  hp.gamma2 = 0.5;
  hp.nu = 3.0;
  hp.kappa = 4.0;
  hp.tau = 1.5;
  p.head = {hp};
  p.omega = {kPi / 2};
  const std::vector<cd> Q = {cd(1, 0), cd(0, 1)}, K = {cd(1, 0), cd(1, 1)}, V = {cd(2, 0), cd(0, -1)};
  const std::vector<double> t = {0.0, 1.0};
  ref::AttentionOutputs o;
  ref::AttentionOptions opt;
  opt.want_matrices = true;
  REQUIRE(ref::attention(p, 1, 2, Q, K, V, t, &o, opt).ok());
  // Row 0 sees only itself: Ahat = 1, E = 1, est = V_0.
  CHECK(o.Ahat[0] == 1.0);
  CHECK(o.Ahat[1] == 0.0);
  CHECK(std::abs(o.est[0] - cd(2, 0)) < 1e-15);
  // Row 1, j = 0: lag 1, E = 1/2, Vcov = 2 (1 - 1/4) + 1/4 + 1/2 = 2.25; residual i - (1/2) e^{i pi/2} 1 = i/2,
  //   R2 = 1/4; P = 1/(3 * 2.25); L = -log 2.25 - 4 log(1 + 0.25/6.75) = -0.9564007928998279.
  // Row 1, j = 1: lag 0, E = 1, Vcov = 1.5; residual i - (1 + i) = -1, R2 = 1; P = 1/4.5;
  //   L = -log 1.5 - 4 log(1 + 1/4.5) = -1.2081478899567695.
  const ref::PairTerms p10 = ref::pair_terms(p, 2, Q, K, t, 0, 0, 1, 0);
  const ref::PairTerms p11 = ref::pair_terms(p, 2, Q, K, t, 0, 0, 1, 1);
  CHECK(p10.E == doctest::Approx(0.5).epsilon(1e-15));
  CHECK(p10.vcov == doctest::Approx(2.25).epsilon(1e-15));
  CHECK(p10.R2 == doctest::Approx(0.25).epsilon(1e-14));
  CHECK(p10.L == doctest::Approx(-0.9564007928998279).epsilon(1e-14));
  CHECK(p11.vcov == doctest::Approx(1.5).epsilon(1e-15));
  CHECK(p11.R2 == doctest::Approx(1.0).epsilon(1e-14));
  CHECK(p11.L == doctest::Approx(-1.2081478899567695).epsilon(1e-14));
  // softmax(1.5 L) = [0.5932991036448172, 0.4067008963551828]
  CHECK(o.Ahat[2] == doctest::Approx(0.5932991036448172).epsilon(1e-14));
  CHECK(o.Ahat[3] == doctest::Approx(0.4067008963551828).epsilon(1e-14));
  CHECK(o.A[2] == doctest::Approx(0.5 * 0.5932991036448172).epsilon(1e-14));
  // est_1 = A_10 e^{i pi/2} V_0 + A_11 V_1 = 0.2966 * 2i - 0.4067 i = 0.1865982072896344 i
  CHECK(std::fabs(o.est[1].real()) < 1e-15);
  CHECK(o.est[1].imag() == doctest::Approx(0.1865982072896344).epsilon(1e-13));
}

TEST_CASE("the direct residual equals docs/reference-code.md §5.1's expanded form; stages are consistent") {
  const int B = 1, N = 6, H = 2, D = 8;
  AttentionParams p = default_params(H, D, 21);
  const size_t n = (size_t)B * N * H * D;
  const auto Q = random_complex(n, 22), K = random_complex(n, 23), V = random_complex(n, 24);
  const auto t = irregular_times(B, N, 25, 100.0);
  ref::AttentionOutputs o;
  ref::AttentionOptions opt;
  opt.want_stages = true;
  REQUIRE(ref::attention(p, B, N, Q, K, V, t, &o, opt).ok());
  const ref::AttentionStages& st = o.stages;
  for (int h = 0; h < H; ++h)
    for (int i = 0; i < N; ++i)
      for (int j = 0; j <= i; ++j) {
        const ref::PairTerms pt = ref::pair_terms(p, N, Q, K, t, 0, h, i, j);
        double q2 = 0, k2 = 0, cross = 0;
        for (int d = 0; d < D; ++d) {
          const cd qr = st.Qr[((size_t)i * H + h) * D + d], kr = st.Kr[((size_t)j * H + h) * D + d];
          q2 += std::norm(qr);
          k2 += std::norm(kr);
          cross += (std::conj(qr) * kr).real();
        }
        const double expanded = q2 + pt.E * pt.E * k2 - 2 * pt.E * cross;
        CHECK(pt.R2 == doctest::Approx(expanded).epsilon(1e-11));
        CHECK(pt.cross == doctest::Approx(cross).epsilon(1e-11));
        CHECK(pt.q_norm2 == doctest::Approx(st.q_norm2[(size_t)i * H + h]).epsilon(1e-13));
        CHECK(pt.k_norm2 == doctest::Approx(st.k_norm2[(size_t)j * H + h]).epsilon(1e-13));
      }
  // est_counter = e^{+i w t_i} est_stationary; the final est adds the shift rotation e^{+i w s}.
  for (int i = 0; i < N; ++i)
    for (int h = 0; h < H; ++h)
      for (int d = 0; d < D; ++d) {
        const size_t k = ((size_t)i * H + h) * D + d;
        const double w = p.omega[(size_t)h * D + d];
        CHECK(std::abs(st.est_counter[k] - st.est_stationary[k] * std::polar(1.0, w * t[(size_t)i])) < 1e-12);
        CHECK(std::abs(o.est[k] - st.est_normed[k] * std::polar(1.0, w * p.head[(size_t)h].lag_shift)) < 1e-12);
      }
  CHECK(max_abs_diff(st.est_counter, st.est_gated) == 0.0);   // gate off
  CHECK(max_abs_diff(st.est_gated, st.est_normed) == 0.0);    // output norm off

  // The cross-only variant: R2 = -E Re(sum conj(Q~) K~).
  p.sw.full_residual = false;
  const ref::PairTerms pc = ref::pair_terms(p, N, Q, K, t, 0, 1, 4, 2);
  CHECK(pc.R2 == doctest::Approx(-pc.E * pc.cross).epsilon(1e-14));
}

TEST_CASE("switches: counter-rotation off, shift rotation off, complex norms") {
  const int B = 1, N = 5, H = 2, D = 4;
  AttentionParams p = default_params(H, D, 31);
  const size_t n = (size_t)B * N * H * D;
  const auto Q = random_complex(n, 32, 3.0), K = random_complex(n, 33, 0.5), V = random_complex(n, 34, 2.0);
  const auto t = irregular_times(B, N, 35);
  ref::AttentionOptions opt;
  opt.want_stages = true;
  ref::AttentionOutputs on, off;
  REQUIRE(ref::attention(p, B, N, Q, K, V, t, &on, opt).ok());
  p.sw.counter_rotate = false;  // M2.4: aggregate stays in the stationary frame (V is still rotated)
  REQUIRE(ref::attention(p, B, N, Q, K, V, t, &off, opt).ok());
  CHECK(max_abs_diff(off.stages.est_counter, on.stages.est_stationary) < 1e-13);
  p.sw.counter_rotate = true;
  p.sw.shift_rotation = false;
  ref::AttentionOutputs noshift;
  REQUIRE(ref::attention(p, B, N, Q, K, V, t, &noshift, opt).ok());
  CHECK(max_abs_diff(noshift.est, on.stages.est_normed) < 1e-14);

  // Complex input norm: every head vector of Qn, Kn, Vn has mean |z|^2 = gain^2 (up to eps).
  p.sw.complex_input_norm = true;
  p.norm_q.assign((size_t)H * D, 1.0);
  p.norm_k.assign((size_t)H * D, 2.0);  // gains
  ref::AttentionOutputs nrm;
  REQUIRE(ref::attention(p, B, N, Q, K, V, t, &nrm, opt).ok());
  for (size_t r = 0; r < (size_t)B * N * H; ++r) {
    double q = 0, k = 0, v = 0;
    for (int d = 0; d < D; ++d) {
      q += std::norm(nrm.stages.Qn[r * D + d]);
      k += std::norm(nrm.stages.Kn[r * D + d]);
      v += std::norm(nrm.stages.Vn[r * D + d]);
    }
    CHECK(q / D == doctest::Approx(1.0).epsilon(1e-5));
    CHECK(k / D == doctest::Approx(4.0).epsilon(1e-5));
    CHECK(v / D == doctest::Approx(1.0).epsilon(1e-5));  // empty gains mean 1
  }
  // The norm is per head and direction-preserving.
  const cd ratio = nrm.stages.Qn[0] / Q[0];
  CHECK(std::fabs(ratio.imag()) < 1e-12);
  CHECK(std::abs(nrm.stages.Qn[1] / Q[1] - ratio) < 1e-12);

  // Complex output norm, applied before the shift rotation.
  p.sw.complex_input_norm = false;
  p.sw.complex_output_norm = true;
  p.norm_o.assign((size_t)H * D, 0.5);
  ref::AttentionOutputs onorm;
  REQUIRE(ref::attention(p, B, N, Q, K, V, t, &onorm, opt).ok());
  for (size_t r = 0; r < (size_t)B * N * H; ++r) {
    double s = 0, raw = 0;
    for (int d = 0; d < D; ++d) {
      s += std::norm(onorm.stages.est_normed[r * D + d]);
      raw += std::norm(onorm.stages.est_gated[r * D + d]);
    }
    CHECK(s / D == doctest::Approx(0.25 * (raw / D) / (raw / D + 1e-6)).epsilon(1e-12));
  }
}

TEST_CASE("fully masked rows give zeros, never NaN; partially masked keys get no weight") {
  const int B = 2, N = 4, H = 2, D = 2;
  for (bool causal : {true, false}) {
    CAPTURE(causal);
    AttentionParams p = default_params(H, D, 41);
    p.sw.causal = causal;
    p.sw.gate = true;
    const size_t n = (size_t)B * N * H * D;
    const auto Q = random_complex(n, 42), K = random_complex(n, 43), V = random_complex(n, 44);
    std::vector<uint8_t> valid((size_t)B * N, 1);
    for (int j = 0; j < N; ++j) valid[(size_t)N + j] = 0;  // sequence 1: every key masked (empty)
    valid[2] = 0;                                           // sequence 0: key 2 masked
    ref::AttentionOptions opt;
    opt.want_matrices = true;
    opt.key_valid = &valid;
    ref::AttentionOutputs o;
    REQUIRE(ref::attention(p, B, N, Q, K, V, {}, &o, opt).ok());
    CHECK(all_finite(o.est));
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < N; ++i) {
        const size_t r1 = ((size_t)1 * H + h) * N + i;
        CHECK(o.row_sum[r1] == 0.0);
        CHECK(std::isinf(o.row_lse[r1]));
        CHECK(std::isinf(o.energy_lse[r1]));
        CHECK(o.gate[r1] == 0.0);
        CHECK(o.decayed_mass[r1] == 0.0);
        for (int j = 0; j < N; ++j) {
          CHECK(o.Ahat[r1 * N + j] == 0.0);
          CHECK(o.A[r1 * N + j] == 0.0);
        }
        const size_t r0 = ((size_t)0 * H + h) * N + i;
        CHECK(o.Ahat[r0 * N + 2] == 0.0);
      }
    // Without the gate the aggregate of an empty row is exactly zero.
    p.sw.gate = false;
    REQUIRE(ref::attention(p, B, N, Q, K, V, {}, &o, opt).ok());
    for (size_t k = (size_t)N * H * D; k < n; ++k) CHECK(o.est[k] == cd(0, 0));
  }
  // Degenerate sizes.
  AttentionParams p = default_params(1, 2);
  ref::AttentionOutputs o;
  CHECK(ref::attention(p, 1, 0, {}, {}, {}, {}, &o).ok());
  CHECK(o.est.empty());
  CHECK(ref::attention(p, 1, 2, std::vector<cd>(3), std::vector<cd>(4), std::vector<cd>(4), {}, &o).code() ==
        Code::invalid_argument);
}

TEST_CASE("extreme parameters: huge tau, tiny and huge nu") {
  const int B = 1, N = 12, H = 1, D = 4;
  const size_t n = (size_t)B * N * H * D;
  const auto Q = random_complex(n, 51), K = random_complex(n, 52), V = random_complex(n, 53);
  ref::AttentionOptions opt;
  opt.want_matrices = true;

  SUBCASE("huge tau: one-hot at the largest logit") {
    AttentionParams p = default_params(H, D, 54);
    p.head[0].tau = 1e8;
    ref::AttentionOutputs o;
    REQUIRE(ref::attention(p, B, N, Q, K, V, {}, &o, opt).ok());
    CHECK(all_finite(o.est));
    for (int i = 0; i < N; ++i) {
      int arg = 0;
      double best = -1e300;
      for (int j = 0; j <= i; ++j) {
        const double L = ref::pair_terms(p, N, Q, K, {}, 0, 0, i, j).L;
        if (L > best) best = L, arg = j;
      }
      CHECK(o.Ahat[(size_t)i * N + arg] == doctest::Approx(1.0).epsilon(1e-12));
    }
  }
  SUBCASE("tiny nu: finite, rows normalised") {
    AttentionParams p = default_params(H, D, 55);
    p.head[0].nu = 1e-12;
    p.head[0].kappa = (1e-12 + D) / D;
    ref::AttentionOutputs o;
    REQUIRE(ref::attention(p, B, N, Q, K, V, {}, &o, opt).ok());
    CHECK(all_finite(o.est));
    for (int i = 0; i < N; ++i) {
      double s = 0;
      for (int j = 0; j < N; ++j) s += o.Ahat[(size_t)i * N + j];
      CHECK(s == doctest::Approx(1.0).epsilon(1e-13));
    }
  }
  SUBCASE("huge nu: Student-t tends to the Gaussian B - R2 / (D Vcov)") {
    AttentionParams p = default_params(H, D, 56);
    p.head[0].nu = 1e12;
    p.head[0].kappa = (1e12 + D) / D;
    for (int i = 0; i < N; ++i)
      for (int j = 0; j <= i; ++j) {
        const ref::PairTerms pt = ref::pair_terms(p, N, Q, K, {}, 0, 0, i, j);
        CHECK(pt.L == doctest::Approx(pt.B - pt.R2 / (D * pt.vcov)).epsilon(1e-9));
      }
    ref::AttentionOutputs o;
    REQUIRE(ref::attention(p, B, N, Q, K, V, {}, &o, opt).ok());
    CHECK(all_finite(o.est));
  }
}

TEST_CASE("timestamps around 1e6: double keeps the phases (translation invariance)") {
  const int B = 1, N = 16, H = 2, D = 8;
  AttentionParams p = default_params(H, D, 61);
  for (size_t k = 0; k < p.omega.size(); ++k) p.omega[k] *= 3.0;  // phases reach ~1e6 rad
  const size_t n = (size_t)B * N * H * D;
  const auto Q = random_complex(n, 62), K = random_complex(n, 63), V = random_complex(n, 64);
  auto t0 = irregular_times(B, N, 65, 0.0);
  for (double& x : t0) x = std::round(x * 1024.0) / 1024.0;  // dyadic, so the shift below is exact
  std::vector<double> t1 = t0;
  for (double& x : t1) x += 1048576.0;
  ref::AttentionOptions opt;
  opt.want_matrices = true;
  ref::AttentionOutputs a, b;
  REQUIRE(ref::attention(p, B, N, Q, K, V, t0, &a, opt).ok());
  REQUIRE(ref::attention(p, B, N, Q, K, V, t1, &b, opt).ok());
  CHECK(max_abs_diff(a.est, b.est) < 1e-12);
  for (size_t k = 0; k < a.Ahat.size(); ++k) CHECK(a.Ahat[k] == doctest::Approx(b.Ahat[k]).epsilon(1e-12));
  // The rotated inputs at 1e6 are still unit-modulus rotations of the inputs.
  ref::AttentionStages st;
  REQUIRE(ref::rotate_inputs(p, B, N, Q, K, V, t1, &st).ok());
  for (size_t k = 0; k < n; ++k) CHECK(std::abs(st.Qr[k]) == doctest::Approx(std::abs(Q[k])).epsilon(1e-14));
  // ... and the cross term from them (absolute phases ~3e6 rad, each rounded to ~5e-10) still agrees
  // with the direct one (relative phases) to ~1e-8.
  for (int i = 0; i < N; ++i)
    for (int j = 0; j <= i; ++j) {
      const ref::PairTerms pt = ref::pair_terms(p, N, Q, K, t1, 0, 1, i, j);
      double cross = 0;
      for (int d = 0; d < D; ++d)
        cross += (std::conj(st.Qr[((size_t)i * H + 1) * D + d]) * st.Kr[((size_t)j * H + 1) * D + d]).real();
      CHECK(std::fabs(pt.cross - cross) < 1e-7);
    }
}

TEST_CASE("confidence gate on and off") {
  const int B = 2, N = 6, H = 2, D = 4;
  AttentionParams p = default_params(H, D, 71);
  for (int h = 0; h < H; ++h) {
    HeadParams& hp = p.head[(size_t)h];
    hp.gate_prior_log = 0.3 * h;
    hp.gate_scale_log = -2.0 + h;
    const double nu_g = D * (std::log1p(std::exp(4.0)) + 2.0 + 1e-5);
    hp.gate_c = std::log(nu_g - 2.0 + 1e-5) - std::log(nu_g + 1e-5);
  }
  const size_t n = (size_t)B * N * H * D;
  const auto Q = random_complex(n, 72), K = random_complex(n, 73), V = random_complex(n, 74);
  const auto t = irregular_times(B, N, 75);
  ref::AttentionOptions opt;
  opt.want_stages = true;
  ref::AttentionOutputs off, on;
  REQUIRE(ref::attention(p, B, N, Q, K, V, t, &off, opt).ok());
  CHECK(off.gate.empty());
  p.sw.gate = true;
  REQUIRE(ref::attention(p, B, N, Q, K, V, t, &on, opt).ok());
  REQUIRE(on.gate.size() == (size_t)B * H * N);
  CHECK(max_abs_diff(on.stages.est_counter, off.stages.est_counter) == 0.0);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      const HeadParams& hp = p.head[(size_t)h];
      for (int i = 0; i < N; ++i) {
        // logsumexp of the energies B - log(1 + P R2) over j <= i, recomputed here.
        double m = -1e300;
        std::vector<double> e;
        for (int j = 0; j <= i; ++j) {
          const ref::PairTerms pt = ref::pair_terms(p, N, Q, K, t, b, h, i, j);
          CHECK(pt.energy == doctest::Approx(pt.B - std::log(1 + pt.P * pt.R2)).epsilon(1e-13));
          e.push_back(pt.energy);
          m = std::fmax(m, pt.energy);
        }
        double s = 0;
        for (double x : e) s += std::exp(x - m);
        const double lse = m + std::log(s);
        const size_t r = ((size_t)b * H + h) * N + i;
        CHECK(on.energy_lse[r] == doctest::Approx(lse).epsilon(1e-13));
        const double g = 1.0 / (1.0 + std::exp(-(std::exp(hp.gate_scale_log) * (lse + hp.gate_c) - hp.gate_prior_log)));
        CHECK(on.gate[r] == doctest::Approx(g).epsilon(1e-13));
        for (int d = 0; d < D; ++d) {
          const size_t k = (((size_t)b * N + i) * H + h) * D + d;
          // est <- g est + (1 - g) V (V after the input norm, NOT rotated), before the shift rotation
          const cd expect = g * off.stages.est_counter[k] + (1.0 - g) * V[k];
          CHECK(std::abs(on.stages.est_gated[k] - expect) < 1e-13);
        }
      }
    }
  // A very negative prior opens the gate fully: the result equals the gate-off result.
  for (auto& hp : p.head) hp.gate_prior_log = -1e3;
  ref::AttentionOutputs open;
  REQUIRE(ref::attention(p, B, N, Q, K, V, t, &open, opt).ok());
  CHECK(max_abs_diff(open.est, off.est) < 1e-14);
}

TEST_CASE("row diagnostics") {
  const int B = 1, N = 8, H = 1, D = 2;
  AttentionParams p = default_params(H, D, 81);
  p.head[0].tau = 0.0;  // uniform attention over j <= i
  p.head[0].mu = 0.1;
  p.head[0].lag_shift = 0.5;
  const size_t n = (size_t)B * N * H * D;
  const auto Q = random_complex(n, 82), K = random_complex(n, 83), V = random_complex(n, 84);
  const auto t = irregular_times(B, N, 85);
  ref::AttentionOptions opt;
  opt.want_matrices = true;
  ref::AttentionOutputs o;
  REQUIRE(ref::attention(p, B, N, Q, K, V, t, &o, opt).ok());
  ref::RowDiagnostics d;
  const std::vector<double> thr = {0.0, 1.0, 4.0};
  REQUIRE(ref::row_diagnostics(p, B, N, t, o, thr, &d).ok());
  for (int i = 0; i < N; ++i) {
    CHECK(d.entropy[(size_t)i] == doctest::Approx(std::log(i + 1.0)).epsilon(1e-13));
    CHECK(d.max_weight[(size_t)i] == doctest::Approx(1.0 / (i + 1)).epsilon(1e-13));
    CHECK(d.log_partition[(size_t)i] == doctest::Approx(std::log(i + 1.0)).epsilon(1e-13));  // all logits 0
    double el = 0;
    std::vector<double> beyond(thr.size(), 0.0);
    for (int j = 0; j <= i; ++j) {
      const double lag = t[(size_t)i] - t[(size_t)j];
      const double a = ref::decay(p, 0, lag) / (i + 1);
      el += a * lag;
      for (size_t k = 0; k < thr.size(); ++k)
        if (lag > thr[k]) beyond[k] += a;
    }
    CHECK(d.expected_lag[(size_t)i] == doctest::Approx(el).epsilon(1e-13));
    for (size_t k = 0; k < thr.size(); ++k)
      CHECK(d.mass_beyond[(size_t)i * thr.size() + k] == doctest::Approx(beyond[k]).epsilon(1e-13));
  }
  ref::AttentionOutputs no_mat;
  REQUIRE(ref::attention(p, B, N, Q, K, V, t, &no_mat).ok());
  CHECK(ref::row_diagnostics(p, B, N, t, no_mat, thr, &d).code() == Code::invalid_argument);
}
