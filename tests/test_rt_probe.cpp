// The attention probe of RT-RFA layers (record_rfa_probe -> shaders/rt_probe*.comp) against the RT
// twin's attention matrix (ref::rt_attention with want_matrices): Ahat is the softmax weight, and
// A = Ahat bit for bit (no decay on RT weights or values, docs/variant-rt.md §10). After prefill,
// chunked and decode runs, fp32 and fp16 caches, shared key tiles and keys read from the cache,
// uniform, irregular and ~1e6 timestamps, both covariances and both kernels, causal and not; the
// whole square and an off-tile block; masked cells exactly 0, rows summing to 1; a windowed ring
// smaller than the stream; keys without direction (weight exactly 0) and lags where the literal
// precision overflows. The probe reads the row statistics the fused RT kernel wrote, so this
// checks them too. The GPU curves stay RFA-only: refused, naming RT (row diagnostics and
// tomography: tests/test_variant_readouts.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "variant_support.hpp"

using namespace rfa;
using namespace rfa::test;

namespace {

// What the probe of (b, h) should read: the twin's weights, A equal to Ahat bit for bit, and rows
// summing to 0 where the twin's row has no weight at all (every key without direction).
ProbeTruth rt_truth(const AttentionParams& p, const Inputs& in, const ref::RtOutputs& r, uint32_t b, uint32_t h) {
  // The truth refers to r, which outlives the checks it serves.
  const ref::RtOutputs* rp = &r;
  const size_t N = (size_t)in.N, H = (size_t)p.heads;
  return {[rp, b, h, N, H](uint32_t i, uint32_t j) { return rp->A[(((size_t)b * H + h) * N + i) * N + j]; },
          {},
          [rp, b, h, N, H](uint32_t i) { return rp->row_sum[((size_t)b * H + h) * N + i] == 0.0; }};
}

}  // namespace

TEST_CASE("the RT probe equals the twin's attention over every switch, after every kind of run") {
  struct Case {
    int B, H, D, N, chunk;
  } cases[] = {{2, 3, 8, 61, 7}, {1, 2, 32, 100, 100}, {2, 1, 16, 70, 1}, {1, 3, 4, 37, 37}};
  // D = 64 once (a causal chunked run on shared key tiles, t ~ 1e6).
  const Case wide{2, 2, 64, 45, 9};
  // Both covariances x both kernels x causal and not (the probe's own switches): 8 settings, each
  // compiling a kernel and a probe pipeline. The kernel path and the time grid cycle apart across
  // them: every path and every time grid meet both maskings.
  int k = 0;
  for (RtCovariance cov : {RtCovariance::stationary, RtCovariance::ou_rate})
    for (RtKernel kernel : {RtKernel::student_t, RtKernel::gaussian})
      for (bool causal : {true, false}) {
        const Case& c = k == 4 ? wide : cases[(k + k / 4) % 4];  // causal settings meet decode steps too
        // The probe reads the row statistics of every kernel path: keys from the cache, shared key
        // tiles, fp16 caches.
        const AttentionPath ap = k % 3 == 0 ? AttentionPath{} : k % 3 == 1 ? path(0, 1, -1, false) : path(1, 1, -1, true);
        const int times = 2 * k % 3;  // uniform, irregular, ~1e6
        ++k;
        CAPTURE((int)cov);
        CAPTURE((int)kernel);
        CAPTURE(causal);
        CAPTURE(describe(ap));
        CAPTURE(times);
        CAPTURE(c.N);
        CAPTURE(c.D);
        const AttentionParams p = rt(c.H, c.D, 300 + (uint32_t)k, cov, kernel, causal);
        const Inputs in = make_inputs(p, c.B, c.N, 60 + (uint32_t)k, times);
        const ref::RtOutputs r = rt_twin(p, in, true);
        // Non-causal rows see keys that later calls add: one call only.
        const int chunk = causal ? c.chunk : c.N;
        CAPTURE(chunk);
        check_probe_after_run(p, in, ap, chunk, [&](uint32_t b, uint32_t h) { return rt_truth(p, in, r, b, h); });
      }
}

