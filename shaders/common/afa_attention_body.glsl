// The fused AFA kernel: Adaptive Filter Attention, memory-optimised form (docs/variant-afa.md §4),
// over the caches the RFA rotate pass fills (Q~, K~, V~ rotated by e^{-i omega_k t}, so a key's
// rotation to the query's time is already in the frame). The body of the kernels afa_attention and
// afa_attention_kv16 (shaders/variants.cmake).
//
// Per pair (i, j): the logit and the channels' decays e_k = exp(-mu_k |l|) from common/afa_pair.glsl
// (shared with the probe, which must reproduce these weights), then
//   acc_k += exp(logit - m) e_k V~_jk                     (online softmax, rescaled per key)
// D exponentials per pair: the price of per-channel decays (RFA has one per pair); the e_k stay
// in registers between the logit and the value sum.
// Epilogue: normalise, then afa_finish_channel (common/afa_attention_io.glsl: the mix, the tied
// iterations' hand-over or the counter-rotation and the prediction).
//
// Threads, tiles and the merge of a row's split keys: the walk shared with RT-RFA
// (common/pair_attention_walk.glsl). The head's channel parameters sit in shared memory.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "kv_storage.glsl"

#include "afa_attention_io.glsl"
#include "afa_pair.glsl"

// The walk's pair terms (common/pair_attention_walk.glsl): the keys' decays e_k stay in registers
// between the logit and the value sum.
void pair_stage(uint j0, uint nk, uint base, uint tid) {}

void pair_visit(const vec2 q[D], PairRow r, uint base, uint ks, uint jj, float lag, inout float m, inout float l,
                inout vec2 acc[D]) {
  float ek[D];
  const float logit = afa_pair_logit(q, r.qn, DIRECT_KV ? base + ks : jj, lag, r.hv, ek);
  const float p = online_softmax_add(logit, m, l, acc);
  [[unroll]] for (uint k = 0; k < D; ++k) acc[k] += (p * ek[k]) * walk_value(base, ks, jj, k);
}

// Epilogue: normalise, then the channel's mix, hand-over or output (common/afa_attention_io.glsl).
void pair_epilogue(PairRow r, uint h, uint HD, uint icell, uint orow, vec2 ti, float inv_l, vec2 acc[D]) {
  [[unroll]] for (uint k = 0; k < D; ++k) afa_finish_channel(h, HD, icell, orow, ti, k, acc[k] * inv_l);
}

#include "pair_attention_walk.glsl"
