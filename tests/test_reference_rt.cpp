// The CPU twin of RT-RFA (reference/rt_ref, contract docs/variant-rt.md) against hand values and
// independent computations: the worked pair, the zero-noise (cosine-similarity RoPE) limit, the
// RFA limit against both an in-test RFA computation and the RFA twin (reference/attention_ref),
// the kernel's stationary-frame algebra written out here, decode == prefill, timestamps near 0 and
// near 1e6, long lags, masking, the global scope, the block residual, diagnostics and bad inputs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cpu_test_support.hpp"
#include "reference/attention_ref.hpp"
#include "reference/rt_ref.hpp"
#include "rfa/params.hpp"

using namespace rfa;
using namespace rfa::ref;

namespace {

using rfa::test::random_complex;
using rfa::test::all_finite;
using rfa::test::max_abs_diff;

// Non-decreasing irregular timestamps with repeats (every seventh step 0); `dyadic` rounds the steps
// to multiples of 1/64 so that t + 1e6 is exact in double.
std::vector<double> irregular_times(int B, int N, uint32_t seed, double offset = 0.0, bool dyadic = false) {
  test::TimeSteps steps;
  steps.dyadic = dyadic;
  steps.repeats = true;
  return test::irregular_times(B, N, seed, offset, steps);
}

constexpr double kInf = std::numeric_limits<double>::infinity();

cd expi(double a) { return std::polar(1.0, a); }

// A multi-head layer with varied parameters: head 0 has mu = 0, the others mu in [0.01, 0.21];
// conjugate-pair RoPE frequencies.
RtParams make_params(int H, int D, uint32_t seed, RtCovariance cov = RtCovariance::stationary,
                     RtKernel ker = RtKernel::student_t, RtNormScope scope = RtNormScope::per_head) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  RtParams p;
  p.heads = H;
  p.dim = D;
  p.covariance = cov;
  p.kernel = ker;
  p.norm_scope = scope;
  for (int h = 0; h < H; ++h) {
    RtHeadParams hp;
    hp.mu = h == 0 ? 0.0 : 0.01 + 0.2 * u(rng);
    hp.s2t = 0.5 + u(rng);
    hp.sigma2 = 0.05 + 0.5 * u(rng);
    hp.eta2 = 0.2 + u(rng);
    hp.gamma2 = 0.1 + 0.5 * u(rng);
    hp.tau_th2 = 0.01 + 0.1 * u(rng);
    hp.nu = D * (1.0 + 3.0 * u(rng)) + 2.0;
    hp.beta = 0.5 + u(rng);
    for (int k = 0; k < D; ++k) {
      const double w = std::pow(10000.0, -(double)(k / 2) / std::max(1, D / 2)) * (1.0 + 0.1 * h);
      hp.omega.push_back(k % 2 == 0 ? w : -w);
    }
    p.head.push_back(hp);
  }
  return p;
}

// Complex normal entries; each token gets its own scale in [0.3, 3] so magnitudes differ.
std::vector<cd> random_values(int B, int N, int H, int D, uint32_t seed) {
  std::vector<cd> v = random_complex((size_t)B * N * H * D, seed);
  std::mt19937 rng(seed + 7);
  std::uniform_real_distribution<double> s(0.3, 3.0);
  for (size_t tok = 0; tok < (size_t)B * N; ++tok) {
    const double f = s(rng);
    for (size_t e = 0; e < (size_t)H * D; ++e) v[tok * H * D + e] *= f;
  }
  return v;
}

std::vector<double> uniform_times(int B, int N) {
  std::vector<double> t((size_t)B * N);
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < N; ++i) t[(size_t)b * N + i] = i;
  return t;
}

double dotr(const cd* a, const cd* b, int n) {
  double s = 0.0;
  for (int d = 0; d < n; ++d) s += (std::conj(a[d]) * b[d]).real();
  return s;
}

// The layer as a GPU kernel would compute it (docs/variant-rt.md, sections 3 and 5), written out
// here independently of the twin: every token rotated into the stationary frame by e^{-i omega t},
// R2 = |Qh|^2 + |Kh|^2 - 2 Re(Q~^H K~) (2 - 2c for unit vectors), the precision in its literal
// (non-log) form 1 / (a_i + S / ((m_j^2 + eps) E^2) + tau_th2), and the aggregate counter-rotated
// by e^{+i omega t_i}. Valid at moderate lags and timestamps only (no overflow care).
struct KernelForm {
  std::vector<double> A, logit;  // [B][H][N][N]
  std::vector<cd> ubar, T;       // [B][N][H][D]
};
KernelForm kernel_form(const RtParams& p, int B, int N, const std::vector<cd>& Q, const std::vector<cd>& K,
                       const std::vector<cd>& V, const std::vector<double>& t) {
  const int H = p.heads, D = p.dim;
  const bool global = p.norm_scope == RtNormScope::global;
  const size_t nz = (size_t)B * N * H * D;
  std::vector<cd> Qh(nz), Kh(nz), Vh(nz);
  std::vector<double> m((size_t)B * N * H);
  for (size_t tok = 0; tok < (size_t)B * N; ++tok) {
    const int groups = global ? 1 : H, len = global ? H * D : D;
    for (int g = 0; g < groups; ++g) {
      const size_t off = tok * H * D + (size_t)g * len;
      double nq = 0, nk = 0, nv = 0;
      for (int e = 0; e < len; ++e) {
        nq += std::norm(Q[off + e]);
        nk += std::norm(K[off + e]);
        nv += std::norm(V[off + e]);
      }
      nq = std::sqrt(nq), nk = std::sqrt(nk), nv = std::sqrt(nv);
      for (int e = 0; e < len; ++e) {
        Qh[off + e] = Q[off + e] / std::max(nq, p.eps_norm);
        Kh[off + e] = K[off + e] / std::max(nk, p.eps_norm);
        Vh[off + e] = V[off + e] / std::max(nv, p.eps_norm);
      }
      if (global) {
        for (int h = 0; h < H; ++h) m[tok * H + h] = nv;
      } else {
        m[tok * H + g] = nv;
      }
    }
  }
  auto S_of = [&](const RtHeadParams& hp, double l) {
    const double mt = hp.mu_t ? *hp.mu_t : hp.mu;
    const double e2 = std::exp(-2.0 * mt * l);
    if (p.covariance == RtCovariance::stationary) return hp.s2t * (1.0 - e2) + hp.eta2 * e2 + hp.gamma2;
    const double phi = mt == 0.0 ? l : (1.0 - e2) / (2.0 * mt);
    return hp.sigma2 * phi + hp.eta2 * e2 + hp.gamma2;
  };
  KernelForm kf;
  kf.A.assign((size_t)B * H * N * N, 0.0);
  kf.logit.assign((size_t)B * H * N * N, -kInf);
  kf.ubar.assign(nz, cd(0, 0));
  kf.T.assign(nz, cd(0, 0));
  std::vector<cd> Qr(nz), Kr(nz), Vr(nz);
  for (int b = 0; b < B; ++b)
    for (int n = 0; n < N; ++n)
      for (int h = 0; h < H; ++h)
        for (int d = 0; d < D; ++d) {
          const size_t idx = (((size_t)b * N + n) * H + h) * D + d;
          const cd rot = expi(-p.head[(size_t)h].omega[(size_t)d] * t[(size_t)b * N + n]);
          Qr[idx] = Qh[idx] * rot;
          Kr[idx] = Kh[idx] * rot;
          Vr[idx] = Vh[idx] * rot;
        }
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      const RtHeadParams& hp = p.head[(size_t)h];
      const double kappa = (hp.nu + D) / D;
      for (int i = 0; i < N; ++i) {
        const size_t r = ((size_t)b * H + h) * N + i;
        const size_t qi = (((size_t)b * N + i) * H + h) * D;
        const double ti = t[(size_t)b * N + i];
        const double S0 = S_of(hp, 0.0);
        const double mi2 = m[((size_t)b * N + i) * H + h] * m[((size_t)b * N + i) * H + h] + p.eps_m2;
        const double a_i = S0 == 0.0 ? 0.0 : S0 / mi2;
        double mx = -kInf;
        for (int j = 0; j < N; ++j) {
          if (p.causal && j > i) continue;
          const size_t kj = (((size_t)b * N + j) * H + h) * D;
          const double l = std::fabs(ti - t[(size_t)b * N + j]);
          const double E = std::exp(-hp.mu * l);
          const double mj2 = m[((size_t)b * N + j) * H + h] * m[((size_t)b * N + j) * H + h] + p.eps_m2;
          const double P = 1.0 / (a_i + S_of(hp, l) / (mj2 * E * E) + hp.tau_th2);
          const double c = dotr(&Qr[qi], &Kr[kj], D);
          const double R2 = dotr(&Qh[qi], &Qh[qi], D) + dotr(&Kh[kj], &Kh[kj], D) - 2.0 * c;
          const double d2 = P * R2;
          const double L = p.kernel == RtKernel::gaussian ? std::log(P) - d2
                                                           : std::log(P) - kappa * std::log(1.0 + d2 / hp.nu);
          kf.logit[r * N + j] = hp.beta * L;
          mx = std::max(mx, hp.beta * L);
        }
        double sum = 0.0;
        for (int j = 0; j < N; ++j)
          if (kf.logit[r * N + j] > -kInf) sum += std::exp(kf.logit[r * N + j] - mx);
        std::vector<cd> acc((size_t)D, cd(0, 0));
        for (int j = 0; j < N; ++j) {
          if (!(kf.logit[r * N + j] > -kInf)) continue;
          const double a = std::exp(kf.logit[r * N + j] - mx) / sum;
          kf.A[r * N + j] = a;
          for (int d = 0; d < D; ++d) acc[(size_t)d] += a * Vr[(((size_t)b * N + j) * H + h) * D + d];
        }
        for (int d = 0; d < D; ++d) kf.ubar[qi + d] = expi(hp.omega[(size_t)d] * ti) * acc[(size_t)d];
      }
    }
  for (size_t tok = 0; tok < (size_t)B * N; ++tok) {
    const int groups = global ? 1 : H, len = global ? H * D : D;
    for (int g = 0; g < groups; ++g) {
      const size_t off = tok * H * D + (size_t)g * len;
      const double coef = dotr(&Vh[off], &kf.ubar[off], len) / dotr(&Vh[off], &Vh[off], len);
      for (int e = 0; e < len; ++e) kf.T[off + e] = kf.ubar[off + e] - coef * Vh[off + e];
    }
  }
  return kf;
}

