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

#include "variant_support.hpp"

using namespace rfa;
using namespace rfa::test;

namespace {

// (1/D) sum_k e^{-mu_k |t_i - t_j|}, A over Ahat: in double from the parameters (mu = 0 under the
// unitary switch) and the lag.
double mean_decay(const AttentionParams& p, const Inputs& in, int b, int h, int i, int j) {
  const double lag = std::fabs(time_of(in, b, i) - time_of(in, b, j));
  double s = 0;
  for (int k = 0; k < p.dim; ++k) s += std::exp(-(p.afa.unitary ? 0.0 : p.afa.mu[(size_t)h * p.dim + k]) * lag);
  return s / p.dim;
}

// What the probe of (b, h) should read: the twin's weight, and A = Ahat times the channel-mean decay.
ProbeTruth afa_truth(const AttentionParams& p, const Inputs& in, const ref::AfaOutputs& r, uint32_t b, uint32_t h) {
  // The truth refers to p, in and r, which outlive the checks it serves.
  const AttentionParams* pp = &p;
  const Inputs* ip = &in;
  const ref::AfaOutputs* rp = &r;
  const size_t N = (size_t)in.N, H = (size_t)p.heads;
  return {[rp, b, h, N, H](uint32_t i, uint32_t j) { return rp->attn[(((size_t)b * H + h) * N + i) * N + j]; },
          [pp, ip, b, h](uint32_t i, uint32_t j) { return mean_decay(*pp, *ip, (int)b, (int)h, (int)i, (int)j); },
          {}};
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
      const ref::AfaOutputs r = afa_twin(p, in, true);
      // Non-causal rows see keys that later calls add: one call only.
      const int chunk = causal ? c.chunk : c.N;
      CAPTURE(chunk);
      check_probe_after_run(p, in, ap, chunk, [&](uint32_t b, uint32_t h) { return afa_truth(p, in, r, b, h); });
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
    const ref::AfaOutputs r = afa_twin(p, in, true, c.window);
    check_wrapped_ring_probe(p, in, c.window, c.chunk, c.kv_f16,
                             [&](uint32_t b, uint32_t h, const Rect& rc, const Maps& m, double tol, bool whole) {
                               check_probe_rect(p, afa_truth(p, in, r, b, h), b, h, rc, m, tol, c.window, whole);
                             });
  }
}

TEST_CASE("AFA layers: the GPU curves stay RFA-only; row diagnostics and tomography are accepted") {
  check_curves_refused_readouts_accepted(afa(2, 4, 3, AfaPrecision::channel_sum, false, false, true), "AFA layer");
}

TEST_CASE("the probe's views of full AFA (Q_c, the channel mean, W) and of AFA equal the twin's matrices") {
  // Full AFA: a channel c gives Q_c (rows sum to 1) and A = Q_c e_c; the channel mean gives
  // (1/D) sum_k Q_k and A = (1/D) sum_k Q_k e_k; the reweighting map gives W and A = W. The
  // memory-optimised form: the softmax in every view, A its channel's decay, the mean decay or 1.
  // After a chunked run (decode rows too), fp32 and fp16 caches, and after a tied layer (the probe
  // reads its first pass).
  struct Case {
    bool full;
    int n, B, H, D, N, chunk, times;
    bool kv_f16;
  } cases[] = {{true, 1, 2, 2, 8, 45, 7, 1, false}, {true, 3, 1, 1, 4, 30, 1, 2, true}, {false, 1, 1, 2, 8, 33, 5, 0, false}};
  int k = 0;
  for (const Case& c : cases) {
    CAPTURE(c.full);
    CAPTURE(c.n);
    CAPTURE(c.kv_f16);
    AttentionParams p = afa(c.H, c.D, 600 + (uint32_t)k, AfaPrecision::channel_sum, false, true, true);
    if (c.full) p.variant = AttentionVariant::afa_full;
    p.afa.irls_iterations = c.n;
    const Inputs in = make_inputs(p, c.B, c.N, 610 + (uint32_t)k++, c.times);
    const ref::AfaOutputs r = afa_twin(p, in, true);
    AttentionPath ap;
    ap.kv_f16 = c.kv_f16;
    Fixture f(p, in, 0, ap);
    f.run(c.chunk);
    const uint32_t N = (uint32_t)c.N, H = (uint32_t)c.H, D = (uint32_t)c.D;
    const double tol = c.kv_f16 ? kTolF16 : 1e-4;
    for (int view : {kAllChannels, 0, c.D - 1, kReweighting})
      for (uint32_t b = 0; b < (uint32_t)c.B; ++b)
        for (uint32_t h = 0; h < H; ++h) {
          CAPTURE(view);
          CAPTURE(b);
          CAPTURE(h);
          auto decay = [&](int ch, uint32_t i, uint32_t j) {
            const double lag = std::fabs(time_of(in, (int)b, (int)i) - time_of(in, (int)b, (int)j));
            return std::exp(-p.afa.mu[(size_t)h * D + ch] * lag);
          };
          ProbeTruth t;
          t.ahat = [&, view](uint32_t i, uint32_t j) {
            const size_t row = ((size_t)b * H + h) * N + i;
            if (!c.full || view == kAllChannels) return r.attn[row * N + j];
            if (view == kReweighting) return r.reweight[row * N + j];
            return r.channel_attn[((((size_t)b * H + h) * D + view) * N + i) * N + j];
          };
          t.decay = [&, view](uint32_t i, uint32_t j) {
            if (view == kReweighting) return 1.0;
            if (view >= 0) return decay(view, i, j);
            double num = 0, den = 0;  // sum_k w_k e_k / sum_k w_k over the channels' weights
            for (uint32_t ch = 0; ch < D; ++ch) {
              const double w = c.full ? r.channel_attn[((((size_t)b * H + h) * D + ch) * N + i) * N + j] : 1.0;
              num += w * decay((int)ch, i, j);
              den += w;
            }
            return den > 0 ? num / den : 0.0;
          };
          const Rect whole{0, N, 0, N}, block{N / 3 + 1, N - 1, N / 5 + 2, 2 * N / 3 + 3};
          // W's rows do not sum to 1: only the normalised views are checked as whole rows.
          check_probe_rect(p, t, b, h, whole, probe(f.g, f.w, f.cache, f.ts, b, h, whole, view), tol, 0, view != kReweighting);
          check_probe_rect(p, t, b, h, block, probe(f.g, f.w, f.cache, f.ts, b, h, block, view), tol, 0, false);
        }
  }
}