TEST_CASE("the RT probe reads a windowed ring smaller than the stream") {
  // Chunks of `chunk` positions through a ring of window + chunk - 1 slots (each chunk's
  // timestamps written into their slots first), against the twin's banded causal mask; then the
  // rows and columns still in the ring. Positions that left the ring are refused.
  struct Case {
    int B, H, D, N, window, chunk, times;
    RtCovariance cov;
    RtKernel kernel;
    bool kv_f16;
  } cases[] = {{2, 2, 8, 90, 11, 5, 1, RtCovariance::ou_rate, RtKernel::student_t, true},
               {1, 3, 16, 75, 20, 1, 2, RtCovariance::stationary, RtKernel::gaussian, false},
               {1, 1, 4, 40, 1, 3, 0, RtCovariance::stationary, RtKernel::student_t, false}};
  for (const Case& c : cases) {
    CAPTURE(c.N);
    CAPTURE(c.window);
    CAPTURE(c.chunk);
    CAPTURE(c.kv_f16);
    const AttentionParams p = rt(c.H, c.D, 41 + (uint32_t)c.N, c.cov, c.kernel, true);
    const Inputs in = make_inputs(p, c.B, c.N, 7 + (uint32_t)c.N, c.times);
    const ref::RtOutputs r = rt_twin(p, in, true, c.window);
    check_wrapped_ring_probe(p, in, c.window, c.chunk, c.kv_f16,
                             [&](uint32_t b, uint32_t h, const Rect& rc, const Maps& m, double tol, bool whole) {
                               check_probe_rect(p, rt_truth(p, in, r, b, h), b, h, rc, m, tol, c.window, whole);
                             });
  }
}

TEST_CASE("the RT probe: keys without direction weigh exactly 0, long lags stay finite") {
  // eps = 0 and a zero value at position 5: key 5 has log P = -inf (the kernel skips it: its
  // column is exactly 0) and row 5 sees no key with a direction (the whole row is 0, as the
  // twin's); a zero query and a zero key elsewhere sit at distance |qh - kh|^2.
  {
    AttentionParams p = rt(1, 4, 13, RtCovariance::stationary, RtKernel::student_t, true);
    p.rt.eps = 0;
    Inputs in = make_inputs(p, 1, 12, 3, 1);
    const size_t W = 2 * 1 * 4;
    for (size_t d = 0; d < W; ++d) {
      in.v[5 * W + d] = 0.f;
      in.q[8 * W + d] = 0.f;
      in.k[2 * W + d] = 0.f;
    }
    const ref::RtOutputs r = rt_twin(p, in, true);
    REQUIRE(r.row_sum[5] == 0.0);
    Fixture f(p, in);
    f.run(12);
    const Rect whole{0, 12, 0, 12};
    const Maps m = probe(f.g, f.w, f.cache, f.ts, 0, 0, whole);
    check_probe_rect(p, rt_truth(p, in, r, 0, 0), 0, 0, whole, m, 1e-4, 0, true);
    for (uint32_t i = 0; i < 12; ++i) {
      CHECK(m.ahat[(size_t)i * 12 + 5] == 0.f);  // the column of key 5
      CHECK(m.ahat[5 * 12 + (size_t)i] == 0.f);  // the row of query 5
    }
  }
  // mu l up to ~300 (timestamps 4 apart, mu = 0.25 on head 1): the literal S e^{2 mu l} overflows
  // float, the log form does not; a chunked run, non-trivial rows at both ends.
  {
    AttentionParams p = rt(2, 8, 9, RtCovariance::stationary, RtKernel::student_t, true);
    p.rt.mu = {0.0, 0.25};
    Inputs in = make_inputs(p, 1, 300, 33, 0);
    for (int i = 0; i < in.N; ++i) in.t.push_back(4.0 * i);
    const ref::RtOutputs r = rt_twin(p, in, true);
    Fixture f(p, in);
    f.run(150);
    const Rect rows{0, 300, 0, 300}, tail{230, 300, 0, 300};
    for (uint32_t h = 0; h < 2; ++h) {
      const ProbeTruth truth = rt_truth(p, in, r, 0, h);
      check_probe_rect(p, truth, 0, h, rows, probe(f.g, f.w, f.cache, f.ts, 0, h, rows), 1e-4, 0, true);
      check_probe_rect(p, truth, 0, h, tail, probe(f.g, f.w, f.cache, f.ts, 0, h, tail), 1e-4, 0, true);
    }
  }
}

TEST_CASE("RT-RFA layers: the GPU curves stay RFA-only; row diagnostics and tomography are accepted") {
  check_curves_refused_readouts_accepted(rt(2, 4, 3, RtCovariance::stationary, RtKernel::student_t, true), "RT-RFA layer");
}
