// Attention tomography on the GPU path beyond the session's plain window: the Laplace-Radon identity
// (outputs rebuilt from (u, tau, K, V) against the head's outputs, causal rotating heads and
// non-causal SDPA) and a sliding-window ring (ops/rfa_tomography on rows and columns still cached,
// against the twin's banded softmax and the plain probe; refusals).
#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <random>
#include <string>
#include <vector>

#include "diagnostics_support.hpp"
#include "model_factory.hpp"
#include "ops/rfa_attention.hpp"
#include "ops/rfa_probe.hpp"
#include "ops/rfa_tomography.hpp"
#include "probe/dot_product_head.hpp"
#include "reference/attention_ref.hpp"
#include "reference/ops_ref.hpp"
#include "test_support.hpp"

using namespace rfa;
using namespace rfa::test;
using cd = std::complex<double>;

TEST_CASE("the Laplace-Radon identity: outputs rebuilt from (u, tau, K, V) equal the head's outputs") {
  // y_i = e^{i omega t_i} sum_j e^{c tau_i u_i . K~_j} V~_j / sum_j e^{c tau_i u_i . K~_j}, c = tau_h sqrt(2)
  // (logit = tau_h Re(Q~^H K~) / sqrt(D) = tau_h sqrt(2) tau_i s_ij), u and tau from the diagnostics on
  // the GPU, K~ and V~ from the model in double; then W_o, against the session's outputs.
  test::ModelSpec spec;
  spec.d_e = 24;
  spec.heads = 3;
  spec.head_dim = 4;
  for (bool causal : {true, false}) {
    CAPTURE(causal);
    Model base = test::make_model(Architecture::attention, 8, 0, NormKind::none, spec);
    const auto omega = base.single.params.omega;
    base.single.params = probe::dot_product_params(3, 4, causal);
    if (causal) base.single.params.omega = omega;  // rotating (RoPE-like) heads: u in the stationary frame
    for (int h = 0; h < 3; ++h) base.single.params.head[(size_t)h].tau = 0.5 + 0.3 * h;
    base.single.wq.bias = base.single.wk.bias = base.single.wv.bias = HostTensor{};
    auto m = std::make_shared<Model>(base);
    const AttentionParams& p = m->single.params;
    const int N = 41, H = 3, D = 4;
    const auto x = random_values((size_t)N * spec.d_e, 9);
    const auto t = irregular(N, 10);
    auto s = run(m, x, N, t);
    const std::vector<double> xd(x.begin(), x.end());
    const auto K = ref::split_complex(ref::linear(m->single.wk, xd, N), N, H, D);
    const auto V = ref::split_complex(ref::linear(m->single.wv, xd, N), N, H, D);
    std::vector<cd> est((size_t)N * H * D);
    for (int h = 0; h < H; ++h) {
      DiagnosticsRequest r;
      r.head = h;
      r.keep_tilts = true;
      r.spectrum = false;
      const HeadDiagnostics d = diagnose(*s, r);
      const double c = p.head[(size_t)h].tau * std::sqrt(2.0);
      for (int i = 0; i < N; ++i) {
        const double* u = &d.tilts[(size_t)i * 2 * D];
        std::vector<double> w;
        for (int j = 0; j <= (causal ? i : N - 1); ++j) {
          double sij = 0;
          for (int k = 0; k < D; ++k) {
            const cd kt = K[((size_t)j * H + h) * D + k] * std::polar(1.0, -p.omega[(size_t)h * D + k] * t[(size_t)j]);
            sij += u[2 * k] * kt.real() + u[2 * k + 1] * kt.imag();
          }
          w.push_back(c * d.rows[(size_t)i].tau * sij);
        }
        const double lz = logsumexp(w);
        for (size_t j = 0; j < w.size(); ++j)
          for (int k = 0; k < D; ++k) {
            const double om = p.omega[(size_t)h * D + k];
            const cd vt = V[(j * H + h) * D + k] * std::polar(1.0, -om * t[j]);
            est[((size_t)i * H + h) * D + k] += std::exp(w[j] - lz) * vt * std::polar(1.0, om * t[(size_t)i]);
          }
      }
    }
    const auto y = ref::linear(m->single.wo, ref::pack_complex(est, N, H, D), N);
    const std::vector<float>& got = s->outputs();
    double num = 0, den = 0;
    for (size_t k = 0; k < y.size(); ++k) num += (got[k] - y[k]) * (got[k] - y[k]), den += y[k] * y[k];
    MESSAGE("Laplace-Radon rebuild vs the GPU head: relative error " << std::sqrt(num / den));
    CHECK(std::sqrt(num / den) < 1e-5);
    CHECK_CLOSE_VEC(got, y, 1e-5, 1e-4);
  }
}

