// Helpers of the attention tomography tests (test_diagnostics*.cpp): attention models built in
// code, sessions, random inputs, and comparisons.
#pragma once

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include <doctest/doctest.h>

#include "model/model.hpp"
#include "rfa/diagnostics.hpp"
#include "rfa/session.hpp"
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
  auto d = s.head_diagnostics(r);
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

}  // namespace rfa::test
