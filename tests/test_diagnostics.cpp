// Attention tomography (Session::head_diagnostics, ops/rfa_tomography) on the GPU against
// double-precision computations from the definitions (docs/DIAGNOSTICS.md §3): hand-checkable heads
// (uniform rows, the streaming-entropy and two-key hand values, a permutation), general RFA heads
// (every logit from the CPU twin's pair_terms, the softmax, entropy, s-moments, P's singular
// values, the tilt covariance and the normals n = W^T u0 formed explicitly in token space),
// alpha = 1 against the plain probes, the sweep, pooled moments, and the errors. The Laplace-Radon
// identity and the sliding-window ring: test_diagnostics_ring.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "model/model.hpp"
#include "model_factory.hpp"
#include "diagnostics_support.hpp"
#include "probe/dot_product_head.hpp"
#include "probe/linalg.hpp"
#include "reference/attention_ref.hpp"
#include "reference/model_ref.hpp"
#include "reference/ops_ref.hpp"
#include "rfa/diagnostics.hpp"
#include "rfa/session.hpp"
#include "rfa/inspect.hpp"
#include "test_support.hpp"

using namespace rfa;
using namespace rfa::test;
using cd = std::complex<double>;

namespace {

using Expected = ExpectedDiagnostics;

Expected expected(const Model& m, const std::vector<float>& xf, int N, const std::vector<double>& t, int h, int r0,
                  int r1, int c0, int c1, double alpha, bool decayed) {
  const AttentionLayer& L = m.single;
  const AttentionParams& p = L.params;
  const int D = p.dim, H = p.heads, d = 2 * D;
  std::vector<double> x(xf.begin(), xf.end());
  ref::AttentionOutputs o;
  ref::AttentionOptions opt;
  opt.want_stages = true;
  auto y = ref::attention_layer(L, 1, N, x, t, &o, opt);
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  const auto& st = o.stages;
  auto at = [&](const std::vector<cd>& z, int i) { return z.data() + ((size_t)i * H + h) * D; };
  auto time = [&](int i) { return t.empty() ? (double)i : t[(size_t)i]; };
  Expected e;
  e.logit_stats = true;
  const int rows = r1 - r0, cols = c1 - c0;
  e.P.assign((size_t)rows * cols, 0.0);
  double lsum = 0, lsq = 0, ln = 0;
  for (int i = r0; i < r1; ++i) {
    const cd* qr = at(st.Qr, i);
    double qn = 0;
    for (int k = 0; k < D; ++k) qn += std::norm(qr[k]);
    qn = std::sqrt(qn);
    std::vector<double> logit, s, lag, E;
    std::vector<int> js;
    for (int j = 0; j < N; ++j) {
      if (p.sw.causal && j > i) continue;
      const ref::PairTerms pt = ref::pair_terms(p, h, at(st.Qn, i), at(st.Kn, j), time(i), time(j));
      double cross = 0;
      const cd* kr = at(st.Kr, j);
      for (int k = 0; k < D; ++k) cross += (std::conj(qr[k]) * kr[k]).real();
      js.push_back(j);
      logit.push_back(pt.logit);
      s.push_back(qn > 0 ? cross / qn : 0.0);
      lag.push_back(pt.lag);
      E.push_back(pt.E);
      lsum += pt.logit;
      lsq += pt.logit * pt.logit;
      ln += 1;
    }
    std::vector<double> xa;
    for (double l : logit) xa.push_back(alpha * l);
    const double lz = logsumexp(xa);
    double H_ = 0, mx = 0, ms = 0, ms2 = 0, ml = 0, ml2 = 0, el = 0;
    for (size_t k = 0; k < js.size(); ++k) {
      const double pk = std::exp(xa[k] - lz);
      if (pk > 0) H_ -= pk * std::log(pk);
      mx = std::max(mx, pk);
      ms += pk * s[k];
      ms2 += pk * s[k] * s[k];
      ml += pk * logit[k];
      ml2 += pk * logit[k] * logit[k];
      el += pk * lag[k];
      if (js[k] >= c0 && js[k] < c1) e.P[(size_t)(i - r0) * cols + (js[k] - c0)] = pk * (decayed ? E[k] : 1.0);
    }
    e.entropy.push_back(H_);
    e.log_z.push_back(lz);
    e.max_w.push_back(mx);
    e.mean_s.push_back(ms);
    e.var_s.push_back(ms2 - ms * ms);
    e.mean_l.push_back(ml);
    e.var_l.push_back(ml2 - ml * ml);
    e.tau.push_back(qn / std::sqrt((double)d));
    e.lag.push_back(el);
    e.entropy_mean += H_ / rows;
    e.max_mean += mx / rows;
  }
  e.logit_std = std::sqrt(lsq / ln - (lsum / ln) * (lsum / ln));

  // Tilts u (stationary frame) and their covariance; the normals n = W^T g u0 in token space,
  // u0 = Qn / |Qn| (the query's own frame), formed explicitly: d_e x d_e.
  const int de = L.wk.in;
  std::vector<double> cu((size_t)d * d, 0.0), cn((size_t)de * de, 0.0), qs(d, 0.0), qq(d, 0.0), ks(d, 0.0), kq(d, 0.0);
  for (int i = r0; i < r1; ++i) {
    const cd *qr = at(st.Qr, i), *q0 = at(st.Qn, i);
    double qn = 0;
    for (int k = 0; k < D; ++k) qn += std::norm(qr[k]);
    qn = std::sqrt(qn);
    std::vector<double> u(d), n(de, 0.0);
    for (int k = 0; k < D; ++k) {
      u[2 * k] = qr[k].real() / qn, u[2 * k + 1] = qr[k].imag() / qn;
      qs[2 * k] += qr[k].real(), qs[2 * k + 1] += qr[k].imag();
      qq[2 * k] += qr[k].real() * qr[k].real(), qq[2 * k + 1] += qr[k].imag() * qr[k].imag();
      const double g = p.sw.complex_input_norm && !p.norm_k.empty() ? p.norm_k[(size_t)h * D + k] : 1.0;
      const double u0re = q0[k].real() / qn, u0im = q0[k].imag() / qn;
      for (int c = 0; c < de; ++c)
        n[c] += g * (L.wk.weight.data[(size_t)(h * D + k) * de + c] * u0re +
                     L.wk.weight.data[(size_t)(H * D + h * D + k) * de + c] * u0im);
    }
    for (int a = 0; a < d; ++a)
      for (int b = 0; b < d; ++b) cu[(size_t)a * d + b] += u[a] * u[b] / rows;
    for (int a = 0; a < de; ++a)
      for (int b = 0; b < de; ++b) cn[(size_t)a * de + b] += n[a] * n[b] / rows;
  }
  for (int j = c0; j < c1; ++j) {
    const cd* kr = at(st.Kr, j);
    for (int k = 0; k < D; ++k) {
      ks[2 * k] += kr[k].real(), ks[2 * k + 1] += kr[k].imag();
      kq[2 * k] += kr[k].real() * kr[k].real(), kq[2 * k + 1] += kr[k].imag() * kr[k].imag();
    }
  }
  for (int k = 0; k < d; ++k) {
    e.var_q += (qq[k] / rows - (qs[k] / rows) * (qs[k] / rows)) / d;
    e.var_k += (kq[k] / cols - (ks[k] / cols) * (ks[k] / cols)) / d;
  }
  expected_spectra(e, rows, cols, cu, d, cn, de);
  return e;
}

}  // namespace

