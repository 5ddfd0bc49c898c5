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
