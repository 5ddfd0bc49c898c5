// The viewer's readouts of an attention layer on the GPU: exact Ahat / A rectangles and row
// diagnostics from the caches record_rfa_attention filled (the kernel rfa_probe; AFA layers
// afa_probe, RT-RFA layers rt_probe), per-head curves of RFA layers from
// the head table (shaders/rfa_curves.comp), and the host-side regime of a head.
#pragma once

#include <cstdint>

#include "gpu/context.hpp"
#include "gpu/memory.hpp"
#include "gpu/recorder.hpp"
#include "ops/rfa_attention.hpp"
#include "rfa/params.hpp"

namespace rfa::ops {

// Exact Ahat and A of rows [r0, r1) x cols [c0, c1) (absolute positions) of (b, head), from the
// caches and row statistics: [rows, cols] floats each, masked entries 0. Positions must be < filled.
// AFA layers (afa_probe): Ahat is the softmax weight and A = Ahat (1/D) sum_k
// e^{-mu_k |l|}, the mean over channels of the decayed weight (AFA decays per channel;
// docs/variant-afa.md §11). RT-RFA layers (rt_probe): Ahat is the softmax weight and
// A = Ahat (RT decays neither weights nor values; docs/variant-rt.md §10). `view` (rfa/params.hpp:
// kAllChannels, kReweighting or a channel) picks what an AFA layer's maps hold (full AFA, afa_full_probe:
// the channel mean of its per-channel weights Q_k, the reweighting map W or Q_c;
// docs/variant-afa-full.md §5); other mechanisms have kAllChannels only.
Status record_rfa_probe(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w, const AttentionCache& cache,
                        const gpu::Buffer& timestamps, uint32_t b, uint32_t head, uint32_t r0, uint32_t r1,
                        uint32_t c0, uint32_t c1, gpu::Buffer& ahat_out, gpu::Buffer& a_out,
                        int view = kAllChannels);

// Per row of [r0, r1), over all keys of the row: out [rows, 8] = entropy of Ahat, log-partition
// (m + log l), max Ahat, expected lag sum_j A_ij lag_ij, mass of A with lag > thresholds[k], k < 4.
// Ahat and A are the layer's own (record_rfa_probe above): every mechanism, one definition.
// `view` (AFA layers: a channel or kAllChannels) picks the weights; kReweighting is refused, W is
// not normalised.
Status record_rfa_row_diagnostics(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w,
                                  const AttentionCache& cache, const gpu::Buffer& timestamps, uint32_t b,
                                  uint32_t head, uint32_t r0, uint32_t r1, const float thresholds[4],
                                  gpu::Buffer& out, int view = kAllChannels);

// Per-head curves over lags [n_lags] (raw lags; the shift is added inside): out [H, 4, n_lags] =
// E, Vcov, P, B. RFA layers only (AFA and RT-RFA: rfa::head_curves on the host). Regimes (alpha,
// beta, label) are host-side: rfa_regime() below.
Status record_rfa_curves(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w, const gpu::Buffer& lags,
                         uint32_t n_lags, gpu::Buffer& out);
// Host-side regime of head h (docs/math.md §5), from the double twin's rfa_math.
RegimeInfo rfa_regime(const AttentionParams& params, int head);

}  // namespace rfa::ops