TEST_CASE("uniform rows: entropy log n, log Z log n, rank-one P with effective rank 1") {
  // W_q = 0: every logit of the dot-product head is 0, so every row is uniform over its keys.
  const int de = 8, N = 64;
  for (bool causal : {false, true}) {
    CAPTURE(causal);
    auto m = attention_model(de, probe::dot_product_params(1, 4, causal), std::vector<float>(64, 0.0f),
                             random_values(64, 1), random_values(64, 2), identity(de));
    auto s = run(m, random_values((size_t)N * de, 3), N);
    DiagnosticsRequest r;
    r.sweep = {0.1, 10.0};
    const HeadDiagnostics d = diagnose(*s, r);
    REQUIRE(d.rows.size() == (size_t)N);
    for (const QueryDiagnostics& q : d.rows) {
      const double n = causal ? q.position + 1 : N;
      CHECK(q.keys == (int)n);
      CHECK(q.entropy == doctest::Approx(std::log(n)).epsilon(1e-6));
      CHECK(q.log_partition == doctest::Approx(std::log(n)).epsilon(1e-6));
      CHECK(q.max_weight == doctest::Approx(1.0 / n).epsilon(1e-6));
      CHECK(q.tau == 0);
    }
    if (!causal) {
      CHECK(d.entropy_mean == doctest::Approx(std::log(64.0)).epsilon(1e-6));  // 4.158883
      CHECK(d.singular_values[0] == doctest::Approx(1.0).epsilon(1e-6));
      CHECK(d.erank == doctest::Approx(1.0).epsilon(1e-5));
      CHECK(d.rank == 1);
      CHECK(d.nullity == N - 1);
      for (const SweepPoint& sp : d.sweep) CHECK(sp.erank == doctest::Approx(1.0).epsilon(1e-5));
    } else {
      // Lower-triangular with a positive diagonal: full rank (docs/DIAGNOSTICS.md §3, causal note).
      CHECK(d.rank == N);
    }
  }
}

