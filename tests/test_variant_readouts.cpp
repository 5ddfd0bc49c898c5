// The readouts AFA and RT-RFA heads share with RFA heads, on the GPU against the double-precision
// readout twin (reference/readout_ref.hpp, which forms every term from the raw Q, K, V through the
// variants' own twins): the probes' row diagnostics (record_rfa_row_diagnostics -> afa_probe /
// rt_probe in MODE 1: entropy, log-partition, max weight, expected lag and mass beyond four lags of
// the layer's own A) and the attention tomography's rows and matrix (record_rfa_tomography_rows /
// _matrix -> afa_tomography / rt_tomography: every row column of ops/rfa_tomography.hpp, P and its
// decayed form at a temperature). Every switch of each mechanism (AFA's three precision sources,
// unitary, causal; RT's two covariances and kernels, causal), off-tile shapes (N = 1, 2, 37, 61,
// 100; D = 4, 8, 16, 32), uniform, irregular and ~1e6 timestamps, fp32 and fp16 caches, and a
// windowed ring smaller than the stream. Session-level head_diagnostics (tilts, spectra) of AFA
// and RT-RFA heads: tests/test_variant_tomography.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "attention_support.hpp"
#include "model_factory.hpp"
#include "ops/rfa_probe.hpp"
#include "ops/rfa_tomography.hpp"
#include "reference/ops_ref.hpp"
#include "reference/readout_ref.hpp"

using namespace rfa;
using namespace rfa::test;