TEST_CASE("a sliding-window ring: rows and columns limited to the positions still cached") {
  // Positions stream in chunks through a ring of window + chunk - 1 slots (as the sliding-window
  // sessions do); the tomography of the rows whose band is still cached against the twin's banded
  // softmax, at alpha = 1 (also against the plain probe) and 2.5; rows and columns that left the
  // ring are refused.
  std::mt19937 rng(3);
  AttentionParams p = test::make_params(3, 8, rng);
  const int N = 61, window = 9, chunk = 5, H = 3, D = 8;
  const uint32_t cap = window + chunk - 1;
  const size_t W = 2 * (size_t)H * D;
  const auto qf = random_values((size_t)N * W, 30), kf = random_values((size_t)N * W, 31), vf = random_values((size_t)N * W, 32);
  const auto t = irregular(N, 33);
  auto& g = test::gpu();
  auto wr = ops::AttentionWeightsGpu::create(g, p);
  REQUIRE(wr.ok());
  auto cr = ops::AttentionCache::create(g, 1, H, D, cap, "ring", window);
  REQUIRE(cr.ok());
  ops::AttentionCache cache = cr.take();
  gpu::Buffer ts = test::zeros((size_t)cap * 2, "timestamp ring");
  for (int i0 = 0; i0 < N; i0 += chunk) {
    const int n = std::min(chunk, N - i0);
    for (int i = i0; i < i0 + n; ++i) {
      float pair[2];
      ops::split_timestamp(t[(size_t)i], &pair[0], &pair[1]);
      REQUIRE(g.upload(ts, pair, 8, ((size_t)i % cap) * 8).ok());
    }
    auto part = [&](const std::vector<float>& v) {
      return test::upload(std::vector<float>(v.begin() + (size_t)i0 * W, v.begin() + (size_t)(i0 + n) * W));
    };
    gpu::Buffer q = part(qf), k = part(kf), v = part(vf), vn = test::zeros((size_t)n * W), o = test::zeros((size_t)n * W);
    gpu::Recorder rec(g);
    REQUIRE(rec.begin().ok());
    REQUIRE(ops::record_rfa_attention(g, rec, *wr, cache, ts, q, k, v, vn, o, (uint32_t)i0, (uint32_t)n).ok());
    REQUIRE(rec.submit_and_wait().ok());
  }
  REQUIRE(cache.oldest() == (uint32_t)N - cap);
  const uint32_t r0 = cache.oldest() + window - 1, r1 = N, c0 = cache.oldest(), c1 = N;  // rows whose band is cached
  const uint32_t rows = r1 - r0, cols = c1 - c0, head = 1;
  // The twin: logits of the banded causal mask from pair_terms on the normed inputs.
  auto Q = ref::split_complex(std::vector<double>(qf.begin(), qf.end()), N, H, D);
  auto K = ref::split_complex(std::vector<double>(kf.begin(), kf.end()), N, H, D);
  for (float alpha : {1.0f, 2.5f}) {
    CAPTURE(alpha);
    gpu::Buffer rb = test::zeros((size_t)rows * ops::kTomographyRowStride), pb = test::zeros((size_t)rows * cols);
    gpu::Buffer ah = test::zeros((size_t)rows * cols), aa = test::zeros((size_t)rows * cols);
    gpu::Recorder rec(g);
    REQUIRE(rec.begin().ok());
    REQUIRE(ops::record_rfa_tomography_rows(g, rec, *wr, cache, ts, 0, head, r0, r1, alpha, rb).ok());
    REQUIRE(ops::record_rfa_tomography_matrix(g, rec, *wr, cache, ts, 0, head, r0, r1, c0, c1, alpha, false, rb, pb).ok());
    REQUIRE(ops::record_rfa_probe(g, rec, *wr, cache, ts, 0, head, r0, r1, c0, c1, ah, aa).ok());
    REQUIRE(rec.submit_and_wait().ok());
    const auto st = test::download(rb, (size_t)rows * ops::kTomographyRowStride);
    const auto P = test::download(pb, (size_t)rows * cols);
    std::vector<double> wantP((size_t)rows * cols, 0.0), wantH, wantZ, gotH, gotZ;
    for (uint32_t i = r0; i < r1; ++i) {
      std::vector<double> x;
      std::vector<uint32_t> js;
      for (uint32_t j = i + 1 - window; j <= i; ++j) {
        const auto pt = ref::pair_terms(p, N, Q, K, t, 0, (int)head, (int)i, (int)j);
        x.push_back(alpha * pt.logit);
        js.push_back(j);
      }
      const double lz = logsumexp(x);
      double h = 0;
      for (size_t k = 0; k < x.size(); ++k) {
        const double pk = std::exp(x[k] - lz);
        h -= pk * std::log(pk);
        wantP[(size_t)(i - r0) * cols + (js[k] - c0)] = pk;
      }
      wantH.push_back(h);
      wantZ.push_back(lz);
      gotH.push_back(st[(size_t)(i - r0) * ops::kTomographyRowStride + ops::kTomoEntropy]);
      gotZ.push_back(st[(size_t)(i - r0) * ops::kTomographyRowStride + ops::kTomoLogZ]);
      CHECK(st[(size_t)(i - r0) * ops::kTomographyRowStride + ops::kTomoKeys] == (float)window);
    }
    CHECK_CLOSE_VEC(P, wantP, 1e-5, 1e-4);
    check_close(gotH, wantH, 1e-4, 1e-4, "entropy on the ring");
    check_close(gotZ, wantZ, 1e-4, 1e-5, "log Z on the ring");
    if (alpha == 1.0f) {
      const auto probe = test::download(ah, (size_t)rows * cols);
      CHECK_CLOSE_VEC(P, std::vector<double>(probe.begin(), probe.end()), 1e-6, 1e-5);
    }
  }
  // Refused: a row whose band reaches before the ring, columns that left it, a bad alpha, rows
  // beyond the filled positions.
  gpu::Buffer rb = test::zeros((size_t)64 * ops::kTomographyRowStride), pb = test::zeros((size_t)64 * 64);
  gpu::Recorder rec(g);
  REQUIRE(rec.begin().ok());
  Status s = ops::record_rfa_tomography_rows(g, rec, *wr, cache, ts, 0, head, r0 - 1, r1, 1.0f, rb);
  CHECK(s.message().find("reads keys no longer in the cache") != std::string::npos);
  s = ops::record_rfa_tomography_matrix(g, rec, *wr, cache, ts, 0, head, r0, r1, c0 - 1, c1, 1.0f, false, rb, pb);
  CHECK(s.message().find("still in the cache") != std::string::npos);
  s = ops::record_rfa_tomography_rows(g, rec, *wr, cache, ts, 0, head, r0, r1, 0.0f, rb);
  CHECK(s.message().find("alpha") != std::string::npos);
  s = ops::record_rfa_tomography_rows(g, rec, *wr, cache, ts, 0, head, r0, r1 + 1, 1.0f, rb);
  CHECK(s.message().find("still in the cache") != std::string::npos);
  REQUIRE(rec.submit_and_wait().ok());
}