TEST_CASE("hand values: streaming entropy of logits (0.3, -1.2, 2.0, 0.7) and the two-key row (0, ln 3)") {
  // W_q picks x[1] into q[0]; W_k = I; so logit_0j = x_0[1] x_j[0] / sqrt(8) = x_j[0] / sqrt(8) with x_0[1] = 1.
  const int de = 8;
  std::vector<float> wq(64, 0.0f);
  wq[0 * de + 1] = 1.0f;
  auto m = attention_model(de, probe::dot_product_params(1, 4, false), wq, identity(de), random_values(64, 4), identity(de));
  struct Case {
    std::vector<double> logits;
    double H, pmax;
  };
  for (const Case& c : {Case{{0.3, -1.2, 2.0, 0.7}, 0.934400, 0.668459}, Case{{0.0, std::log(3.0)}, 0.562335, 0.75}}) {
    const int N = (int)c.logits.size();
    std::vector<float> x((size_t)N * de, 0.0f);
    for (int j = 0; j < N; ++j) x[(size_t)j * de] = (float)(c.logits[(size_t)j] * std::sqrt(8.0));
    x[1] = 1.0f;  // x_0[1]
    auto s = run(m, x, N);
    DiagnosticsRequest r;
    r.r0 = 0, r.r1 = 1;
    const HeadDiagnostics d = diagnose(*s, r);
    const QueryDiagnostics& q = d.rows[0];
    CHECK(q.entropy == doctest::Approx(c.H).epsilon(2e-6));
    CHECK(q.max_weight == doctest::Approx(c.pmax).epsilon(2e-6));
    CHECK(q.log_partition == doctest::Approx(logsumexp(c.logits)).epsilon(1e-6));
    CHECK(q.tau == doctest::Approx(1.0 / std::sqrt(8.0)).epsilon(1e-6));
    // u_0 = e_0, so s_0j = k_j[0] = x_j[0]: E_p[s] and Var_p[s] by hand.
    double lz = logsumexp(c.logits), es = 0, es2 = 0;
    for (int j = 0; j < N; ++j) {
      const double p = std::exp(c.logits[(size_t)j] - lz), sj = x[(size_t)j * de];
      es += p * sj;
      es2 += p * sj * sj;
    }
    CHECK(q.mean_s == doctest::Approx(es).epsilon(1e-5));
    CHECK(q.var_s == doctest::Approx(es2 - es * es).epsilon(1e-5));
  }
  // Two keys: log Z = ln 4 = 1.386294.
  std::vector<float> x(2 * de, 0.0f);
  x[1] = 1.0f;
  x[de] = (float)(std::log(3.0) * std::sqrt(8.0));
  auto s = run(m, x, 2);
  DiagnosticsRequest r;
  r.r0 = 0, r.r1 = 1;
  CHECK(diagnose(*s, r).rows[0].log_partition == doctest::Approx(1.386294).epsilon(1e-6));
}

