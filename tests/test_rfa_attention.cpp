// The GPU RFA attention (rotate + fused kernel, probes, curves, SDPA) against the double-precision
// CPU twin (reference/attention_ref, reference/rfa_math) over every switch, the paper's named
// models and baselines, off-tile shapes, uniform / irregular / ~1e6 timestamps, and the
// prefill == successive-decode identity through the cache.
#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <random>
#include <string>
#include <vector>

#include "ops/rfa_attention.hpp"
#include "ops/rfa_probe.hpp"
#include "ops/sdpa.hpp"
#include "reference/attention_ref.hpp"
#include "reference/ops_ref.hpp"
#include "reference/rfa_math.hpp"
#include "attention_support.hpp"
#include "test_support.hpp"

using namespace rfa;
using cd = std::complex<double>;

using namespace rfa::test;

TEST_CASE("named models match the twin (prefill, causal, uniform and irregular times)") {
  const char* names[] = {"M1", "M2", "M2.1", "M2.2", "M2.3", "M2.4", "M2.5", "M2.6", "M2.7",
                         "RoPE", "ALiBi", "DecayedRoPE", "SCRoPE"};
  int k = 0;
  for (const char* name : names) {
    CAPTURE(std::string(name));
    const int D = (k % 3 == 0) ? 8 : (k % 3 == 1 ? 32 : 4);
    const int H = (k % 2 == 0) ? 3 : 8;
    check_model(model(name, H, D), 1 + k % 2, k % 2 ? 61 : 127, k % 2);
    ++k;
  }
}

TEST_CASE("every covariance, bias, precision and switch") {
  for (int cov = 0; cov < 5; ++cov)
    for (int prec = 0; prec < 3; ++prec) {
      AttentionParams p = model("M2", 3, 8, 5 + cov);
      p.sw.covariance = (Covariance)cov;
      p.sw.precision = (RobustPrecision)prec;
      p.sw.additive_bias = (AdditiveBias)((cov + prec) % 3);
      if (cov == 4)
        for (auto& hp : p.head) {
          hp.c_exp = 0.2;
          hp.beta_exp = 0.05;
          hp.a_per = 0.1;
          hp.b_per = -0.05;
          hp.omega_per = 0.3;
        }
      CAPTURE(cov);
      CAPTURE(prec);
      check_model(p, 1, 61, 1);
    }
  // The remaining switches, one at a time and together, non-causal too.
  for (int mask = 0; mask < 8; ++mask) {
    AttentionParams p = model("M2", 3, 16, 17 + mask);
    p.sw.causal = (mask & 1) == 0;
    p.sw.complex_input_norm = (mask & 2) != 0;
    p.sw.complex_output_norm = (mask & 4) != 0;
    p.sw.shift_rotation = mask != 3;
    p.sw.gate = mask >= 5;
    p.sw.counter_rotate = mask != 6;
    if (mask & 2) {
      auto g = test::random_floats(3 * 16 * 4, 77 + mask, 0.5f, 1.5f);
      p.norm_q.assign(g.begin(), g.begin() + 48);
      p.norm_k.assign(g.begin() + 48, g.begin() + 96);
      p.norm_v.assign(g.begin() + 96, g.begin() + 144);
      p.norm_o.assign(g.begin() + 144, g.end());
    }
    CAPTURE(mask);
    check_model(p, 2, 61, mask % 2);
  }
}

TEST_CASE("shapes: N = 1, 2 and D = 64; long N once") {
  for (int N : {1, 2}) check_model(model("M2", 8, 32), 2, N, 1);
  check_model(model("M2", 1, 64), 1, 127, 0);
  check_model(model("M2.7", 1, 64), 2, 61, 1);
  check_model(model("M2", 1, 8), 1, 2053, 1);
  check_model(model("M1", 2, 4), 1, 1000, 0);
}

TEST_CASE("prefill equals successive decode steps through the cache") {
  AttentionParams p = model("M2.7", 3, 16);
  for (int chunk : {1, 5}) check_model(p, 2, 61, 1, chunk);
  // Non-causal: a single position (the only prefix a non-causal decode step equals the twin on).
  AttentionParams nc = model("M2", 3, 8);
  nc.sw.causal = false;
  check_model(nc, 1, 1, 1, 1);
}

TEST_CASE("limits: t ~ 1e6, mu = 0, tiny and huge nu, large tau") {
  check_model(model("M2", 3, 32), 2, 127, 2);
  check_model(model("M1", 8, 8), 1, 61, 2);
  for (double nu : {1e-3, 1e9}) {
    AttentionParams p = model("M2", 3, 8);
    for (auto& hp : p.head) {
      hp.nu = nu;
      hp.kappa = (nu + 8) / 8;
    }
    CAPTURE(nu);
    check_model(p, 1, 61, 1);
  }
  AttentionParams hot = model("M2", 3, 8);
  for (auto& hp : hot.head) hp.tau = 50;
  check_model(hot, 1, 61, 0);
  AttentionParams zero_mu = model("M2", 3, 8);
  for (auto& hp : zero_mu.head) hp.mu = 0;
  check_model(zero_mu, 1, 61, 1);
}