bool has(const Status& s, const std::string& what) { return !s.ok() && s.message().find(what) != std::string::npos; }

}  // namespace

TEST_CASE("rt twin: the worked pair and the self pair (hand values)") {
  RtParams p;
  p.heads = 1;
  p.dim = 2;
  p.eps_m2 = 0.0;
  RtHeadParams hp;
  hp.mu = 0.1;
  hp.s2t = 5;
  hp.eta2 = 1;
  hp.gamma2 = 0.25;
  hp.tau_th2 = 0.01;
  hp.nu = 4;
  hp.omega = {0.3, -0.3};
  p.head = {hp};
  CHECK(rt_kappa(p, 0) == doctest::Approx(3.0).epsilon(1e-15));
  const RtPairTerms r = rt_pair_terms(p, 0, 2.0, 3.0, 1.0, 2.0 - 2.0 * 0.8);
  // Quoted to six decimals; each agrees to within half a unit of the last digit.
  CHECK(std::fabs(r.E - 0.904837) < 5e-7);
  CHECK(std::fabs(r.S0 - 1.25) < 1e-15);
  CHECK(std::fabs(r.S - 1.975077) < 5e-7);
  CHECK(std::fabs(r.query_term - 0.3125) < 1e-15);
  CHECK(std::fabs(r.key_term - 0.268040) < 5e-7);
  CHECK(std::fabs(r.P - 1.693364) < 5e-7);
  CHECK(std::fabs(r.log_P - 0.526717) < 5e-7);
  CHECK(std::fabs(r.d2 - 0.677346) < 5e-7);
  CHECK(std::fabs(r.L - 0.057408) < 5e-7);
  CHECK(std::fabs(r.c - 0.8) < 1e-15);
  // The literal (non-log) precision agrees with the log form to rounding.
  CHECK(r.P == doctest::Approx(1.0 / (r.query_term + r.key_term + hp.tau_th2)).epsilon(1e-14));
  CHECK(r.w == doctest::Approx(std::pow(1.0 + r.d2 / 4.0, -3.0)).epsilon(1e-14));
  // The same query against itself: lag 0, m = 2, c = 1.
  const RtPairTerms s = rt_pair_terms(p, 0, 2.0, 2.0, 0.0, 0.0);
  CHECK(std::fabs(s.P - 1.574803) < 5e-7);
  CHECK(s.P == doctest::Approx(1.0 / (0.3125 + 0.3125 + 0.01)).epsilon(1e-14));
  CHECK(s.d2 == 0.0);
  CHECK(s.L == doctest::Approx(s.log_P).epsilon(1e-15));

  // The same pair through the whole layer: query at position 1 (m = 2), key at position 0 (m = 3,
  // lag 1, transported cosine 0.8). The row's logit for key 0 is beta L.
  const double w = 0.3, ang = std::acos(0.8);
  std::vector<cd> Q(4), K(4), V(4);
  Q[2] = cd(1.0, 0.0);  // position 1, head 0: unit query along dim 0
  Q[3] = cd(0.0, 0.0);
  // Key 0 such that e^{i w 1} k0 = (cos ang, sin ang) in dim 0 / dim 1 real parts: c = 0.8.
  K[0] = expi(-w) * cd(std::cos(ang), 0.0);
  K[1] = expi(+w) * cd(std::sin(ang), 0.0);
  K[2] = cd(0.7, 0.1);
  K[3] = cd(-0.2, 0.4);
  V[0] = cd(3.0, 0.0);  // m_0 = 3
  V[1] = cd(0.0, 0.0);
  V[2] = cd(0.0, 1.2);  // m_1 = 2
  V[3] = cd(1.6, 0.0);
  RtOutputs o;
  RtOptions opt;
  opt.want_matrices = true;
  REQUIRE(rt_attention(p, 1, 2, Q, K, V, {0.0, 1.0}, &o, opt).ok());
  CHECK(o.log_P[1 * 2 + 0] == doctest::Approx(0.5267170634514048).epsilon(1e-13));
  CHECK(o.d2[1 * 2 + 0] == doctest::Approx(0.6773455867625616).epsilon(1e-12));
  const double L0 = 0.05740784669569304;
  const RtPairTerms self = rt_pair_terms(p, 0, 2.0, 2.0, 0.0, o.d2[3] / std::exp(o.log_P[3]));
  const double a0 = std::exp(L0) / (std::exp(L0) + std::exp(self.L));
  CHECK(o.A[2] == doctest::Approx(a0).epsilon(1e-12));
}

TEST_CASE("rt twin: zero noise is cosine-similarity attention with RoPE") {
  // s2t = eta2 = gamma2 = 0, Gaussian kernel: P = 1 / tau_th2, A = softmax_j((2 beta / tau_th2) c_ij).
  RtParams p = make_params(1, 4, 3, RtCovariance::stationary, RtKernel::gaussian);
  RtHeadParams& hp = p.head[0];
  hp.s2t = hp.eta2 = hp.gamma2 = 0.0;
  hp.tau_th2 = 0.5;
  hp.beta = 1.0;
  hp.mu = 0.3;  // the decay must not matter without noise
  // Hand value: a two-key row with c = 1 (the query's own key) and c = 0 (key 0).
  const std::vector<double> t = {0.0, 2.5};
  std::vector<cd> Q = random_complex(8, 11), K(8), V = random_complex(8, 12);
  for (int d = 0; d < 4; ++d) {
    K[4 + d] = 1.7 * Q[4 + d];                                    // c(1, 1) = 1
    K[d] = cd(0.0, 1.0) * expi(-hp.omega[(size_t)d] * 2.5) * Q[4 + d];  // transported: i q, c = 0
  }
  RtOutputs o;
  RtOptions opt;
  opt.want_matrices = true;
  REQUIRE(rt_attention(p, 1, 2, Q, K, V, t, &o, opt).ok());
  CHECK(std::fabs(o.A[2] - 0.017986) < 5e-7);
  CHECK(std::fabs(o.A[3] - 0.982014) < 5e-7);
  CHECK(o.log_P[2] == doctest::Approx(-std::log(0.5)).epsilon(1e-15));

  // A whole layer against softmax((2 beta / tau) c) computed here in the stationary frame.
  const int N = 61, D = 4;
  const std::vector<cd> Q2 = random_complex((size_t)N * D, 21), K2 = random_complex((size_t)N * D, 22),
                        V2 = random_values(1, N, 1, D, 23);
  const std::vector<double> t2 = irregular_times(1, N, 24);
  REQUIRE(rt_attention(p, 1, N, Q2, K2, V2, t2, &o, opt).ok());
  double worst = 0.0;
  for (int i = 0; i < N; ++i) {
    std::vector<double> s((size_t)i + 1);
    double mx = -kInf;
    for (int j = 0; j <= i; ++j) {
      double c = 0.0, nq = 0.0, nk = 0.0;
      for (int d = 0; d < D; ++d) {
        nq += std::norm(Q2[(size_t)i * D + d]);
        nk += std::norm(K2[(size_t)j * D + d]);
      }
      for (int d = 0; d < D; ++d) {
        const cd qr = Q2[(size_t)i * D + d] * expi(-hp.omega[(size_t)d] * t2[(size_t)i]);
        const cd kr = K2[(size_t)j * D + d] * expi(-hp.omega[(size_t)d] * t2[(size_t)j]);
        c += (std::conj(qr) * kr).real();
      }
      s[(size_t)j] = (2.0 * hp.beta / hp.tau_th2) * c / std::sqrt(nq * nk);
      mx = std::max(mx, s[(size_t)j]);
    }
    double sum = 0.0;
    for (double x : s) sum += std::exp(x - mx);
    for (int j = 0; j <= i; ++j) worst = std::max(worst, std::fabs(o.A[(size_t)i * N + j] - std::exp(s[(size_t)j] - mx) / sum));
  }
  CHECK(worst < 1e-12);
}

