// The attention probe of AFA layers (record_rfa_probe -> shaders/afa_probe*.comp) against the AFA
// twin's attention matrix (ref::afa_forward with want_matrices): Ahat is the softmax weight, A the
// weight times the channel-mean decay (1/D) sum_k e^{-mu_k |l|} (docs/variant-afa.md §11), formed
// here in double from the lags. After prefill, chunked and decode runs, fp32 and fp16 caches,
// uniform, irregular and ~1e6 timestamps, every score covariance source, unitary and mix on and
// off, causal and not; the whole square and an off-tile block; masked cells exactly 0, rows
// summing to 1; a windowed ring smaller than the stream. The probe reads the row statistics the
// fused AFA kernel wrote, so this checks them too. The GPU curves stay RFA-only: refused (row
// diagnostics and tomography: tests/test_variant_readouts.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "attention_support.hpp"
#include "model_factory.hpp"
#include "ops/rfa_attention.hpp"
#include "ops/rfa_probe.hpp"
#include "ops/rfa_tomography.hpp"
#include "reference/afa_ref.hpp"
#include "reference/ops_ref.hpp"

using namespace rfa;
using namespace rfa::test;

namespace {

AttentionParams afa(int H, int D, uint32_t seed, AfaPrecision prec, bool unitary, bool mix, bool causal) {
  std::mt19937 rng(seed);
  return make_afa_params(H, D, rng, prec, unitary, mix, causal);
}

ref::AfaOutputs afa_twin(const AttentionParams& p, const Inputs& in, int window = 0) {
  const int rows = in.B * in.N;
  ref::AfaOptions opt;
  opt.want_matrices = true;
  opt.window = window;
  ref::AfaOutputs o;
  const Status s = ref::afa_forward(ref::afa_twin_params(p), in.B, in.N,
                                    ref::split_complex(to_double(in.q), rows, p.heads, p.dim),
                                    ref::split_complex(to_double(in.k), rows, p.heads, p.dim),
                                    ref::split_complex(to_double(in.v), rows, p.heads, p.dim), in.t, &o, opt);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  return o;
}


// (1/D) sum_k e^{-mu_k |t_i - t_j|}, A over Ahat: in double from the parameters (mu = 0 under the
// unitary switch) and the lag.
double mean_decay(const AttentionParams& p, const Inputs& in, int b, int h, int i, int j) {
  const double lag = std::fabs(time_of(in, b, i) - time_of(in, b, j));
  double s = 0;
  for (int k = 0; k < p.dim; ++k) s += std::exp(-(p.afa.unitary ? 0.0 : p.afa.mu[(size_t)h * p.dim + k]) * lag);
  return s / p.dim;
}

// One rectangle of (b, h) against the twin: unmasked cells within atol + tol |ref|, masked cells
// (causal: j > i, or outside the window) exactly 0 in both maps; with `full_rows` (the rectangle
// holds every key of its rows) each row of Ahat sums to 1.
void check_rect(const AttentionParams& p, const Inputs& in, const ref::AfaOutputs& r, uint32_t b, uint32_t h,
                const Rect& rc, const Maps& m, double tol, int window, bool full_rows) {
  CAPTURE(b);
  CAPTURE(h);
  CAPTURE(rc.r0);
  CAPTURE(rc.r1);
  CAPTURE(rc.c0);
  CAPTURE(rc.c1);
  const int N = in.N;
  std::vector<float> got_ahat, got_a;
  std::vector<double> want_ahat, want_a;
  size_t masked_nonzero = 0, masked = 0;
  double worst_row = 0;
  for (uint32_t i = rc.r0; i < rc.r1; ++i) {
    double row = 0;
    for (uint32_t j = rc.c0; j < rc.c1; ++j) {
      const size_t x = (size_t)(i - rc.r0) * (rc.c1 - rc.c0) + (j - rc.c0);
      row += m.ahat[x];
      if (p.sw.causal && (j > i || (window > 0 && i - j >= (uint32_t)window))) {
        ++masked;
        masked_nonzero += m.ahat[x] != 0.f || m.a[x] != 0.f;
        continue;
      }
      const double w = r.attn[(((size_t)b * p.heads + h) * N + i) * N + j];
      got_ahat.push_back(m.ahat[x]);
      got_a.push_back(m.a[x]);
      want_ahat.push_back(w);
      want_a.push_back(w * mean_decay(p, in, (int)b, (int)h, (int)i, (int)j));
    }
    worst_row = std::max(worst_row, std::fabs(row - 1.0));
  }
  CHECK(masked_nonzero == 0);
  if (p.sw.causal && rc.r0 < rc.c1 - 1) CHECK(masked > 0);  // the rectangles do cross the mask
  CHECK_CLOSE_VEC(got_ahat, want_ahat, 1e-5, tol);
  CHECK_CLOSE_VEC(got_a, want_a, 1e-5, tol);
  if (full_rows) {
    INFO("worst |row sum - 1| = " << worst_row);
    CHECK(worst_row < 2e-5);
  }
}

const char* prec_name(AfaPrecision p) {
  return p == AfaPrecision::channel_sum ? "channel_sum" : p == AfaPrecision::one_channel ? "one_channel" : "weighted";
}

}  // namespace

