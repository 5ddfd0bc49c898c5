// Plain causal scaled-dot-product attention over the RFA caches: the benchmark's yardstick. Same
// kernel body, tiling and online softmax as the fused RFA kernel (shaders/common/attention_body.glsl);
// the score is Re(conj(q) k) * scale (the real dot product of the complex vectors).
#pragma once

#include <cstdint>

#include "ops/rfa_attention.hpp"

namespace rfa::ops {

// Queries [pos0, pos0 + n_new) of every batch row against keys [0, i] (causal) or
// [0, pos0 + n_new); reads cache.q/k/v, writes out [B*n_new, 2*H*D] half-split and the row
// statistics. scale <= 0 means 1 / sqrt(2 D).
Status record_sdpa(gpu::Context& ctx, gpu::Recorder& rec, AttentionCache& cache, gpu::Buffer& out, uint32_t pos0,
                   uint32_t n_new, bool causal = true, float scale = 0.f);

}  // namespace rfa::ops
