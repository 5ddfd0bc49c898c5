// Helpers of the attention tomography tests (test_diagnostics*.cpp): attention models built in
// code, sessions, random inputs, and comparisons.
#pragma once

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include <doctest/doctest.h>

#include "model/model.hpp"
#include "probe/linalg.hpp"
#include "rfa/diagnostics.hpp"
#include "rfa/session.hpp"
#include "rfa/inspect.hpp"
#include "test_support.hpp"

namespace rfa::test {

inline LinearWeights linear(int in, int out, std::vector<float> w) {
  LinearWeights l;
  l.in = in;
  l.out = out;
  l.weight.shape = {out, in};
  l.weight.data = std::move(w);
  return l;
}

inline std::vector<float> identity(int n, float scale = 1.0f) {
  std::vector<float> w((size_t)n * n, 0.0f);
  for (int i = 0; i < n; ++i) w[(size_t)i * n + i] = scale;
  return w;
}

// A one-layer attention model with the given projections (no biases) and head parameters.
inline std::shared_ptr<Model> attention_model(int d_e, const AttentionParams& p, std::vector<float> wq, std::vector<float> wk,
                                              std::vector<float> wv, std::vector<float> wo) {
  auto m = std::make_shared<Model>();
  m->name = "diag-test";
  m->arch = Architecture::attention;
  m->d_e = d_e;
  m->n_heads = p.heads;
  m->head_dim = p.dim;
  m->hidden = 4 * d_e;
  m->train_seq_len = 16;
  const int w = 2 * p.heads * p.dim;
  m->single.wq = linear(d_e, w, std::move(wq));
  m->single.wk = linear(d_e, w, std::move(wk));
  m->single.wv = linear(d_e, w, std::move(wv));
  m->single.wo = linear(w, d_e, std::move(wo));
  m->single.params = p;
  return m;
}

inline std::unique_ptr<Session> run(std::shared_ptr<const Model> m, const std::vector<float>& x, int N,
                                    const std::vector<double>& t = {}) {
  SessionOptions o;
  o.max_context = N;
  auto s = Session::create(context(), m, o);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  Status st = (*s)->prefill_values(x, N, t);
  REQUIRE_MESSAGE(st.ok(), st.to_string());
  return s.take();
}

inline HeadDiagnostics diagnose(Session& s, const DiagnosticsRequest& r) {
  auto d = rfa::Inspector(s).head_diagnostics(r);
  REQUIRE_MESSAGE(d.ok(), d.status().to_string());
  return d.take();
}

inline double logsumexp(const std::vector<double>& x) {
  double m = -INFINITY;
  for (double v : x) m = std::max(m, v);
  double s = 0;
  for (double v : x) s += std::exp(v - m);
  return m + std::log(s);
}

// Everything head_diagnostics returns, computed in double from the definitions: the logits from
// the twin's pair_terms, the rows' softmax at alpha, P over the window and its singular values, the
// tilts from the twin's rotated queries, the normals formed in token space.
inline std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = g(rng);
  return v;
}

// An attention model of layer `p` on d_e inputs, random N(0, 1) projections (seed .. seed + 3) with
// Q, K and V scaled by 0.3 to keep unit-variance tokens' logits of order one.
inline std::shared_ptr<Model> variant_model(const AttentionParams& p, int d_e, uint32_t seed) {
  const int w = 2 * p.heads * p.dim;
  auto m = attention_model(d_e, p, random_values((size_t)w * d_e, seed), random_values((size_t)w * d_e, seed + 1),
                           random_values((size_t)w * d_e, seed + 2), random_values((size_t)d_e * w, seed + 3));
  for (auto* l : {&m->single.wq, &m->single.wk, &m->single.wv})
    for (float& v : l->weight.data) v *= 0.3f;
  return m;
}

inline std::vector<double> irregular(int N, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> gap(0.2, 1.8);
  std::vector<double> t((size_t)N);
  double x = 2.0;
  for (double& v : t) v = x += gap(rng);
  return t;
}

template <typename F>
std::vector<double> field(const HeadDiagnostics& d, F f) {
  std::vector<double> v;
  for (const QueryDiagnostics& q : d.rows) v.push_back(f(q));
  return v;
}

inline void check_close(const std::vector<double>& got, const std::vector<double>& want, double atol, double rtol,
                 const char* what) {
  CAPTURE(what);
  REQUIRE(got.size() == want.size());
  std::vector<float> g(got.begin(), got.end());
  CHECK_CLOSE_VEC(g, want, atol, rtol);
}