TEST_CASE("pure rotation equals RoPE dot-product attention") {
  // M2.6 without shift and mu = 0: logits tau Re(conj(Q~) K~) / sqrt(D) (docs/reference-code.md §11 item 10), i.e.
  // SDPA on the rotated caches with scale tau / sqrt(D), before counter-rotation.
  AttentionParams p = model("RoPE", 3, 16);
  p.sw.counter_rotate = false;
  for (auto& hp : p.head) hp.tau = 1.7;
  const Inputs in = make_inputs(p, 2, 61, 5, 1);
  Fixture f(p, in);
  const GpuRun g = f.run(61);
  auto& ctx = test::gpu();
  gpu::Buffer o = test::zeros((size_t)2 * 61 * 2 * 3 * 16);
  gpu::Recorder rec(ctx);
  REQUIRE(rec.begin().ok());
  REQUIRE(ops::record_sdpa(ctx, rec, f.cache, o, 0, 61, true, (float)(1.7 / 4.0)).ok());
  REQUIRE(rec.submit_and_wait().ok());
  CHECK_CLOSE_VEC(test::download(o, g.out.size()), to_double(g.out), 1e-5, 1e-4);
}

TEST_CASE("probe rectangles and row diagnostics equal the twin") {
  for (bool causal : {true, false}) {
    AttentionParams p = model("M2", 3, 8);
    p.sw.causal = causal;
    const int N = 61;
    const Inputs in = make_inputs(p, 2, N, 9, 1);
    const ref::AttentionOutputs r = twin(p, in, true);
    Fixture f(p, in);
    f.run(N);
    auto& g = test::gpu();
    const std::vector<double> thr = {0.0, 3.0, 10.0, 40.0};
    ref::RowDiagnostics rd;
    REQUIRE(ref::row_diagnostics(p, 2, N, in.t, r, thr, &rd).ok());
    for (uint32_t b : {0u, 1u})
      for (uint32_t h : {0u, 2u}) {
        struct Rect {
          uint32_t r0, r1, c0, c1;
        };
        for (Rect q : {Rect{0, 61, 0, 61}, Rect{7, 30, 3, 50}, Rect{60, 61, 0, 61}}) {
          const size_t n = (size_t)(q.r1 - q.r0) * (q.c1 - q.c0);
          gpu::Buffer ah = test::zeros(n), aa = test::zeros(n);
          gpu::Recorder rec(g);
          REQUIRE(rec.begin().ok());
          REQUIRE(ops::record_rfa_probe(g, rec, f.w, f.cache, f.ts, b, h, q.r0, q.r1, q.c0, q.c1, ah, aa).ok());
          REQUIRE(rec.submit_and_wait().ok());
          std::vector<double> ra, rb;
          for (uint32_t i = q.r0; i < q.r1; ++i)
            for (uint32_t j = q.c0; j < q.c1; ++j) {
              const size_t idx = (((size_t)b * 3 + h) * N + i) * N + j;
              ra.push_back(r.Ahat[idx]);
              rb.push_back(r.A[idx]);
            }
          CHECK_CLOSE_VEC(test::download(ah, n), ra, 1e-5, 1e-4);
          CHECK_CLOSE_VEC(test::download(aa, n), rb, 1e-5, 1e-4);
        }
        const float tf[4] = {0.f, 3.f, 10.f, 40.f};
        gpu::Buffer d = test::zeros((size_t)N * 8);
        gpu::Recorder rec(g);
        REQUIRE(rec.begin().ok());
        REQUIRE(ops::record_rfa_row_diagnostics(g, rec, f.w, f.cache, f.ts, b, h, 0, N, tf, d).ok());
        REQUIRE(rec.submit_and_wait().ok());
        const auto got = test::download(d, (size_t)N * 8);
        std::vector<float> gv;
        std::vector<double> rv;
        for (int i = 0; i < N; ++i) {
          const size_t row = ((size_t)b * 3 + h) * N + i;
          const double want[8] = {rd.entropy[row], rd.log_partition[row], rd.max_weight[row], rd.expected_lag[row],
                                  rd.mass_beyond[row * 4 + 0], rd.mass_beyond[row * 4 + 1], rd.mass_beyond[row * 4 + 2],
                                  rd.mass_beyond[row * 4 + 3]};
          for (int k = 0; k < 8; ++k) {
            gv.push_back(got[(size_t)i * 8 + k]);
            rv.push_back(want[k]);
          }
        }
        CHECK_CLOSE_VEC(gv, rv, 1e-4, 1e-4);
      }
  }
}