TEST_CASE("the AFA probe equals the twin's attention over every switch, after every kind of run") {
  struct Case {
    int B, H, D, N, chunk;
  } cases[] = {{2, 3, 8, 61, 7}, {1, 2, 32, 100, 100}, {2, 1, 16, 70, 1}, {1, 3, 4, 37, 37}};
  // D = 64 once (a causal chunked run, fp16 cache, t ~ 1e6): its kernel alone compiles for ~25 s cold.
  const Case wide{2, 2, 64, 45, 9};
  // Every source with unitary and causal on and off (the probe's own switches); the mix (the fused
  // kernel's epilogue only), the kernel path and the times alternate across them. 12 settings, not
  // the 24 of the fused kernel's test: each compiles a kernel and a probe pipeline (seconds each on
  // lavapipe without a warm shader cache).
  int k = 0;
  for (AfaPrecision prec : {AfaPrecision::channel_sum, AfaPrecision::one_channel, AfaPrecision::weighted})
    for (int mask = 0; mask < 4; ++mask) {
      const bool unitary = mask & 1, causal = !(mask & 2), mix = (k + k / 4) & 1;
      const Case& c = k == 8 ? wide : cases[(k + k / 4) % 4];  // causal settings meet decode steps too
      // The probe reads the row statistics of every kernel path: keys from the cache, shared key
      // tiles, fp16 caches.
      const AttentionPath ap = k % 3 == 0 ? AttentionPath{} : k % 3 == 1 ? path(0, 1, -1, false) : path(1, 1, -1, true);
      const int times = (k / 3) % 3;  // uniform, irregular, ~1e6 (cycling apart from the paths)
      ++k;
      CAPTURE(std::string(prec_name(prec)));
      CAPTURE(unitary);
      CAPTURE(mix);
      CAPTURE(causal);
      CAPTURE(describe(ap));
      CAPTURE(times);
      CAPTURE(c.N);
      CAPTURE(c.D);
      const AttentionParams p = afa(c.H, c.D, 200 + (uint32_t)k, prec, unitary, mix, causal);
      const Inputs in = make_inputs(p, c.B, c.N, 40 + (uint32_t)k, times);
      const ref::AfaOutputs r = afa_twin(p, in);
      Fixture f(p, in, 0, ap);
      // Non-causal rows see keys that later calls add: one call only.
      const int chunk = causal ? c.chunk : c.N;
      CAPTURE(chunk);
      f.run(chunk);
      const uint32_t N = (uint32_t)c.N;
      // The whole square, and a block off the 64-cell groups at both ends that crosses the diagonal.
      const Rect whole{0, N, 0, N}, block{N / 3 + 1, N - 1, N / 5 + 2, 2 * N / 3 + 3};
      const double tol = ap.kv_f16 ? kTolF16 : 1e-4;
      for (uint32_t b = 0; b < (uint32_t)c.B; ++b)
        for (uint32_t h = 0; h < (uint32_t)c.H; ++h) {
          check_rect(p, in, r, b, h, whole, probe(f.g, f.w, f.cache, f.ts, b, h, whole), tol, 0, true);
          check_rect(p, in, r, b, h, block, probe(f.g, f.w, f.cache, f.ts, b, h, block), tol, 0, false);
        }
    }
}

TEST_CASE("the AFA probe reads a windowed ring smaller than the stream") {
  // Chunks of `chunk` positions through a ring of window + chunk - 1 slots (each chunk's
  // timestamps written into their slots first), against the twin's banded causal mask; then the
  // rows and columns still in the ring. Positions that left the ring are refused.
  struct Case {
    int B, H, D, N, window, chunk, times;
    AfaPrecision prec;
    bool unitary, mix, kv_f16;
  } cases[] = {{2, 2, 8, 90, 11, 5, 1, AfaPrecision::weighted, false, true, true},
               {1, 3, 16, 75, 20, 1, 0, AfaPrecision::channel_sum, true, false, false},
               {1, 1, 4, 40, 1, 3, 2, AfaPrecision::one_channel, false, false, false}};
  for (const Case& c : cases) {
    CAPTURE(c.N);
    CAPTURE(c.window);
    CAPTURE(c.chunk);
    CAPTURE(c.kv_f16);
    const AttentionParams p = afa(c.H, c.D, 31 + (uint32_t)c.N, c.prec, c.unitary, c.mix, true);
    const Inputs in = make_inputs(p, c.B, c.N, 5 + (uint32_t)c.N, c.times);
    const ref::AfaOutputs r = afa_twin(p, in, c.window);
    check_wrapped_ring_probe(p, in, c.window, c.chunk, c.kv_f16,
                             [&](uint32_t b, uint32_t h, const Rect& rc, const Maps& m, double tol, bool whole) {
                               check_rect(p, in, r, b, h, rc, m, tol, c.window, whole);
                             });
  }
}

TEST_CASE("AFA layers: the GPU curves stay RFA-only; row diagnostics and tomography are accepted") {
  const AttentionParams p = afa(2, 4, 3, AfaPrecision::channel_sum, false, false, true);
  const Inputs in = make_inputs(p, 1, 10, 1, 0);
  Fixture f(p, in);
  f.run(10);
  gpu::Buffer out = f.up(std::vector<float>(400)), lags = f.up(std::vector<float>(4, 1.f));
  const float thr[4] = {0.f, 1.f, 2.f, 3.f};
  gpu::Recorder rec(f.g);
  REQUIRE(rec.begin().ok());
  // The curves evaluate RFA's lag kernels (the host draws AFA curves, rfa::head_curves); the row
  // diagnostics and the tomography have AFA forms (tests/test_variant_readouts.cpp checks their values).
  const Status curves = ops::record_rfa_curves(f.g, rec, f.w, lags, 4, out);
  CHECK(curves.code() == Code::unsupported);
  CHECK(curves.message().find("AFA layer") != std::string::npos);
  CHECK(ops::record_rfa_row_diagnostics(f.g, rec, f.w, f.cache, f.ts, 0, 0, 0, 10, thr, out).ok());
  CHECK(ops::record_rfa_tomography_rows(f.g, rec, f.w, f.cache, f.ts, 0, 0, 0, 10, 1.f, out).ok());
  REQUIRE(rec.submit_and_wait().ok());
}