TEST_CASE("rt twin: omega = 0, a common phase on Q, K, V leaves A unchanged") {
  const int B = 2, N = 61, H = 3, D = 4;
  RtParams p = make_params(H, D, 5);
  for (auto& hp : p.head) std::fill(hp.omega.begin(), hp.omega.end(), 0.0);
  const size_t n = (size_t)B * N * H * D;
  std::vector<cd> Q = random_complex(n, 1), K = random_complex(n, 2), V = random_values(B, N, H, D, 3);
  const std::vector<double> t = irregular_times(B, N, 4);
  RtOptions opt;
  opt.want_matrices = true;
  RtOutputs a, b;
  REQUIRE(rt_attention(p, B, N, Q, K, V, t, &a, opt).ok());
  const cd ph = expi(1.234);
  for (auto* z : {&Q, &K, &V})
    for (auto& x : *z) x *= ph;
  REQUIRE(rt_attention(p, B, N, Q, K, V, t, &b, opt).ok());
  CHECK(max_abs_diff(a.A, b.A) < 1e-13);
  std::vector<cd> rotated = a.ubar;
  for (auto& x : rotated) x *= ph;
  CHECK(max_abs_diff(rotated, b.ubar) < 1e-13);
  std::vector<cd> Trot = a.T;
  for (auto& x : Trot) x *= ph;
  CHECK(max_abs_diff(Trot, b.T) < 1e-13);
  // Rotating V alone (not Q, K) changes the values but not the weights.
  std::vector<cd> V2 = V;
  for (auto& x : V2) x *= expi(0.5);
  RtOutputs c;
  REQUIRE(rt_attention(p, B, N, Q, K, V2, t, &c, opt).ok());
  CHECK(max_abs_diff(b.A, c.A) < 1e-13);
  CHECK(max_abs_diff(b.ubar, c.ubar) > 1e-3);
}

TEST_CASE("rt twin: the first position has T = 0 and Z+ = Z + b_o exactly") {
  const int B = 2, N = 5, H = 3, D = 4;
  const RtParams p = make_params(H, D, 9);
  const size_t n = (size_t)B * N * H * D;
  const std::vector<cd> Q = random_complex(n, 1), K = random_complex(n, 2), V = random_values(B, N, H, D, 3);
  RtOutputs o;
  REQUIRE(rt_attention(p, B, N, Q, K, V, irregular_times(B, N, 4, 10.0), &o).ok());
  for (int b = 0; b < B; ++b)
    for (int e = 0; e < H * D; ++e) {
      const size_t idx = (size_t)b * N * H * D + e;  // position 0
      CHECK(o.ubar[idx] == o.v_hat[idx]);            // one key: itself, weight 1, no rotation
      CHECK(o.T[idx] == cd(0.0, 0.0));
    }
  RtBlockWeights w;
  w.d_model = 6;
  std::mt19937 rng(5);
  std::normal_distribution<double> g(0.0, 1.0);
  w.W_o.resize((size_t)w.d_model * 2 * H * D);
  for (auto& x : w.W_o) x = g(rng);
  w.b_o.resize((size_t)w.d_model);
  for (auto& x : w.b_o) x = g(rng);
  std::vector<double> Z((size_t)B * N * w.d_model);
  for (auto& x : Z) x = g(rng);
  std::vector<double> Zp, Up;
  REQUIRE(rt_residual(p, w, B, N, Z, o.T, &Zp, &Up).ok());
  for (int b = 0; b < B; ++b)
    for (int k = 0; k < w.d_model; ++k) {
      const size_t idx = (size_t)b * N * w.d_model + k;
      CHECK(Zp[idx] == Z[idx] + w.b_o[(size_t)k]);
    }
  // Later positions do move.
  double moved = 0.0;
  for (size_t k = (size_t)H * D; k < (size_t)N * H * D; ++k) moved = std::max(moved, std::abs(o.T[k]));
  CHECK(moved > 1e-3);
}

TEST_CASE("rt twin: scaling Q or K changes nothing, scaling V changes only the precision") {
  const int B = 1, N = 61, H = 3, D = 8;
  RtParams p = make_params(H, D, 13);
  const size_t n = (size_t)B * N * H * D;
  const std::vector<cd> Q = random_complex(n, 1), K = random_complex(n, 2), V = random_values(B, N, H, D, 3);
  const std::vector<double> t = irregular_times(B, N, 4);
  RtOptions opt;
  opt.want_matrices = true;
  RtOutputs a, b, c;
  REQUIRE(rt_attention(p, B, N, Q, K, V, t, &a, opt).ok());
  std::vector<cd> Qs = Q, Ks = K, Vs = V;
  for (auto& x : Qs) x *= 3.7;
  for (auto& x : Ks) x *= 0.2;
  for (auto& x : Vs) x *= 5.0;
  REQUIRE(rt_attention(p, B, N, Qs, Ks, V, t, &b, opt).ok());
  CHECK(max_abs_diff(a.A, b.A) < 1e-12);
  CHECK(max_abs_diff(a.ubar, b.ubar) < 1e-12);
  CHECK(max_abs_diff(a.T, b.T) < 1e-12);
  REQUIRE(rt_attention(p, B, N, Q, K, Vs, t, &c, opt).ok());
  CHECK(max_abs_diff(a.v_hat, c.v_hat) < 1e-14);  // same directions
  CHECK(max_abs_diff(a.A, c.A) > 1e-3);           // larger magnitudes: sharper precision
  // Without noise the precision is 1 / tau_th2 whatever the magnitudes: then V's scale is invisible.
  for (auto& hp : p.head) hp.s2t = hp.eta2 = hp.gamma2 = 0.0;
  REQUIRE(rt_attention(p, B, N, Q, K, V, t, &a, opt).ok());
  REQUIRE(rt_attention(p, B, N, Q, K, Vs, t, &c, opt).ok());
  CHECK(max_abs_diff(a.A, c.A) < 1e-13);
  CHECK(max_abs_diff(a.ubar, c.ubar) < 1e-13);
}

TEST_CASE("rt twin: magnitude weighting of two co-directional keys at lag 0") {
  // Keys 0 and 1 share a direction and the query's timestamp; m_0 = 2 m_1. Query at position 2.
  const int N = 3, D = 4;
  for (RtKernel ker : {RtKernel::gaussian, RtKernel::student_t}) {
    RtParams p = make_params(1, D, 17, RtCovariance::stationary, ker);
    const RtHeadParams& hp = p.head[0];
    const std::vector<double> t = {5.0, 5.0, 5.0};
    const std::vector<cd> base = random_complex(D, 31), other = random_complex(D, 32), w = random_complex(D, 33);
    std::vector<cd> Q((size_t)N * D), K((size_t)N * D), V((size_t)N * D);
    for (int d = 0; d < D; ++d) {
      K[(size_t)d] = 2.0 * base[(size_t)d];
      K[(size_t)D + d] = 0.5 * base[(size_t)d];
      K[2 * (size_t)D + d] = other[(size_t)d];
      V[(size_t)d] = 2.0 * w[(size_t)d];
      V[(size_t)D + d] = w[(size_t)d];
      V[2 * (size_t)D + d] = 1.3 * other[(size_t)d];
    }
    // The precisions from their definition at lag 0 (E = 1, S = S(0)).
    double m1sq = 0.0, m2sq = 0.0;
    for (int d = 0; d < D; ++d) {
      m1sq += std::norm(w[(size_t)d]);
      m2sq += std::norm(1.3 * other[(size_t)d]);
    }
    const double S0 = hp.eta2 + hp.gamma2;
    const double a_i = S0 / (m2sq + p.eps_m2);
    const double P0 = 1.0 / (a_i + S0 / (4.0 * m1sq + p.eps_m2) + hp.tau_th2);
    const double P1 = 1.0 / (a_i + S0 / (m1sq + p.eps_m2) + hp.tau_th2);
    RtOptions opt;
    opt.want_matrices = true;
    RtOutputs o;
    // (a) the keys point where the query points (R2 = 0): A_0 / A_1 = (P_0 / P_1)^beta.
    for (int d = 0; d < D; ++d) Q[2 * (size_t)D + d] = base[(size_t)d];
    REQUIRE(rt_attention(p, 1, N, Q, K, V, t, &o, opt).ok());
    CHECK(o.A[6] / o.A[7] == doctest::Approx(std::pow(P0 / P1, hp.beta)).epsilon(1e-12));
    // (b) The hand value "A_0 / A_1 = (P_0 / P_1)^beta" assumes (a). When the common direction is
    // not the query's (R2 > 0), d2 = P R2 differs between the keys and the ratio carries the
    // residual terms too (docs/variant-rt.md, section 6, decision 17): the quoted value is wrong there.
    // Worked out: Gaussian (P0/P1)^beta e^{-beta (P0 - P1) R2}; Student-t
    // (P0/P1)^beta ((1 + P1 R2/nu) / (1 + P0 R2/nu))^{beta kappa}.
    for (int d = 0; d < D; ++d) Q[2 * (size_t)D + d] = base[(size_t)d] + 0.8 * other[(size_t)d];
    REQUIRE(rt_attention(p, 1, N, Q, K, V, t, &o, opt).ok());
    const double R2 = o.d2[6] / std::exp(o.log_P[6]);
    CHECK(R2 > 0.1);
    CHECK(o.d2[7] / std::exp(o.log_P[7]) == doctest::Approx(R2).epsilon(1e-12));
    const double kappa = (hp.nu + D) / D;
    const double expect = ker == RtKernel::gaussian
                              ? std::pow(P0 / P1, hp.beta) * std::exp(-hp.beta * (P0 - P1) * R2)
                              : std::pow(P0 / P1, hp.beta) *
                                    std::pow((1.0 + P1 * R2 / hp.nu) / (1.0 + P0 * R2 / hp.nu), hp.beta * kappa);
    CHECK(o.A[6] / o.A[7] == doctest::Approx(expect).epsilon(1e-12));
    CHECK(std::fabs(o.A[6] / o.A[7] - std::pow(P0 / P1, hp.beta)) > 1e-3);
  }
}