namespace {

// Off the integers, so a lag sits on a threshold only by accident (fp32 and double would split it).
const double kThr[4] = {0.7, 3.3, 11.1, 40.9};

// The twin's rows of one layer and inputs.
struct Twin {
  const AttentionParams& p;
  const Inputs& in;
  int window;
  int view;  // AFA layers: kAllChannels, kReweighting or a channel (docs/variant-afa-full.md §5)
  std::vector<ref::cd> Q, K, V;
  Twin(const AttentionParams& p_, const Inputs& in_, int window_, int view_ = kAllChannels)
      : p(p_), in(in_), window(window_), view(view_) {
    const int rows = in.B * in.N;
    Q = ref::split_complex(to_double(in.q), rows, p.heads, p.dim);
    K = ref::split_complex(to_double(in.k), rows, p.heads, p.dim);
    V = ref::split_complex(to_double(in.v), rows, p.heads, p.dim);
  }
  ref::ReadoutRow row(int b, int h, int i) const {
    ref::ReadoutRow r;
    const Status s = p.variant != AttentionVariant::rt
                         ? ref::afa_readout_row(ref::afa_twin_params(p), in.B, in.N, Q, K, in.t, window, b, h, i, &r, view)
                         : ref::rt_readout_row(ref::rt_twin_params(p), in.B, in.N, Q, K, V, in.t, window, b, h, i, &r);
    REQUIRE_MESSAGE(s.ok(), s.to_string());
    return r;
  }
};

// What the GPU readouts of rows [r0, r1) x keys [c0, c1) of (b, h) give back: the row diagnostics
// [rows][8], the tomography rows [rows][16] at alpha, and P(alpha) [rows][cols] (decayed or not).
struct Readouts {
  std::vector<float> diag, tomo, P;
};

Readouts gpu_readouts(gpu::Context& g, const ops::AttentionWeightsGpu& w, const ops::AttentionCache& cache,
                      const gpu::Buffer& ts, uint32_t b, uint32_t h, const Rect& rc, float alpha, bool decayed,
                      int view = kAllChannels) {
  const uint32_t rows = rc.r1 - rc.r0;
  const size_t stride = ops::kTomographyRowStride;
  // NaN-filled: every value the dispatches should write must be written.
  gpu::Buffer diag = Fixture::up_on(g, std::vector<float>((size_t)rows * 8, std::nanf("")));
  gpu::Buffer tomo = Fixture::up_on(g, std::vector<float>((size_t)rows * stride, std::nanf("")));
  gpu::Buffer P = Fixture::up_on(g, std::vector<float>(rc.cells(), std::nanf("")));
  const float thr[4] = {(float)kThr[0], (float)kThr[1], (float)kThr[2], (float)kThr[3]};
  gpu::Recorder rec(g);
  REQUIRE(rec.begin().ok());
  Status s = ops::record_rfa_row_diagnostics(g, rec, w, cache, ts, b, h, rc.r0, rc.r1, thr, diag, view);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  s = ops::record_rfa_tomography_rows(g, rec, w, cache, ts, b, h, rc.r0, rc.r1, alpha, tomo, view);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  s = ops::record_rfa_tomography_matrix(g, rec, w, cache, ts, b, h, rc.r0, rc.r1, rc.c0, rc.c1, alpha, decayed, tomo, P,
                                        view);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  REQUIRE(rec.submit_and_wait().ok());
  Readouts r{std::vector<float>((size_t)rows * 8), std::vector<float>((size_t)rows * stride),
             std::vector<float>(rc.cells())};
  REQUIRE(g.download(diag, r.diag.data(), r.diag.size() * 4).ok());
  REQUIRE(g.download(tomo, r.tomo.data(), r.tomo.size() * 4).ok());
  REQUIRE(g.download(P, r.P.data(), r.P.size() * 4).ok());
  return r;
}

// The GPU's readouts of rows [r0, r1) x keys [c0, c1) against the twin's rows: within atol + tol |ref|.
void check_readouts(const Twin& twin, const Readouts& got, uint32_t b, uint32_t h, const Rect& rc, double alpha,
                    bool decayed, double tol) {
  CAPTURE(b);
  CAPTURE(h);
  CAPTURE(rc.r0);
  CAPTURE(rc.r1);
  CAPTURE(rc.c0);
  CAPTURE(rc.c1);
  CAPTURE(alpha);
  CAPTURE(decayed);
  const size_t stride = ops::kTomographyRowStride, cols = rc.c1 - rc.c0;
  std::vector<float> g_diag, g_tomo, g_keys;
  std::vector<double> w_diag, w_tomo, w_keys, w_P((size_t)rc.cells(), 0.0);
  for (uint32_t i = rc.r0; i < rc.r1; ++i) {
    const ref::ReadoutRow row = twin.row((int)b, (int)h, (int)i);
    const ref::ReadoutStats one = ref::readout_stats(row, 1.0, twin.p.dim, kThr);
    const ref::ReadoutStats at = ref::readout_stats(row, alpha, twin.p.dim, kThr);
    const float* d = &got.diag[(size_t)(i - rc.r0) * 8];
    const double want_d[8] = {one.entropy,        one.log_partition,  one.max_weight,     one.decayed_lag,
                              one.mass_beyond[0], one.mass_beyond[1], one.mass_beyond[2], one.mass_beyond[3]};
    for (int k = 0; k < 8; ++k) g_diag.push_back(d[k]), w_diag.push_back(want_d[k]);
    const float* t = &got.tomo[(size_t)(i - rc.r0) * stride];
    const double want_t[] = {at.entropy,   at.log_partition, at.max_weight,    at.mean_s,       at.var_s,
                             at.mean_logit, at.var_logit,    at.tau,           at.uniform_mean, at.uniform_var,
                             at.expected_lag, row.q_norm};
    const int cols_t[] = {ops::kTomoEntropy,   ops::kTomoLogZ,        ops::kTomoMaxWeight,    ops::kTomoMeanS,
                          ops::kTomoVarS,      ops::kTomoMeanLogit,   ops::kTomoVarLogit,     ops::kTomoTau,
                          ops::kTomoUniformMean, ops::kTomoUniformVar, ops::kTomoExpectedLag, ops::kTomoQNorm};
    for (size_t k = 0; k < sizeof cols_t / sizeof cols_t[0]; ++k) g_tomo.push_back(t[cols_t[k]]), w_tomo.push_back(want_t[k]);
    g_keys.push_back(t[ops::kTomoKeys]);
    w_keys.push_back(at.keys);
    for (size_t x = 0; x < row.keys.size(); ++x) {
      const int j = row.keys[x].j;
      if (j >= (int)rc.c0 && j < (int)rc.c1)
        w_P[(size_t)(i - rc.r0) * cols + (size_t)(j - (int)rc.c0)] = at.p[x] * (decayed ? row.keys[x].decay : 1.0);
    }
  }
  {
    INFO("row diagnostics: entropy, log Z, max weight, expected lag of A, mass of A beyond 4 lags");
    CHECK_CLOSE_VEC(g_diag, w_diag, tol, tol);
  }
  {
    INFO("tomography rows: H, log Z, p_max, E[s], Var[s], E[logit], Var[logit], tau, mean/var logit, lag, |q|");
    CHECK_CLOSE_VEC(g_tomo, w_tomo, tol, tol);
  }
  CHECK(std::vector<double>(g_keys.begin(), g_keys.end()) == w_keys);
  INFO("P(alpha), masked cells 0");
  CHECK_CLOSE_VEC(got.P, w_P, tol, tol);
}

struct Case {
  int B, H, D, N, chunk, times;
  bool kv_f16;
};

// A layer run through a full cache in calls of `chunk`, its readouts over the whole square and an
// off-tile block crossing the diagonal, at alpha = 1 and another temperature, decayed and not.
void check_layer(const AttentionParams& p, const Case& c, uint32_t seed, int view = kAllChannels) {
  CAPTURE(c.B);
  CAPTURE(c.H);
  CAPTURE(c.D);
  CAPTURE(c.N);
  CAPTURE(c.chunk);
  CAPTURE(c.times);
  CAPTURE(c.kv_f16);
  const Inputs in = make_inputs(p, c.B, c.N, seed, c.times);
  const Twin twin(p, in, 0, view);
  AttentionPath ap;
  ap.kv_f16 = c.kv_f16;
  ap.lag_table = false;
  Fixture f(p, in, 0, ap);
  f.run(p.sw.causal ? c.chunk : c.N);  // non-causal rows see keys that later calls add: one call
  const uint32_t N = (uint32_t)c.N;
  const Rect whole{0, N, 0, N}, block{N / 3, N - N / 4, N / 5, N - N / 7};
  const double tol = c.kv_f16 ? kTolF16 : 2e-4;
  for (uint32_t b = 0; b < (uint32_t)c.B; ++b)
    for (uint32_t h = 0; h < (uint32_t)c.H; ++h) {
      check_readouts(twin, gpu_readouts(f.g, f.w, f.cache, f.ts, b, h, whole, 1.0f, false, view), b, h, whole, 1.0,
                     false, tol);
      if (block.r1 > block.r0 && block.c1 > block.c0)
        check_readouts(twin, gpu_readouts(f.g, f.w, f.cache, f.ts, b, h, block, 2.5f, true, view), b, h, block, 2.5,
                       true, tol);
    }
}

const Case kCases[] = {{1, 1, 4, 1, 1, 0, false},  {2, 3, 8, 2, 1, 1, false},   {1, 2, 16, 61, 7, 1, false},
                       {2, 1, 4, 37, 37, 2, true},  {1, 2, 32, 100, 100, 0, false}, {1, 3, 8, 61, 1, 2, false}};

}  // namespace