TEST_CASE("a permutation routing has effective rank n; sharpening never raises entropy") {
  // One-hot tokens, W_k = 10 I, W_q = 10 Pi: q_i . k_j / sqrt(8) = 100/sqrt(8) = 35.4 when j = pi(i), else 0.
  const int de = 8, N = 8;
  std::vector<float> wq(64, 0.0f);
  for (int i = 0; i < de; ++i) wq[(size_t)((i * 3 + 1) % de) * de + i] = 10.0f;
  auto m = attention_model(de, probe::dot_product_params(1, 4, false), wq, identity(de, 10.0f), random_values(64, 5),
                           identity(de));
  auto s = run(m, identity(de), N);
  DiagnosticsRequest r;
  r.sweep = {0.01, 0.05, 0.2, 2.0};
  const HeadDiagnostics d = diagnose(*s, r);
  CHECK(d.erank == doctest::Approx(8.0).epsilon(1e-6));
  CHECK(d.rank == 8);
  CHECK(d.nullity == 0);
  CHECK(d.entropy_mean < 1e-9);
  CHECK(d.max_weight_mean == doctest::Approx(1.0).epsilon(1e-7));
  for (size_t k = 1; k < d.sweep.size(); ++k) {
    CHECK(d.sweep[k].entropy <= d.sweep[k - 1].entropy);
    CHECK(d.sweep[k].max_weight >= d.sweep[k - 1].max_weight);
  }
}

TEST_CASE("RFA heads: every diagnostic against the double-precision definitions") {
  test::ModelSpec spec;
  spec.d_e = 24;
  spec.heads = 3;
  spec.head_dim = 4;
  struct Case {
    const char* name;
    int head;
    double alpha;
    bool decayed;
  };
  for (const Case& c : {Case{"M2 (Student-t, decay, -log Vcov bias, lag shift)", 1, 1.7, true},
                        Case{"M2.1 Gaussian kernel", 2, 0.6, false}, Case{"M2.6 pure rotation", 0, 1.0, false},
                        Case{"complex input norm", 1, 2.5, false}, Case{"non-causal dot product", 0, 3.0, false}}) {
    CAPTURE(std::string(c.name));
    Model base = test::make_model(Architecture::attention, 17, 0, NormKind::none, spec);
    AttentionParams& p = base.single.params;
    const std::string name = c.name;
    if (name.rfind("M2.1", 0) == 0) p.sw.robust = false;
    if (name.rfind("M2.6", 0) == 0) {
      for (auto& hp : p.head) hp.mu = hp.sigma2 = hp.eta2 = 0;
      p.sw.robust = p.sw.full_residual = false;
      p.sw.additive_bias = AdditiveBias::none;
      p.sw.precision = RobustPrecision::inv_sqrt_d;
    }
    if (name == "complex input norm") {
      p.sw.complex_input_norm = true;
      for (auto* g : {&p.norm_q, &p.norm_k, &p.norm_v}) {
        g->clear();
        for (int k = 0; k < p.heads * p.dim; ++k) g->push_back(0.6 + 0.1 * k);
      }
    }
    if (name.rfind("non-causal", 0) == 0) {
      p = probe::dot_product_params(3, 4, false);
      for (size_t k = 0; k < p.omega.size(); ++k) p.omega[k] = 0.3 * (double)(k % 4) - 0.4;
    }
    auto m = std::make_shared<Model>(base);
    const int N = 37;
    const auto x = random_values((size_t)N * spec.d_e, 21);
    const auto t = irregular(N, 22);
    auto s = run(m, x, N, t);
    DiagnosticsRequest r;
    r.head = c.head;
    r.r0 = 5, r.r1 = N, r.c0 = 2, r.c1 = 33;
    r.alpha = c.alpha;
    r.decayed = c.decayed;
    r.sweep = {0.5, 3.0};
    const HeadDiagnostics d = diagnose(*s, r);
    const Expected e = expected(*m, x, N, t, c.head, 5, N, 2, 33, c.alpha, c.decayed);
    CHECK(d.d == 8);
    check_diagnostics(d, e);
    double tau_mean = 0;
    for (double v : e.tau) tau_mean += v / e.tau.size();
    CHECK(d.summary.tau_mean == doctest::Approx(tau_mean).epsilon(1e-5));
    // The sweep's points are the same computation at their alpha.
    REQUIRE(d.sweep.size() == 2);
    for (const SweepPoint& sp : d.sweep) {
      CAPTURE(sp.alpha);
      const Expected es = expected(*m, x, N, t, c.head, 5, N, 2, 33, sp.alpha, c.decayed);
      CHECK(sp.entropy == doctest::Approx(es.entropy_mean).epsilon(1e-4));
      CHECK(sp.max_weight == doctest::Approx(es.max_mean).epsilon(1e-4));
      CHECK(sp.erank == doctest::Approx(es.erank).epsilon(1e-4));
    }
    // Entropy falls and the max weight rises with alpha (dH/dalpha = -alpha Var_p[logit] <= 0).
    CHECK(d.sweep[0].entropy >= d.sweep[1].entropy);
    CHECK(d.sweep[0].max_weight <= d.sweep[1].max_weight);
  }
}