namespace {

// The RFA layer that RT-RFA becomes with unit value magnitudes and eps = 0 (docs/variant-rt.md,
// section 8): RFA mu = 0 (no decay of the residual or the values), the RT precision's total
// variance as RFA's Vcov, precision inv_nu_vcov and bias -log Vcov, tau = beta_s.
AttentionParams rfa_limit(const RtParams& rt, bool colored) {
  AttentionParams p;
  p.heads = rt.heads;
  p.dim = rt.dim;
  p.sw.covariance = colored ? Covariance::colored : Covariance::ou_rate;
  p.sw.additive_bias = AdditiveBias::neg_log_vcov;
  p.sw.precision = RobustPrecision::inv_nu_vcov;
  p.sw.robust = rt.kernel == RtKernel::student_t;
  p.sw.full_residual = true;
  p.sw.counter_rotate = true;
  p.sw.causal = true;
  p.sw.cov_floor = 0.0;  // tau_th2 is per head in RT: it goes into gamma2 below
  for (const RtHeadParams& h : rt.head) {
    HeadParams hp;
    hp.mu = 0.0;
    const double S0 = h.eta2 + h.gamma2;
    hp.eta2 = h.eta2;
    hp.gamma2 = h.gamma2 + S0 + h.tau_th2;  // query term a_i = S(0) and the floor
    if (colored) {
      // S(l) e^{2 mu l} = (sv + gamma2) expm1(2 mu l) + eta2 + gamma2, sv the stationary variance.
      hp.sigma2 = 0.0;
      hp.beta_exp = 2.0 * h.mu;
      hp.c_exp = rt.covariance == RtCovariance::stationary ? 2.0 * h.mu * (h.s2t + h.gamma2)
                                                           : h.sigma2 + 2.0 * h.mu * h.gamma2;
    } else {
      hp.sigma2 = rt.covariance == RtCovariance::ou_rate ? h.sigma2 : 0.0;
    }
    hp.nu = rt.kernel == RtKernel::student_t ? h.nu : 1.0;
    hp.kappa = (h.nu + rt.dim) / rt.dim;
    hp.tau = h.beta;
    hp.lag_shift = 0.0;
    p.head.push_back(hp);
    for (double w : h.omega) p.omega.push_back(w);
  }
  return p;
}

std::vector<cd> unit_per_head(std::vector<cd> z, int H, int D) {
  for (size_t off = 0; off < z.size(); off += (size_t)D) {
    double n = 0.0;
    for (int d = 0; d < D; ++d) n += std::norm(z[off + d]);
    for (int d = 0; d < D; ++d) z[off + d] /= std::sqrt(n);
  }
  return z;
}

}  // namespace

TEST_CASE("rt twin: RFA limit at mu = 0 (unit magnitudes, beta_s = tau)") {
  const int B = 2, N = 61, H = 3, D = 4;
  for (RtCovariance cov : {RtCovariance::ou_rate, RtCovariance::stationary})
    for (RtKernel ker : {RtKernel::student_t, RtKernel::gaussian})
      for (double beta : {1.0, 0.7}) {
        RtParams p = make_params(H, D, 41, cov, ker);
        p.eps_m2 = 0.0;
        for (auto& hp : p.head) {
          hp.mu = 0.0;
          hp.beta = beta;
        }
        const size_t n = (size_t)B * N * H * D;
        const std::vector<cd> Q = unit_per_head(random_complex(n, 1), H, D), K = unit_per_head(random_complex(n, 2), H, D),
                              V = unit_per_head(random_complex(n, 3), H, D);
        const std::vector<double> t = irregular_times(B, N, 4);
        RtOptions opt;
        opt.want_matrices = true;
        RtOutputs rt;
        REQUIRE(rt_attention(p, B, N, Q, K, V, t, &rt, opt).ok());

        // (1) RFA's paper-form logits written out here: L = -log Vcov - kappa log(1 + R2 / (nu Vcov)),
        // R2 = |Q~|^2 + E^2 |K~|^2 - 2 E Re(Q~^H K~) with E = 1, Vcov = sigma2 lag + eta2 + gamma2'.
        double worst = 0.0;
        for (int b = 0; b < B; ++b)
          for (int h = 0; h < H; ++h) {
            const RtHeadParams& hp = p.head[(size_t)h];
            const double S0 = hp.eta2 + hp.gamma2;
            for (int i = 0; i < N; ++i) {
              std::vector<double> L((size_t)i + 1);
              double mx = -kInf;
              for (int j = 0; j <= i; ++j) {
                const double lag = t[(size_t)b * N + i] - t[(size_t)b * N + j];
                const double proc = cov == RtCovariance::ou_rate ? hp.sigma2 * lag : 0.0;
                const double vcov = proc + hp.eta2 + (hp.gamma2 + S0 + hp.tau_th2);
                double R2 = 0.0;
                for (int d = 0; d < D; ++d) {
                  const cd qr = Q[(((size_t)b * N + i) * H + h) * D + d] * expi(-hp.omega[(size_t)d] * t[(size_t)b * N + i]);
                  const cd kr = K[(((size_t)b * N + j) * H + h) * D + d] * expi(-hp.omega[(size_t)d] * t[(size_t)b * N + j]);
                  R2 += std::norm(qr) + std::norm(kr) - 2.0 * (std::conj(qr) * kr).real();
                }
                const double nu = ker == RtKernel::student_t ? hp.nu : 1.0;
                const double Lr = ker == RtKernel::student_t
                                      ? -std::log(vcov) - (hp.nu + D) / D * std::log1p(R2 / (nu * vcov))
                                      : -std::log(vcov) - R2 / (nu * vcov);
                L[(size_t)j] = beta * Lr;
                mx = std::max(mx, L[(size_t)j]);
              }
              double sum = 0.0;
              for (double x : L) sum += std::exp(x - mx);
              const size_t r = ((size_t)b * H + h) * N + i;
              for (int j = 0; j <= i; ++j) worst = std::max(worst, std::fabs(rt.A[r * N + j] - std::exp(L[(size_t)j] - mx) / sum));
              CHECK(rt.row_lse[r] == doctest::Approx(mx + std::log(sum)).epsilon(1e-12));
            }
          }
        CHECK(worst < 1e-12);

        // (2) The RFA twin itself on the same unit Q, K, V.
        const AttentionParams rp = rfa_limit(p, false);
        AttentionOutputs ro;
        AttentionOptions ropt;
        ropt.want_matrices = true;
        REQUIRE(attention(rp, B, N, Q, K, V, t, &ro, ropt).ok());
        CHECK(max_abs_diff(ro.Ahat, rt.A) < 1e-12);
        CHECK(max_abs_diff(ro.A, rt.A) < 1e-12);  // E = 1: nothing for RFA's decay to remove
        CHECK(max_abs_diff(ro.est, rt.ubar) < 1e-12);
        CHECK(max_abs_diff(ro.row_lse, rt.row_lse) < 1e-11);
      }
}