TEST_CASE("AFA heads: row diagnostics and tomography rows equal the readout twin over every switch") {
  int k = 0;
  for (AfaPrecision prec : {AfaPrecision::channel_sum, AfaPrecision::one_channel, AfaPrecision::weighted})
    for (int mask = 0; mask < 4; ++mask, ++k) {
      const bool unitary = mask & 1, causal = !(mask & 2);
      CAPTURE((int)prec);
      CAPTURE(unitary);
      CAPTURE(causal);
      const Case& c = kCases[(size_t)k % (sizeof kCases / sizeof kCases[0])];
      std::mt19937 rng(700 + (uint32_t)k);
      check_layer(make_afa_params(c.H, c.D, rng, prec, unitary, k % 2 == 1, causal), c, 800 + (uint32_t)k);
    }
}

TEST_CASE("full AFA heads and AFA's views: row diagnostics and tomography rows equal the readout twin") {
  // Full AFA (docs/variant-afa-full.md §5): the channel mean, a channel and another of the per-channel
  // weights Q_k, unitary and causal on and off, a tied layer (its readouts are its first pass's);
  // the memory-optimised form in a channel view (its A is the softmax times that channel's decay).
  struct ViewCase {
    bool full;
    int view;
    bool unitary, causal;
    int iterations;
  } cases[] = {{true, kAllChannels, false, true, 1}, {true, 0, true, true, 1},     {true, 3, false, false, 1},
               {true, kAllChannels, false, true, 2}, {false, 2, false, true, 1}};
  int k = 0;
  for (const ViewCase& v : cases) {
    CAPTURE(v.full);
    CAPTURE(v.view);
    CAPTURE(v.unitary);
    CAPTURE(v.causal);
    CAPTURE(v.iterations);
    const Case& c = kCases[(size_t)(k + 2) % (sizeof kCases / sizeof kCases[0])];
    std::mt19937 rng(1200 + (uint32_t)k);
    AttentionParams p = make_afa_params(c.H, c.D, rng, AfaPrecision::channel_sum, v.unitary, k % 2 == 1, v.causal);
    if (v.full) p.variant = AttentionVariant::afa_full;
    p.afa.irls_iterations = v.iterations;
    check_layer(p, c, 1300 + (uint32_t)k, std::min(v.view, c.D - 1));
    ++k;
  }
  // The reweighting map is not normalised: row diagnostics refuse it, naming it.
  std::mt19937 rng(3);
  AttentionParams p = make_afa_params(2, 4, rng);
  p.variant = AttentionVariant::afa_full;
  const Inputs in = make_inputs(p, 1, 6, 4, 0);
  Fixture f(p, in);
  f.run(6);
  gpu::Buffer out = test::zeros(64);
  const float thr[4] = {1, 2, 3, 4};
  gpu::Recorder rec(f.g);
  REQUIRE(rec.begin().ok());
  const Status s = ops::record_rfa_row_diagnostics(f.g, rec, f.w, f.cache, f.ts, 0, 0, 0, 6, thr, out, kReweighting);
  CHECK(s.code() == Code::invalid_argument);
  CHECK(s.message().find("reweighting") != std::string::npos);
  const Status v = ops::record_rfa_row_diagnostics(f.g, rec, f.w, f.cache, f.ts, 0, 0, 0, 6, thr, out, 4);
  CHECK(v.code() == Code::invalid_argument);
  CHECK(v.message().find("view 4") != std::string::npos);
  REQUIRE(rec.submit_and_wait().ok());
}