TEST_CASE("alpha = 1 equals the plain probes (row diagnostics and the attention map)") {
  test::ModelSpec spec;
  spec.d_e = 24;
  spec.heads = 3;
  spec.head_dim = 4;
  auto m = std::make_shared<Model>(test::make_model(Architecture::attention, 5, 0, NormKind::none, spec));
  const int N = 45;
  const auto x = random_values((size_t)N * spec.d_e, 6);
  const auto t = irregular(N, 7);
  auto s = run(m, x, N, t);
  for (bool decayed : {false, true}) {
    CAPTURE(decayed);
    DiagnosticsRequest r;
    r.head = 2;
    r.r0 = 10, r.r1 = 40, r.c0 = 3, r.c1 = 41;
    r.decayed = decayed;
    const HeadDiagnostics d = diagnose(*s, r);
    const double th[4] = {1, 2, 4, 8};
    auto rd = rfa::Inspector(*s).row_diagnostics(0, 2, 0, 10, 40, th);
    REQUIRE(rd.ok());
    std::vector<double> he, hz, hm, ge, gz, gm;
    for (size_t k = 0; k < rd->size(); ++k) {
      he.push_back((*rd)[k].entropy), hz.push_back((*rd)[k].log_partition), hm.push_back((*rd)[k].max_weight);
      ge.push_back(d.rows[k].entropy), gz.push_back(d.rows[k].log_partition), gm.push_back(d.rows[k].max_weight);
    }
    check_close(ge, he, 1e-5, 1e-5, "entropy vs row_diagnostics");
    check_close(gz, hz, 1e-5, 1e-6, "log Z vs row_diagnostics");
    check_close(gm, hm, 1e-6, 1e-5, "max weight vs row_diagnostics");
    auto a = rfa::Inspector(*s).attention(0, 2, 0, 10, 40, 3, 41, decayed);
    REQUIRE(a.ok());
    auto sv = singular_values(std::vector<double>(a->begin(), a->end()), 30, 38);
    REQUIRE(sv.ok());
    check_close(d.singular_values, *sv, 1e-6, 1e-5, "singular values vs the probed map");
  }
}