TEST_CASE("curves equal rfa_math") {
  std::vector<float> lags;
  for (int k = 0; k < 300; ++k) lags.push_back(k < 100 ? 0.01f * k : (float)std::pow(1.05, k - 100));
  for (int cov = 0; cov < 5; ++cov)
    for (int prec = 0; prec < 3; ++prec) {
      AttentionParams p = model("M1", 8, 8);
      p.sw.covariance = (Covariance)cov;
      p.sw.precision = (RobustPrecision)prec;
      p.sw.additive_bias = (AdditiveBias)(prec % 3);
      auto& g = test::gpu();
      auto w = ops::AttentionWeightsGpu::create(g, p);
      REQUIRE(w.ok());
      gpu::Buffer lb = test::upload(lags), out = test::zeros(8 * 4 * lags.size());
      gpu::Recorder rec(g);
      REQUIRE(rec.begin().ok());
      REQUIRE(ops::record_rfa_curves(g, rec, *w, lb, (uint32_t)lags.size(), out).ok());
      REQUIRE(rec.submit_and_wait().ok());
      const auto got = test::download(out, 8 * 4 * lags.size());
      std::vector<double> want;
      for (int h = 0; h < 8; ++h) {
        const ref::Curves c = ref::curves(p, h, to_double(lags));
        for (const auto* v : {&c.E, &c.vcov, &c.P, &c.B}) want.insert(want.end(), v->begin(), v->end());
      }
      CAPTURE(cov);
      CAPTURE(prec);
      CHECK_CLOSE_VEC(got, want, 1e-5, 1e-4);
      CHECK(ops::rfa_regime(p, 5).alpha == ref::regime(p, 5).alpha);
    }
}

namespace {

// A windowed stream through a ring smaller than the sequence: chunks of `chunk` new positions
// through a ring of window + chunk - 1 slots (the fewest a chunk's banded keys fit in; each
// chunk's timestamps written into their slots first), against the twin's banded causal mask.
// Then probes and row diagnostics of the newest rows, which read the wrapped ring.
void check_window(const AttentionParams& p, int B, int N, int window, int chunk, int times) {
  CAPTURE(B);
  CAPTURE(N);
  CAPTURE(window);
  CAPTURE(chunk);
  CAPTURE(times);
  const Inputs in = make_inputs(p, B, N, 23, times);
  const int rows = B * N;
  auto Q = ref::split_complex(to_double(in.q), rows, p.heads, p.dim);
  auto K = ref::split_complex(to_double(in.k), rows, p.heads, p.dim);
  auto V = ref::split_complex(to_double(in.v), rows, p.heads, p.dim);
  ref::AttentionOutputs r;
  ref::AttentionOptions opt;
  opt.window = window;
  opt.want_matrices = true;
  REQUIRE(ref::attention(p, B, N, Q, K, V, in.t, &r, opt).ok());

  auto& g = test::gpu();
  const uint32_t H = (uint32_t)p.heads;
  RingRun run = run_ring(p, in, window, chunk, false);
  CHECK_CLOSE_VEC(run.out, ref::pack_complex(r.est, rows, p.heads, p.dim), kTol, kTol);
  CHECK_CLOSE_VEC(run.lse, r.row_lse, kTol * 10, kTol);
  const uint32_t cap = run.cap;
  ops::AttentionCache& cache = run.cache;
  const ops::AttentionWeightsGpu& w = run.w;
  const gpu::Buffer& ts = run.ts;
  CHECK(cache.filled == (uint32_t)N);
  CHECK(cache.oldest() == (uint32_t)N - std::min<uint32_t>(cap, N));

  // The newest rows against every column still in the ring (masked outside the band: 0).
  const uint32_t r0 = std::max<uint32_t>(cache.oldest(), (uint32_t)N - 3), c0 = cache.oldest();
  const uint32_t nr = (uint32_t)N - r0, nc = (uint32_t)N - c0;
  const uint32_t b = (uint32_t)B - 1, h = H - 1;
  // Row diagnostics read a row's whole band: only rows whose oldest key is still in the ring.
  const uint32_t d0 = std::max(r0, cache.oldest() > 0 ? cache.oldest() + (uint32_t)window - 1 : 0u), nd = (uint32_t)N - d0;
  gpu::Buffer ah = test::zeros((size_t)nr * nc), aa = test::zeros((size_t)nr * nc), d = test::zeros((size_t)nd * 8);
  const float thr[4] = {0.f, 3.f, 10.f, 40.f};
  gpu::Recorder rec(g);
  REQUIRE(rec.begin().ok());
  REQUIRE(ops::record_rfa_probe(g, rec, w, cache, ts, b, h, r0, (uint32_t)N, c0, (uint32_t)N, ah, aa).ok());
  REQUIRE(ops::record_rfa_row_diagnostics(g, rec, w, cache, ts, b, h, d0, (uint32_t)N, thr, d).ok());
  REQUIRE(rec.submit_and_wait().ok());
  std::vector<double> want_ahat, want_a;
  for (uint32_t i = r0; i < (uint32_t)N; ++i)
    for (uint32_t j = c0; j < (uint32_t)N; ++j) {
      const size_t idx = (((size_t)b * H + h) * N + i) * N + j;
      want_ahat.push_back(r.Ahat[idx]);
      want_a.push_back(r.A[idx]);
    }
  CHECK_CLOSE_VEC(test::download(ah, (size_t)nr * nc), want_ahat, 1e-5, 1e-4);
  CHECK_CLOSE_VEC(test::download(aa, (size_t)nr * nc), want_a, 1e-5, 1e-4);
  ref::RowDiagnostics rd;
  REQUIRE(ref::row_diagnostics(p, B, N, in.t, r, {0.0, 3.0, 10.0, 40.0}, &rd).ok());
  const auto got = test::download(d, (size_t)nd * 8);
  std::vector<float> gv;
  std::vector<double> rv;
  for (uint32_t i = d0; i < (uint32_t)N; ++i) {
    const size_t row = ((size_t)b * H + h) * N + i;
    gv.insert(gv.end(), got.begin() + (size_t)(i - d0) * 8, got.begin() + (size_t)(i - d0) * 8 + 5);
    for (double x : {rd.entropy[row], rd.log_partition[row], rd.max_weight[row], rd.expected_lag[row],
                     rd.mass_beyond[row * 4]})
      rv.push_back(x);
  }
  CHECK_CLOSE_VEC(gv, rv, 1e-4, 1e-4);
  // A probe of a position that has left the ring is refused, naming the positions still there;
  // so are the diagnostics of a row whose band reaches before the ring.
  if (cache.oldest() > 0 && window > 1) {
    gpu::Recorder rec3(g);
    REQUIRE(rec3.begin().ok());
    CHECK(!ops::record_rfa_row_diagnostics(g, rec3, w, cache, ts, b, h, cache.oldest(), cache.oldest() + 1, thr, d).ok());
    REQUIRE(rec3.submit_and_wait().ok());
  }
  if (cache.oldest() > 0) {
    gpu::Recorder rec2(g);
    REQUIRE(rec2.begin().ok());
    Status s = ops::record_rfa_probe(g, rec2, w, cache, ts, b, h, 0, 1, 0, 1, ah, aa);
    CHECK(!s.ok());
    CHECK(s.message().find("still in the cache") != std::string::npos);
    REQUIRE(rec2.submit_and_wait().ok());
  }
}

}  // namespace