TEST_CASE("RT-RFA heads: row diagnostics and tomography rows equal the readout twin over every switch") {
  int k = 0;
  for (RtCovariance cov : {RtCovariance::stationary, RtCovariance::ou_rate})
    for (RtKernel kernel : {RtKernel::student_t, RtKernel::gaussian})
      for (bool causal : {true, false}) {
        CAPTURE((int)cov);
        CAPTURE((int)kernel);
        CAPTURE(causal);
        const Case& c = kCases[(size_t)(k + 1) % (sizeof kCases / sizeof kCases[0])];
        std::mt19937 rng(900 + (uint32_t)k);
        check_layer(make_rt_params(c.H, c.D, rng, cov, kernel, causal), c, 1000 + (uint32_t)k);
        ++k;
      }
}

TEST_CASE("AFA and RT-RFA readouts of a windowed ring smaller than the stream") {
  // Streamed through a ring of window + chunk - 1 slots; the rows whose whole band is still in the
  // ring, over the keys still there, against the twin's banded mask. Rows reading evicted keys
  // are refused, naming the cache.
  struct RingCase {
    AttentionVariant v;
    int B, H, D, N, window, chunk, times;
    bool kv_f16;
  } cases[] = {{AttentionVariant::afa, 2, 2, 8, 90, 11, 5, 1, false},
               {AttentionVariant::afa, 1, 1, 4, 40, 1, 3, 2, true},
               {AttentionVariant::rt, 1, 3, 16, 75, 20, 1, 0, false},
               {AttentionVariant::rt, 2, 2, 8, 64, 9, 4, 1, true}};
  for (const RingCase& c : cases) {
    CAPTURE((int)c.v);
    CAPTURE(c.N);
    CAPTURE(c.window);
    CAPTURE(c.chunk);
    std::mt19937 rng(40 + (uint32_t)c.N);
    const AttentionParams p = c.v == AttentionVariant::afa ? make_afa_params(c.H, c.D, rng, AfaPrecision::weighted)
                                                           : make_rt_params(c.H, c.D, rng, RtCovariance::ou_rate);
    const Inputs in = make_inputs(p, c.B, c.N, 50 + (uint32_t)c.N, c.times);
    const Twin twin(p, in, c.window);
    RingRun run = run_ring(p, in, c.window, c.chunk, c.kv_f16);
    REQUIRE(run.cache.oldest() > 0);
    const uint32_t N = (uint32_t)c.N, lo = run.cache.oldest();
    const uint32_t full = std::min(N - 1, lo + (uint32_t)c.window - 1);  // the first row with its whole band
    const Rect rc{full, N, lo, N};
    const double tol = c.kv_f16 ? kTolF16 : 2e-4;
    for (uint32_t b = 0; b < (uint32_t)c.B; ++b)
      for (uint32_t h = 0; h < (uint32_t)c.H; ++h)
        check_readouts(twin, gpu_readouts(test::gpu(), run.w, run.cache, run.ts, b, h, rc, 0.8f, true), b, h, rc, 0.8,
                       true, tol);
    if (full == lo) continue;  // a window of one: no row reaches before the ring
    gpu::Buffer out = test::zeros(16 * 4);
    const float thr[4] = {1, 2, 3, 4};
    gpu::Recorder rec(test::gpu());
    REQUIRE(rec.begin().ok());
    const Status s = ops::record_rfa_row_diagnostics(test::gpu(), rec, run.w, run.cache, run.ts, 0, 0, lo, lo + 1, thr, out);
    CHECK(s.code() == Code::invalid_argument);
    CHECK(s.message().find("no longer in the cache") != std::string::npos);
    const Status t = ops::record_rfa_tomography_rows(test::gpu(), rec, run.w, run.cache, run.ts, 0, 0, lo, lo + 1, 1.f, out);
    CHECK(t.code() == Code::invalid_argument);
    CHECK(t.message().find("no longer in the cache") != std::string::npos);
    REQUIRE(rec.submit_and_wait().ok());
  }
}