TEST_CASE("rt twin: RFA limit at mu > 0 through RFA's colored covariance") {
  // With mu > 0 the RT key term S(l) / E^2 grows like e^{2 mu l}: that is RFA's colored prior's
  // exponential term at RFA mu = 0 (beta_exp = 2 mu), not any RFA covariance with RFA's own decay.
  const int B = 2, N = 61, H = 3, D = 4;
  for (RtCovariance cov : {RtCovariance::stationary, RtCovariance::ou_rate})
    for (RtKernel ker : {RtKernel::student_t, RtKernel::gaussian}) {
      RtParams p = make_params(H, D, 43, cov, ker);
      p.eps_m2 = 0.0;
      const size_t n = (size_t)B * N * H * D;
      const std::vector<cd> Q = unit_per_head(random_complex(n, 5), H, D), K = unit_per_head(random_complex(n, 6), H, D),
                            V = unit_per_head(random_complex(n, 7), H, D);
      const std::vector<double> t = irregular_times(B, N, 8);
      RtOptions opt;
      opt.want_matrices = true;
      RtOutputs rt;
      REQUIRE(rt_attention(p, B, N, Q, K, V, t, &rt, opt).ok());
      AttentionOutputs ro;
      AttentionOptions ropt;
      ropt.want_matrices = true;
      REQUIRE(attention(rfa_limit(p, true), B, N, Q, K, V, t, &ro, ropt).ok());
      CHECK(max_abs_diff(ro.Ahat, rt.A) < 1e-11);
      CHECK(max_abs_diff(ro.est, rt.ubar) < 1e-11);
      // ... and it is not RFA's own decayed form: RFA with mu > 0 weights and decays differently.
      AttentionParams own = rfa_limit(p, false);
      for (int h = 0; h < H; ++h) own.head[(size_t)h].mu = p.head[(size_t)h].mu;
      own.sw.covariance = cov == RtCovariance::stationary ? Covariance::stationary : Covariance::ou_rate;
      own.sw.min_exponent = -1e30;
      for (int h = 0; h < H; ++h) own.head[(size_t)h].s2t = p.head[(size_t)h].s2t;
      REQUIRE(attention(own, B, N, Q, K, V, t, &ro, ropt).ok());
      CHECK(max_abs_diff(ro.est, rt.ubar) > 1e-3);
    }
}

TEST_CASE("rt twin: decode steps equal the prefill") {
  const int B = 2, N = 61, H = 3, D = 4;
  for (RtNormScope scope : {RtNormScope::per_head, RtNormScope::global})
    for (RtKernel ker : {RtKernel::student_t, RtKernel::gaussian}) {
      const RtParams p = make_params(H, D, 51, RtCovariance::ou_rate, ker, scope);
      const size_t n = (size_t)B * N * H * D;
      const std::vector<cd> Q = random_complex(n, 1), K = random_complex(n, 2), V = random_values(B, N, H, D, 3);
      const std::vector<double> t = irregular_times(B, N, 4, 3.0);
      RtOutputs pre;
      REQUIRE(rt_attention(p, B, N, Q, K, V, t, &pre).ok());
      RtDecodeState st;
      REQUIRE(rt_decode_init(p, B, &st).ok());
      double worst = 0.0, worst_stat = 0.0;
      for (int i = 0; i < N; ++i) {
        std::vector<cd> q((size_t)B * H * D), k(q.size()), v(q.size());
        std::vector<double> tn((size_t)B);
        for (int b = 0; b < B; ++b) {
          const size_t src = ((size_t)b * N + i) * H * D;
          std::copy(Q.begin() + (long)src, Q.begin() + (long)(src + H * D), q.begin() + (long)b * H * D);
          std::copy(K.begin() + (long)src, K.begin() + (long)(src + H * D), k.begin() + (long)b * H * D);
          std::copy(V.begin() + (long)src, V.begin() + (long)(src + H * D), v.begin() + (long)b * H * D);
          tn[(size_t)b] = t[(size_t)b * N + i];
        }
        RtOutputs o;
        REQUIRE(rt_decode_step(p, &st, q, k, v, tn, &o).ok());
        REQUIRE(st.len == i + 1);
        for (int b = 0; b < B; ++b)
          for (int e = 0; e < H * D; ++e) {
            const size_t a = ((size_t)b * N + i) * H * D + e, c = (size_t)b * H * D + e;
            worst = std::max({worst, std::abs(pre.ubar[a] - o.ubar[c]), std::abs(pre.T[a] - o.T[c]),
                              std::abs(pre.u_star[a] - o.u_star[c])});
          }
        for (int b = 0; b < B; ++b)
          for (int h = 0; h < H; ++h) {
            const size_t r = ((size_t)b * H + h) * N + i, s = (size_t)b * H + h;
            worst_stat = std::max({worst_stat, std::fabs(pre.row_lse[r] - o.row_lse[s]),
                                   std::fabs(pre.concentration[r] - o.concentration[s]),
                                   std::fabs(pre.agreement[r] - o.agreement[s]),
                                   std::fabs(pre.angular_step[r] - o.angular_step[s])});
          }
      }
      CHECK(worst < 1e-13);
      CHECK(worst_stat < 1e-13);
      // A timestamp earlier than the cache's last is refused, naming the sequence.
      std::vector<cd> z((size_t)B * H * D, cd(1.0, 0.0));
      RtOutputs o;
      const Status s = rt_decode_step(p, &st, z, z, z, {t[(size_t)N - 1] + 1.0, t[2 * (size_t)N - 1] - 1.0}, &o);
      CHECK(s.code() == Code::input_error);
      CHECK(has(s, "t_new[1]"));
      CHECK(st.len == N);  // nothing appended
    }
}

TEST_CASE("rt twin: uniform and irregular timestamps against the kernel's stationary-frame algebra") {
  const int B = 2, N = 61, H = 3, D = 8;
  for (RtCovariance cov : {RtCovariance::stationary, RtCovariance::ou_rate}) {
    RtParams p = make_params(H, D, 61, cov);
    p.head[1].mu_t = 0.5 * p.head[1].mu;  // a separate tangential decay on one head
    const size_t n = (size_t)B * N * H * D;
    const std::vector<cd> Q = random_complex(n, 1), K = random_complex(n, 2), V = random_values(B, N, H, D, 3);
    RtOptions opt;
    opt.want_matrices = true;
    RtOutputs none, uni, irr;
    REQUIRE(rt_attention(p, B, N, Q, K, V, {}, &none, opt).ok());
    const std::vector<double> tu = uniform_times(B, N), ti = irregular_times(B, N, 4);
    REQUIRE(rt_attention(p, B, N, Q, K, V, tu, &uni, opt).ok());
    CHECK(max_abs_diff(none.ubar, uni.ubar) == 0.0);  // no timestamps means t = 0..N-1
    CHECK(max_abs_diff(none.A, uni.A) == 0.0);
    REQUIRE(rt_attention(p, B, N, Q, K, V, ti, &irr, opt).ok());
    CHECK(max_abs_diff(uni.ubar, irr.ubar) > 1e-3);  // the lags matter
    for (const auto& [t, o] : {std::pair{&tu, &uni}, std::pair{&ti, &irr}}) {
      const KernelForm kf = kernel_form(p, B, N, Q, K, V, *t);
      CHECK(max_abs_diff(kf.A, o->A) < 1e-10);
      CHECK(max_abs_diff(kf.ubar, o->ubar) < 1e-10);
      CHECK(max_abs_diff(kf.T, o->T) < 1e-10);
      // The twin's log-domain precision against the literal form at each pair's own lag.
      double worst = 0.0;
      for (int b = 0; b < B; ++b)
        for (int h = 0; h < H; ++h)
          for (int i = 0; i < N; ++i)
            for (int j = 0; j <= i; ++j) {
              const double lag = (*t)[(size_t)b * N + i] - (*t)[(size_t)b * N + j];
              const RtPairTerms pt = rt_pair_terms(p, h, o->m[((size_t)b * N + i) * H + h],
                                                   o->m[((size_t)b * N + j) * H + h], lag, 0.0);
              const double literal = -std::log(pt.query_term + pt.key_term + p.head[(size_t)h].tau_th2);
              worst = std::max(worst, std::fabs(o->log_P[(((size_t)b * H + h) * N + i) * N + j] - literal));
            }
      CHECK(worst < 1e-12);
    }
  }
}

TEST_CASE("rt twin: timestamps near 1e6 give what timestamps near 0 give") {
  const int B = 2, N = 127, H = 3, D = 4;
  const RtParams p = make_params(H, D, 71, RtCovariance::ou_rate);
  const size_t n = (size_t)B * N * H * D;
  const std::vector<cd> Q = random_complex(n, 1), K = random_complex(n, 2), V = random_values(B, N, H, D, 3);
  RtOptions opt;
  opt.want_matrices = true;
  RtOutputs a, b;
  // Dyadic steps: t + 1e6 is exact, so every lag is the same double and so is every output.
  REQUIRE(rt_attention(p, B, N, Q, K, V, irregular_times(B, N, 4, 0.0, true), &a, opt).ok());
  REQUIRE(rt_attention(p, B, N, Q, K, V, irregular_times(B, N, 4, 1e6, true), &b, opt).ok());
  CHECK(max_abs_diff(a.ubar, b.ubar) == 0.0);
  CHECK(max_abs_diff(a.A, b.A) == 0.0);
  CHECK(max_abs_diff(a.T, b.T) == 0.0);
  // Arbitrary steps: the lags themselves round at 1e6 (ulp 1.2e-10), the outputs by as little.
  REQUIRE(rt_attention(p, B, N, Q, K, V, irregular_times(B, N, 5, 0.0), &a, opt).ok());
  REQUIRE(rt_attention(p, B, N, Q, K, V, irregular_times(B, N, 5, 1e6 + 0.123), &b, opt).ok());
  CHECK(max_abs_diff(a.ubar, b.ubar) < 1e-8);
  CHECK(max_abs_diff(a.A, b.A) < 1e-8);
}

