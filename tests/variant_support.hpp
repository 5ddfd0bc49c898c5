// Shared by the AFA and RT-RFA suites on the GPU (test_attention_afa, test_attention_rt,
// test_afa_probe, test_rt_probe): the layers' parameters, their twins run on an Inputs, the fused
// kernel's check against a twin, and the probe's checks (a rectangle against the twin's matrix, every
// (batch row, head) after a run, the readouts a variant refuses and accepts), written once.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
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
#include "reference/rt_ref.hpp"

namespace rfa::test {

inline AttentionParams afa(int H, int D, uint32_t seed, AfaPrecision prec = AfaPrecision::channel_sum,
                           bool unitary = false, bool mix = false, bool causal = true) {
  std::mt19937 rng(seed);
  return make_afa_params(H, D, rng, prec, unitary, mix, causal);
}

inline AttentionParams rt(int H, int D, uint32_t seed, RtCovariance cov = RtCovariance::stationary,
                          RtKernel kernel = RtKernel::student_t, bool causal = true) {
  std::mt19937 rng(seed);
  return make_rt_params(H, D, rng, cov, kernel, causal);
}

inline const char* prec_name(AfaPrecision p) {
  return p == AfaPrecision::channel_sum ? "channel_sum" : p == AfaPrecision::one_channel ? "one_channel" : "weighted";
}

// Q, K, V of `in` as the twins take them: complex [B*N][H][D].
struct TwinInputs {
  std::vector<ref::cd> Q, K, V;
};
inline TwinInputs twin_inputs(const AttentionParams& p, const Inputs& in) {
  const int rows = in.B * in.N;
  return {ref::split_complex(to_double(in.q), rows, p.heads, p.dim),
          ref::split_complex(to_double(in.k), rows, p.heads, p.dim),
          ref::split_complex(to_double(in.v), rows, p.heads, p.dim)};
}

// The AFA twin on `in`; `matrices`: with the attention matrix (the probe's reference), over a ring
// of `window` keys (0: none).
inline ref::AfaOutputs afa_twin(const AttentionParams& p, const Inputs& in, bool matrices = false, int window = 0) {
  const TwinInputs x = twin_inputs(p, in);
  ref::AfaOptions opt;
  opt.want_matrices = matrices;
  opt.window = window;
  ref::AfaOutputs o;
  const Status s = ref::afa_forward(ref::afa_twin_params(p), in.B, in.N, x.Q, x.K, x.V, in.t, &o, opt);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  return o;
}

// The RT-RFA twin on `in`, as afa_twin.
inline ref::RtOutputs rt_twin(const AttentionParams& p, const Inputs& in, bool matrices = false, int window = 0) {
  const TwinInputs x = twin_inputs(p, in);
  ref::RtOptions opt;
  opt.want_matrices = matrices;
  opt.window = window;
  ref::RtOutputs o;
  const Status s = ref::rt_attention(ref::rt_twin_params(p), in.B, in.N, x.Q, x.K, x.V, in.t, &o, opt);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  return o;
}

// The fused kernel run in calls of `chunk` rows on path `ap`: its outputs against the twin's
// (complex [B*N][H][D]) and its log-partitions m + log l against the twin's row_lse.
inline void check_fused_against(const AttentionParams& p, const Inputs& in, int chunk, const AttentionPath& ap,
                                double tol, const std::vector<ref::cd>& want_out, const std::vector<double>& want_lse) {
  Fixture f(p, in, 0, ap);
  const GpuRun g = f.run(chunk);
  CHECK_CLOSE_VEC(g.out, ref::pack_complex(want_out, in.B * in.N, p.heads, p.dim), tol, tol);
  std::vector<float> lse;
  const auto mx = f.trim(g.row_max), sm = f.trim(g.row_sum);
  for (size_t i = 0; i < mx.size(); ++i) lse.push_back(mx[i] + std::log(sm[i]));
  CHECK_CLOSE_VEC(lse, want_lse, tol * 10, tol);
}

// An AFA layer (either form) at long context: t up to ~1.2e4 with decays above 0.1, where the thesis's
// factorised transport e^{mu t_i} e^{-mu t_j} overflows float (and double past mu t ~ 709) and would
// give inf * 0; the GPU's per-pair decays from the lag stay finite and equal the twin's.
inline void check_afa_long_context(AttentionParams p) {
  for (double& mu : p.afa.mu) mu = mu > 0 ? 0.1 + mu : 0.0;
  Inputs in = make_inputs(p, 1, 1500, 33, 0);
  for (int i = 0; i < in.N; ++i) in.t.push_back(8.0 * i);
  const ref::AfaOutputs r = afa_twin(p, in);
  Fixture f(p, in);
  const GpuRun g = f.run(700);
  for (float x : g.out) REQUIRE(std::isfinite(x));
  CHECK_CLOSE_VEC(g.out, ref::pack_complex(r.est, in.N, p.heads, p.dim), kTol, kTol);
}

// What the probe of (b, h) should read, from a variant's twin.
struct ProbeTruth {
  std::function<double(uint32_t i, uint32_t j)> ahat;   // the twin's softmax weight
  std::function<double(uint32_t i, uint32_t j)> decay;  // A / Ahat; empty: A equals Ahat bit for bit
  std::function<bool(uint32_t i)> empty_row;            // the twin's row has no weight at all (sums to 0)
};

// One rectangle of (b, h) against the truth: unmasked cells of Ahat (and of A when it decays) within
// atol + tol |ref|, every cell finite, masked cells (causal: j > i, or outside the window) exactly 0
// in both maps; with `full_rows` (the rectangle holds every key of its rows) each row of Ahat sums
// to 1, or to 0 where the truth says the row is empty.
inline void check_probe_rect(const AttentionParams& p, const ProbeTruth& truth, uint32_t b, uint32_t h,
                             const Rect& rc, const Maps& m, double tol, int window, bool full_rows) {
  CAPTURE(b);
  CAPTURE(h);
  CAPTURE(rc.r0);
  CAPTURE(rc.r1);
  CAPTURE(rc.c0);
  CAPTURE(rc.c1);
  std::vector<float> got_ahat, got_a;
  std::vector<double> want_ahat, want_a;
  size_t masked_nonzero = 0, masked = 0, a_differs = 0, not_finite = 0;
  double worst_row = 0;
  for (uint32_t i = rc.r0; i < rc.r1; ++i) {
    double row = 0;
    const bool empty_row = truth.empty_row && truth.empty_row(i);
    for (uint32_t j = rc.c0; j < rc.c1; ++j) {
      const size_t x = (size_t)(i - rc.r0) * (rc.c1 - rc.c0) + (j - rc.c0);
      row += m.ahat[x];
      // Bitwise: NaN != NaN counts as a difference too.
      if (!truth.decay) a_differs += std::memcmp(&m.a[x], &m.ahat[x], 4) != 0;
      not_finite += !std::isfinite(m.ahat[x]) || !std::isfinite(m.a[x]);
      if (p.sw.causal && (j > i || (window > 0 && i - j >= (uint32_t)window))) {
        ++masked;
        masked_nonzero += m.ahat[x] != 0.f || m.a[x] != 0.f;
        continue;
      }
      const double w = truth.ahat(i, j);
      got_ahat.push_back(m.ahat[x]);
      want_ahat.push_back(w);
      if (truth.decay) {
        got_a.push_back(m.a[x]);
        want_a.push_back(w * truth.decay(i, j));
      }
    }
    worst_row = std::max(worst_row, std::fabs(row - (empty_row ? 0.0 : 1.0)));
  }
  CHECK(not_finite == 0);
  CHECK(a_differs == 0);
  CHECK(masked_nonzero == 0);
  if (p.sw.causal && rc.r0 < rc.c1 - 1) CHECK(masked > 0);  // the rectangles do cross the mask
  CHECK_CLOSE_VEC(got_ahat, want_ahat, 1e-5, tol);
  if (truth.decay) CHECK_CLOSE_VEC(got_a, want_a, 1e-5, tol);
  if (full_rows) {
    INFO("worst |row sum - 1| = " << worst_row);
    CHECK(worst_row < 2e-5);
  }
}

// `in` run through the fused kernel in calls of `chunk` rows on path `ap`, then, for every batch
// row and head, the probe of the whole square and of a block off the 64-cell groups at both ends
// that crosses the diagonal, each against truth_of(b, h).
inline void check_probe_after_run(const AttentionParams& p, const Inputs& in, const AttentionPath& ap, int chunk,
                                  const std::function<ProbeTruth(uint32_t b, uint32_t h)>& truth_of) {
  Fixture f(p, in, 0, ap);
  f.run(chunk);
  const uint32_t N = (uint32_t)in.N;
  const Rect whole{0, N, 0, N}, block{N / 3 + 1, N - 1, N / 5 + 2, 2 * N / 3 + 3};
  const double tol = ap.kv_f16 ? kTolF16 : 1e-4;
  for (uint32_t b = 0; b < (uint32_t)in.B; ++b)
    for (uint32_t h = 0; h < (uint32_t)p.heads; ++h) {
      const ProbeTruth truth = truth_of(b, h);
      check_probe_rect(p, truth, b, h, whole, probe(f.g, f.w, f.cache, f.ts, b, h, whole), tol, 0, true);
      check_probe_rect(p, truth, b, h, block, probe(f.g, f.w, f.cache, f.ts, b, h, block), tol, 0, false);
    }
}

// A variant's layer (`layer_name`: "AFA layer", "RT-RFA layer") after a short run: the GPU curves,
// which evaluate RFA's lag kernels, are refused naming the layer (the host draws the variant's
// curves, rfa::head_curves); the row diagnostics and the tomography have the variant's forms and
// are accepted (tests/test_variant_readouts.cpp checks their values).
inline void check_curves_refused_readouts_accepted(const AttentionParams& p, const std::string& layer_name) {
  const Inputs in = make_inputs(p, 1, 10, 1, 0);
  Fixture f(p, in);
  f.run(10);
  gpu::Buffer out = f.up(std::vector<float>(400)), lags = f.up(std::vector<float>(4, 1.f));
  const float thr[4] = {0.f, 1.f, 2.f, 3.f};
  gpu::Recorder rec(f.g);
  REQUIRE(rec.begin().ok());
  const Status curves = ops::record_rfa_curves(f.g, rec, f.w, lags, 4, out);
  CHECK(curves.code() == Code::unsupported);
  CHECK(curves.message().find(layer_name) != std::string::npos);
  CHECK(ops::record_rfa_row_diagnostics(f.g, rec, f.w, f.cache, f.ts, 0, 0, 0, 10, thr, out).ok());
  CHECK(ops::record_rfa_tomography_rows(f.g, rec, f.w, f.cache, f.ts, 0, 0, 0, 10, 1.f, out).ok());
  REQUIRE(rec.submit_and_wait().ok());
}

}  // namespace rfa::test