TEST_CASE("RT-RFA readouts: a key without direction carries no weight and no statistic") {
  // eps = 0 and a zero value: that key's log P is -inf (docs/variant-rt.md §3.2). The row
  // diagnostics and the tomography leave it out, as the fused kernel's softmax does; the twin says
  // the same by leaving it out of the row.
  std::mt19937 rng(5);
  AttentionParams p = make_rt_params(2, 4, rng, RtCovariance::stationary, RtKernel::gaussian);
  p.rt.eps = 0.0;
  Inputs in = make_inputs(p, 1, 20, 6, 1);
  const size_t W = 2 * (size_t)p.heads * p.dim;
  for (size_t x = 0; x < W; ++x) in.v[7 * W + x] = 0.f;  // position 7: no magnitude in any head
  const Twin twin(p, in, 0);
  REQUIRE(twin.row(0, 1, 12).keys.size() == 12);  // 13 keys, one without direction
  Fixture f(p, in);
  f.run(5);
  const Rect rc{8, 20, 0, 20};
  for (uint32_t h = 0; h < 2; ++h)
    check_readouts(twin, gpu_readouts(f.g, f.w, f.cache, f.ts, 0, h, rc, 1.3f, false), 0, h, rc, 1.3, false, 2e-4);
  // Position 7's own row: as a query without magnitude its angular variance is infinite, so no
  // key has a direction for it: an empty row (log Z -inf, no keys, zero weights), not NaN.
  REQUIRE(twin.row(0, 1, 7).keys.empty());
  const Readouts r7 = gpu_readouts(f.g, f.w, f.cache, f.ts, 0, 1, Rect{7, 8, 0, 20}, 1.f, false);
  CHECK(r7.diag[0] == 0.f);
  CHECK(r7.diag[1] == -INFINITY);
  CHECK(r7.diag[2] == 0.f);
  CHECK(r7.tomo[ops::kTomoKeys] == 0.f);
  CHECK(r7.tomo[ops::kTomoLogZ] == -INFINITY);
  for (float v : r7.P) CHECK(v == 0.f);
}

TEST_CASE("AFA and RT-RFA readouts at any head dim") {
  // D not a power of two (and odd): the probes' row diagnostics, the tomography rows (tau over
  // sqrt(2D)) and P of both mechanisms, fp32 and fp16 caches, prefill and decode-built caches.
  const Case cases[] = {{1, 2, 12, 37, 37, 1, false}, {1, 1, 20, 29, 1, 0, true}, {1, 2, 40, 23, 7, 2, false},
                        {1, 1, 96, 19, 19, 1, true},  {1, 1, 128, 17, 5, 0, false}};  // even D (odd D: RFA only)
  int k = 0;
  for (const Case& c : cases) {
    std::mt19937 rng(1100 + (uint32_t)k);
    const AfaPrecision prec = k % 3 == 0 ? AfaPrecision::channel_sum : k % 3 == 1 ? AfaPrecision::one_channel
                                                                                   : AfaPrecision::weighted;
    check_layer(make_afa_params(c.H, c.D, rng, prec, k % 2 == 1, false, true), c, 1200 + (uint32_t)k);
    check_layer(make_rt_params(c.H, c.D, rng, k % 2 == 0 ? RtCovariance::stationary : RtCovariance::ou_rate,
                               k % 4 < 2 ? RtKernel::student_t : RtKernel::gaussian, k % 3 != 2),
                c, 1300 + (uint32_t)k);
    ++k;
  }
}
