// Attention tomography on the GPU (docs/DIAGNOSTICS.md §3): the per-pair work of the Laplace-Radon and routing
// diagnostics of one (batch row, head), recomputed from the layer's caches (rotated Q~/K~, norms,
// timestamps) like the probes, with the layer's own logits (RFA, AFA or RT-RFA: docs/DIAGNOSTICS.md §2
// says what q, k, s and the logit are for each) scaled by a temperature alpha. Never an N x N
// matrix beyond the rectangle asked for. The dense linear algebra on the results runs on the host
// (probe/linalg.hpp, session/session_diagnostics.cpp).
#pragma once

#include <cstdint>

#include "gpu/context.hpp"
#include "gpu/memory.hpp"
#include "gpu/recorder.hpp"
#include "ops/rfa_attention.hpp"

namespace rfa::ops {

// Floats per row written by record_rfa_tomography_rows, and what they hold.
inline constexpr uint32_t kTomographyRowStride = 16;
enum TomographyRow : uint32_t {
  kTomoMax = 0,         // m = max_j alpha logit_ij
  kTomoSum = 1,         // l = sum_j exp(alpha logit_ij - m)
  kTomoEntropy = 2,     // -sum_j p log p
  kTomoLogZ = 3,        // m + log l
  kTomoMaxWeight = 4,   // 1 / l
  kTomoMeanS = 5,       // E_p[s], s = u_i . k_j
  kTomoVarS = 6,        // Var_p[s]
  kTomoMeanLogit = 7,   // E_p[logit] (unscaled logit)
  kTomoVarLogit = 8,    // Var_p[logit]
  kTomoTau = 9,         // |q_i| / sqrt(2D)
  kTomoKeys = 10,       // keys of the row
  kTomoUniformMean = 11,  // mean_j logit_ij (unweighted)
  kTomoUniformVar = 12,   // var_j logit_ij (unweighted, population)
  kTomoExpectedLag = 13,  // sum_j p_ij lag_ij
  kTomoQNorm = 14,        // |q_i|
};

// Row statistics of rows [r0, r1) of (b, head) at temperature alpha over every key each row attends
// to: out [rows, kTomographyRowStride] floats. Rows must be in [oldest(), filled) and, for a causal
// layer, every key of their band still in the ring. alpha must be finite and > 0.
Status record_rfa_tomography_rows(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w,
                                  const AttentionCache& cache, const gpu::Buffer& timestamps, uint32_t b,
                                  uint32_t head, uint32_t r0, uint32_t r1, float alpha, gpu::Buffer& rows_out,
                                  int view = kAllChannels);

// `view` (both calls alike): the weights of an AFA layer the logits are the logs of (rfa/params.hpp;
// docs/variant-afa-full.md §5); other mechanisms have kAllChannels only.
// P(alpha) over rows [r0, r1) x cols [c0, c1): [rows, cols] floats, row i normalised over all its keys
// (so a column window holds part of each row's mass), times the probe's A / Ahat when `decayed`
// (RFA: E; AFA: the channel-mean decay; RT-RFA: 1); masked entries 0.
// `rows_in` is the output of record_rfa_tomography_rows for the same rows and alpha (recorded
// earlier in the same recorder: the recorder orders the two dispatches).
Status record_rfa_tomography_matrix(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w,
                                    const AttentionCache& cache, const gpu::Buffer& timestamps, uint32_t b,
                                    uint32_t head, uint32_t r0, uint32_t r1, uint32_t c0, uint32_t c1, float alpha,
                                    bool decayed, const gpu::Buffer& rows_in, gpu::Buffer& p_out,
                                    int view = kAllChannels);

}  // namespace rfa::ops