TEST_CASE("sliding window: a ring smaller than the stream equals the banded causal mask") {
  // Off-tile sizes: windows below, at and above a key tile; chunks of 1 (decode) and 13 (prefill).
  check_window(model("M2", 3, 8), 2, 127, 5, 1, 1);
  check_window(model("M2", 3, 8), 1, 127, 5, 13, 0);
  check_window(model("M2.7", 3, 16), 2, 150, 40, 13, 1);
  check_window(model("M1", 8, 32), 1, 300, 100, 1, 2);   // t ~ 1e6
  check_window(model("M2", 1, 4), 1, 61, 1, 7, 1);        // each query sees only itself
  check_window(model("M2", 3, 8), 1, 61, 200, 13, 1);     // a window wider than the stream: plain causal
  // Chunks of more rows than a tile (64) with a window of several key tiles: under the forced tile
  // (test_rfa_attention_tile) some key tiles lie inside every row's window and skip the mask, the
  // tiles at the window's edge and on the diagonal apply it.
  check_window(model("M2", 3, 8), 1, 300, 100, 150, 1);
  // A chunk whose banded keys do not fit the ring is refused before anything runs.
  AttentionParams p = model("M2", 3, 8);
  auto& g = test::gpu();
  auto w = ops::AttentionWeightsGpu::create(g, p);
  REQUIRE(w.ok());
  auto c = ops::AttentionCache::create(g, 1, 3, 8, 10, "ring", 8);
  REQUIRE(c.ok());
  gpu::Buffer ts = test::zeros(20), x = test::zeros(4 * 48);
  gpu::Recorder rec(g);
  REQUIRE(rec.begin().ok());
  Status s = ops::record_rfa_attention(g, rec, *w, *c, ts, x, x, x, x, x, 20, 4);
  CHECK(!s.ok());
  CHECK(s.message().find("more than the cache's 10 slots") != std::string::npos);
  REQUIRE(rec.submit_and_wait().ok());
}