TEST_CASE("rt twin: long lags stay finite (log-domain precision)") {
  RtParams p = make_params(1, 4, 81);
  RtHeadParams& hp = p.head[0];
  hp.mu = 0.5;
  const double mi = 1.3, mj = 2.1;
  // mu l = 60: naive S e^{120} / m^2 overflows float32 (not double): both forms agree in double.
  const RtPairTerms r = rt_pair_terms(p, 0, mi, mj, 120.0, 0.3);
  const double S = rt_cov(p, 0, 120.0);
  CHECK(std::isfinite(r.log_P));
  CHECK(r.log_P == doctest::Approx(std::log(mj * mj + p.eps_m2) - 120.0 - std::log(S)).epsilon(1e-12));
  CHECK(std::isinf((float)(S * std::exp(120.0f)) / (float)(mj * mj)));
  CHECK(r.log_P == doctest::Approx(std::log(1.0 / (r.query_term + r.key_term + hp.tau_th2))).epsilon(1e-12));
  // mu l = 400: e^{800} overflows double; the naive precision is 0, the log form is not.
  const RtPairTerms far = rt_pair_terms(p, 0, mi, mj, 800.0, 0.3);
  CHECK(std::isinf(far.key_term));
  CHECK(far.P == 0.0);
  CHECK(std::isfinite(far.log_P));
  CHECK(far.log_P == doctest::Approx(std::log(mj * mj + p.eps_m2) - 800.0 - std::log(rt_cov(p, 0, 800.0))).epsilon(1e-12));
  CHECK(std::isfinite(far.L));
  // Without noise the precision is 1 / tau_th2 at every lag, however long.
  RtParams z = p;
  z.head[0].s2t = z.head[0].eta2 = z.head[0].gamma2 = 0.0;
  for (double lag : {0.0, 1.0, 1e3, 1e6}) CHECK(rt_log_precision(z, 0, mi, mj, lag) == doctest::Approx(-std::log(z.head[0].tau_th2)).epsilon(1e-15));
  // A layer whose second key is 5000 time units old: finite, and the old key keeps a tiny weight.
  const std::vector<cd> Q = random_complex(12, 1), K = random_complex(12, 2), V = random_values(1, 3, 1, 4, 3);
  RtOptions opt;
  opt.want_matrices = true;
  RtOutputs o;
  REQUIRE(rt_attention(p, 1, 3, Q, K, V, {0.0, 5000.0, 5000.5}, &o, opt).ok());
  CHECK(all_finite(o.ubar));
  CHECK(all_finite(o.T));
  CHECK(std::isfinite(o.log_P[2 * 3 + 0]));
  CHECK(o.A[2 * 3 + 0] < 1e-300);
  CHECK(o.A[2 * 3 + 1] + o.A[2 * 3 + 2] == doctest::Approx(1.0).epsilon(1e-15));
}

TEST_CASE("rt twin: off-tile shapes: sphere, tangency, softmax rows, kernel algebra") {
  int run = 0;
  for (int B : {1, 2})
    for (int H : {1, 3})
      for (int D : {4, 8})
        for (int N : {1, 2, 61, 127}) {
          ++run;
          const RtNormScope scope = run % 3 == 0 ? RtNormScope::global : RtNormScope::per_head;
          const RtKernel ker = run % 2 == 0 ? RtKernel::gaussian : RtKernel::student_t;
          const RtCovariance cov = run % 4 < 2 ? RtCovariance::stationary : RtCovariance::ou_rate;
          const RtParams p = make_params(H, D, 100 + (uint32_t)run, cov, ker, scope);
          CAPTURE(B);
          CAPTURE(H);
          CAPTURE(D);
          CAPTURE(N);
          CAPTURE((int)scope);
          const size_t n = (size_t)B * N * H * D;
          const std::vector<cd> Q = random_complex(n, 1 + run), K = random_complex(n, 2 + run),
                                V = random_values(B, N, H, D, 3 + run);
          const std::vector<double> t = irregular_times(B, N, 4 + run);
          RtOptions opt;
          opt.want_matrices = true;
          RtOutputs o;
          REQUIRE(rt_attention(p, B, N, Q, K, V, t, &o, opt).ok());
          REQUIRE(o.ubar.size() == n);
          CHECK(all_finite(o.ubar));
          CHECK(all_finite(o.T));
          const bool global = scope == RtNormScope::global;
          const int len = global ? H * D : D;
          double unit = 0.0, tangency = 0.0, over = 0.0, rows = 0.0, star = 0.0;
          for (size_t off = 0; off < n; off += (size_t)len) {
            for (const auto* z : {&o.q_hat, &o.k_hat, &o.v_hat})
              unit = std::max(unit, std::fabs(std::sqrt(dotr(&(*z)[off], &(*z)[off], len)) - 1.0));
            tangency = std::max(tangency, std::fabs(dotr(&o.v_hat[off], &o.T[off], len)));
            const double nu = std::sqrt(dotr(&o.ubar[off], &o.ubar[off], len));
            if (nu > 1e-12) star = std::max(star, std::fabs(std::sqrt(dotr(&o.u_star[off], &o.u_star[off], len)) - 1.0));
          }
          // |ubar| <= 1 per head: a convex combination of transported vectors of norm <= 1. (In the
          // global scope the whole vector can exceed 1: each head weighs the keys its own way.)
          for (size_t off = 0; off < n; off += (size_t)D)
            over = std::max(over, std::sqrt(dotr(&o.ubar[off], &o.ubar[off], D)) - 1.0);
          for (size_t r = 0; r < (size_t)B * H * N; ++r) {
            double s = 0.0;
            for (int j = 0; j < N; ++j) {
              CHECK(o.A[r * N + j] >= 0.0);
              s += o.A[r * N + j];
            }
            rows = std::max(rows, std::fabs(s - 1.0));
            CHECK(o.concentration[r] <= 1.0 + 1e-14);
            CHECK(std::fabs(o.agreement[r]) <= 1.0 + 1e-14);
          }
          CHECK(unit < 1e-14);      // Q, K, V directions on the sphere
          CHECK(tangency < 1e-14);  // T in the tangent space at vh_i
          CHECK(over < 1e-14);
          CHECK(star < 1e-14);      // the normalised estimate on the sphere
          CHECK(rows < 1e-14);
          // Diagnostics against their definitions.
          for (int b = 0; b < B; ++b)
            for (int i = 0; i < N; ++i)
              for (int h = 0; h < H; ++h) {
                const size_t z = (((size_t)b * N + i) * H + h) * D, r = ((size_t)b * H + h) * N + i;
                const double m = o.m[((size_t)b * N + i) * H + h];
                CHECK(o.concentration[r] == doctest::Approx(std::sqrt(dotr(&o.ubar[z], &o.ubar[z], D))).epsilon(1e-14));
                CHECK(o.agreement[r] == doctest::Approx(dotr(&o.v_hat[z], &o.ubar[z], D)).epsilon(1e-13));
                CHECK(o.angular_step[r] ==
                      doctest::Approx(std::sqrt(dotr(&o.T[z], &o.T[z], D)) / std::sqrt(m * m + p.eps_m2)).epsilon(1e-13));
              }
          const KernelForm kf = kernel_form(p, B, N, Q, K, V, t);
          CHECK(max_abs_diff(kf.A, o.A) < 1e-10);
          CHECK(max_abs_diff(kf.ubar, o.ubar) < 1e-10);
          CHECK(max_abs_diff(kf.T, o.T) < 1e-10);
        }
}