TEST_CASE("pooled moments over windows equal the moments of their union") {
  test::ModelSpec spec;
  spec.d_e = 24;
  spec.heads = 3;
  spec.head_dim = 4;
  auto m = std::make_shared<Model>(test::make_model(Architecture::attention, 12, 0, NormKind::none, spec));
  const int N = 30;
  auto s = run(m, random_values((size_t)N * spec.d_e, 13), N, irregular(N, 14));
  auto window = [&](int r0, int r1) {
    DiagnosticsRequest r;
    r.head = 1;
    r.r0 = r0, r.r1 = r1, r.c0 = r0, r.c1 = r1;
    r.spectrum = false;
    return diagnose(*s, r);
  };
  const HeadDiagnostics all = window(0, N), a = window(0, 12), b = window(12, N);
  HeadMoments pooled;
  REQUIRE(accumulate(pooled, a.moments).ok());
  REQUIRE(accumulate(pooled, b.moments).ok());
  CHECK(pooled.queries == all.moments.queries);
  CHECK(pooled.keys == all.moments.keys);
  CHECK(pooled.logits == all.moments.logits);
  check_close_d(pooled.uu, all.moments.uu, 1e-12, 1e-12, "uu");
  check_close_d(pooled.q_sq, all.moments.q_sq, 1e-9, 1e-12, "q_sq");
  auto sp = summarize(pooled);
  REQUIRE(sp.ok());
  CHECK(sp->dim_eff_u == doctest::Approx(all.summary.dim_eff_u).epsilon(1e-10));
  CHECK(sp->dim_eff_n == doctest::Approx(all.summary.dim_eff_n).epsilon(1e-10));
  // The last -r0 rows: r0 = -10 means [N - 10, N).
  DiagnosticsRequest r;
  r.r0 = -10;
  r.spectrum = false;
  const HeadDiagnostics last = diagnose(*s, r);
  CHECK(last.r0 == N - 10);
  CHECK(last.r1 == N);
  CHECK(last.c0 == 0);
}

TEST_CASE("bad arguments give errors naming the argument or the limit") {
  auto m = attention_model(8, probe::dot_product_params(1, 4, true), random_values(64, 1), random_values(64, 2),
                           random_values(64, 3), identity(8));
  SessionOptions o;
  o.max_context = 1100;
  auto sr = Session::create(test::context(), m, o);
  REQUIRE(sr.ok());
  Session& s = **sr;
  auto err = [&](const DiagnosticsRequest& r) {
    auto d = rfa::Inspector(s).head_diagnostics(r);
    REQUIRE(!d.ok());
    return d.status().message();
  };
  CHECK(err({}).find("no positions") != std::string::npos);
  REQUIRE(s.prefill_values(random_values(1030 * 8, 4), 1030).ok());
  DiagnosticsRequest r;
  r.layer = 1;
  CHECK(err(r).find("layer 1 out of range") != std::string::npos);
  r = {};
  r.head = -1;
  CHECK(err(r).find("head -1") != std::string::npos);
  r = {};
  r.b = 1;
  CHECK(err(r).find("batch row 1") != std::string::npos);
  for (double a : {0.0, -1.0, (double)NAN, (double)INFINITY, 1e300}) {
    r = {};
    r.r0 = -8;
    r.alpha = a;
    CHECK(err(r).find("alpha") != std::string::npos);
    r.alpha = 1;
    r.sweep = {2.0, a};
    CHECK(err(r).find("alpha") != std::string::npos);
  }
  r = {};
  r.r0 = 20, r.r1 = 10;
  CHECK(err(r).find("rows [20, 10)") != std::string::npos);
  r = {};
  r.r0 = 0, r.r1 = 2000;
  CHECK(err(r).find("beyond the 1030 filled positions") != std::string::npos);
  r = {};
  r.c0 = 1040, r.c1 = -1;
  CHECK(err(r).find("columns") != std::string::npos);
  r = {};
  r.sweep.assign(65, 1.0);
  CHECK(err(r).find("exceeds 64") != std::string::npos);
  r = {};  // the whole 1030 x 1030 window: over the spectrum's limit, fine without it
  CHECK(err(r).find("exceeds the spectrum's 1024 per side") != std::string::npos);
  r.spectrum = false;
  auto ok = rfa::Inspector(s).head_diagnostics(r);
  REQUIRE_MESSAGE(ok.ok(), ok.status().to_string());
  CHECK(ok->rows.size() == 1030);
  CHECK(ok->singular_values.empty());
}