inline void check_close_d(const std::vector<double>& got, const std::vector<double>& want, double atol, double rtol,
                   const char* what) {
  CAPTURE(what);
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    CAPTURE(k);
    CHECK(std::fabs(got[k] - want[k]) <= atol + rtol * std::fabs(want[k]));
  }
}

// What head_diagnostics should return, computed in double from the definitions (test_diagnostics:
// RFA heads from the twin's pair terms; test_variant_tomography: AFA and RT-RFA heads from the
// readout twin). The logit statistics (mean_l, var_l, logit_std) and the mean largest weight are
// checked where the test forms them (logit_stats).
struct ExpectedDiagnostics {
  std::vector<double> entropy, log_z, max_w, mean_s, var_s, mean_l, var_l, tau, lag;
  std::vector<double> P;  // [rows][cols]
  std::vector<double> sv, tilt_spectrum, normal_spectrum;
  double erank = 0, dim_u = 0, dim_n = 0, var_q = 0, var_k = 0, logit_std = 0, entropy_mean = 0, max_mean = 0;
  bool logit_stats = false;
};

// The spectra of e from e.P [rows][cols] (singular values, effective rank), the tilts' second
// moments cu [d][d] and the normals' cn [de][de] (eigenvalues, participation ratios).
inline void expected_spectra(ExpectedDiagnostics& e, int rows, int cols, const std::vector<double>& cu, int d,
                             const std::vector<double>& cn, int de) {
  auto sv = linalg::singular_values(e.P, rows, cols);
  REQUIRE(sv.ok());
  e.sv = sv.take();
  e.erank = linalg::effective_rank(e.sv);
  auto eu = linalg::symmetric_eigen(cu, d);
  auto en = linalg::symmetric_eigen(cn, de);
  REQUIRE(eu.ok());
  REQUIRE(en.ok());
  e.tilt_spectrum = eu.take();
  e.normal_spectrum.assign(en->begin(), en->begin() + std::min(d, de));
  e.dim_u = linalg::participation_ratio(e.tilt_spectrum);
  e.dim_n = linalg::participation_ratio(*en);
}

// head_diagnostics' rows, spectra and summary against the definitions.
inline void check_diagnostics(const HeadDiagnostics& d, const ExpectedDiagnostics& e) {
  check_close(field(d, [](auto& q) { return q.entropy; }), e.entropy, 1e-4, 1e-4, "entropy");
  check_close(field(d, [](auto& q) { return q.log_partition; }), e.log_z, 1e-4, 1e-5, "log Z");
  check_close(field(d, [](auto& q) { return q.max_weight; }), e.max_w, 1e-5, 1e-4, "max weight");
  check_close(field(d, [](auto& q) { return q.mean_s; }), e.mean_s, 1e-4, 1e-4, "E_p[s]");
  check_close(field(d, [](auto& q) { return q.var_s; }), e.var_s, 1e-4, 1e-3, "Var_p[s]");
  if (e.logit_stats) {
    check_close(field(d, [](auto& q) { return q.mean_logit; }), e.mean_l, 1e-4, 1e-4, "E_p[logit]");
    check_close(field(d, [](auto& q) { return q.var_logit; }), e.var_l, 1e-4, 1e-3, "Var_p[logit]");
  }
  check_close(field(d, [](auto& q) { return q.tau; }), e.tau, 1e-6, 1e-5, "tau");
  check_close(field(d, [](auto& q) { return q.expected_lag; }), e.lag, 1e-4, 1e-4, "expected lag");
  check_close(d.singular_values, e.sv, 2e-5, 1e-4, "singular values of P");
  CHECK(d.erank == doctest::Approx(e.erank).epsilon(1e-4));
  CHECK(d.entropy_mean == doctest::Approx(e.entropy_mean).epsilon(1e-5));
  if (e.logit_stats) CHECK(d.max_weight_mean == doctest::Approx(e.max_mean).epsilon(1e-5));
  check_close(d.summary.tilt_spectrum, e.tilt_spectrum, 1e-6, 1e-4, "tilt spectrum");
  check_close(d.summary.normal_spectrum, e.normal_spectrum, 1e-6, 1e-4, "normal spectrum");
  CHECK(d.summary.dim_eff_u == doctest::Approx(e.dim_u).epsilon(1e-5));
  CHECK(d.summary.dim_eff_n == doctest::Approx(e.dim_n).epsilon(1e-5));
  CHECK(d.summary.var_q == doctest::Approx(e.var_q).epsilon(1e-5));
  CHECK(d.summary.var_k == doctest::Approx(e.var_k).epsilon(1e-5));
  if (e.logit_stats) CHECK(d.summary.logit_std == doctest::Approx(e.logit_std).epsilon(1e-4));
}

}  // namespace rfa::test