TEST_CASE("rt twin: fully masked rows and zero values give zeros, not NaN") {
  const int B = 2, N = 7, H = 3, D = 4;
  const RtParams p = make_params(H, D, 91);
  const size_t n = (size_t)B * N * H * D;
  const std::vector<cd> Q = random_complex(n, 1), K = random_complex(n, 2), V = random_values(B, N, H, D, 3);
  std::vector<uint8_t> valid((size_t)B * N, 1);
  valid[0] = valid[1] = 0;  // sequence 0: rows 0 and 1 see no key
  valid[(size_t)N + 4] = 0;
  RtOptions opt;
  opt.want_matrices = true;
  opt.key_valid = &valid;
  RtOutputs o;
  REQUIRE(rt_attention(p, B, N, Q, K, V, uniform_times(B, N), &o, opt).ok());
  CHECK(all_finite(o.ubar));
  CHECK(all_finite(o.T));
  CHECK(all_finite(o.u_star));
  for (int i : {0, 1})
    for (int h = 0; h < H; ++h) {
      const size_t r = (size_t)h * N + i;
      CHECK(o.row_lse[r] == -kInf);
      CHECK(o.row_sum[r] == 0.0);
      for (int j = 0; j < N; ++j) CHECK(o.A[r * N + j] == 0.0);
      for (int d = 0; d < D; ++d) {
        CHECK(o.ubar[((size_t)i * H + h) * D + d] == cd(0, 0));
        CHECK(o.T[((size_t)i * H + h) * D + d] == cd(0, 0));
      }
      CHECK(o.concentration[r] == 0.0);
    }
  // Row 2 of sequence 0 sees keys 2 only ... and the masked key of sequence 1 gets no weight.
  for (int h = 0; h < H; ++h) {
    CHECK(o.A[((size_t)h * N + 2) * N + 2] == 1.0);
    for (int i = 4; i < N; ++i) CHECK(o.A[(((size_t)H + h) * N + i) * N + 4] == 0.0);
  }
  // A zero value vector with eps = 0: a zero-magnitude key has no precision (log P = -inf), and a
  // row whose only key is such a key gives zeros.
  RtParams p0 = p;
  p0.eps_m2 = 0.0;
  std::vector<cd> V0 = V;
  for (int e = 0; e < H * D; ++e) V0[e] = cd(0, 0);  // token 0 of sequence 0
  RtOutputs z;
  RtOptions zopt;
  zopt.want_matrices = true;
  REQUIRE(rt_attention(p0, B, N, Q, K, V0, uniform_times(B, N), &z, zopt).ok());
  CHECK(all_finite(z.ubar));
  CHECK(all_finite(z.T));
  for (int h = 0; h < H; ++h) {
    CHECK(z.log_P[((size_t)h * N + 3) * N + 0] == -kInf);
    CHECK(z.A[((size_t)h * N + 3) * N + 0] == 0.0);
    // Row 0 of sequence 0: its only key has zero magnitude and the query itself has m = 0: zeros.
    CHECK(z.row_lse[(size_t)h * N] == -kInf);
  }
}

TEST_CASE("rt twin: global normalisation scope") {
  const int B = 2, N = 61, D = 4;
  // One head: global and per-head are the same thing.
  RtParams p1 = make_params(1, D, 93);
  RtParams g1 = p1;
  g1.norm_scope = RtNormScope::global;
  const std::vector<cd> Q = random_complex((size_t)B * N * D, 1), K = random_complex((size_t)B * N * D, 2),
                        V = random_values(B, N, 1, D, 3);
  const std::vector<double> t = irregular_times(B, N, 4);
  RtOutputs a, b;
  REQUIRE(rt_attention(p1, B, N, Q, K, V, t, &a).ok());
  REQUIRE(rt_attention(g1, B, N, Q, K, V, t, &b).ok());
  CHECK(max_abs_diff(a.ubar, b.ubar) == 0.0);
  CHECK(max_abs_diff(a.T, b.T) == 0.0);
  // Three heads: one magnitude per token, tangency over the whole vector only.
  const int H = 3;
  const RtParams g = make_params(H, D, 94, RtCovariance::stationary, RtKernel::student_t, RtNormScope::global);
  const size_t n = (size_t)B * N * H * D;
  const std::vector<cd> Q3 = random_complex(n, 5), K3 = random_complex(n, 6), V3 = random_values(B, N, H, D, 7);
  RtOutputs o;
  REQUIRE(rt_attention(g, B, N, Q3, K3, V3, t, &o).ok());
  double slice = 0.0;
  for (size_t tok = 0; tok < (size_t)B * N; ++tok) {
    CHECK(o.m[tok * H] == o.m[tok * H + 1]);
    CHECK(o.m[tok * H] == o.m[tok * H + 2]);
    double vv = 0.0;
    for (int e = 0; e < H * D; ++e) vv += std::norm(V3[tok * H * D + e]);
    CHECK(o.m[tok * H] == doctest::Approx(std::sqrt(vv)).epsilon(1e-14));
    CHECK(std::fabs(dotr(&o.v_hat[tok * H * D], &o.T[tok * H * D], H * D)) < 1e-14);
    slice = std::max(slice, std::fabs(dotr(&o.v_hat[tok * H * D], &o.T[tok * H * D], D)));
  }
  CHECK(slice > 1e-3);  // head slices of T are not tangent on their own
}

TEST_CASE("rt twin: non-causal layers use |t_i - t_j|") {
  const int B = 1, N = 61, H = 3, D = 4;
  RtParams p = make_params(H, D, 95);
  p.causal = false;
  const size_t n = (size_t)B * N * H * D;
  const std::vector<cd> Q = random_complex(n, 1), K = random_complex(n, 2), V = random_values(B, N, H, D, 3);
  std::vector<double> t = irregular_times(B, N, 4);
  std::reverse(t.begin(), t.end());  // any order is allowed without the causal mask
  RtOptions opt;
  opt.want_matrices = true;
  RtOutputs o;
  REQUIRE(rt_attention(p, B, N, Q, K, V, t, &o, opt).ok());
  CHECK(o.A[0 * N + (N - 1)] > 0.0);  // row 0 sees the last key
  const KernelForm kf = kernel_form(p, B, N, Q, K, V, t);
  CHECK(max_abs_diff(kf.A, o.A) < 1e-10);
  CHECK(max_abs_diff(kf.ubar, o.ubar) < 1e-10);
  // The same order is refused by a causal layer, naming the first timestamp out of order.
  p.causal = true;
  int first = 1;
  while (t[(size_t)first] >= t[(size_t)first - 1]) ++first;
  const Status s = rt_attention(p, B, N, Q, K, V, t, &o);
  CHECK(s.code() == Code::input_error);
  CHECK(has(s, "t[0][" + std::to_string(first) + "] = "));
  RtDecodeState st;
  p.causal = false;
  CHECK(has(rt_decode_init(p, 1, &st), "params.causal"));
}

TEST_CASE("rt twin: the block residual and the retraction") {
  const int B = 2, N = 5, H = 3, D = 4, dm = 7;
  const RtParams p = make_params(H, D, 97);
  const size_t n = (size_t)B * N * H * D;
  const std::vector<cd> T = random_complex(n, 1);
  std::mt19937 rng(2);
  std::normal_distribution<double> g(0.0, 1.0);
  RtBlockWeights w;
  w.d_model = dm;
  w.W_o.resize((size_t)dm * 2 * H * D);
  for (auto& x : w.W_o) x = g(rng);
  w.b_o.resize(dm);
  for (auto& x : w.b_o) x = g(rng);
  std::vector<double> Z((size_t)B * N * dm);
  for (auto& x : Z) x = g(rng);
  std::vector<double> Zp, Up;
  REQUIRE(rt_residual(p, w, B, N, Z, T, &Zp, &Up).ok());
  for (size_t r = 0; r < (size_t)B * N; ++r) {
    double ms = 0.0;
    for (int o = 0; o < dm; ++o) {
      double acc = Z[r * dm + o] + w.b_o[(size_t)o];
      for (int h = 0; h < H; ++h)
        for (int d = 0; d < D; ++d) {
          const cd x = T[(r * H + h) * D + d];
          acc += w.W_o[(size_t)o * 2 * H * D + (size_t)h * D + d] * x.real();
          acc += w.W_o[(size_t)o * 2 * H * D + (size_t)H * D + (size_t)h * D + d] * x.imag();
        }
      CHECK(Zp[r * dm + o] == doctest::Approx(acc).epsilon(1e-13));
      ms += Zp[r * dm + o] * Zp[r * dm + o];
    }
    ms /= dm;
    double us = 0.0;
    for (int o = 0; o < dm; ++o) us += Up[r * dm + o] * Up[r * dm + o];
    CHECK(us / dm == doctest::Approx(ms / (ms + w.rms_eps)).epsilon(1e-13));  // RMS 1 up to eps
  }
  // A gain scales U+ per channel.
  RtBlockWeights wg = w;
  wg.rms_gain.assign(dm, 0.0);
  for (int o = 0; o < dm; ++o) wg.rms_gain[(size_t)o] = 0.5 + o;
  std::vector<double> Zg, Ug;
  REQUIRE(rt_residual(p, wg, B, N, Z, T, &Zg, &Ug).ok());
  for (size_t k = 0; k < Ug.size(); ++k) CHECK(Ug[k] == doctest::Approx(Up[k] * wg.rms_gain[k % dm]).epsilon(1e-14));
}

TEST_CASE("rt twin: host diagnostics") {
  RtParams p = make_params(3, 4, 99, RtCovariance::stationary);
  // Head 1: diffusive S (s2t > eta2); head 2: integrative S (eta2 > s2t).
  p.head[1].s2t = 2.0;
  p.head[1].eta2 = 0.5;
  p.head[2].s2t = 0.2;
  p.head[2].eta2 = 1.5;
  p.head[2].mu = 0.05;
  CHECK(rt_head_summary(p, 0).regime == "brownian");
  CHECK(rt_head_summary(p, 1).regime == "diffusive");
  CHECK(rt_head_summary(p, 2).regime == "integrative");
  const RtHeadSummary s = rt_head_summary(p, 2);
  CHECK(s.m_min == doctest::Approx(std::sqrt(2.0 * 0.2 * (2.0 * 4 - 1.0))).epsilon(1e-14));
  CHECK(s.alibi_slope == doctest::Approx(2.0 * 0.05 * p.head[2].beta).epsilon(1e-15));
  CHECK(s.kappa == doctest::Approx((p.head[2].nu + 4.0) / 4.0).epsilon(1e-15));
  CHECK(s.sigma_t2 == doctest::Approx(2.0 * 0.05 * 0.2).epsilon(1e-15));
  // The precision kernel's long-lag slope is -2 mu, and with mu_t = mu it falls at every lag,
  // even where S itself is integrative (falls with lag).
  std::vector<double> lags;
  for (int k = 0; k <= 400; ++k) lags.push_back(k * 0.5);
  const std::vector<double> lp = rt_precision_kernel(p, 2, 1.7, lags);
  for (size_t k = 1; k < lp.size(); ++k) CHECK(lp[k] < lp[k - 1]);
  CHECK((lp[400] - lp[399]) / 0.5 == doctest::Approx(-2.0 * 0.05).epsilon(1e-6));
  CHECK(rt_cov(p, 2, 10.0) < rt_cov(p, 2, 0.0));  // S integrative indeed
  // A tangential decay faster than the magnitude's can make precision rise with lag.
  p.head[2].mu_t = 2.0;
  const std::vector<double> up = rt_precision_kernel(p, 2, 1.7, {0.0, 1.0});
  CHECK(up[1] > up[0]);
  // Validity: (sigma_t / m_j) sqrt(lag), sigma_t^2 = 2 mu_t s2t.
  CHECK(rt_validity(p, 2, 3.0, 4.0) == doctest::Approx(std::sqrt(2.0 * 2.0 * 0.2 * 4.0) / 3.0).epsilon(1e-15));
  // ou_rate at mu = 0: Brownian S, infinite stationary variance.
  RtParams q = make_params(1, 4, 5, RtCovariance::ou_rate);
  CHECK(rt_head_summary(q, 0).regime == "brownian");
  CHECK(rt_cov(q, 0, 3.0) == doctest::Approx(q.head[0].sigma2 * 3.0 + q.head[0].eta2 + q.head[0].gamma2).epsilon(1e-15));
  // phi is exact at tiny mu (no switch to the Brownian branch before mu = 0).
  q.head[0].mu = 1e-7;
  const double lag = 1e5;
  CHECK(rt_cov(q, 0, lag) == doctest::Approx(q.head[0].sigma2 * (1.0 - std::exp(-2e-7 * lag)) / 2e-7 +
                                             q.head[0].eta2 * std::exp(-2e-7 * lag) + q.head[0].gamma2)
                                 .epsilon(1e-12));
}

TEST_CASE("rt twin: bad inputs name the field at fault") {
  const int B = 1, N = 4, H = 2, D = 4;
  const RtParams good = make_params(H, D, 7);
  const size_t n = (size_t)B * N * H * D;
  const std::vector<cd> Q = random_complex(n, 1), K = random_complex(n, 2), V = random_values(B, N, H, D, 3);
  const std::vector<double> t = uniform_times(B, N);
  RtOutputs o;
  REQUIRE(rt_attention(good, B, N, Q, K, V, t, &o).ok());
  auto with = [&](auto edit) {
    RtParams p = good;
    edit(p);
    return rt_attention(p, B, N, Q, K, V, t, &o);
  };
  CHECK(has(with([](RtParams& p) { p.heads = 0; }), "params.heads"));
  CHECK(has(with([](RtParams& p) { p.dim = 0; }), "params.dim"));
  CHECK(has(with([](RtParams& p) { p.head.pop_back(); }), "params.head has 1"));
  CHECK(has(with([](RtParams& p) { p.head[1].omega.pop_back(); }), "params.head[1].omega"));
  CHECK(has(with([](RtParams& p) { p.head[0].omega[2] = NAN; }), "params.head[0].omega[2]"));
  CHECK(has(with([](RtParams& p) { p.head[1].mu = -0.1; }), "params.head[1].mu"));
  CHECK(has(with([](RtParams& p) { p.head[0].mu_t = -1.0; }), "params.head[0].mu_t"));
  CHECK(has(with([](RtParams& p) { p.head[1].s2t = -1.0; }), "params.head[1].s2t"));
  CHECK(has(with([](RtParams& p) { p.head[1].sigma2 = INFINITY; }), "params.head[1].sigma2"));
  CHECK(has(with([](RtParams& p) { p.head[0].eta2 = -1.0; }), "params.head[0].eta2"));
  CHECK(has(with([](RtParams& p) { p.head[0].gamma2 = NAN; }), "params.head[0].gamma2"));
  CHECK(has(with([](RtParams& p) { p.head[1].tau_th2 = 0.0; }), "params.head[1].tau_th2"));
  CHECK(has(with([](RtParams& p) { p.head[1].nu = 0.0; }), "params.head[1].nu"));
  CHECK(has(with([](RtParams& p) { p.head[0].beta = 0.0; }), "params.head[0].beta"));
  CHECK(has(with([](RtParams& p) { p.eps_m2 = -1e-6; }), "params.eps_m2"));
  CHECK(has(with([](RtParams& p) { p.eps_norm = 0.0; }), "params.eps_norm"));
  CHECK(has(with([](RtParams& p) { p.kernel = (RtKernel)7; }), "params.kernel"));
  // nu is not used by the Gaussian kernel.
  CHECK(with([](RtParams& p) {
          p.kernel = RtKernel::gaussian;
          p.head[1].nu = 0.0;
        }).ok());
  const Status sq = rt_attention(good, B, N, std::vector<cd>(n - 1), K, V, t, &o);
  CHECK(sq.code() == Code::invalid_argument);
  CHECK(has(sq, "Q holds"));
  CHECK(has(rt_attention(good, B, N, Q, std::vector<cd>(n + 1), V, t, &o), "K holds"));
  std::vector<cd> Vbad = V;
  Vbad[(size_t)1 * H * D + 1 * D + 3] = cd(NAN, 0.0);
  const Status sv = rt_attention(good, B, N, Q, K, Vbad, t, &o);
  CHECK(sv.code() == Code::input_error);
  CHECK(has(sv, "V[0][1][1][3] is not finite"));
  CHECK(has(rt_attention(good, B, N, Q, K, V, {0.0, 1.0}, &o), "t holds 2"));
  CHECK(has(rt_attention(good, B, N, Q, K, V, {0.0, 1.0, INFINITY, 3.0}, &o), "t[0][2] is not finite"));
  CHECK(has(rt_attention(good, B, N, Q, K, V, {0.0, 2.0, 1.0, 3.0}, &o), "t[0][2]"));
  std::vector<uint8_t> kv(3, 1);
  RtOptions opt;
  opt.key_valid = &kv;
  CHECK(has(rt_attention(good, B, N, Q, K, V, t, &o, opt), "options.key_valid"));
  CHECK(has(rt_attention(good, -1, N, Q, K, V, t, &o), "B = -1"));
  // Decode.
  RtDecodeState st;
  CHECK(has(rt_decode_init(good, 0, &st), "B = 0"));
  REQUIRE(rt_decode_init(good, 2, &st).ok());
  std::vector<cd> z((size_t)2 * H * D, cd(1, 0));
  CHECK(has(rt_decode_step(good, &st, std::vector<cd>(3), z, z, {0.0, 0.0}, &o), "q holds 3"));
  CHECK(has(rt_decode_step(good, &st, z, z, z, {0.0}, &o), "t_new holds 1"));
  std::vector<cd> zbad = z;
  zbad[(size_t)1 * H * D + 0 * D + 2] = cd(0.0, INFINITY);
  const Status sk = rt_decode_step(good, &st, z, zbad, z, {0.0, 0.0}, &o);
  CHECK(sk.code() == Code::input_error);
  CHECK(has(sk, "k[1][0][2] is not finite"));
  CHECK(st.len == 0);
  RtParams other = good;
  other.dim = 8;
  for (auto& hp : other.head) hp.omega.resize(8, 0.0);
  CHECK(has(rt_decode_step(other, &st, z, z, z, {0.0, 0.0}, &o), "state"));
  // Block.
  RtBlockWeights w;
  w.d_model = 3;
  w.W_o.assign(3 * 2 * H * D - 1, 0.0);
  std::vector<double> Zp, Up;
  CHECK(has(rt_residual(good, w, B, N, std::vector<double>(B * N * 3), o.T, &Zp, &Up), "weights.W_o"));
  w.W_o.assign(3 * 2 * H * D, 0.0);
  CHECK(has(rt_residual(good, w, B, N, std::vector<double>(5), o.T, &Zp, &Up), "Z holds 5"));
  CHECK(has(rt_residual(good, w, B, N, std::vector<double>(B * N * 3), std::vector<cd>(2), &Zp, &Up), "T holds 2"));
  w.b_o.assign(2, 0.0);
  CHECK(has(rt_residual(good, w, B, N, std::vector<double>(B * N * 3), o.T, &Zp, &Up), "weights.b_o"));
}
